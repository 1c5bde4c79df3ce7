"""Sequenced evaluation queries over a run's `Prediction` nodes: how a run's stored answers score against the
gold of each year (valid time), and which verdicts differ between what two releases said (known time).

A prediction's question tests facts (`TESTS`); the gold of a day is every fact of those subjects and predicates
valid on that day, and an answer is right when the fact it chose (`CHOSE`) states one of the gold's values. Only a
question about the present (`present`: its gold option is the up-to-date one) can be scored against the gold of
any year; one about its own date (a historical item, a year probe) is left out of the years' accuracy.
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
    n: int = Field(description="Predictions on questions about the present whose question has gold valid that year")
    correct: int = Field(description="Of those, answers stating a gold value of that year")
    accuracy: float | None = None


_VALID_ON = "(x[1] IS NULL OR x[1] <= y.day) AND (x[2] IS NULL OR x[2] > y.day)"


def _years(condition: str) -> str:
    """The years of `$years` whose 1 January a gold version `x` of `gold` satisfying `condition` is valid on, as one
    text (" 2019 2020 "): a text, not a list, because grouping and carrying lists is what costs most per row."""
    return (f"reduce(s = ' ', y IN $years | CASE WHEN any(x IN gold WHERE {condition}{_VALID_ON}) "
            "THEN s + toString(y.year) + ' ' ELSE s END)")


def _by_year(p: YearsParams) -> tuple[str, dict[str, Any]]:
    """Rows stay few whatever the run's size: each question's gold is read once, and the years it has gold and the
    years each of its gold values is right are computed per question, as texts; every answer then only looks up
    its chosen value's years, and answers with the same years are counted together before the years unwind."""
    if p.last < p.first or p.last - p.first >= MAX_YEARS:
        from chronokg.queries.spec import QueryError

        raise QueryError(f"accuracy-by-valid-year: give first <= last, at most {MAX_YEARS} years apart")
    cypher = (
        "MATCH (r:Run {id: $run})<-[:IN_RUN]-(p:Prediction) WHERE p.present = true"
        "\nWITH DISTINCT p.question_id AS question"
        "\nMATCH (q:Question {id: question})-[:TESTS]->(t:Fact)"
        "\nWITH DISTINCT q, t.subject_id AS subject, t.predicate AS predicate"
        "\nMATCH (g:Fact {subject_id: subject})"
        f"\nWHERE g.predicate = predicate AND {known_clause('g', None)}"
        "\nWITH q, collect(DISTINCT [g.value, g.valid_from, g.valid_to]) AS gold, collect(DISTINCT g.value) AS values"
        f"\nWITH q, gold, values, {_years('')} AS with_gold"
        "\nWHERE with_gold <> ' '"
        f"\nWITH q, with_gold, [v IN values | [v, {_years('x[0] = v AND ')}]] AS right_by_value"
        "\nMATCH (q)<-[:ANSWERS]-(p:Prediction) WHERE p.run_id = $run AND p.present = true"
        "\nOPTIONAL MATCH (p)-[:CHOSE]->(c:Fact)"
        "\nWITH p.model AS model, with_gold,"
        " coalesce(head([x IN right_by_value WHERE x[0] = c.value | x[1]]), ' ') AS right"
        "\nWITH model, with_gold, right, count(*) AS k"
        "\nUNWIND split(trim(with_gold), ' ') AS year"
        "\nWITH model, toInteger(year) AS year, k, CASE WHEN right CONTAINS ' ' + year + ' ' THEN k ELSE 0 END AS hit"
        "\nRETURN model, year, sum(k) AS n, sum(hit) AS correct"
        "\nORDER BY model, year"
    )
    years = [{"year": y, "day": dt.date(y, 1, 1)} for y in range(p.first, p.last + 1)]
    return cypher, {"run": p.run, "years": years}


def _accuracy(rows: list[YearAccuracyRow], _: YearsParams) -> list[YearAccuracyRow]:
    return [r.model_copy(update={"accuracy": r.correct / r.n if r.n else None}) for r in rows]


NO_RUN = ("run", "Run", "`eval runs list` names the runs it holds; a run made with --no-write or re-scored writes "
          "no predictions")

ACCURACY_BY_VALID_YEAR = register(QuerySpec(
    "accuracy-by-valid-year", "A run's answers to questions about the present (their gold option is the "
    "up-to-date one) scored against the gold valid on 1 January of each year: per model and year, those with gold "
    "that year and those stating it. Historical items and probes ask about their own date and are left out.",
    YearsParams, YearAccuracyRow, _by_year, post=_accuracy, tags=frozenset({"cli", "tool"}), names=NO_RUN,
    counted="model-year rows, over the answers to questions about the present only (historical items and probes "
            "ask about their own date)",
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
    _changed, post=_sorted_gold, tags=frozenset({"cli", "tool"}), counted="samples whose verdict changed",
    names=NO_RUN,
))
