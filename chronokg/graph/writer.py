"""Apply a `GraphBatch` to a store in one transaction, as fast as each engine allows.

The writer first reads what the store holds for the staged ids and merges each
staged node into its stored version by the batch's policy (`graph.merge`): a
conflict stops the load before anything is written, naming the record and
where the stored value came from; nodes and edges that would not change are
skipped. The rest is one all-or-nothing transaction: new nodes with `CREATE`
(several times faster than `MERGE` on both engines), changed ones with
`SET n += changes`, new edges with `CREATE`. So writing the same batch twice
changes nothing, and the report says what changed from content, not counts.
"""

from __future__ import annotations

import gc
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from pydantic import BaseModel, Field

from chronokg.errors import StoreError
from chronokg.graph import prior, schema
from chronokg.graph.batch import GraphBatch, conflict_error
from chronokg.graph.counts import label_counts, relationship_counts
from chronokg.graph.merge import ORIGIN, Conflict, Policy, merge
from chronokg.graph.store import GraphStore, Params, Row, Statement
from chronokg.progress import Progress

CHUNK = 5000
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Properties kglite fills in by itself; chronokg never uses them (docs: DEVELOPERS.md).
ENGINE_KEYS = frozenset({"title", "name", "label", "type"})


class WriteReport(BaseModel):
    """What a write changed, from content: nodes created/updated/unchanged per label, edges per type,
    and known-time events (facts retracted, reopened, or known from an earlier release than before)."""

    created: dict[str, int] = Field(default_factory=dict)
    updated: dict[str, int] = Field(default_factory=dict)
    unchanged: dict[str, int] = Field(default_factory=dict)
    edges_created: dict[str, int] = Field(default_factory=dict)
    edges_updated: dict[str, int] = Field(default_factory=dict)
    events: dict[str, int] = Field(default_factory=dict)

    @property
    def nodes_created(self) -> int:
        return sum(self.created.values())

    @property
    def changed(self) -> bool:
        return any(sum(d.values()) for d in (self.created, self.updated, self.edges_created, self.edges_updated))

    def add(self, other: WriteReport) -> None:
        for name in ("created", "updated", "unchanged", "edges_created", "edges_updated", "events"):
            mine: dict[str, int] = getattr(self, name)
            for k, v in getattr(other, name).items():
                mine[k] = mine.get(k, 0) + v


