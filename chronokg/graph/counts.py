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
