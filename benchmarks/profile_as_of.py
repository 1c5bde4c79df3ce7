"""Where one `facts_as_of` call through the catalog spends its time (the target: within 6x the plain-Python
floor), on a store built by bench_store.py (`--keep`; pass its path with `--reuse` and the same `--facts`/`--seed`).

Prints one table per run: the plain-Python floor, the catalog call as a user makes it, the same call
along the previous path (validated parameters, bisect over the names, validated rows; replicated below, so
before and after are measured in the same process on the same queries), and each step of that path on its
own; then cProfile's top functions over the calls. The point reads `facts_as_of` with a predicate, `timeline`
and `two_hop_as_of` are timed the same way. Findings: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import gc
import io
import os
import pstats
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_store

from chronokg.graph import interval_reads
from chronokg.graph.kglite_store import KgliteStore
from chronokg.queries import catalog, direct
from chronokg.queries.catalog import AS_OF, AsOfParams
from chronokg.queries.rows import FactRow


def previous_rows(ix: interval_reads.IntervalIndex, subject: str, day: dt.date,
                predicate: str | None = None) -> list[dict[str, Any]]:
    """The previous `AsOfIndex.facts_as_of`, verbatim in effect: bisect over the subject names, numpy
    slices turned into lists per column, numpy offsets per string, dicts sorted by a key."""
    import bisect

    names = ix.names("subjects")
    i = bisect.bisect_left(names, subject)
    if i >= len(names) or names[i] != subject:
        return []
    code = i
    rows_of = _ROWS_OF[id(ix)]
    lo, hi = rows_of[code], rows_of[code + 1]
    t = day.toordinal()
    vf, vt, preds = ix.vf[lo:hi].tolist(), ix.vt[lo:hi].tolist(), ix.p[lo:hi].tolist()
    want = -1
    if predicate is not None:
        pn = ix.names("predicates")
        j = bisect.bisect_left(pn, predicate)
        want = j if j < len(pn) and pn[j] == predicate else -2
    if want == -2:
        return []
    hits = [k for k in range(hi - lo) if vf[k] <= t < vt[k] and (want < 0 or preds[k] == want)]
    if not hits:
        return []
    c = ix._cols
    vals, lits, objs, precs, srcs, known = (c[k][lo:hi].tolist()
                                            for k in ("v", "lit", "is_object", "prec", "src", "known_from"))
    ids_text, ids_off = _TEXTS[id(ix)]["ids"]
    sc_text, sc_off = _TEXTS[id(ix)]["subject_captions"]
    vc_text, vc_off = _TEXTS[id(ix)]["value_captions"]

    def cut(text: str, off: Any, k: int) -> str:
        x, y = off[k: k + 2].tolist()
        return text[x:y]

    sub_has, val_has = c["subject_captions_has"], c["value_captions_has"]
    caption = cut(sc_text, sc_off, code) if sub_has[code] else None
    names_p, names_v = ix.names("predicates"), ix.names("values")
    precisions, sources = ix.names("precisions"), ix.names("sources")
    out = []
    for k in hits:
        start, end, vcode, lcode, is_obj = vf[k], vt[k], vals[k], lits[k], objs[k]
        out.append({
            "id": cut(ids_text, ids_off, lo + k), "subject": subject, "subject_caption": caption,
            "predicate": names_p[preds[k]], "object": names_v[vcode] if is_obj else None,
            "object_caption": cut(vc_text, vc_off, vcode) if is_obj and val_has[vcode] else None,
            "value": None if lcode < 0 else interval_reads._literal(int(c["lit_kind"][lcode]),
                                                                    ix.names("literals")[lcode]),
            "valid_from": None if start == interval_reads.NO_START else dt.date.fromordinal(start),
            "valid_to": None if end == interval_reads.NO_END else dt.date.fromordinal(end),
            "precision": precisions[precs[k]],
            "known_from": None if known[k] == interval_reads.NO_START else dt.date.fromordinal(known[k]),
            "known_to": None, "source_id": sources[srcs[k]],
        })
    out.sort(key=lambda r: (r["predicate"], r["valid_from"] is None, r["valid_from"] or dt.date.min, r["id"]))
    return out


_ROWS_OF: dict[int, list[int]] = {}
_TEXTS: dict[int, dict[str, tuple[str, Any]]] = {}


def prepare_previous(ix: interval_reads.IntervalIndex) -> None:
    import numpy as np

    _ROWS_OF[id(ix)] = np.searchsorted(ix.s, np.arange(len(ix.names("subjects")) + 1, dtype=ix.s.dtype)).tolist()
    _TEXTS[id(ix)] = {name: (ix._cols[f"{name}_blob"].tobytes().decode(), ix._cols[f"{name}_offsets"])
                      for name in ("ids", "subject_captions", "value_captions")}


def previous_catalog(store: KgliteStore, day: dt.date, subject: str, predicate: str | None = None) -> list[FactRow]:
    """The previous catalog call: validated parameters, the spec's dispatch, validated rows."""
    params = AS_OF.validate(AsOfParams(date=day, subject=subject, predicate=predicate))
    index = store.intervals()
    assert index is not None and params.subject is not None
    return [FactRow.model_validate(r) for r in previous_rows(index, params.subject, params.date, params.predicate)]


