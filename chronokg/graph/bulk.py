"""Bulk loads: the embedded engine's native loaders, into a staged copy published atomically.

`write_bulk(store, parts)` brings the store to the merged state of every part
(a `GraphBatch` or a columnar `FactTable`), with the guarantees of
`writer.write_batch`: a value that conflicts with the store or an earlier part is
an error naming both records, and nothing is written; what changed is reported
from content; a second load of the same input changes nothing.

On kglite the parts go into a copy of the graph (`KgliteStore.staged`: a
copy-on-write copy, O(1)) through `add_nodes` / `add_relationships` (columns
handed to the engine's Rust loader as pandas frames), and the copy is saved as
the store's new checkpoint in one atomic rename. A load that fails or is killed
leaves the file as it was, and readers (which load the last checkpoint) see
the store before or after, never part of it. On other engines the parts are
written with `writer.write_batch` (batched `UNWIND` statements, one transaction).

Each part is validated whole (conflicts, missing endpoints) before anything of
it touches the copy, and reads see the earlier parts, so parts merge with each
other by the same rules as with the store. A `FactTable` larger than
`CHUNK_FACTS` goes in slices, so what the load holds beside the graph is one
slice's frames (and the compact columns of the sidecar and the per-load mirror).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from chronokg.errors import StoreError
from chronokg.graph import prior, schema
from chronokg.graph.batch import GraphBatch, conflict_error
from chronokg.graph.bulk_frames import (
    DST,
    SRC,
    Edges,
    Frame,
    batch_frames,
    kinds_of,
    native,
    pandas_frame,
    table_frames,
    take,
    valued,
)
from chronokg.graph.bulk_state import LoadState
from chronokg.graph.facts import FactTable
from chronokg.graph.interval_feed import SidecarFeed
from chronokg.graph.merge import ORIGIN, Conflict, Policy, merge
from chronokg.graph.store import GraphStore, Params, Row
from chronokg.graph.writer import (
    CHUNK,
    WriteReport,
    gc_paused,
    stored_conflict,
    stored_edges,
    stored_nodes,
    write_batch,
)
from chronokg.progress import Progress

if TYPE_CHECKING:
    from chronokg.graph.kglite_store import KgliteStore

Part = GraphBatch | FactTable
EdgeKey = tuple[str, str, str]


@dataclass
class Plan:
    """What one part adds to the graph, after validation: new rows as frames, updates as Cypher rows."""

    frames: list[Frame] = field(default_factory=list)
    updates: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)  # (label, [{id, props}])
    edges: list[Edges] = field(default_factory=list)
    edge_updates: list[tuple[Edges, list[dict[str, Any]]]] = field(default_factory=list)

    def size(self) -> int:
        return (sum(len(f.ids) for f in self.frames) + sum(len(u) for _, u in self.updates)
                + sum(len(e) for e in self.edges) + sum(len(u) for _, u in self.edge_updates))


class GraphReader:
    """A staged kglite graph as the read side of a `GraphStore` (what `writer.stored_nodes` needs)."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph

    def run(self, cypher: str, params: Params | None = None) -> list[Row]:
        rows: list[Row] = self.graph.cypher(cypher, params=dict(params or {})).to_list()
        return rows

    def count(self, label: str) -> int:
        return int(self.graph.node_type_counts().get(label, 0))


# --- validation: what is new, what changes, what conflicts --------------------------------------------------


