"""Where one fact's load time and bytes go, per component, on kglite's calls alone.

    python benchmarks/profile_fact.py                  # 1,000,000 facts
    python benchmarks/profile_fact.py --facts 200000   # quicker

bench_store's synthetic facts, staged and framed as `write_bulk` frames them. Each
component is measured on its own fresh graph against a base of the same graph without
it: the `Fact` node (id only), each property, each edge, each index or constraint,
the interval sidecar (built from the load's columns, `interval_feed`), and the save
of the whole graph under the schema before and after the embedded engine's
omissions (`schema.EMBEDDED_OMITS`). Costs are per fact: CPU µs and bytes (the
engine's own heap count for nodes, properties and edges, RSS growth for an index,
bytes on disk for the save and the sidecar).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import kglite

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def rss() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, float]:
    """(CPU s, RSS growth in bytes) of `fn(*args, **kwargs)`."""
    gc.collect()
    r, c = rss(), time.process_time()
    fn(*args, **kwargs)
    return time.process_time() - c, rss() - r


def heap(g: Any) -> int:
    """The engine's own count of its graph's bytes: property columns and topology (indexes not included)."""
    info = g.graph_info()
    return int(info["columnar_heap_bytes"]) + int(info["topology_heap_bytes"])


def main() -> int:
    from bench_store import RELEASE, SOURCE, synthetic_rows

    from chronokg.graph import bulk, interval_index, schema
    from chronokg.graph.facts import FactTable
    from chronokg.graph.interval_feed import SidecarFeed
    from chronokg.graph.schema import ddl_name

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--facts", type=int, default=1_000_000)
    n = ap.parse_args().facts

    table = FactTable()
    table.source(SOURCE)
    subjects, predicates, objects, starts, ends = (list(c) for c in zip(*synthetic_rows(n, 42), strict=True))
    table.add_many(subjects, predicates, objects=objects, valid_from=starts, valid_to=ends, known_from=RELEASE,
                   source_id=SOURCE.id, source_kind=SOURCE.kind)
    del subjects, predicates, objects, starts, ends
    frames, edges = bulk.table_frames(table)
    fact = next(f for f in frames if f.label == schema.FACT)
    others = [f for f in frames if f.label != schema.FACT]
    columns = {k: v for k, v in fact.columns.items() if bulk.native(v)}
    ids = bulk.pandas_frame({"id": fact.ids})
    rows: list[tuple[str, str, float, float]] = []  # component, in which schema, CPU s, bytes

    def base(props: tuple[str, ...] = ()) -> Any:
        g = kglite.KnowledgeGraph()
        for f in others:
            g.add_nodes(bulk.pandas_frame({"id": f.ids, **f.columns}), f.label, "id", "id")
        g.add_nodes(bulk.pandas_frame({"id": fact.ids, **{k: columns[k] for k in props}}), schema.FACT, "id", "id")
        return g

    g = kglite.KnowledgeGraph()
    for f in others:
        g.add_nodes(bulk.pandas_frame({"id": f.ids, **f.columns}), f.label, "id", "id")
    h = heap(g)
    cpu, _ = timed(g.add_nodes, ids, schema.FACT, "id", "id")
    rows.append(("Fact node (id only)", "both", cpu, heap(g) - h))
    del g
    for key in columns:
        frame = bulk.pandas_frame({"id": fact.ids, key: columns[key]})
        g = kglite.KnowledgeGraph()
        c0, _ = timed(g.add_nodes, ids, schema.FACT, "id", "id")
        m0 = heap(g)
        del g
        g = kglite.KnowledgeGraph()
        c1, _ = timed(g.add_nodes, frame, schema.FACT, "id", "id")
        rows.append((f"property {key}", "both", c1 - c0, heap(g) - m0))
        del g, frame
    g = base()
    for e in edges:
        assert e.columns is not None
        frame = bulk.pandas_frame({bulk.SRC: e.columns[0], bulk.DST: e.columns[1]})
        h = heap(g)
        cpu, _ = timed(g.add_relationships, frame, e.rel, e.src_label, bulk.SRC, e.dst_label, bulk.DST)
        rows.append((f"edge {e.rel}", "both", cpu, heap(g) - h))
    del g
    omitted = set(schema.EMBEDDED_OMITS)
    fact_ddl = [d for d in [*schema.constraint_ddl(), *schema.index_ddl()] if "(f:Fact)" in d or "(n:Fact)" in d]
    g = base(tuple(columns))
    for ddl in fact_ddl:
        name = ddl_name(ddl)
        cpu, mem = timed(g.cypher, ddl, timeout_ms=0)
        rows.append((f"index {name}", "before" if name in omitted else "both", cpu, mem))
    del g

    def sidecar() -> None:
        feed = SidecarFeed({})
        feed.plan(bulk.Plan(frames=[fact]))
        with tempfile.TemporaryDirectory() as d:
            cols = feed.finish(kglite.KnowledgeGraph())
            assert cols is not None
            path = Path(d) / "s.kgl"
            sizes["sidecar"] = interval_index.write_unstamped(path, cols).stat().st_size

    sizes: dict[str, int] = {}
    cpu, _ = timed(sidecar)
    rows.append(("interval sidecar (build + write)", "both", cpu, sizes["sidecar"]))
    for which in ("before", "after"):
        g = base(tuple(columns))
        for e in edges:
            assert e.columns is not None
            g.add_relationships(bulk.pandas_frame({bulk.SRC: e.columns[0], bulk.DST: e.columns[1]}), e.rel,
                                e.src_label, bulk.SRC, e.dst_label, bulk.DST)
        for ddl in [*schema.constraint_ddl(), *schema.index_ddl()]:
            if which == "before" or ddl_name(ddl) not in omitted:
                g.cypher(ddl, timeout_ms=0)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "x.kgl")
            cpu, _ = timed(g.save, path)
            rows.append((f"save, schema {which}", which, cpu, os.path.getsize(path)))
            cpu, _ = timed(kglite.load, path)
            rows.append((f"(open read-only, indexes built, schema {which})", which, cpu, 0))
            cpu, _ = timed(kglite.load, path, defer_index_rebuild=True)
            rows.append(("(open read-only, indexes deferred)", which, cpu, 0))
        del g
    print(f"{n:,} facts; per fact: CPU µs and bytes (engine heap for nodes, properties, edges; "
          "RSS growth for indexes; on disk for the save and the sidecar)")
    print(f"{'component':<44} {'schema':>7} {'CPU µs':>8} {'bytes':>8}")
    totals = {"before": 0.0, "after": 0.0}
    for name, which, cpu, mem in rows:
        print(f"{name:<44} {which:>7} {cpu / n * 1e6:8.2f} {mem / n:8.1f}")
        if not name.startswith("("):
            for k in totals:
                if which in (k, "both"):
                    totals[k] += cpu
    for k, v in totals.items():
        print(f"{'total, schema ' + k:<44} {'':>7} {v / n * 1e6:8.2f}   ({n / v:,.0f} facts/s of CPU)")
    print("load average", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
