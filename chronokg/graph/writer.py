"""Apply a `GraphBatch` to a store in one transaction, as fast as each engine allows.

Nodes that do not exist yet are created with `CREATE` (several times faster
than `MERGE` on both engines); nodes that exist are updated in place; edges of
new nodes are created, the others merged. The split is computed by reading the
existing ids first, so the write itself is a single all-or-nothing
transaction, and writing the same batch twice changes nothing.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from chronokg.graph.batch import GraphBatch
from chronokg.graph.store import GraphStore, Statement
from chronokg.progress import Progress

CHUNK = 5000
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class WriteReport:
    """What a write changed: nodes created/updated per label, edges written per type."""

    created: dict[str, int] = field(default_factory=dict)
    updated: dict[str, int] = field(default_factory=dict)
    edges: dict[str, int] = field(default_factory=dict)

    @property
    def nodes_created(self) -> int:
        return sum(self.created.values())


def _chunks(rows: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


@contextmanager
def _gc_paused() -> Iterator[None]:
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


def existing_ids(store: GraphStore, label: str, ids: Sequence[str], chunk: int = CHUNK) -> set[str]:
    found: set[str] = set()
    for part in _chunks(ids, chunk):
        rows = store.run(
            f"UNWIND $ids AS id MATCH (n:{label} {{id: id}}) RETURN n.id AS id", {"ids": list(part)}
        )
        found.update(r["id"] for r in rows)
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


def write_batch(
    store: GraphStore, batch: GraphBatch, progress: Progress | None = None, chunk: int = CHUNK
) -> WriteReport:
    """Write `batch` atomically, reporting nodes and edges written to `progress`.

    Statement parameters are built one chunk at a time while the transaction
    runs, so a large batch is not held a second time as parameter rows; the
    cyclic garbage collector is paused meanwhile (see `_gc_paused`).
    """
    with _gc_paused():
        return _write_batch(store, batch, progress, chunk)


def _write_batch(store: GraphStore, batch: GraphBatch, progress: Progress | None, chunk: int) -> WriteReport:
    report = WriteReport()
    new_ids: dict[str, set[str]] = {}
    plan: list[tuple[str, Sequence[Any], Callable[[Sequence[Any]], list[Any]]]] = []

    def as_is(part: Sequence[Any]) -> list[Any]:
        return list(part)

    def as_update(part: Sequence[Any]) -> list[Any]:
        return [{"id": r["id"], "props": {k: v for k, v in r.items() if k != "id"}} for r in part]

    for label, rows in batch.iter_nodes():
        keys = sorted({k for r in rows for k in r})
        store.declare_properties(label, keys)
        present = existing_ids(store, label, [r["id"] for r in rows], chunk)
        fresh = [r for r in rows if r["id"] not in present]
        stale = [r for r in rows if r["id"] in present]
        new_ids[label] = {r["id"] for r in fresh}
        report.created[label] = len(fresh)
        report.updated[label] = len(stale)
        update = f"UNWIND $rows AS r MATCH (n:{label} {{id: r.id}}) SET n += r.props"
        if fresh:
            plan.append((create_cypher(label, keys), fresh, as_is))
        if stale:
            plan.append((update, stale, as_update))

    for (rel, src_label, dst_label), pairs in batch.edges.items():
        fresh_src = new_ids.get(src_label, set())
        created = [sd for sd in pairs if sd[0] in fresh_src]
        merged = [sd for sd in pairs if sd[0] not in fresh_src]
        match = (
            f"UNWIND $rows AS r MATCH (a:{src_label} {{id: r.s}}) MATCH (b:{dst_label} {{id: r.d}}) "
        )

        def as_edges(part: Sequence[Any], pairs: dict[tuple[str, str], dict[str, Any]] = pairs) -> list[Any]:
            return [{"s": s, "d": d, "p": pairs[s, d]} for s, d in part]

        if created:
            plan.append((match + f"CREATE (a)-[e:{rel}]->(b) SET e += r.p", created, as_edges))
        if merged:
            plan.append((match + f"MERGE (a)-[e:{rel}]->(b) SET e += r.p", merged, as_edges))
        report.edges[rel] = report.edges.get(rel, 0) + len(pairs)

    if progress is not None:
        progress.start(sum(len(items) for _, items, _ in plan), "writing")

    def statements() -> Iterator[Statement]:
        for cypher, items, to_rows in plan:
            for part in _chunks(items, chunk):
                yield cypher, {"rows": to_rows(part)}
                if progress is not None:
                    progress.advance(len(part))

    store.write(statements())
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
        merge = (
            f"UNWIND $rows AS r MATCH (a:{src_label} {{id: r.s}}) MATCH (b:{dst_label} {{id: r.d}}) "
            f"MERGE (a)-[e:{rel}]->(b) SET e += r.p"
        )
        rows = [{"s": s, "d": d, "p": p} for (s, d), p in pairs.items()]
        for part in _chunks(rows, chunk):
            yield (merge, {"rows": list(part)}), len(part)


def write_stream(store: GraphStore, batches: Iterable[GraphBatch], progress: Progress | None = None,
                 total: int | None = None) -> int:
    """Write batches produced while a large input is still being read, all in one transaction.

    `batches` is consumed lazily inside the transaction, so a loader can parse
    a file of any size chunk by chunk: memory holds one chunk, and an error
    raised while parsing (bad input) rolls back everything written so far.
    Returns the number of nodes and edges written.

    Nothing is declared here: MERGE ... SET n += map needs no declaration on kglite, and
    declaring inside the open transaction would change the schema under it (the commit
    would then fail as a conflict).
    """
    written = 0
    if progress is not None:
        progress.start(total or 0, "loading")

    def statements() -> Iterator[Statement]:
        nonlocal written
        for batch in batches:
            for statement, n in merge_statements(batch):
                yield statement
                written += n
                if progress is not None:
                    progress.advance(n)

    store.write(statements())
    return written