def _chunks(rows: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large batch is written.

    Writing allocates a parameter dict per row; with a large staged batch alive,
    each of the collector's full passes walks every object of the batch, and at
    1M facts those passes took most of the Python time of the write. Rows hold
    no reference cycles, so reference counting frees them all the same.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Reads(Protocol):
    """What the merge reads need: a store, or a staged graph (`graph.bulk.GraphReader`)."""

    def run(self, cypher: str, params: Params | None = None) -> list[Row]: ...


def stored_nodes(store: Reads, label: str, ids: Sequence[str], chunk: int = CHUNK) -> dict[str, dict[str, Any]]:
    """The stored properties of those of `ids` that exist (engine-filled keys left out)."""
    found: dict[str, dict[str, Any]] = {}
    for part in _chunks(ids, chunk):
        rows = store.run(
            f"UNWIND $ids AS id MATCH (n:{label} {{id: id}}) RETURN n.id AS id, properties(n) AS p",
            {"ids": list(part)},
        )
        for r in rows:
            found[r["id"]] = {k: v for k, v in r["p"].items() if k not in ENGINE_KEYS}
    return found


def stored_edges(store: Reads, rel: str, src_label: str, dst_label: str, pairs: Sequence[tuple[str, str]],
                 chunk: int = CHUNK) -> dict[tuple[str, str], dict[str, Any]]:
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for part in _chunks(pairs, chunk):
        rows = store.run(
            f"UNWIND $rows AS r MATCH (a:{src_label} {{id: r.s}})-[e:{rel}]->(b:{dst_label} {{id: r.d}}) "
            "RETURN r.s AS s, r.d AS d, properties(e) AS p",
            {"rows": [{"s": s, "d": d} for s, d in part]},
        )
        for r in rows:
            found[r["s"], r["d"]] = r["p"] or {}
    return found


def _name(key: str) -> str:
    """A property name as Cypher text, backtick-quoted unless it is a plain identifier."""
    return key if _PLAIN.fullmatch(key) else "`" + key.replace("`", "``") + "`"


def create_cypher(label: str, keys: Sequence[str]) -> str:
    """`CREATE` with every property in the node pattern.

    Rows lacking a key read it as null, which `CREATE` does not store, so this
    writes exactly what `CREATE ... SET n += r` writes, and is about 3 times faster
    on kglite (benchmarks/README.md).
    """
    props = ", ".join(f"{_name(k)}: r.{_name(k)}" for k in ("id", *(k for k in keys if k != "id")))
    return f"UNWIND $rows AS r CREATE (n:{label} {{{props}}})"


def stored_conflict(c: Conflict, staged: dict[str, Any], stored: dict[str, Any]) -> Exception:
    # A Source has no record of origin: the file it was read from names it.
    where = stored.get(ORIGIN) or stored.get("path") or "an earlier load"
    other = f"source {stored['source_id']}" if stored.get("source_id") else None
    return conflict_error(c, staged.get(ORIGIN) or staged.get("path"), other, f"in the store (from {where})")


Rows = Callable[[Sequence[Any]], list[Any]]
Step = tuple[str, Sequence[Any], Rows]


def _as_is(part: Sequence[Any]) -> list[Any]:
    return list(part)


def _node_steps(store: GraphStore, batch: GraphBatch, report: WriteReport, chunk: int,
                stream: bool) -> tuple[list[Step], dict[str, set[str]]]:
    """Statements for the batch's nodes, after merging each into its stored version (conflicts raise)."""
    steps: list[Step] = []
    new_ids: dict[str, set[str]] = {}
    events: Counter[str] = Counter()
    sources = prior.sources_of({"id": i, **p} for i, p in batch.nodes.get(schema.SOURCE, {}).items())
    for label, rows in batch.iter_nodes():
        keys = sorted({k for r in rows for k in r})
        if not stream:
            # Inside a stream's open transaction a declaration would change the schema under it.
            store.declare_properties(label, keys)
        stored = stored_nodes(store, label, [r["id"] for r in rows], chunk)
        fresh = [r for r in rows if r["id"] not in stored]
        changed: list[dict[str, Any]] = []
        for r in rows:
            old = stored.get(r["id"])
            if old is None:
                continue
            outcome = merge(label, r["id"], old, r, batch.policy)
            if outcome.conflicts:
                raise stored_conflict(outcome.conflicts[0], r, old)
            prior.note(label, old, r, outcome, batch.policy, prior.release_of(r, sources))
            if outcome.changes:
                changed.append({"id": r["id"], "props": outcome.changes})
            events.update(outcome.events)
        new_ids[label] = {r["id"] for r in fresh}
        report.created[label] = len(fresh)
        report.updated[label] = len(changed)
        report.unchanged[label] = len(rows) - len(fresh) - len(changed)
        if fresh and not stream:
            steps.append((create_cypher(label, keys), fresh, _as_is))
        elif fresh:
            # An earlier chunk of the stream may have created it, and this chunk may update it on
            # purpose (a streaming loader retracting what it opened): the loader keeps such state.
            merge_new = f"UNWIND $rows AS r MERGE (n:{label} {{id: r.id}}) SET n += r.props"
            steps.append((merge_new, [{"id": r["id"], "props": {k: v for k, v in r.items() if k != "id"}}
                                      for r in fresh], _as_is))
        if changed:
            steps.append((f"UNWIND $rows AS r MATCH (n:{label} {{id: r.id}}) SET n += r.props", changed, _as_is))
    for k, v in events.items():
        report.events[k] = report.events.get(k, 0) + v
    return steps, new_ids


def _missing_endpoints(store: GraphStore, batch: GraphBatch, label: str, ids: set[str], chunk: int) -> list[str]:
    """Those of `ids` that are neither staged nor stored: an edge to them would silently not be written."""
    staged = batch.nodes.get(label, {})
    unknown = sorted(i for i in ids if i not in staged)
    if not unknown:
        return []
    found: set[str] = set()
    for part in _chunks(unknown, chunk):  # ids only: an endpoint's properties (a question's text) are not needed
        rows = store.run(f"UNWIND $ids AS id MATCH (n:{label} {{id: id}}) RETURN n.id AS id", {"ids": list(part)})
        found.update(r["id"] for r in rows)
    return [i for i in unknown if i not in found]


def _edge_steps(store: GraphStore, batch: GraphBatch, report: WriteReport, chunk: int,
                new_ids: dict[str, set[str]], stream: bool) -> list[Step]:
    steps: list[Step] = []
    for (rel, src_label, dst_label), pairs in batch.edges.items():
        if not stream:  # in a stream an endpoint may come from an earlier chunk of the same transaction
            for label, end in ((src_label, 0), (dst_label, 1)):
                missing = _missing_endpoints(store, batch, label, {sd[end] for sd in pairs}, chunk)
                if missing:
                    raise StoreError(f"{rel} edges point to {len(missing)} {label} node(s) that are neither in "
                                     f"the input nor in the store (e.g. {missing[0]!r}): a loader bug")
        fresh_src = new_ids.get(src_label, set())
        created = [sd for sd in pairs if sd[0] in fresh_src]
        maybe = [sd for sd in pairs if sd[0] not in fresh_src]
        stored = stored_edges(store, rel, src_label, dst_label, maybe, chunk) if maybe else {}
        updated = []
        for sd in maybe:
            old = stored.get(sd)
            if old is None:
                created.append(sd)
                continue
            changes = {}
            for k, v in pairs[sd].items():
                if old.get(k) is None:
                    changes[k] = v
                elif old[k] != v:
                    c = Conflict(rel, f"{sd[0]} -> {sd[1]}", k, old[k], v)
                    raise conflict_error(c, None, None, "in the store")
            if changes:
                updated.append((sd, changes))
        match = f"UNWIND $rows AS r MATCH (a:{src_label} {{id: r.s}}) MATCH (b:{dst_label} {{id: r.d}}) "
        # In a stream a "new" source node may already hold the edge from an earlier chunk: MERGE it.
        verb = "MERGE" if stream else "CREATE"

        def as_edges(part: Sequence[Any], pairs: dict[tuple[str, str], dict[str, Any]] = pairs) -> list[Any]:
            return [{"s": s, "d": d, "p": pairs[s, d]} for s, d in part]

        if created:
            steps.append((match + f"{verb} (a)-[e:{rel}]->(b) SET e += r.p", created, as_edges))
        if updated:
            rows = [{"s": s, "d": d, "p": p} for (s, d), p in updated]
            steps.append((match + f"MATCH (a)-[e:{rel}]->(b) SET e += r.p", rows, _as_is))
        report.edges_created[rel] = report.edges_created.get(rel, 0) + len(created)
        report.edges_updated[rel] = report.edges_updated.get(rel, 0) + len(updated)
    return steps


def plan(store: GraphStore, batch: GraphBatch, report: WriteReport, chunk: int = CHUNK,
         stream: bool = False) -> list[Step]:
    """The statements that bring the store to the merged state of `batch` (reads only; conflicts raise)."""
    steps, new_ids = _node_steps(store, batch, report, chunk, stream)
    return steps + _edge_steps(store, batch, report, chunk, new_ids, stream)


def _statements(steps: list[Step], chunk: int, progress: Progress | None) -> Iterator[Statement]:
    for cypher, items, to_rows in steps:
        for part in _chunks(items, chunk):
            yield cypher, {"rows": to_rows(part)}
            if progress is not None:
                progress.advance(len(part))


def write_batch(
    store: GraphStore, batch: GraphBatch, progress: Progress | None = None, chunk: int = CHUNK
) -> WriteReport:
    """Write `batch` atomically, reporting items written to `progress`; returns what changed.

    Statement parameters are built one chunk at a time while the transaction
    runs, so a large batch is not held a second time as parameter rows; the
    cyclic garbage collector is paused meanwhile (see `gc_paused`).
    """
    with gc_paused():
        report = WriteReport()
        steps = plan(store, batch, report, chunk)
        if progress is not None:
            progress.start(sum(len(items) for _, items, _ in steps), "writing")
        if steps:
            store.write(_statements(steps, chunk, progress))
        return report


def write_stream(store: GraphStore, batches: Iterable[GraphBatch], progress: Progress | None = None,
                 total: int | None = None, chunk: int = CHUNK) -> WriteReport:
    """Write batches produced while a large input is still being read, all in one transaction.

    `batches` is consumed lazily inside the transaction, so a loader can parse
    a file of any size chunk by chunk: memory holds one chunk, and an error
    raised while parsing (bad input) or a conflict with the stored state rolls
    back everything written so far. Each chunk is merged into the state the
    store held before the load (reads do not see the open transaction), so a
    conflict between two chunks of the same input is not detected here: a
    streaming loader checks its own record keys. Created counts come from the
    store's counts before and after.

    Nothing is declared here: MERGE ... SET n += map needs no declaration on kglite, and
    declaring inside the open transaction would change the schema under it (the commit
    would then fail as a conflict).
    """
    report = WriteReport()
    nodes_before, edges_before = label_counts(store), relationship_counts(store)
    if progress is not None:
        progress.start(total or 0, "loading")

    def statements() -> Iterator[Statement]:
        for batch in batches:
            yield from _statements(plan(store, batch, report, chunk, stream=True), chunk, progress)

    with gc_paused():
        store.write(statements())
    nodes_after, edges_after = label_counts(store), relationship_counts(store)
    for label in set(report.created) | set(nodes_after):
        report.created[label] = nodes_after.get(label, 0) - nodes_before.get(label, 0)
    for rel in set(report.edges_created) | set(edges_after):
        report.edges_created[rel] = edges_after.get(rel, 0) - edges_before.get(rel, 0)
    return report


def merge_statements(batch: GraphBatch, chunk: int = CHUNK) -> Iterator[tuple[Statement, int]]:
    """Idempotent MERGE statements for `batch`, with the number of items each writes.

    Unlike `write_batch`, nothing is read first, so these can run inside a
    transaction that earlier statements of the same load have already written to.
    """
    for label, rows in batch.iter_nodes():
        update = f"UNWIND $rows AS r MERGE (n:{label} {{id: r.id}}) SET n += r.props"
        for part in _chunks(rows, chunk):
            props = [{"id": r["id"], "props": {k: v for k, v in r.items() if k != "id"}} for r in part]
            yield (update, {"rows": props}), len(part)
    for (rel, src_label, dst_label), pairs in batch.edges.items():
        merge_edge = (
            f"UNWIND $rows AS r MATCH (a:{src_label} {{id: r.s}}) MATCH (b:{dst_label} {{id: r.d}}) "
            f"MERGE (a)-[e:{rel}]->(b) SET e += r.p"
        )
        rows = [{"s": s, "d": d, "p": p} for (s, d), p in pairs.items()]
        for part in _chunks(rows, chunk):
            yield (merge_edge, {"rows": list(part)}), len(part)


__all__ = ["CHUNK", "Policy", "WriteReport", "create_cypher", "merge_statements", "plan", "write_batch",
           "write_stream"]