def plan_part(reader: GraphReader, frames: list[Frame], edges: list[Edges], policy: Policy,
              report: WriteReport, sources: dict[str, Any] | None = None,
              state: LoadState | None = None) -> Plan:
    """Merge a part's frames into what the graph holds; conflicts raise before anything is written. `sources`:
    the releases the load stages (this part's are added), for what a release overwrites (`graph.prior`)."""
    import numpy as np

    plan = Plan()
    sources = {} if sources is None else sources
    state = state or LoadState()
    for frame in frames:
        if frame.label == schema.SOURCE:
            sources.update(prior.sources_of(frame.row(i) for i in range(len(frame.ids))))
    events: Counter[str] = Counter()
    whole: dict[str, list[str]] = {}  # label -> its frame's ids, where every one of them is new
    fresh_frames: dict[str, Frame] = {}
    staged_frames: dict[str, Frame] = {}
    for frame in frames:
        n = len(frame.ids)
        keep: Any = None  # None: every row is new
        updates = []
        if not frame.columns:  # ids only (entities named again by later facts): a stored one changes nothing
            known = state.known(reader, frame.label, frame.ids)
            if known.any():
                keep = np.flatnonzero(~known)
        else:
            stored = state.stored(reader, frame.label, frame.ids)
            if stored:
                keep = []
                cols = list(frame.columns.values())
                has = valued(cols, n)
                for i, nid in enumerate(frame.ids):
                    old = stored.get(nid)
                    if old is None:
                        keep.append(i)
                        continue
                    if not has[i]:
                        continue  # only an id: merging it changes nothing (an entity named again by a later fact)
                    row = frame.row(i)
                    outcome = merge(frame.label, nid, old, row, policy)
                    if outcome.conflicts:
                        raise stored_conflict(outcome.conflicts[0], row, old)
                    prior.note(frame.label, old, row, outcome, policy, prior.release_of(row, sources))
                    if outcome.changes:
                        updates.append({"id": nid, "props": outcome.changes})
                    events.update(outcome.events)
        fresh = frame if keep is None or len(keep) == n else take(frame, keep)
        if fresh is frame:
            whole[frame.label] = frame.ids
        staged_frames[frame.label], fresh_frames[frame.label] = frame, fresh
        report.created[frame.label] = report.created.get(frame.label, 0) + len(fresh.ids)
        report.updated[frame.label] = report.updated.get(frame.label, 0) + len(updates)
        report.unchanged[frame.label] = report.unchanged.get(frame.label, 0) + n - len(fresh.ids) - len(updates)
        if fresh.ids:
            plan.frames.append(fresh)
        if updates:
            plan.updates.append((frame.label, updates))
    for k, v in events.items():
        report.events[k] = report.events.get(k, 0) + v
    sets: dict[tuple[str, str], set[str]] = {}

    def ids_of(kind: str, label: str) -> set[str]:
        """The ids of a label's frame ("staged") or of its new rows ("fresh"), as a set built once."""
        if (kind, label) not in sets:
            f = (staged_frames if kind == "staged" else fresh_frames).get(label)
            sets[kind, label] = set(f.ids) if f is not None else set()
        return sets[kind, label]

    for e in edges:
        if e.columns is not None:
            src, dst = e.columns
            if src is whole.get(e.src_label) or ids_of("fresh", e.src_label).issuperset(src):
                # Every source node is new (a first load): every edge is new, nothing to look up.
                plan.edges.append(e)
                report.edges_created[e.rel] = report.edges_created.get(e.rel, 0) + len(src)
                continue
            e = Edges(e.rel, e.src_label, e.dst_label, {(s, d): {} for s, d in zip(src, dst, strict=True)}, True)
        new_src = ids_of("fresh", e.src_label)
        if not e.known:
            _check_endpoints(reader, e, {label: ids_of("staged", label) for label in (e.src_label, e.dst_label)})
        created = {sd: p for sd, p in e.pairs.items() if sd[0] in new_src}
        maybe = [sd for sd in e.pairs if sd[0] not in new_src]
        stored_e = stored_edges(reader, e.rel, e.src_label, e.dst_label, maybe) if maybe else {}
        changed = []
        for sd in maybe:
            old = stored_e.get(sd)
            if old is None:
                created[sd] = e.pairs[sd]
                continue
            changes = {}
            for k, v in e.pairs[sd].items():
                if old.get(k) is None:
                    changes[k] = v
                elif old[k] != v:
                    raise conflict_error(Conflict(e.rel, f"{sd[0]} -> {sd[1]}", k, old[k], v), None, None,
                                         "in the store")
            if changes:
                changed.append({"s": sd[0], "d": sd[1], "p": changes})
        if created:
            plan.edges.append(Edges(e.rel, e.src_label, e.dst_label, created))
        if changed:
            plan.edge_updates.append((e, changed))
        report.edges_created[e.rel] = report.edges_created.get(e.rel, 0) + len(created)
        report.edges_updated[e.rel] = report.edges_updated.get(e.rel, 0) + len(changed)
    return plan


