"""kglite's own calls on the frames a bulk load hands it: the engine's share of a load, to set the load against.

bench_store's synthetic facts, staged and framed exactly as `write_bulk` frames them (`FactTable.add_many`,
`bulk.table_frames`, `bulk.pandas_frame`), part by part; an entity an earlier part wrote is left out of later parts,
as `plan_part` leaves it out. Timed: `add_nodes` and `add_relationships` of every part, the index builds the
embedded schema keeps, and the save. Not timed: generating, staging and framing (chronokg's share). Runs in its
own process (`bench_store.py` starts it), so its peak RSS is the engine's graph and one part's frames alone.

    python benchmarks/kglite_alone.py --facts 1000000     # prints one JSON object
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))


def run(n: int, seed: int, parts_of: int) -> dict[str, Any]:
    import kglite
    from bench_store import RELEASE, SOURCE, chunked, synthetic_rows

    from chronokg.graph import bulk, schema
    from chronokg.graph.facts import FactTable

    warnings.filterwarnings("ignore", category=kglite.MappedFallbackWarning)
    g = kglite.KnowledgeGraph()
    seen: dict[str, set[str]] = {}
    wall = cpu = 0.0

    def timed(fn: Any) -> None:
        nonlocal wall, cpu
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall += time.perf_counter() - w
        cpu += time.process_time() - c

    for part in chunked(synthetic_rows(n, seed), parts_of):
        table = FactTable()
        table.source(SOURCE)
        subjects, predicates, objects, starts, ends = (list(c) for c in zip(*part, strict=True))
        table.add_many(subjects, predicates, objects=objects, valid_from=starts, valid_to=ends, known_from=RELEASE,
                       source_id=SOURCE.id, source_kind=SOURCE.kind)
        del part, subjects, predicates, objects, starts, ends
        frames, edges = bulk.table_frames(table)
        del table
        nodes = []
        for f in frames:
            old = seen.setdefault(f.label, set())
            ids = [i for i in f.ids if i not in old] if f.label != schema.FACT else f.ids
            keep = set(ids)
            cols = {k: [x for i, x in zip(f.ids, v, strict=True) if i in keep] for k, v in f.columns.items()}
            if f.label != schema.FACT:
                old.update(ids)
            native = {k: v for k, v in cols.items() if bulk.native(v)}
            if ids:
                nodes.append((f.label, bulk.pandas_frame({"id": ids, **native})))
        rels = [(e, bulk.pandas_frame({bulk.SRC: e.columns[0], bulk.DST: e.columns[1]})) for e in edges
                if e.columns is not None]
        del frames, edges
        for label, frame in nodes:
            timed(lambda f=frame, lb=label: g.add_nodes(f, lb, "id", "id", on_invalid="error"))
        for e, frame in rels:
            timed(lambda f=frame, e=e: g.add_relationships(f, e.rel, e.src_label, bulk.SRC, e.dst_label, bulk.DST,
                                                           on_invalid="error"))
        del nodes, rels
    for ddl in schema.embedded_ddl():
        timed(lambda d=ddl: g.cypher(d, timeout_ms=0))
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as d:
        timed(lambda: g.save(os.path.join(d, "alone.kgl")))
    return {"facts": n, "wall_s": wall, "cpu_s": cpu, "peak_rss_mib": high_water_mib()}


def high_water_mib() -> float:
    """This process's peak RSS (`VmHWM`: of its own address space; `ru_maxrss` keeps the parent's across exec)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--facts", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--batch-facts", type=int, default=100_000)
    args = ap.parse_args()
    print(json.dumps(run(args.facts, args.seed, args.batch_facts)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
