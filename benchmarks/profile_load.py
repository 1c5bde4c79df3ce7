"""Where a bulk load's time goes: `bench_store.py`'s synthetic load, timed stage by stage.

Wraps the stages of `graph.bulk.write_bulk` (and the staged kglite graph's methods) with
timers, runs one load of N synthetic facts into a fresh file-backed store, and prints a
table: stage, wall seconds, CPU seconds, share of the load's wall time. Generating the
synthetic rows is timed apart and is not part of the load.

    python benchmarks/profile_load.py --facts 1000000
    python benchmarks/profile_load.py --facts 1000000 --sidecar cypher   # the sidecar by a Cypher read, as before

Peak RSS is the process's: compare `--sidecar columns` (the default: built from the
load's own columns) and `--sidecar cypher` (a read of every current fact after the save)
as two runs, one after the other.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kglite
from bench_store import RELEASE, SOURCE, chunked, peak_rss_mib, synthetic_rows

from chronokg.graph import bulk, bulk_state, interval_index
from chronokg.graph.facts import FactTable
from chronokg.graph.kglite_store import KgliteStore

WALL: dict[str, float] = defaultdict(float)  # each stage's own time: what ran inside a nested stage is its own
CPU: dict[str, float] = defaultdict(float)
_LOCAL = threading.local()  # each thread's stack of open stages (the next part is staged in a second thread)
PEAK: dict[str, float] = {}  # the process's peak RSS (MiB) when a stage raised it, by the innermost stage
KEPT: dict[str, float] = defaultdict(float)  # RSS a stage left behind (bytes, its own: nested stages' apart)
RISE: dict[str, float] = defaultdict(float)  # the most RSS rose over its start during one call (bytes)
_PAGE = os.sysconf("SC_PAGE_SIZE")
_OPEN: list[list[int]] = []  # [high] of every open stage, raised by the sampler


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * _PAGE


def _sample() -> None:
    """Every 5 ms, the RSS into each open stage's high (kglite's calls release the GIL, so this runs meanwhile)."""
    while True:
        now = rss_bytes()
        for cell in list(_OPEN):
            if now > cell[0]:
                cell[0] = now
        time.sleep(0.005)


@contextmanager
def stage(name: str) -> Iterator[None]:
    if not hasattr(_LOCAL, "stack"):
        _LOCAL.stack = []
    STACK: list[str] = _LOCAL.stack
    w, c = time.perf_counter(), time.thread_time()  # this thread's CPU: the other one's is its own stages'
    STACK.append(name)
    before = peak_rss_mib()
    start = rss_bytes()
    cell = [start]
    _OPEN.append(cell)
    try:
        yield
    finally:
        STACK.pop()
        del _OPEN[next(i for i, c in enumerate(_OPEN) if c is cell)]  # by identity: cells may be equal
        end = rss_bytes()
        cell[0] = max(cell[0], end)
        after = peak_rss_mib()
        if after > before and not any(v >= after for v in PEAK.values()):  # an inner stage has it already
            PEAK[name] = after
        dw, dc = time.perf_counter() - w, time.thread_time() - c
        WALL[name] += dw
        CPU[name] += dc
        KEPT[name] += end - start
        RISE[name] = max(RISE[name], cell[0] - start)
        if STACK:
            WALL[STACK[-1]] -= dw
            CPU[STACK[-1]] -= dc
            KEPT[STACK[-1]] -= end - start


def wrap(module: Any, attr: str, name: str) -> None:
    fn = getattr(module, attr)

    def timed(*args: Any, **kwargs: Any) -> Any:
        with stage(name):
            return fn(*args, **kwargs)

    setattr(module, attr, timed)


class TimedGraph:
    """The staged kglite graph, each engine call timed under a stage named for what it does."""

    def __init__(self, graph: Any) -> None:
        self._g = graph

    def __getattr__(self, attr: str) -> Any:
        fn = getattr(self._g, attr)
        if not callable(fn):
            return fn

        def timed(*args: Any, **kwargs: Any) -> Any:
            name = f"kglite {attr}"
            if attr == "cypher":
                text = str(args[0]).lstrip().upper()
                name = ("kglite index DDL (drop + rebuild)" if text.startswith(("CREATE", "DROP", "SHOW"))
                        else "kglite cypher (lookups, updates)")
            with stage(name):
                return fn(*args, **kwargs)

        return timed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--facts", type=int, default=1_000_000)
    ap.add_argument("--batch-facts", type=int, default=100_000)
    ap.add_argument("--chunk-facts", type=int, default=0, help="bulk.CHUNK_FACTS (0: as it is)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--per-fact", action="store_true", help="stage with FactTable.add per fact (not add_many)")
    ap.add_argument("--prefetch", action="store_true",
                    help="stage the next part in a thread while kglite loads this one (bulk.PREFETCH; off by default)")
    ap.add_argument("--sidecar", choices=("columns", "cypher"), default="columns",
                    help="build the interval sidecar from the load's columns, or by a Cypher read (the baseline)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore", category=kglite.MappedFallbackWarning)
    for attr, name in (("table_frames", "table_frames (columns -> frames)"), ("stored_nodes", "lookups of stored ids"),
                       ("pandas_frame", "pandas frames"), ("_frame", "pandas frames"),
                       ("plan_part", "plan_part (validation)"), ("_trim", "malloc_trim (freed heap back to the OS)")):
        if hasattr(bulk, attr):  # `_frame`: the name before `bulk_frames` (a profile of the earlier code)
            wrap(bulk, attr, name)
    if args.chunk_facts and hasattr(bulk, "CHUNK_FACTS"):
        bulk.CHUNK_FACTS = args.chunk_facts
    threading.Thread(target=_sample, daemon=True).start()
    bulk.PREFETCH = args.prefetch
    if args.sidecar == "cypher":
        bulk._sidecar = lambda feed, graph: None
    wrap(bulk, "_sidecar", "interval sidecar (from load columns)")
    wrap(interval_index, "refresh", "interval sidecar (Cypher read)")
    wrap(bulk_state, "stored_nodes", "lookups of stored ids")
    original: Callable[..., Any] = KgliteStore.staged

    @contextmanager
    def staged(self: KgliteStore) -> Iterator[Any]:
        with stage("copy + save + publish"), original(self) as graph:
            yield TimedGraph(graph)

    KgliteStore.staged = staged  # type: ignore[method-assign]

    workdir = Path(tempfile.mkdtemp(prefix="profile_load_", dir=args.dir))
    path = workdir / "bench.kgl"
    try:
        store = KgliteStore(path, durable="off")

        def parts() -> Iterator[FactTable]:
            rows = chunked(synthetic_rows(args.facts, args.seed), args.batch_facts)
            while True:
                with stage("generate synthetic rows (not load)"):
                    part = next(rows, None)
                if part is None:
                    return
                with stage("FactTable staging"):
                    table = FactTable()
                    table.source(SOURCE)
                    if args.per_fact:
                        for s, p, o, vf, vt in part:
                            table.add(s, p, object=o, valid_from=vf, valid_to=vt, known_from=RELEASE,
                                      source_id=SOURCE.id, source_kind=SOURCE.kind)
                    else:
                        subjects, predicates, objects, starts, ends = (list(c) for c in zip(*part, strict=True))
                        table.add_many(subjects, predicates, objects=objects, valid_from=starts, valid_to=ends,
                                       known_from=RELEASE, source_id=SOURCE.id, source_kind=SOURCE.kind)
                yield table

        w0, c0 = time.perf_counter(), time.process_time()
        bulk.write_bulk(store, parts())
        with stage("close"):
            store.close()
        total_w, total_c = time.perf_counter() - w0, time.process_time() - c0
        gen = "generate synthetic rows (not load)"
        load_w, load_c = total_w - WALL[gen], total_c - CPU[gen]
        own, own_c = WALL, CPU
        print(f"{args.facts:,} facts, batches of {args.batch_facts:,}, sidecar by {args.sidecar}, "
              f"{'next part staged in a thread' if args.prefetch else 'no prefetch'}; "
              f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        print(f"end to end, generation included: {total_w:.1f} s wall, {total_c:.1f} s CPU (both threads)")
        print(f"load end to end {load_w:.1f} s wall ({args.facts / load_w:,.0f} facts/s), {load_c:.1f} s CPU "
              f"({args.facts / load_c:,.0f} facts/s of CPU); peak RSS {peak_rss_mib():,.0f} MiB")
        print("CPU µs a fact: the stage's own CPU; kept B a fact: RSS it left behind; rise MiB: the most RSS rose over "
              "its start in one call")
        print(f"{'stage':<40} {'wall s':>8} {'CPU s':>8} {'share':>7} {'CPU µs/fact':>11} {'kept B/fact':>11} "
              f"{'rise MiB':>9} {'peak RSS raised to':>19}")
        for name in sorted(own, key=lambda k: -own[k]):
            share = "" if name == gen else f"{own[name] / load_w:7.1%}"
            peak = f"{PEAK[name]:,.0f} MiB" if name in PEAK else ""
            print(f"{name:<40} {own[name]:8.2f} {own_c[name]:8.2f} {share:>7} {own_c[name] / args.facts * 1e6:11.2f} "
                  f"{KEPT[name] / args.facts:11.1f} {RISE[name] / 2**20:9.0f} {peak:>19}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