def _check_endpoints(reader: GraphReader, e: Edges, staged_ids: dict[str, set[str]]) -> None:
    """Every endpoint is staged or stored: the native loader would invent a stub node for a missing one."""
    for label, end in ((e.src_label, 0), (e.dst_label, 1)):
        staged = staged_ids.get(label, set())
        unknown = sorted({sd[end] for sd in e.pairs} - staged)
        if not unknown:
            continue
        found = stored_nodes(reader, label, unknown) if reader.count(label) else {}
        missing = [i for i in unknown if i not in found]
        if missing:
            raise StoreError(f"{e.rel} edges point to {len(missing)} {label} node(s) that are neither in the "
                             f"input nor in the store (e.g. {missing[0]!r}): a loader bug")


# --- applying a validated plan to the staged graph --------------------------------------------------------


def _label_ddl(label: str) -> list[tuple[str, str]]:
    """(name, DDL) of the schema's constraints and indexes on `label`, those the embedded engine omits included
    (a store made before they were omitted loses them on its next load)."""
    return [(schema.ddl_name(ddl), ddl) for ddl in [*schema.constraint_ddl(), *schema.index_ddl()]
            if f":{label})" in ddl]


def _add_nodes(graph: Any, frame: Frame, columns: dict[str, Sequence[Any]], existing: int,
               dropped: dict[str, list[tuple[str, str]]], kinds: dict[str, set[type]] | None = None) -> None:
    """`add_nodes`, with the label's indexes dropped when the frame is the larger part (rebuilt once, at the
    end of the load: `LoadState.rebuild`).

    Maintaining five indexes and a uniqueness constraint row by row made the loader
    2-3 times slower than building them once afterwards (benchmarks/README.md). Lookups
    by `id` during the load do not need them (kglite keeps its own id map per label).
    """
    if frame.label not in dropped and len(frame.ids) > existing:
        present = {r["name"] for r in [*graph.cypher("SHOW INDEXES").to_list(),
                                       *graph.cypher("SHOW CONSTRAINTS").to_list()]}
        rebuild = [(name, ddl) for name, ddl in _label_ddl(frame.label) if name in present]
        for name, ddl in rebuild:
            kind = "CONSTRAINT" if ddl.startswith("CREATE CONSTRAINT") else "INDEX"
            graph.cypher(f"DROP {kind} {name} IF EXISTS")
        dropped[frame.label] = [(name, ddl) for name, ddl in rebuild if name not in schema.EMBEDDED_OMITS]
    report = graph.add_nodes(pandas_frame(columns, kinds), frame.label, "id", "id", on_invalid="error")
    if report.get("nodes_created") != len(frame.ids):
        raise StoreError(f"bulk load of {frame.label}: {report.get('nodes_created')} of {len(frame.ids)} "
                         f"nodes created ({report.get('errors')})")


