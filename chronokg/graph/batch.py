"""Staging of nodes, edges and facts before one atomic write.

Loaders parse and validate a whole input into a `GraphBatch` first, so bad
input is reported before anything touches the store; the writer then applies
the batch in a single transaction. Staging the same node twice merges the two
by the rules of `graph.merge`: a conflicting value is an `InputError` that
names both records (set the current record with `at`), never last-one-wins.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chronokg.errors import InputError
from chronokg.graph import schema
from chronokg.graph.merge import DEFAULT_POLICY, ORIGIN, Conflict, Policy, describe, merge
from chronokg.graph.model import Fact, Source

EdgeKey = tuple[str, str, str]  # (type, source label, target label)


CAPTION_VERSIONS = "caption_versions"  # an entity's names through time: "YYYY-MM-DD<TAB>caption", one per release


def caption_version(known_from: dt.date, caption: str) -> str:
    return f"{known_from.isoformat()}\t{caption}"


def origin_text(path: str | Path, record: str | int) -> str:
    return f"{Path(path).name}: record {record}"


def split_origin(origin: str | None) -> tuple[str, str | None]:
    """(file, record) of an origin string, for error messages."""
    if not origin:
        return "input", None
    name, sep, record = origin.partition(": record ")
    return (name, record) if sep else (origin, None)


def conflict_error(c: Conflict, origin: str | None, other: str | None, where: str) -> InputError:
    """One line naming the record that disagrees, the value it gives, and where the other value came from."""
    path, record = split_origin(origin)
    source = f" ({other})" if other else ""
    return InputError(path, record, f"{c.label} {c.node_id!r}: {c.key} is {describe(c.new)} here, but "
                                    f"{describe(c.old)} {where}{source}")


class GraphBatch:
    """Nodes keyed by (label, id) and edges keyed by (type, endpoints); adding twice merges by `policy`."""

    def __init__(self, policy: Policy = DEFAULT_POLICY) -> None:
        self.policy = policy
        self.nodes: dict[str, dict[str, dict[str, Any]]] = {}
        self.edges: dict[EdgeKey, dict[tuple[str, str], dict[str, Any]]] = {}
        self._origin: str | None = None

    def at(self, path: str | Path, record: str | int) -> None:
        """Name the record being staged: nodes first staged now remember it, conflicts name it."""
        self._origin = origin_text(path, record)

    def node(self, label: str, node_id: str, **props: Any) -> None:
        rows = self.nodes.setdefault(label, {})
        current = rows.get(node_id)
        given = {k: v for k, v in props.items() if v is not None}
        origin = self._origin if label != schema.SOURCE else None  # a release's provenance is its path
        if current is None:
            current = rows[node_id] = {"id": node_id, **given}
            if origin is not None:
                current[ORIGIN] = origin
            return
        if all(current.get(k) == v for k, v in given.items()):
            return  # nothing new: the common case of an entity staged once per fact
        staged = dict(given)
        if origin is not None:
            staged[ORIGIN] = origin
        outcome = merge(label, node_id, current, staged, self.policy)
        if outcome.conflicts:
            first = current.get(ORIGIN) or current.get("path") or "an earlier record"
            raise conflict_error(outcome.conflicts[0], self._origin or given.get("path"), None, f"in {first}")
        current.update(outcome.changes)

    def edge(self, rel: str, src_label: str, src: str, dst_label: str, dst: str, **props: Any) -> None:
        current = self.edges.setdefault((rel, src_label, dst_label), {}).setdefault((src, dst), {})
        for key, value in props.items():
            if value is None:
                continue
            old = current.get(key)
            if old is not None and old != value:
                path, record = split_origin(self._origin)
                raise InputError(path, record, f"{rel} edge {src!r} -> {dst!r}: {key} is {describe(value)} here, "
                                               f"but {describe(old)} in an earlier record")
            current[key] = value

    def source(self, source: Source) -> None:
        self.node(schema.SOURCE, source.id, **source.model_dump(exclude={"id"}))

    def entity(self, entity_id: str, kind: str | None = None, caption: str | None = None,
               known_from: dt.date | None = None, **props: Any) -> None:
        """Stage an entity; `known_from` (a loader of ordered releases: the release's date) also records its
        caption as a version known from then (`caption_versions`), so known-at queries show the name the store
        knew at that time while `caption` stays the latest."""
        if known_from is not None and caption is not None:
            props[CAPTION_VERSIONS] = [caption_version(known_from, caption)]
        self.node(schema.ENTITY, entity_id, kind=kind, caption=caption, **props)

    def fact(self, fact: Fact, subject_kind: str | None = None, object_kind: str | None = None) -> str:
        """Stage a fact with its subject/object entities and its provenance edge; returns its id.

        The same statement asserted again (by another record or release) merges:
        its known time becomes the earliest asserted one.
        """
        props = fact.node_properties()
        fid = str(props.pop("id"))
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
