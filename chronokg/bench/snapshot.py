"""Store snapshots: which source releases a benchmark was generated from.

A snapshot id is a hash of the loaded releases (`Source` ids), so the same store
content gives the same id. `record` keeps the release list in the store as a
`Snapshot` node, so `--since SNAPSHOT` can later tell what was added after it.
"""

from __future__ import annotations

import datetime as dt
import hashlib

from chronokg.errors import ChronoKGError
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch
from chronokg.graph.store import GraphStore
from chronokg.graph.writer import write_batch


def sources(store: GraphStore) -> list[str]:
    return sorted(r["id"] for r in store.run("MATCH (s:Source) RETURN s.id AS id"))


def snapshot_id(source_ids: list[str]) -> str:
    return "snap-" + hashlib.sha256("\n".join(sorted(source_ids)).encode()).hexdigest()[:16]


def current(store: GraphStore) -> str:
    """The id of the store's current snapshot (nothing is written)."""
    return snapshot_id(sources(store))


def record(store: GraphStore, taken_at: dt.datetime | None = None) -> str:
    """Keep the current snapshot (its release list) in the store; returns its id. Idempotent."""
    ids = sources(store)
    sid = snapshot_id(ids)
    batch = GraphBatch()
    batch.node(schema.SNAPSHOT, sid, sources=ids, source_count=len(ids))
    found = store.run("MATCH (s:Snapshot {id: $id}) RETURN s.taken_at AS taken_at", {"id": sid})
    if not found or found[0]["taken_at"] is None:  # none, or known by id only (a run stored questions at it)
        batch.node(schema.SNAPSHOT, sid, taken_at=(taken_at or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds"))
        write_batch(store, batch)
    return sid


def added_since(store: GraphStore, snapshot: str) -> set[str]:
    """The source releases loaded after `snapshot` (which must have been recorded)."""
    rows = store.run("MATCH (s:Snapshot {id: $id}) RETURN s.sources AS sources", {"id": snapshot})
    if not rows:
        known = [r["id"] for r in store.run("MATCH (s:Snapshot) RETURN s.id AS id ORDER BY id")]
        raise ChronoKGError(f"no snapshot {snapshot!r} in this store (recorded: {', '.join(known) or 'none'}); "
                            "take one with chronokg snapshot --record")
    return set(sources(store)) - set(rows[0]["sources"] or [])