def apply_plan(reader: GraphReader, plan: Plan, declare: Any, progress: Progress | None,
               state: LoadState | None = None) -> None:
    """Write a validated plan into the staged graph with the native loaders (Cypher for the odd rest).

    Without a `state` (one plan on its own) the indexes dropped for it are rebuilt before returning."""
    graph = reader.graph
    own = state is None
    state = state or LoadState()
    for frame in plan.frames:
        declare(frame.label, sorted(frame.columns))
        kinds = {k: kinds_of(v) for k, v in frame.columns.items()}
        plain = {k: v for k, v in frame.columns.items() if native(v, kinds[k])}
        _add_nodes(graph, frame, {"id": frame.ids, **plain}, reader.count(frame.label), state.dropped,
                   kinds)
        for key, col in frame.columns.items():  # a property of mixed types: set row by row, as Cypher stores it
            if key in plain:
                continue
            rows = [{"id": i, "v": v} for i, v in zip(frame.ids, col, strict=True) if v is not None]
            for part in range(0, len(rows), CHUNK):
                graph.cypher(f"UNWIND $rows AS r MATCH (n:{frame.label} {{id: r.id}}) SET n.`{key}` = r.v",
                             params={"rows": rows[part: part + CHUNK]})
        if progress is not None:
            progress.advance(len(frame.ids))
    for label, updates in plan.updates:
        declare(label, sorted({k for u in updates for k in u["props"]}))
        for part in range(0, len(updates), CHUNK):
            graph.cypher(f"UNWIND $rows AS r MATCH (n:{label} {{id: r.id}}) SET n += r.props",
                         params={"rows": updates[part: part + CHUNK]})
        if progress is not None:
            progress.advance(len(updates))
    for e in plan.edges:
        keys = sorted({k for p in e.pairs.values() for k in p})
        src, dst = e.columns if e.columns is not None else ([s for s, _ in e.pairs], [d for _, d in e.pairs])
        columns: dict[str, Sequence[Any]] = {SRC: src, DST: dst}
        props = {k: [p.get(k) for p in e.pairs.values()] for k in keys}
        if all(native(v) for v in props.values()):
            columns.update(props)
            report = graph.add_relationships(pandas_frame(columns), e.rel, e.src_label, SRC, e.dst_label, DST,
                                             on_invalid="error")
            if report.get("connections_created") != len(e):
                raise StoreError(f"bulk load of {e.rel}: {report.get('connections_created')} of {len(e)} "
                                 f"relationships created ({report.get('errors')})")
        else:
            rows = [{"s": s, "d": d, "p": p} for (s, d), p in e.pairs.items()]
            for part in range(0, len(rows), CHUNK):
                graph.cypher(f"UNWIND $rows AS r MATCH (a:{e.src_label} {{id: r.s}}) MATCH (b:{e.dst_label} "
                             f"{{id: r.d}}) CREATE (a)-[x:{e.rel}]->(b) SET x += r.p",
                             params={"rows": rows[part: part + CHUNK]})
        if progress is not None:
            progress.advance(len(e))
    for e, rows in plan.edge_updates:
        for part in range(0, len(rows), CHUNK):
            graph.cypher(f"UNWIND $rows AS r MATCH (a:{e.src_label} {{id: r.s}})-[x:{e.rel}]->(b:{e.dst_label} "
                         "{id: r.d}) SET x += r.p", params={"rows": rows[part: part + CHUNK]})
        if progress is not None:
            progress.advance(len(rows))
    state.written(plan)
    if own:
        state.rebuild(graph)


# --- entry point -----------------------------------------------------------------------------------------


def write_bulk(store: GraphStore, parts: Iterable[Part], progress: Progress | None = None) -> WriteReport:
    """Write `parts` (consumed lazily) as one all-or-nothing load; returns what changed, from content.

    On the embedded engine the parts go into a staged copy saved atomically at the
    end (see the module doc); on others each part is staged into one `GraphBatch`
    and written in one transaction.
    """
    report = WriteReport()
    if not store.capabilities.bulk_loader:
        merged: GraphBatch | None = None
        for part in parts:
            batch = part.to_batch() if isinstance(part, FactTable) else part
            merged = batch if merged is None else _merge_batches(merged, batch)
        return write_batch(store, merged, progress=progress) if merged is not None else report
    kg = cast("KgliteStore", store)
    try:
        with gc_paused(), kg.staged() as graph:
            reader = GraphReader(graph)
            sources: dict[str, Any] = {}
            state = LoadState()
            feed = SidecarFeed(kg.sidecar_before(graph))
            with closing(_staged_ahead(parts)) as ahead:  # closed (its thread joined) on any exit
                for part, (frames, edges) in ahead:
                    plan = plan_part(reader, frames, edges, part.policy, report, sources, state)
                    del frames, edges
                    feed.plan(plan)
                    if progress is not None:
                        progress.start(plan.size(), "writing")
                    if plan.size():
                        apply_plan(reader, plan, lambda label, keys: kg.declare_staged(graph, label, keys), progress,
                                   state)
                    del plan, part  # gone before the part after next is built
            if not report.changed:
                raise _Unchanged
            # The sidecar first (written unstamped, then dropped), the index builds after, freed heap handed
            # back between: each of the three peaks over the graph alone, not over the one before it
            # (benchmarks/README.md: 11.8 GB at 10M facts with the sidecar after the indexes).
            kg.publish_sidecar(_sidecar(feed, graph))
            del feed, sources
            _trim()
            state.rebuild(graph)
            del state  # nor is what the load kept alive held through the save
            _trim()
    except _Unchanged:
        pass
    return report


