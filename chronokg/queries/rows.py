"""Typed rows the query catalog returns (the same on every engine)."""

from __future__ import annotations

import datetime as dt
from collections import deque
from collections.abc import Iterable, Sequence
from itertools import repeat
from typing import Any, TypeVar

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
    (benchmarks/README.md). tests/test_interval_index.py compares them to validated Cypher rows."""
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


def trusted_many(cls: type[R], rows: list[dict[str, Any]]) -> list[R]:
    """`trusted_dict_rows` for long answers (a `changed_between` of ~770k rows at 10M facts): each step runs
    for every row in one C loop (`map` over the object's slot setters), not in Python bytecode per row; about
    half the cost of the per-row loop, which stays the faster one for a point read's handful of rows.

    The rows share one fields-set object: safe for frozen rows only (nothing adds to a frozen row's set, and
    `model_copy` copies it), so other classes are refused."""
    if not cls.model_config.get("frozen"):
        raise TypeError(f"trusted_many builds frozen rows only, not {cls.__name__}")
    n = len(rows)
    out = list(map(object.__new__, repeat(cls, n)))
    sink: deque[None] = deque(maxlen=0)  # runs a `map` to its end, keeping nothing
    sink.extend(map(_slot(cls, "__dict__"), out, rows))
    sink.extend(map(_slot(cls, "__pydantic_fields_set__"), out, repeat(set(cls.model_fields), n)))
    sink.extend(map(_slot(cls, "__pydantic_extra__"), out, repeat(None, n)))
    sink.extend(map(_slot(cls, "__pydantic_private__"), out, repeat(None, n)))
    return out


def _slot(cls: type, name: str) -> Any:
    """The setter of the attribute slot `name` of `cls`'s instances (pydantic's BaseModel declares them)."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name].__set__
    raise AttributeError(name)
