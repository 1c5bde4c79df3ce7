"""Sequenced evaluation queries over a run's `Prediction` nodes: how a run's stored answers score against the
gold of each year (valid time), and which verdicts differ between what two releases said (known time).

A prediction's question tests facts (`TESTS`); the gold of a day is every fact of those subjects and predicates
valid on that day, and an answer is right when the fact it chose (`CHOSE`) states one of the gold's values.
Values, not fact ids, are compared: a later release may restate a version (a new valid end, a new fact id)
without changing what it says.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field

from chronokg.queries.catalog import known_clause, valid_clause
from chronokg.queries.rows import Row
from chronokg.queries.spec import QueryParams, QuerySpec, register

MAX_YEARS = 200  # years one accuracy-by-valid-year call may sweep

_PREDICTIONS = (
    "MATCH (r:Run {id: $run})<-[:IN_RUN]-(p:Prediction)-[:ANSWERS]->(q:Question)-[:TESTS]->(t:Fact)"
    "\nWITH DISTINCT p, t.subject_id AS subject, t.predicate AS predicate"
)


class YearsParams(QueryParams):
    run: str = Field(description="A run id (run-…) whose predictions the store holds")
    first: int = Field(default=2000, ge=1, le=9999, description="First year (its 1 January)")
    last: int = Field(default=2026, ge=1, le=9999, description="Last year (its 1 January)")


class YearAccuracyRow(Row):
    model: str
    year: int
    n: int = Field(description="Predictions whose question has gold valid that year")
    correct: int = Field(description="Of those, answers stating a gold value of that year")
    accuracy: float | None = None


def _by_year(p: YearsParams) -> tuple[str, dict[str, Any]]:
    if p.last < p.first or p.last - p.first >= MAX_YEARS:
        from chronokg.queries.spec import QueryError

        raise QueryError(f"accuracy-by-valid-year: give first <= last, at most {MAX_YEARS} years apart")
    cypher = (
        _PREDICTIONS
        + "\nUNWIND $years AS year"
        "\nMATCH (g:Fact {subject_id: subject})"
        f"\nWHERE g.predicate = predicate AND {known_clause('g', None)}"
        " AND (g.valid_from IS NULL OR g.valid_from <= year.day) AND (g.valid_to IS NULL OR g.valid_to > year.day)"
        "\nOPTIONAL MATCH (p)-[:CHOSE]->(c:Fact)"
        "\nWITH p, year.year AS year, c, collect(DISTINCT g.value) AS gold"
        "\nWITH p.model AS model, year, CASE WHEN c IS NOT NULL AND c.value IN gold THEN 1 ELSE 0 END AS hit"
        "\nRETURN model, year, count(*) AS n, sum(hit) AS correct"
        "\nORDER BY model, year"
    )
    years = [{"year": y, "day": dt.date(y, 1, 1)} for y in range(p.first, p.last + 1)]
    return cypher, {"run": p.run, "years": years}


def _accuracy(rows: list[YearAccuracyRow], _: YearsParams) -> list[YearAccuracyRow]:
    return [r.model_copy(update={"accuracy": r.correct / r.n if r.n else None}) for r in rows]


ACCURACY_BY_VALID_YEAR = register(QuerySpec(
    "accuracy-by-valid-year", "A run's stored answers scored against the gold valid on 1 January of each year: "
    "per model and year, the predictions with gold that year and those answering it.", YearsParams,
    YearAccuracyRow, _by_year, post=_accuracy, tags=frozenset({"cli", "tool"}),
))


class ReleasesParams(QueryParams):
    run: str = Field(description="A run id (run-…) whose predictions the store holds")
    a: dt.date = Field(description="The first release's day: what the releases known then said")
    b: dt.date = Field(description="The second release's day")


class ChangedVerdictRow(Row):
    question_id: str
    model: str
    sample: int
    answer: str | None = None
    target_date: dt.date | None = None
    correct_a: bool
    correct_b: bool
    gold_a: list[str] = Field(default_factory=list, description="The gold values as known on day a")
    gold_b: list[str] = Field(default_factory=list, description="The gold values as known on day b")


def _gold(var: str, known: str) -> str:
    return (f"\nOPTIONAL MATCH ({var}:Fact {{subject_id: subject}})"
            f"\nWHERE {var}.predicate = predicate AND {known_clause(var, known)}"
            f" AND {valid_clause(var, 'p.target_date')}")


def _changed(p: ReleasesParams) -> tuple[str, dict[str, Any]]:
    cypher = (
        _PREDICTIONS
        + "\nWHERE p.target_date IS NOT NULL"
        + _gold("ga", "$a")
        + "\nWITH p, subject, predicate, collect(DISTINCT ga.value) AS gold_a"
        + _gold("gb", "$b")
        + "\nWITH p, collect(DISTINCT gb.value) AS gold_b, gold_a"
        "\nOPTIONAL MATCH (p)-[:CHOSE]->(c:Fact)"
        "\nWITH p, gold_a, gold_b, c IS NOT NULL AND c.value IN gold_a AS correct_a,"
        " c IS NOT NULL AND c.value IN gold_b AS correct_b"
        "\nWHERE correct_a <> correct_b"
        "\nRETURN p.question_id AS question_id, p.model AS model, p.sample AS sample, p.answer AS answer,"
        " p.target_date AS target_date, correct_a, correct_b, gold_a, gold_b"
        "\nORDER BY question_id, model, sample"
    )
    return cypher, {"run": p.run, "a": p.a, "b": p.b}


def _sorted_gold(rows: list[ChangedVerdictRow], _: ReleasesParams) -> list[ChangedVerdictRow]:
    return [r.model_copy(update={"gold_a": sorted(r.gold_a), "gold_b": sorted(r.gold_b)}) for r in rows]


CHANGED_VERDICTS = register(QuerySpec(
    "changed-verdicts", "A run's stored answers whose verdict differs between what the releases known on day A "
    "and on day B said (the gold valid on each question's target date).", ReleasesParams, ChangedVerdictRow,
    _changed, post=_sorted_gold, tags=frozenset({"cli", "tool"}),
))
