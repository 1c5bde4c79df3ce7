"""Read path benchmark: what a CLI query costs on a large store, and that it never writes the store.

The requirement: a CLI query on the 1M-fact benchmark store does not rewrite the file (size and
mtime unchanged) and costs no more than opening it plus the query. Measured in one run:

* baseline: `python -c "import chronokg.cli"` (interpreter + CLI start), opening the store
  read-only in-process, and the same catalog query in-process on the open store;
* the CLI (`chronokg query as-of ... --format json`), timed as a whole process, three times;
* the old path for comparison, on a copy of the file: a writer open + the query + the
  checkpoint every command used to write on close;
* two CLI readers started together (both must succeed), and the file's size and mtime
  before and after everything.

    python benchmarks/bench_store.py --load-only --keep --dir /tmp/b   # builds a 1M-fact store
    python benchmarks/bench_read_path.py --store /tmp/b/<dir>/bench.kgl
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from chronokg.graph.kglite_store import KgliteStore
from chronokg.queries import catalog


def wall(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done


def stamp(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--store", type=Path, required=True, help="a .kgl store (e.g. built by bench_store.py)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    path: Path = args.store
    before = stamp(path)

    with KgliteStore(path, read_only=True) as store:
        subject = store.run("MATCH (f:Fact) RETURN f.subject_id AS s LIMIT 1")[0]["s"]
        facts = store.run("MATCH (f:Fact) RETURN count(f) AS n")[0]["n"]
    day = dt.date(2010, 6, 1)

    opens, queries = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        with KgliteStore(path, read_only=True) as store:
            t1 = time.perf_counter()
            rows = catalog.facts_as_of(store, day, subject=subject)
            t2 = time.perf_counter()
        opens.append(t1 - t0)
        queries.append(t2 - t1)
    start_up = [wall([sys.executable, "-c", "import chronokg.cli"])[0] for _ in range(args.repeat)]

    cli = [sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{path}", "query", "as-of",
           "--subject", subject, "--date", day.isoformat(), "--format", "json"]
    runs = []
    for _ in range(args.repeat):
        seconds, done = wall(cli)
        if done.returncode != 0:
            raise SystemExit(f"CLI query failed: {done.stderr}")
        assert len(json.loads(done.stdout)) == len(rows)
        runs.append(seconds)

    start = time.perf_counter()
    pair = [subprocess.Popen(cli, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [p.communicate() for p in pair]
    together = time.perf_counter() - start
    both_ok = all(p.returncode == 0 for p in pair) and results[0][0] == results[1][0]
    after = stamp(path)

    with tempfile.TemporaryDirectory() as tmp:  # the old path, on a copy: writer open + query + checkpoint
        copy = Path(tmp) / "copy.kgl"
        shutil.copyfile(path, copy)
        t0 = time.perf_counter()
        store = KgliteStore(copy)
        t1 = time.perf_counter()
        catalog.facts_as_of(store, day, subject=subject)
        t2 = time.perf_counter()
        store.save()  # what every command used to do on close
        store.close()
        t3 = time.perf_counter()

    base = statistics.median(start_up) + statistics.median(opens) + statistics.median(queries)
    cli_s = statistics.median(runs)
    lines = [
        ("store", f"{path} ({facts:,} facts, {before[0] / 2**20:,.1f} MiB)", ""),
        ("baseline: interpreter + import chronokg.cli", f"{statistics.median(start_up):.2f} s", ""),
        ("baseline: open read-only (in-process)", f"{statistics.median(opens):.2f} s", ""),
        ("baseline: facts_as_of on the open store", f"{statistics.median(queries) * 1000:.1f} ms", ""),
        ("baseline: start + open + query", f"{base:.2f} s", ""),
        ("CLI query as-of (whole process, median)", f"{cli_s:.2f} s", f"{cli_s / base:.2f}x baseline"),
        ("two CLI readers started together", f"{together:.2f} s", "both ok" if both_ok else "FAILED"),
        ("file size / mtime unchanged", "yes" if after == before else f"NO {before} -> {after}", ""),
        ("old path: writer open", f"{t1 - t0:.2f} s", ""),
        ("old path: query + checkpoint on close", f"{t3 - t1:.2f} s", f"(checkpoint {t3 - t2:.2f} s)"),
        ("old path total (without interpreter start)", f"{t3 - t0:.2f} s", ""),
    ]
    width = max(len(a) for a, _, _ in lines)
    print(f"{'measure':<{width}}  {'value':>14}  note")
    print("-" * (width + 30))
    for a, b, c in lines:
        print(f"{a:<{width}}  {b:>14}  {c}")


if __name__ == "__main__":
    main()
