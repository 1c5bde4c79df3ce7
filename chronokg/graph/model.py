"""The temporal model: sources, entities and reified bitemporal facts.

A fact is a node, not an edge, so that it can carry two intervals, a precision,
its provenance and links to domain nodes (the guideline that issued it, the
question generated from it, the prediction a model made about it). Valid time
says when it was true in the world; known time says which release asserted it
and until when. Retraction (`known_to`) is not a real-world change
(`valid_to`). See docs/model.md.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chronokg.graph.dates import Precision, id_precision

Scalar = str | int | float | bool | dt.date | None


def stable_id(*parts: object, prefix: str = "") -> str:
    """A short content hash: the same input always yields the same id, so loads are idempotent."""
    h = hashlib.sha1("\x1f".join("" if p is None else str(p) for p in parts).encode()).hexdigest()[:16]
    return f"{prefix}{h}"


class Source(BaseModel):
    """One release of one source: the *known time* of everything it asserts."""

    model_config = ConfigDict(frozen=True)

    id: str
    kind: str = Field(description="Source family, e.g. tempomed, wikidata, umls, cfr")
    caption: str
    version: str | None = None
    release_date: dt.date | None = None
    checksum: str | None = None
    path: str | None = None


class Fact(BaseModel):
    """A reified statement with valid time and known time."""

    model_config = ConfigDict(frozen=True)

    subject: str
    predicate: str
    object: str | None = None
    value: str | int | float | bool | None = None
    valid_from: dt.date | None = None
    valid_to: dt.date | None = None
    precision: Precision = Precision.DAY
    known_from: dt.date | None = None
    known_to: dt.date | None = None
    source_id: str
    source_kind: str
    attrs: dict[str, Scalar] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _check(self) -> Fact:
        if (self.object is None) == (self.value is None):
            raise ValueError("a fact has exactly one of object (an entity id) or value (a literal)")
        if self.valid_from and self.valid_to and self.valid_to < self.valid_from:
            raise ValueError(f"valid_to {self.valid_to} is before valid_from {self.valid_from}")
        if self.known_from and self.known_to and self.known_to < self.known_from:
            raise ValueError(f"known_to {self.known_to} is before known_from {self.known_from}")
        return self

    @property
    def id(self) -> str:
        """Identity of the statement itself, independent of which release asserted it."""
        return stable_id(
            self.source_kind, self.subject, self.predicate, self.object, self.value,
            self.valid_from, self.valid_to, id_precision(self.precision.value), prefix="f-",
        )

    def node_properties(self) -> dict[str, Any]:
        props: dict[str, Any] = {
            "id": self.id,
            "subject_id": self.subject,
            "predicate": self.predicate,
            "object_id": self.object,
            "value": self.value,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
            "precision": self.precision.value,
            "known_from": self.known_from,
            "known_to": self.known_to,
            "source_id": self.source_id,
            "source_kind": self.source_kind,
        }
        props.update(self.attrs)
        return props
