"""Where one `changed_between` call through the catalog spends its time (the target: p50 no slower than
DuckDB's), on a store built by bench_store.py (`--keep`; pass its path with `--reuse` and the same
`--facts`/`--seed`).

Prints one table per run: the catalog call as a user makes it, the same call along the previous path (rows
as tuples, then `trusted_rows`; replicated below, so before and after are measured in the same process on
the same windows), each stage of the catalog call from cProfile (numpy scan, choosing the changed pairs,
each day's value lists, the pairs' names, the row dicts, the typed rows) and the time to drop an answer
(what the next call pays when it replaces the last one). With `--duckdb`, bench_store's DuckDB baseline on
the same facts, its SQL run apart from the `fetchall` that turns its answer into Python tuples. Findings:
benchmarks/README.md.

    python benchmarks/profile_changed.py --reuse /tmp/x/bench.kgl --facts 1000000 --duckdb
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import gc
import itertools
import os
import pstats
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_store

from chronokg.graph.interval_reads import IntervalIndex
from chronokg.graph.kglite_store import KgliteStore
from chronokg.queries import catalog
from chronokg.queries.rows import ChangeRow, trusted_rows

Window = tuple[dt.date, dt.date]


def previous_changed(ix: IntervalIndex, t1: dt.date, t2: dt.date) -> list[ChangeRow]:
    """`changed_between` as it was answered before the columnar path (its index code, then `trusted_rows` from
    tuples)."""
    import numpy as np

    g = ix._g
    a, b = sorted((t1.toordinal(), t2.toordinal()))
    has = ix.v >= 0
    at_a = np.logical_or.reduceat((ix.vf <= a) & (ix.vt > a) & has, g.starts)
    at_b = np.logical_or.reduceat((ix.vf <= b) & (ix.vt > b) & has, g.starts)
    changed = np.logical_or.reduceat(at_a != at_b, g.key_starts)
    if not changed.any():
        return []
    in_changed = np.repeat(changed, g.key_sizes)
    subjects, predicates, values = ix.names("subjects"), ix.names("predicates"), ix.names("values")
    firsts = g.key_starts[changed]
    names_s = [subjects[c] for c in g.skey[firsts].tolist()]
    names_p = [predicates[c] for c in g.pkey[firsts].tolist()]
    lists = []
    for at in (at_a, at_b):
        mask = in_changed & at
        texts = [values[c] for c in g.val[mask].tolist()]
        bounds = np.zeros(int(changed.sum()) + 1, dtype=np.int64)
        np.cumsum(np.add.reduceat(mask.astype(np.int64), g.key_starts)[changed], out=bounds[1:])
        edges = bounds.tolist()
        lists.append([texts[lo:hi] for lo, hi in itertools.pairwise(edges)])
    return trusted_rows(ChangeRow, ("subject", "predicate", "before", "after"),
                        zip(names_s, names_p, lists[0], lists[1], strict=True))


def timed(fn: Callable[[Window], list[Any]], windows: list[Window], rounds: int) -> tuple[list[float], list[float]]:
    """ms per call and ms to drop its answer, GC paused as in bench_store's timings."""
    calls, drops = [], []
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            for w in windows:
                t0 = time.perf_counter()
                out = fn(w)
                t1 = time.perf_counter()
                del out
                calls.append((t1 - t0) * 1000)
                drops.append((time.perf_counter() - t1) * 1000)
    finally:
        gc.enable()
    return calls, drops


STAGES = (  # (label, file suffix, function name): cProfile's cumulative time of each
    ("valid masks of both days (numpy scan)", "interval_reads.py", "_valid_groups"),
    ("changed pairs (numpy)", "interval_reads.py", "_changed_keys"),
    ("value lists of both days", "interval_reads.py", "_value_lists"),
    ("row dicts (direct.py comprehension)", "direct.py", "<listcomp>"),
    ("typed rows (rows.trusted_many)", "rows.py", "trusted_many"),
)


def stage_table(store: KgliteStore, windows: list[Window], n_rows: int, drop_ms: float) -> list[str]:
    """cProfile's cumulative time of each stage, per call (the mean over one call per window)."""
    prof = cProfile.Profile()
    gc.disable()
    try:
        for window in windows:
            prof.enable()
            out = catalog.changed_between(store, *window)
            prof.disable()
            del out
    finally:
        gc.enable()
    stats: dict[tuple[str, int, str], tuple[Any, ...]] = getattr(pstats.Stats(prof), "stats")  # noqa: B009

    def cum(suffix: str, name: str) -> float:
        seconds = sum(v[3] for k, v in stats.items() if k[0].endswith(suffix) and k[2] == name)
        return float(seconds) * 1000 / len(windows)

    total = cum("spec.py", "run")
    parts = [(label, cum(suffix, name)) for label, suffix, name in STAGES]
    columns = cum("interval_reads.py", "changed_columns")
    parts.insert(3, ("names of the changed pairs, repeat (rest of changed_columns)",
                     columns - sum(ms for _, ms in parts[:3])))
    parts.append(("other (validation, spec, index lookup)", total - sum(ms for _, ms in parts)))
    parts.append(("drop the answer (paid by whoever replaces it)", drop_ms))
    whole = total + drop_ms
    lines = [f"per call under cProfile (mean of {len(windows)}), ~{n_rows:,} rows: {total:,.1f} ms "
             f"(+ {drop_ms:,.1f} ms to drop it, p50 unprofiled)",
             f"{'stage':58s} {'ms':>9s} {'share':>6s} {'ns/row':>7s}", "-" * 84]
    for label, ms in parts:
        lines.append(f"{label:58s} {ms:9.1f} {100 * ms / whole:5.1f}% {1e6 * ms / max(n_rows, 1):7.0f}")
    return lines