def per_call_us(fn: Callable[[Any], object], queries: Sequence[Any], rounds: int = 3) -> float:
    """Mean CPU microseconds per call over the queries (best of `rounds` passes, the cyclic GC paused): CPU
    time, not wall time, so that other processes on a shared machine do not count (their cache traffic does)."""
    best = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(rounds):
            t0 = time.process_time_ns()
            for q in queries:
                fn(q)
            best = min(best, (time.process_time_ns() - t0) / 1e3 / len(queries))
    finally:
        gc.enable()
    return best


def p50_us(fn: Callable[[Any], object], queries: Sequence[Any]) -> float:
    """Median of single-call latencies (how bench_store.py reports them)."""
    times = []
    gc.collect()
    gc.disable()
    try:
        for q in queries:
            t0 = time.perf_counter_ns()
            fn(q)
            times.append((time.perf_counter_ns() - t0) / 1e3)
    finally:
        gc.enable()
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--reuse", type=Path, required=True, help="a store bench_store.py built (--keep)")
    ap.add_argument("--facts", type=int, required=True, help="the --facts it was built with")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--profile-top", type=int, default=18)
    args = ap.parse_args(argv)
    n_subjects = max(1, args.facts // bench_store.FACTS_PER_SUBJECT)
    rng = random.Random(args.seed + 7)
    qs = [(bench_store.entity(rng.randrange(n_subjects)), bench_store.day(rng)) for _ in range(args.calls)]
    print(f"building the Python index of {args.facts:,} facts ...", file=sys.stderr, flush=True)
    py = bench_store.PythonIndex(bench_store.synthetic_rows(args.facts, args.seed))
    pred_qs = [(s, t, rng.choice(sorted(py.by_subject[s]))) for s, t in qs]
    store = KgliteStore(args.reuse, read_only=True)
    index = store.intervals()
    if index is None:
        print(f"{args.reuse}: no current interval sidecar", file=sys.stderr)
        return 1
    prepare_previous(index)
    a = index.as_of()
    for s, t in qs[:200]:  # the answers must agree, or the timings compare nothing
        new = catalog.facts_as_of(store, t, subject=s)
        assert new == previous_catalog(store, t, s), (s, t)
        assert [(r.predicate, r.object) for r in new] == py.facts_as_of(s, t), (s, t)
    for s, t, p in pred_qs[:200]:
        assert catalog.facts_as_of(store, t, subject=s, predicate=p) == previous_catalog(store, t, s, p)
    raw = AS_OF.validate(AsOfParams(date=qs[0][1], subject=qs[0][0]))

    steps: list[tuple[str, Callable[[Any], object]]] = [
        ("py floor (PythonIndex.facts_as_of)", lambda q: py.facts_as_of(q[0], q[1])),
        ("catalog.facts_as_of (now)", lambda q: catalog.facts_as_of(store, q[1], subject=q[0])),
        ("catalog.facts_as_of (previous path)", lambda q: previous_catalog(store, q[1], q[0])),
        ("  previous: AsOfParams(...) validation", lambda q: AsOfParams(date=q[1], subject=q[0])),
        ("  previous: spec dispatch (validate isinstance + store.intervals())",
         lambda q: (AS_OF.validate(raw), store.intervals())),
        ("  previous: subject lookup (bisect over the names)",
         lambda q: __import__("bisect").bisect_left(index.names("subjects"), q[0])),
        ("  previous: direct hook, rows as dicts", lambda q: previous_rows(index, q[0], q[1])),
        ("  previous: + FactRow.model_validate per row",
         lambda q: [FactRow.model_validate(r) for r in previous_rows(index, q[0], q[1])]),
        ("  now: subject lookup (dict)", lambda q: a.subject_code.get(q[0])),
        ("  now: direct hook, rows as tuples", lambda q: a.facts_as_of(q[0], q[1])),
        ("  now: + trusted FactRow construction",
         lambda q: direct.fact_rows(a.facts_as_of(q[0], q[1]))),
    ]
    pred_steps: list[tuple[str, Callable[[Any], object]]] = [
        ("py floor", lambda q: py.facts_as_of(q[0], q[1], q[2])),
        ("catalog (now)", lambda q: catalog.facts_as_of(store, q[1], subject=q[0], predicate=q[2])),
        ("catalog (previous path)", lambda q: previous_catalog(store, q[1], q[0], q[2])),
    ]
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"facts_as_of at {args.facts:,} facts, {args.calls:,} random subjects, load average {load}")
    print(f"{'step (mean CPU us per call, best of 3 passes)':66s} {'us/call':>8s} {'x floor':>8s}")
    print("-" * 84)
    floor = 0.0
    for name, fn in steps:
        us = per_call_us(fn, qs)
        floor = floor or us
        print(f"{name:66s} {us:8.2f} {us / floor:8.2f}")
    print("\nwith a predicate (p50 of single calls, as bench_store.py reports)")
    floor = 0.0
    for name, fn in pred_steps:
        us = p50_us(fn, pred_qs)
        floor = floor or us
        print(f"{name:66s} {us:8.2f} {us / floor:8.2f}")
    print("\np50 of single calls, no predicate")
    floor = 0.0
    for name, fn in steps[:3]:
        us = p50_us(fn, qs)
        floor = floor or us
        print(f"{name:66s} {us:8.2f} {us / floor:8.2f}")
    # Memory locality: the same calls on random subjects, and on one subject repeated (everything it
    # touches stays in cache). The gap is what the size of the store costs each call.
    same = [qs[0]] * len(qs)
    print(f"\n{'caches: random subjects vs one subject repeated (CPU us)':66s} {'random':>8s} {'repeat':>8s}")
    for name, fn in (*steps[:3], steps[8], steps[9]):
        print(f"{name:66s} {per_call_us(fn, qs):8.2f} {per_call_us(fn, same):8.2f}")
    for label, fn in (("now", lambda q: catalog.facts_as_of(store, q[1], subject=q[0])),
                      ("previous path", lambda q: previous_catalog(store, q[1], q[0]))):
        prof = cProfile.Profile()
        prof.enable()
        for q in qs:
            fn(q)
        prof.disable()
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(args.profile_top)
        print(f"\ncProfile, {len(qs):,} calls, {label} (tottime: the function's own time)")
        print("\n".join(line for line in out.getvalue().splitlines()[4:] if line.strip()))
    store.close()
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
