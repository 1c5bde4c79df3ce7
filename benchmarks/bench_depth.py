"""As-of latency against history depth: `facts_as_of` p50 with 1, 10 and 100 versions per subject.

    python benchmarks/bench_depth.py                      # 100,000 facts per store
    python benchmarks/bench_depth.py --facts 1000000

One store per depth, each the same number of facts: N/depth subjects, each one predicate
whose `depth` versions chain over 1990-2024 (valid_to = the next valid_from, the last
open). Loaded through the bulk path, opened read-only as queries open it, then the
catalog's `facts_as_of` (as a user calls it, typed rows included) for random subjects
and days, after warm-up calls. Target: the three p50s within 2x of each other.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_store import FIRST_DAY, LAST_DAY, RELEASE, SOURCE

from chronokg.graph.bulk import write_bulk
from chronokg.graph.facts import FactTable
from chronokg.graph.kglite_store import KgliteStore
from chronokg.queries import catalog

DEPTHS = (1, 10, 100)
TARGET_RATIO = 2.0


def table(n_facts: int, depth: int, seed: int) -> FactTable:
    rng = random.Random(seed)
    subjects, predicates, objects, starts, ends = [], [], [], [], []
    for s in range(max(1, n_facts // depth)):
        days = sorted(rng.sample(range(FIRST_DAY, LAST_DAY), depth))
        for j, day in enumerate(days):
            subjects.append(f"s{s:07d}")
            predicates.append("p00")
            objects.append(f"o{rng.randrange(1000):04d}")
            starts.append(dt.date.fromordinal(day))
            ends.append(dt.date.fromordinal(days[j + 1]) if j + 1 < depth else None)
    t = FactTable()
    t.source(SOURCE)
    t.add_many(subjects, predicates, objects=objects, valid_from=starts, valid_to=ends, known_from=RELEASE,
               source_id=SOURCE.id, source_kind=SOURCE.kind)
    return t


def p50_ms(path: Path, n_subjects: int, queries: int, seed: int) -> tuple[float, float]:
    rng = random.Random(seed)
    store = KgliteStore(path, read_only=True)
    asks = [(f"s{rng.randrange(n_subjects):07d}", dt.date.fromordinal(rng.randrange(FIRST_DAY, LAST_DAY)))
            for _ in range(queries + 50)]
    rows = 0
    for subject, day in asks[:50]:
        catalog.facts_as_of(store, day, subject=subject)
    times = []
    gc.disable()
    for subject, day in asks[50:]:
        t = time.perf_counter()
        rows += len(catalog.facts_as_of(store, day, subject=subject))
        times.append(time.perf_counter() - t)
    gc.enable()
    store.close()
    times.sort()
    return statistics.median(times) * 1000, times[int(len(times) * 0.95)] * 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--facts", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    out: dict[int, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as d:
        for depth in DEPTHS:
            path = Path(d) / f"depth{depth}.kgl"
            with KgliteStore(path, durable="off") as store:
                write_bulk(store, [table(args.facts, depth, args.seed)])
            out[depth] = p50_ms(path, max(1, args.facts // depth), args.queries, args.seed)
    print(f"facts_as_of catalog, {args.facts:,} facts per store, {args.queries:,} calls each")
    print(f"{'versions per subject':>22} {'p50 ms':>8} {'p95 ms':>8}")
    for depth, (p50, p95) in out.items():
        print(f"{depth:>22} {p50:8.4f} {p95:8.4f}")
    p50s = [p for p, _ in out.values()]
    ratio = max(p50s) / min(p50s)
    print(f"max / min p50: {ratio:.2f}x (target <= {TARGET_RATIO:g}x: {'met' if ratio <= TARGET_RATIO else 'NOT met'})")
    print("load average", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