def duck_split(duck: bench_store.DuckFacts, windows: list[Window], rounds: int) -> dict[str, float]:
    """DuckDB's changed_between: the SQL run (`execute`) and its answer turned into Python (`fetchall`)."""
    run, fetch, drop = [], [], []
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            for t1, t2 in windows:
                t0 = time.perf_counter()
                cur = duck.con.execute(bench_store.CHANGED_SQL, {"t1": t1, "t2": t2})
                t1_ = time.perf_counter()
                out = cur.fetchall()
                t2_ = time.perf_counter()
                del out
                run.append((t1_ - t0) * 1000)
                fetch.append((t2_ - t1_) * 1000)
                drop.append((time.perf_counter() - t2_) * 1000)
    finally:
        gc.enable()
    return {"execute (the SQL) p50 ms": statistics.median(run), "fetchall (to tuples) p50 ms":
            statistics.median(fetch), "drop the answer p50 ms": statistics.median(drop)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--reuse", type=Path, required=True, help="a store bench_store.py built (--keep)")
    ap.add_argument("--facts", type=int, required=True, help="its --facts (for --duckdb)")
    ap.add_argument("--seed", type=int, default=42, help="its --seed (for --duckdb)")
    ap.add_argument("--windows", type=int, default=3, help="3-year windows, drawn as bench_store draws them")
    ap.add_argument("--rounds", type=int, default=3, help="calls per window per path")
    ap.add_argument("--duckdb", action="store_true", help="also time bench_store's DuckDB baseline (builds it)")
    args = ap.parse_args(argv)

    rng = random.Random(args.seed + 1)
    windows = []
    for _ in range(args.windows):
        start = dt.date(rng.randrange(1992, 2020), rng.randrange(1, 13), 1)
        windows.append((start, start.replace(year=start.year + 3)))
    store = KgliteStore(args.reuse, read_only=True)
    index = store.intervals()
    if index is None:
        print(f"{args.reuse}: no current interval index beside it; nothing to profile", file=sys.stderr)
        return 1
    paths: dict[str, Callable[[Window], list[Any]]] = {
        "catalog (this code)": lambda w: catalog.changed_between(store, *w),
        "previous path (replicated)": lambda w: previous_changed(index, *w),
    }
    for w in windows:  # warm: string tables, object arrays; and the two paths must agree
        answers = [fn(w) for fn in paths.values()]
        assert all(a == answers[0] for a in answers[1:]), f"paths disagree on {w}"
        n_rows = len(answers[0])
    load = os.getloadavg()
    print(f"changed_between, {args.facts:,} facts ({args.reuse}), windows {[(str(a), str(b)) for a, b in windows]},"
          f" {args.rounds} rounds, load average {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}")
    print(f"{'path':40s} {'p50 ms':>9s} {'min ms':>9s} {'drop p50 ms':>12s}")
    results = {name: timed(fn, windows, args.rounds) for name, fn in paths.items()}
    for name, (calls, drops) in results.items():
        print(f"{name:40s} {statistics.median(calls):9.1f} {min(calls):9.1f} {statistics.median(drops):12.1f}")
    print()
    print("\n".join(stage_table(store, windows, n_rows, statistics.median(results["catalog (this code)"][1]))))
    if args.duckdb:
        with tempfile.TemporaryDirectory(prefix="profile_changed_") as tmp:
            t0 = time.perf_counter()
            duck = bench_store.DuckFacts(bench_store.synthetic_rows(args.facts, args.seed), Path(tmp))
            print(f"\nDuckDB baseline (built in {time.perf_counter() - t0:.1f} s; returns a list of tuples "
                  "(subject, predicate, before list, after list) by fetchall, no typed rows)")
            calls, _ = timed(lambda w: duck.changed_between(*w), windows, args.rounds)
            print(f"{'duckdb changed_between p50 ms':40s} {statistics.median(calls):9.1f}")
            for name, ms in duck_split(duck, windows, args.rounds).items():
                print(f"  {name:38s} {ms:9.1f}")
            duck.con.close()
    print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
