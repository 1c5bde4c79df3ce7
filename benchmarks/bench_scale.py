"""Scale run: `bench_store.py` at several sizes, one table of how load, memory, disk and every query grow.

Each size runs in its own process (so peak RSS is that size's), through the same
load path and the same questions as `bench_store.py` (catalog, raw Cypher, the
plain-Python interval index, DuckDB); sizes above `--queries-up-to` are loaded
only (say so in the table: "-").

    python benchmarks/bench_scale.py --sizes 100000,1000000,10000000 --queries-up-to 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def run_size(n: int, queries: int, changed: int, load_only: bool, workdir: Path) -> dict[str, Any]:
    out = workdir / f"scale_{n}.json"
    cmd = [sys.executable, str(HERE / "bench_store.py"), "--facts", str(n), "--queries", str(queries),
           "--changed", str(changed), "--out", str(out), "--dir", str(workdir)]
    if load_only:
        cmd.append("--load-only")
    start = time.perf_counter()
    load_before = os.getloadavg()[0]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0 or not out.exists():
        return {"facts": n, "error": (done.stderr.strip().splitlines() or ["failed"])[-1],
                "load_avg": load_before}
    res: dict[str, Any] = json.loads(out.read_text())
    res["wall_s"] = time.perf_counter() - start
    res["load_avg"] = (load_before, os.getloadavg()[0])
    return res


def table(results: list[dict[str, Any]]) -> str:
    sizes = [f"{r['facts']:,}" for r in results]
    rows: list[tuple[str, list[str]]] = []

    def add(name: str, cell: Any) -> None:
        rows.append((name, [cell(r) if "error" not in r else "failed" for r in results]))

    def load(key: str, fmt: str) -> Any:
        return lambda r: format(r["load"][key], fmt) if key in r["load"] else "-"

    add("load: end-to-end facts/s", lambda r: f"{r['load']['end_to_end_rate']:,.0f}")
    add("  write_bulk facts/s", lambda r: f"{r['load']['write_rate']:,.0f}")

    def alone(r: dict[str, Any]) -> str:
        a = r["load"].get("kglite_alone")
        if not a:
            return "-"
        return f"{a['facts'] / a['wall_s']:,.0f} ({r['load']['end_to_end_rate'] * a['wall_s'] / a['facts']:.2f}x)"

    add("  kglite's own calls, same frames, facts/s (load / them)", alone)
    add("  FactTable staging s", load("fact_s", ".1f"))
    add("  write_bulk s (validate, load, indexes, save)", load("write_s", ".1f"))
    add("peak RSS during load MiB", lambda r: f"{r['load']['peak_rss_mib']:,.0f}")
    add("on disk (.kgl) MiB", lambda r: f"{r['load']['kgl_bytes'] / 2**20:,.1f}")
    add("open read-only s", lambda r: f"{r['open_s']:.2f}" if r.get("timings") else "-")
    add("RSS after open MiB", lambda r: f"{r['rss_after_open_mib']:,.0f}" if r.get("timings") else "-")
    add("peak RSS whole run MiB (+ Python index, DuckDB)",
        lambda r: f"{r['peak_rss_run_mib']:,.0f}" if r.get("timings") else "-")
    keys: list[tuple[str, str]] = []
    for r in results:
        for t in r.get("timings", []):
            if (t["op"], t["impl"]) not in keys:
                keys.append((t["op"], t["impl"]))
    for op, impl in keys:
        def cell(r: dict[str, Any], op: str = op, impl: str = impl) -> str:
            for t in r.get("timings", []):
                if (t["op"], t["impl"]) == (op, impl):
                    return "timed out" if t.get("error") else f"{t['p50_ms']:.3f} / {t['p95_ms']:.3f}"
            return "-"
        add(f"{op} {impl} p50 / p95 ms", cell)
    for op in ("facts_as_of", "facts_as_of_pred", "timeline", "two_hop_as_of"):  # the target: <= 6x py
        def times(r: dict[str, Any], op: str = op) -> str:
            p50 = {t["impl"]: t["p50_ms"] for t in r.get("timings", []) if t["op"] == op and not t.get("error")}
            return f"{p50['catalog'] / p50['py']:.1f}" if p50.get("catalog") and p50.get("py") else "-"
        add(f"{op} catalog / py p50 (x)" + (" (target <= 6)" if op == "facts_as_of" else ""), times)
    cli_names: list[str] = []  # whole `chronokg query` processes beside their floor (the target: <= 0.5 s)
    for r in results:
        cli_names += [k for k in r.get("cli_s", {}) if k not in cli_names]
    for name in cli_names:
        add(f"cli s: {name}", lambda r, name=name: f"{r['cli_s'][name]:.3f}" if name in r.get("cli_s", {}) else "-")
    add("run wall s", lambda r: f"{r['wall_s']:.0f}")
    add("load average (start, end)", lambda r: f"{r['load_avg'][0]:.1f}, {r['load_avg'][1]:.1f}")
    width = max(len(n) for n, _ in rows) + 2
    cols = [max(len(s), *(len(c[i]) for _, c in rows)) + 2 for i, s in enumerate(sizes)]
    lines = [f"{'facts':<{width}}" + "".join(f"{s:>{w}}" for s, w in zip(sizes, cols, strict=True))]
    lines.append("-" * len(lines[0]))
    lines += [f"{n:<{width}}" + "".join(f"{c:>{w}}" for c, w in zip(cells, cols, strict=True)) for n, cells in rows]
    failed = [f"{r['facts']:,}: {r['error']}" for r in results if "error" in r]
    return "\n".join(lines + [f"failed: {f}" for f in failed])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--sizes", default="100000,1000000,10000000")
    ap.add_argument("--queries-up-to", type=int, default=1_000_000, help="larger sizes are loaded only")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--changed", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None, help="write every size's measurements as JSON")
    args = ap.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench_scale_", dir=args.dir))
    results = []
    for n in (int(x) for x in args.sizes.split(",")):
        print(f"{n:,} facts ...", file=sys.stderr, flush=True)
        results.append(run_size(n, args.queries, args.changed, n > args.queries_up_to, workdir))
        print(table(results), file=sys.stderr, flush=True)
    print(table(results))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
