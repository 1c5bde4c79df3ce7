"""Label and relationship counts: the basis of load summaries and `stats`."""

from __future__ import annotations

from chronokg.graph.store import GraphStore

# One count query per label / type: a single `MATCH (n) UNWIND labels(n)` over the whole
# graph costs hundreds of MB on a large embedded store, a per-label count almost nothing.


def label_counts(store: GraphStore) -> dict[str, int]:
    labels = sorted(r["label"] for r in store.run("CALL db.labels() YIELD label RETURN label"))
    counts = {label: store.run(f"MATCH (n:`{label}`) RETURN count(n) AS c")[0]["c"] for label in labels}
    return {k: v for k, v in counts.items() if v}


def relationship_counts(store: GraphStore) -> dict[str, int]:
    types = sorted(r["t"] for r in store.run("CALL db.relationshipTypes() YIELD relationshipType AS t RETURN t"))
    counts = {t: store.run(f"MATCH ()-[e:`{t}`]->() RETURN count(e) AS c")[0]["c"] for t in types}
    return {k: v for k, v in counts.items() if v}


def graph_counts(store: GraphStore) -> dict[str, int]:
    return {**label_counts(store), **relationship_counts(store)}


def content_digest(store: GraphStore) -> str:
    """A hash of everything the store holds (every node with its properties, every edge with its endpoints
    and properties), independent of write order: proves that something changed nothing. Reads the whole
    store: for tests and audits, not for large stores on a hot path."""
    import hashlib
    import json

    engine = {"title", "name", "label", "type"}  # filled by kglite itself
    nodes = store.run("MATCH (n) RETURN labels(n) AS l, properties(n) AS p")
    edges = store.run("MATCH (a)-[e]->(b) RETURN type(e) AS t, a.id AS s, b.id AS d, properties(e) AS p")
    lines = sorted(
        json.dumps([sorted(r["l"]), {k: v for k, v in r["p"].items() if k not in engine}], sort_keys=True,
                   default=str)
        for r in nodes
    )
    lines += sorted(json.dumps([r["t"], r["s"], r["d"], r["p"] or {}], sort_keys=True, default=str) for r in edges)
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()
