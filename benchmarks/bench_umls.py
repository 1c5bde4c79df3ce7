"""UMLS loader benchmark: a synthetic 2,000,000-row MRREL (and matching MRCONSO) into a file-backed store.

The generator streams self-made RRF rows to disk in a temp dir (nothing is built in
memory): CUIs drawn from a pool of rows/10 concepts, about `--keep` (default 15%)
of the rows carrying one of the twelve ChroKnowBench RELAs (as inverse pairs, some
asserted by a second SAB as well, as in the real MRREL), the others carrying other
RELAs or none. MRCONSO holds three atoms per concept (a preferred English name, a
synonym, a Spanish name). With `--releases 2` a second release drops 5% of the kept
relations and adds as many new ones, and is loaded in a second run (incremental).

The load runs in a child process (`chronokg.ingest.umls.load` into a `KgliteStore`
in the temp dir), so the generator's memory does not count; the table shows the
child's own `ru_maxrss`, the parent's RUSAGE_CHILDREN figure and the generator's.

    python benchmarks/bench_umls.py                      # 2M rows, store as `chronokg ingest umls` opens it
    python benchmarks/bench_umls.py --durable normal     # same, with the write-ahead log on during the load
    python benchmarks/bench_umls.py --rows 200000 --releases 2
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

RELAS = ("isa", "inverse_isa", "may_treat", "may_be_treated_by", "may_prevent", "may_be_prevented_by", "induces",
         "causative_agent_of", "has_mechanism_of_action", "has_physiologic_effect", "direct_procedure_site_of",
         "has_direct_procedure_site")
PAIRS = [(RELAS[i], RELAS[i + 1]) for i in range(0, 12, 2)]
PAIR_WEIGHTS = (60, 12, 4, 4, 10, 10)  # isa dominates, as in the real file
OTHER = ("has_finding_site", "finding_site_of", "mapped_to", "mapped_from", "has_ingredient", "ingredient_of",
         "", "", "", "")  # "" = a row without RELA (RO/RB/RN/SY ...)
SABS = ("SNOMEDCT_US", "MSH", "NCI", "MED-RT", "RXNORM", "MDR", "LNC")
ONE_GB = 1 << 30


def _row(cui1: int, rel: str, cui2: int, rela: str, sab: str, n: int) -> str:
    return (f"C{cui1:07d}|A{n:08d}|SCUI|{rel}|C{cui2:07d}|A{n + 1:08d}|SCUI|{rela}|R{n:08d}||{sab}|{sab}|0|"
            f"{'Y' if n % 2 else ''}|N||\n")


def mrrel_rows(rows: int, keep: float, concepts: int, seed: int, release: int) -> Iterator[str]:
    """`rows` MRREL lines; release 1 drops 5% of the kept relations of release 0 and adds as many."""
    rng, drift = random.Random(seed), random.Random(seed + release)
    n = 0
    while n < rows:
        a, b = rng.randrange(1, concepts), rng.randrange(1, concepts)
        if a == b:
            continue
        if rng.random() < keep / 2:  # a kept relation comes as an inverse pair of rows
            forward, inverse = rng.choices(PAIRS, PAIR_WEIGHTS)[0]
            sabs = [rng.choice(SABS)] + ([rng.choice(SABS)] if rng.random() < 0.1 else [])
            if release and drift.random() < 0.05:  # dropped by the later release, replaced by a new one
                a = concepts + drift.randrange(1, concepts)
            for sab in sabs:
                for line in (_row(a, "RO", b, forward, sab, n), _row(b, "RO", a, inverse, sab, n + 1)):
                    if n < rows:
                        yield line
                        n += 1
        else:
            yield _row(a, rng.choice(("RO", "RB", "RN", "SY")), b, rng.choice(OTHER), rng.choice(SABS), n)
            n += 1


def mrconso_rows(concepts: int) -> Iterator[str]:
    for c in range(1, 2 * concepts):
        cui = f"C{c:07d}"
        yield f"{cui}|ENG|P|L{c:07d}|PF|S{c:07d}|Y|A{c:08d}||||MTH|PN|NOCODE|Concept {c}|0|N||\n"
        yield f"{cui}|ENG|S|L{c + 1:07d}|PF|S{c + 1:07d}|Y|A{c + 1:08d}||||MSH|SY|D{c}|concept {c} synonym|0|N||\n"
        yield f"{cui}|SPA|P|L{c + 2:07d}|PF|S{c + 2:07d}|Y|A{c + 2:08d}||||MSHSPA|MH|D{c}|Concepto {c}|3|N||\n"


def write_lines(path: Path, lines: Iterator[str]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    n, buf = 0, []
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for line in lines:
            buf.append(line)
            n += 1
            if len(buf) >= 10_000:
                fh.write("".join(buf))
                buf.clear()
        fh.write("".join(buf))
    return n


def generate(root: Path, rows: int, keep: float, releases: int, seed: int) -> list[Path]:
    concepts = max(rows // 10, 100)
    folders = []
    for i in range(releases):
        folder = root / f"{2020 + i}AA" / "META"
        write_lines(folder / "MRREL.RRF", mrrel_rows(rows, keep, concepts, seed, i))
        write_lines(folder / "MRCONSO.RRF", mrconso_rows(concepts))
        folders.append(folder.parent)
    return folders


# --- the child: one load, measured from inside --------------------------------------------


def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * resource.getpagesize() / 2**20


class Phases:
    """Peak RSS per phase of a load, sampled every 10 ms; the loader's progress calls name the phases."""

    def __init__(self) -> None:
        self.peaks: dict[str, float] = {}
        self.phase = "open store"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peaks[self.phase] = max(self.peaks.get(self.phase, 0.0), _rss_mb())
            time.sleep(0.01)

    def mark(self, phase: str) -> None:
        self.peaks[self.phase] = max(self.peaks.get(self.phase, 0.0), _rss_mb())
        self.phase = phase

    def start(self, total: int, description: str) -> None:  # the Progress protocol
        self.mark(description.split(" 20")[0] + (" " + description.rsplit(" ", 1)[-1]
                                                  if "RRF" in description else ""))

    def advance(self, n: int) -> None:
        pass

    def stop(self) -> dict[str, float]:
        self.mark("done")
        self._stop.set()
        self._thread.join()
        return self.peaks


