"""Staging of nodes, edges and facts before one atomic write.

Loaders parse and validate a whole input into a `GraphBatch` first, so bad
input is reported before anything touches the store; the writer then applies
the batch in a single transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from chronokg.graph import schema
from chronokg.graph.model import Fact, Source

EdgeKey = tuple[str, str, str]  # (type, source label, target label)


class GraphBatch:
    """Nodes keyed by (label, id) and edges keyed by (type, endpoints); adding twice merges."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, dict[str, Any]]] = {}
        self.edges: dict[EdgeKey, dict[tuple[str, str], dict[str, Any]]] = {}

    def node(self, label: str, node_id: str, **props: Any) -> None:
        current = self.nodes.setdefault(label, {}).setdefault(node_id, {"id": node_id})
        current.update({k: v for k, v in props.items() if v is not None})

    def edge(self, rel: str, src_label: str, src: str, dst_label: str, dst: str, **props: Any) -> None:
        current = self.edges.setdefault((rel, src_label, dst_label), {}).setdefault((src, dst), {})
        current.update({k: v for k, v in props.items() if v is not None})

    def source(self, source: Source) -> None:
        self.node(schema.SOURCE, source.id, **source.model_dump(exclude={"id"}))

    def entity(self, entity_id: str, kind: str | None = None, caption: str | None = None) -> None:
        self.node(schema.ENTITY, entity_id, kind=kind, caption=caption)

    def fact(self, fact: Fact, subject_kind: str | None = None, object_kind: str | None = None) -> str:
        """Stage a fact with its subject/object entities and its provenance edge; returns its id."""
        props = fact.node_properties()
        fid = str(props.pop("id"))
        facts = self.nodes.setdefault(schema.FACT, {})
        if fid in facts:
            # The same statement asserted again: keep the earliest known_from.
            earlier = facts[fid].get("known_from")
            if earlier is not None and fact.known_from is not None and earlier < fact.known_from:
                props["known_from"] = earlier
        self.node(schema.FACT, fid, **props)
        self.entity(fact.subject, kind=subject_kind)
        self.edge(schema.SUBJECT, schema.FACT, fid, schema.ENTITY, fact.subject)
        if fact.object is not None:
            self.entity(fact.object, kind=object_kind)
            self.edge(schema.OBJECT, schema.FACT, fid, schema.ENTITY, fact.object)
        self.edge(schema.ASSERTED_IN, schema.FACT, fid, schema.SOURCE, fact.source_id)
        return fid

    def counts(self) -> dict[str, int]:
        out = {label: len(rows) for label, rows in self.nodes.items()}
        for (rel, _, _), rows in self.edges.items():
            out[rel] = out.get(rel, 0) + len(rows)
        return out

    def __len__(self) -> int:
        return sum(len(v) for v in self.nodes.values()) + sum(len(v) for v in self.edges.values())

    def iter_nodes(self) -> Iterator[tuple[str, list[dict[str, Any]]]]:
        for label, rows in self.nodes.items():
            yield label, list(rows.values())