# Facts framed, validated and written at a time: a larger `FactTable` part goes in slices of this many, so the
# load's own memory is one slice's frames over the graph (benchmarks/README.md, "Bulk load profile").
CHUNK_FACTS = 100_000

# Stage part N+1 in a thread while the engine loads part N. Off: at 1M facts on 2 cores it cost 25% more CPU and 9%
# more wall time (row-by-row staging), and ~12% more CPU for no wall time with the columnar staging (GIL
# hand-offs; benchmarks/README.md, "Bulk load profile").
PREFETCH = False


def _frames(part: Part) -> tuple[list[Frame], list[Edges]]:
    return table_frames(part) if isinstance(part, FactTable) else batch_frames(part)


def _staged_ahead(parts: Iterable[Part]) -> Generator[tuple[Part, tuple[list[Frame], list[Edges]]], None, None]:
    """Each part with its frames; with `PREFETCH`, the next part is built (the caller's generator: parsing,
    `FactTable` staging) and framed in a second thread meanwhile. kglite's add_nodes, add_relationships,
    index builds and save release the GIL (benchmarks/README.md), so that work overlaps
    the engine's. Only one thread touches the generator at a time; its errors surface here, in order."""
    it = (piece for part in parts
          for piece in (part.slices(CHUNK_FACTS) if isinstance(part, FactTable) else (part,)))
    if not PREFETCH:
        for part in it:
            yield part, _frames(part)
        return

    def fetch() -> tuple[Part, tuple[list[Frame], list[Edges]]] | None:
        part = next(it, None)
        return None if part is None else (part, _frames(part))

    with ThreadPoolExecutor(1, thread_name_prefix="chronokg-bulk-stage") as pool:
        ahead = pool.submit(fetch)
        while True:
            item = ahead.result()
            if item is None:
                return
            ahead = pool.submit(fetch)
            yield item
            del item


def _sidecar(feed: SidecarFeed, graph: Any) -> dict[str, Any] | None:
    """The interval sidecar from the load's own columns, or None (the store builds it by Cypher)."""
    try:
        return feed.finish(graph)
    except Exception:  # the Cypher build is always there to fall back on
        return None


def _trim() -> None:
    """glibc `malloc_trim(0)`: return the heap the load's Python side freed, which glibc otherwise keeps
    for reuse, before the engine's next peak (index builds, save). A no-op where there is no glibc."""
    import ctypes

    with suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


class _Unchanged(Exception):
    """Nothing to publish: the staged copy is dropped and the file is not rewritten."""


def _merge_batches(a: GraphBatch, b: GraphBatch) -> GraphBatch:
    for label, rows in b.nodes.items():
        for nid, props in rows.items():
            origin = props.get(ORIGIN)
            if origin:
                a._origin = origin
            a.node(label, nid, **{k: v for k, v in props.items() if k not in ("id", ORIGIN)})
    for (rel, s, d), pairs in b.edges.items():
        for (src, dst), props in pairs.items():
            a.edge(rel, s, src, d, dst, **props)
    return a


__all__ = ["DST", "SRC", "Edges", "Frame", "GraphReader", "native", "pandas_frame", "table_frames", "write_bulk"]