def child(store_path: str, folders: list[str], durable: str) -> None:
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.graph.store import Statement
    from chronokg.ingest import umls

    phases = Phases()

    class MeasuredStore(KgliteStore):
        """The store chronokg opens; marks when the load's transaction has committed."""

        def write(self, statements: Iterable[Statement]) -> None:
            super().write(statements)
            phases.mark("summary counts")

    runs = []
    for folder in folders:
        phases.mark("open store")
        store = MeasuredStore(store_path, durable=durable)  # as `kglite:///path?durable=...` opens it
        start = time.perf_counter()
        summary = umls.load(store, [Path(folder)], progress=phases)
        load_s = time.perf_counter() - start
        phases.mark("close (checkpoint)")
        start = time.perf_counter()
        store.close()
        close_s = time.perf_counter() - start
        [stats] = summary.releases
        runs.append({"release": stats.release, "rows": stats.rows, "kept_rows": stats.kept_rows,
                     "relations": stats.relations, "opened": stats.opened, "closed": stats.closed,
                     "concepts": stats.concepts, "facts_in_store": summary.after.get("Fact", 0),
                     "load_s": load_s, "close_s": close_s})
    peaks = phases.stop()
    print(json.dumps({"runs": runs, "phases": peaks,
                      "ru_maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))


# --- the parent -------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=2_000_000, help="MRREL rows per release")
    parser.add_argument("--keep", type=float, default=0.15, help="fraction of rows with one of the 12 RELAs")
    parser.add_argument("--releases", type=int, default=1, choices=(1, 2))
    parser.add_argument("--durable", choices=("normal", "off"), default="off",
                        help="off: as `chronokg ingest umls` opens an embedded store (no write-ahead log during "
                        "the load, one checkpoint at close); normal: with the log")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep-files", action="store_true", help="leave the temp dir in place")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], args.child[1:], args.durable)
        return

    root = Path(tempfile.mkdtemp(prefix="bench-umls-"))
    try:
        start = time.perf_counter()
        folders = generate(root / "releases", args.rows, args.keep, args.releases, args.seed)
        gen_s = time.perf_counter() - start
        gen_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        sizes = {f.name: sum(p.stat().st_size for p in (f / "META").iterdir()) for f in folders}
        store = root / "store" / "umls.kgl"
        proc = subprocess.run(
            [sys.executable, __file__, "--durable", args.durable, "--child", str(store), *map(str, folders)],
            capture_output=True, text=True, check=False,
        )
        if proc.returncode != 0:
            sys.exit(f"load failed:\n{proc.stderr[-4000:]}")
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        children_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        store_mb = sum(p.stat().st_size for p in store.parent.iterdir()) / 2**20
    finally:
        if not args.keep_files:
            shutil.rmtree(root, ignore_errors=True)

    print(f"\nUMLS loader benchmark: {args.rows:,} MRREL rows/release, keep≈{args.keep:.0%}, "
          f"{args.releases} release(s), store durable={args.durable}")
    print(f"generated in {gen_s:.1f} s ({', '.join(f'{k}: {v / 2**20:.0f} MB' for k, v in sizes.items())}); "
          f"generator peak RSS {gen_rss / 1024:.0f} MB")
    header = ("release", "rows", "kept rows", "relations", "opened", "closed", "facts", "load s", "rows/s",
              "close s")
    table = [header]
    for run in result["runs"]:
        table.append((run["release"], f"{run['rows']:,}", f"{run['kept_rows']:,}", f"{run['relations']:,}",
                      f"{run['opened']:,}", f"{run['closed']:,}", f"{run['facts_in_store']:,}",
                      f"{run['load_s']:.1f}", f"{run['rows'] / run['load_s']:,.0f}", f"{run['close_s']:.1f}"))
    widths = [max(len(str(r[i])) for r in table) for i in range(len(header))]
    for i, r in enumerate(table):
        print("  ".join(str(c).rjust(w) for c, w in zip(r, widths, strict=True)))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print("\npeak RSS per phase of the load (MB): " + ", ".join(
        f"{name} {mb:.0f}" for name, mb in result["phases"].items() if name != "done"))
    peak = result["ru_maxrss_kib"] * 1024
    print(f"\npeak RSS of the loading process: {peak / 2**20:.0f} MB (ru_maxrss in the child), "
          f"{children_rss / 1024:.0f} MB (RUSAGE_CHILDREN seen by the parent); store on disk {store_mb:.0f} MB")
    print(f"peak RSS < 1 GB: {'yes' if peak < ONE_GB else 'NO'}")


if __name__ == "__main__":
    main()
