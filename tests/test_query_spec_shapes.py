"""A query's parameters are validated by pydantic once per call shape, then trusted for the same shape:
the shortcut must give the same parameters and never let through what validation would refuse."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import Field, ValidationError, field_validator

from chronokg.queries.catalog import AS_OF, TIMELINE, TWO_HOP, AsOfParams
from chronokg.queries.rows import StatsRow
from chronokg.queries.spec import MAX_TEXT, QueryError, QueryParams, QuerySpec

D = dt.date


def as_of(**changes: object) -> dict[str, object]:
    return {"date": D(2020, 1, 1), "subject": "Q1", "predicate": None, "known_at": None, "limit": None, **changes}


def test_a_validated_shape_is_trusted_and_gives_the_same_parameters() -> None:
    first = AS_OF.validate(as_of(subject="Q2"))
    assert any("subject" in shape for shape in AS_OF.shapes)
    again = AS_OF.validate(as_of(subject="Q3", date=D(1999, 5, 6)))
    assert again == AsOfParams(date=D(1999, 5, 6), subject="Q3")
    assert again.model_dump() == AsOfParams(date=D(1999, 5, 6), subject="Q3").model_dump()
    assert type(again) is AsOfParams and first.subject == "Q2"
    with pytest.raises(ValidationError):  # still frozen
        again.subject = "Q4"  # type: ignore[misc]
    assert TIMELINE.validate({"subject": "Q1", "predicate": "P31", "known_at": None, "include_retracted": True}) \
        == TIMELINE.validate({"subject": "Q1", "predicate": "P31", "known_at": None, "include_retracted": True})
    assert TWO_HOP.validate({"subject": "Q1", "date": D(2020, 1, 1), "predicate": None, "predicate2": None}).date \
        == D(2020, 1, 1)


def test_a_trusted_shape_still_refuses_what_validation_refuses() -> None:
    AS_OF.validate(as_of())  # the shape is known now
    with pytest.raises(QueryError, match="subject"):
        AS_OF.validate(as_of(subject="x" * (MAX_TEXT + 1)))  # text over its bound
    with pytest.raises(QueryError, match="date"):
        AS_OF.validate(as_of(date="not a day"))  # another type: another shape, validated
    with pytest.raises(QueryError, match="limit"):
        AS_OF.validate(as_of(limit=0))  # counts are always validated (their bounds depend on the value)
    AS_OF.validate(as_of(limit=5))
    with pytest.raises(QueryError, match="limit"):
        AS_OF.validate(as_of(limit=10**7))
    with pytest.raises(QueryError, match="unknown"):
        AS_OF.validate({**as_of(), "unknown": None})
    assert AS_OF.validate(as_of(date="2020-01-01")).date == D(2020, 1, 1)  # coerced: validated each time


class Checked(QueryParams):
    word: str = Field(description="lower-cased by a validator")

    @field_validator("word")
    @classmethod
    def lower(cls, v: str) -> str:
        return v.lower()


class Pattern(QueryParams):
    code: str = Field(pattern="^[A-Z]+$", description="upper-case letters")


def test_models_with_validators_or_constraints_are_never_trusted() -> None:
    checked = QuerySpec("t1", "", Checked, StatsRow, lambda p: ("RETURN 1", {}))
    for _ in range(2):
        assert checked.validate({"word": "ABC"}).word == "abc"
    assert not checked.shapes
    pattern = QuerySpec("t2", "", Pattern, StatsRow, lambda p: ("RETURN 1", {}))
    pattern.validate({"code": "ABC"})
    with pytest.raises(QueryError, match="code"):
        pattern.validate({"code": "abc"})
    assert not pattern.shapes
