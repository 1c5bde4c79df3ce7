"""Typed rows the query catalog returns (the same on every engine)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import TypeVar

from pydantic import BaseModel, ConfigDict


class Row(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


R = TypeVar("R", bound=Row)


class FactRow(Row):
    id: str
    subject: str
    subject_caption: str | None = None
    predicate: str
    object: str | None = None
    object_caption: str | None = None
    value: str | int | float | bool | None = None
    valid_from: dt.date | None = None
    valid_to: dt.date | None = None
    precision: str
    known_from: dt.date | None = None
    known_to: dt.date | None = None
    source_id: str

    @property
    def shown(self) -> str:
        """The object's caption or id, or the literal value."""
        if self.object is not None:
            return self.object_caption or self.object
        return str(self.value)


class ChangeRow(Row):
    subject: str
    predicate: str
    before: list[str]
    after: list[str]


class HopRow(Row):
    subject: str
    predicate: str
    middle: str
    predicate2: str
    target: str


class RecommendationRow(Row):
    decision_id: str
    recommendation: str
    guideline: str
    guideline_year: int | None = None
    organization: str | None = None
    topic: str | None = None
    clinical_focus: str | None = None
    valid_from: dt.date | None = None
    valid_to: dt.date | None = None


class VersionRow(Row):
    pmid: str
    year: int | None = None
    issued: dt.date | None = None
    caption: str | None = None
    organizations: list[str]
    supersedes: list[str]
    superseded_by: list[str]


class ChangePairRow(Row):
    decision_id: str
    current_pmid: str
    prior_pmid: str
    current_year: int | None = None
    prior_year: int | None = None
    current_recommendation: str | None = None
    prior_recommendation: str | None = None
    summary: str | None = None
    category: str | None = None


class StatsRow(Row):
    kind: str  # label | relationship | source
    name: str
    count: int
    source_kind: str | None = None
    version: str | None = None
    release_date: dt.date | None = None


def trusted_dict_rows(cls: type[R], rows: Iterable[dict[str, object]]) -> list[R]:
    """`trusted_rows` from dicts that already hold every field of `cls` by name, in its field order."""
    new, put, known = object.__new__, object.__setattr__, set(cls.model_fields)
    out = []
    for values in rows:
        row = new(cls)
        put(row, "__dict__", values)
        put(row, "__pydantic_fields_set__", known)
        put(row, "__pydantic_extra__", None)
        put(row, "__pydantic_private__", None)
        out.append(row)
    return out


def trusted_rows(cls: type[R], fields: tuple[str, ...], rows: Iterable[Sequence[object]]) -> list[R]:
    """Rows of `cls` from values that already have their fields' exact types (our own sidecar index built
    them), without running validation: at ~80k rows, validation alone cost more than the query
    (benchmarks/README.md, issue 20). tests/test_interval_index.py compares them to validated Cypher rows."""
    new, put, known = object.__new__, object.__setattr__, set(fields)
    out = []
    for values in rows:
        row = new(cls)
        put(row, "__dict__", dict(zip(fields, values, strict=True)))
        put(row, "__pydantic_fields_set__", known)
        put(row, "__pydantic_extra__", None)
        put(row, "__pydantic_private__", None)
        out.append(row)
    return out
