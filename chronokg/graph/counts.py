"""Label and relationship counts: the basis of load summaries and `stats`."""

from __future__ import annotations

from chronokg.graph.store import GraphStore


def label_counts(store: GraphStore) -> dict[str, int]:
    rows = store.run("MATCH (n) UNWIND labels(n) AS name RETURN name, count(*) AS count ORDER BY name")
    return {r["name"]: r["count"] for r in rows}


def relationship_counts(store: GraphStore) -> dict[str, int]:
    rows = store.run("MATCH ()-[e]->() RETURN type(e) AS name, count(*) AS count ORDER BY name")
    return {r["name"]: r["count"] for r in rows}


def graph_counts(store: GraphStore) -> dict[str, int]:
    return {**label_counts(store), **relationship_counts(store)}
