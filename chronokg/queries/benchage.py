"""Queries over the benchmark-aging QA sets (`chronokg.ingest.qasets`) that the BenchAge family reads.

`qa-gold` is the answer key of every BenchAge question: the gold-answer facts of one
question as known at a date (`known_at`: the benchmark's release gives its gold at
release) or as known now (no `known_at`), each with its valid time and source, and
whether it is the one in force now (open-ended valid time). A later answer recorded
with `chronokg ingest qa-update` changes the as-of-now evidence of exactly that
question, so `chronokg bench verify` lists it. `qa-questions` enumerates the loaded
questions with their stored time-sensitivity verdicts.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field

from chronokg.queries.catalog import known_clause
from chronokg.queries.rows import Row
from chronokg.queries.spec import MAX_ITEMS, QueryParams, QuerySpec, register

GOLD_PREDICATE = "gold_answer"  # chronokg.ingest.qasets.GOLD (queries do not import loaders)


class GoldParams(QueryParams):
    question: str = Field(description="A question id, e.g. selfaware:42 or triviaqa:tc_33")
    known_at: dt.date | None = Field(default=None, description="As known on this day (default: as known now); "
                                                               "the benchmark's release gives its gold at release")


class GoldRow(Row):
    fact_id: str
    value: str | bool | int | float | None = None
    valid_from: dt.date | None = None
    valid_to: dt.date | None = None
    known_from: dt.date | None = None
    known_to: dt.date | None = None
    source_id: str
    source_kind: str | None = None
    accepted_answers: str | None = None  # JSON list, as the loader stores it (absent for a single answer)
    current: bool  # valid now: its valid time is open-ended


def _gold(p: GoldParams) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {"question": p.question, "predicate": GOLD_PREDICATE}
    if p.known_at is not None:
        params["known_at"] = p.known_at
    # As known on a past day, nothing learnt later shows, not even the retraction that ends a fact's known
    # time: so the gold at a release stays the same evidence whatever is recorded afterwards.
    known_to = "null" if p.known_at is not None else "f.known_to"
    cypher = (
        "MATCH (f:Fact {subject_id: $question})"
        f"\nWHERE f.predicate IN [$predicate] AND {known_clause('f', '$known_at' if p.known_at else None)}"
        "\nRETURN f.id AS fact_id, f.value AS value, f.valid_from AS valid_from, f.valid_to AS valid_to,"
        f" f.known_from AS known_from, {known_to} AS known_to, f.source_id AS source_id,"
        " f.source_kind AS source_kind, f.accepted_answers AS accepted_answers, f.valid_to IS NULL AS current"
    )
    return cypher, params


def _gold_order(rows: list[GoldRow], _: GoldParams) -> list[GoldRow]:
    """Valid-time order (unknown start first), then known time, then id: the last current row is the answer."""
    def key(r: GoldRow) -> tuple[Any, ...]:
        return (r.valid_from or dt.date.min, r.known_from or dt.date.min, r.fact_id)

    return sorted(rows, key=key)


QA_GOLD = register(QuerySpec(
    "qa-gold", "The gold answers of one QA-set question as known at --known-at (default: now), with valid times.",
    GoldParams, GoldRow, _gold, post=_gold_order, tags=frozenset({"cli", "tool", "answer-key"}),
    columns=("value", "valid_from", "valid_to", "known_from", "known_to", "source_kind", "current"),
))


class QuestionsParams(QueryParams):
    benchmarks: list[str] | None = Field(default=None, max_length=MAX_ITEMS,
                                         description="Only these benchmarks (selfaware, truthfulqa, "
                                                     "triviaqa, nq, boolq)")
    sources: list[str] | None = Field(default=None, max_length=MAX_ITEMS,
                                      description="Only questions loaded from, or given a gold "
                                                  "answer by, these releases (a later qa-update)")


class QuestionRow(Row):
    source_question: str
    question_id: str
    benchmark: str
    record: str | int | None = None
    question: str
    answerable: bool | None = None
    answers: list[str] | None = None
    passage: str | None = None
    time_sensitive: bool | None = None
    time_sensitive_by: str | None = None
    time_sensitive_votes: list[int] | None = None
    release_date: dt.date | None = None
    sources: list[str] = Field(default_factory=list)


def _questions(p: QuestionsParams) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {}
    cypher = "MATCH (q:SourceQuestion)"
    if p.benchmarks is not None:
        cypher += " WHERE q.benchmark IN $benchmarks"
        params["benchmarks"] = p.benchmarks
    cypher += (
        "\nMATCH (q)-[:ABOUT]->(e:Entity)"
        "\nMATCH (q)-[:LOADED_FROM]->(s:Source)"
        "\nWITH q, e, collect(s.id) AS sources, min(s.release_date) AS release_date"
    )
    if p.sources is not None:
        cypher += (
            "\nOPTIONAL MATCH (f:Fact {subject_id: e.id}) WHERE f.source_id IN $sources"
            "\nWITH q, e, sources, release_date, count(f) AS answered"
            "\nWHERE answered > 0 OR any(x IN sources WHERE x IN $sources)"
        )
        params["sources"] = p.sources
    cypher += (
        "\nRETURN q.id AS source_question, e.id AS question_id, q.benchmark AS benchmark, q.record AS record,"
        " q.question AS question, q.answerable AS answerable, q.answers AS answers, q.passage AS passage,"
        " q.time_sensitive AS time_sensitive, q.time_sensitive_by AS time_sensitive_by,"
        " q.time_sensitive_votes AS time_sensitive_votes, release_date, sources"
    )
    return cypher, params


def _question_order(rows: list[QuestionRow], _: QuestionsParams) -> list[QuestionRow]:
    """By benchmark, then the dataset's own record order (numbers before ids), then id: stable on every engine."""
    def key(r: QuestionRow) -> tuple[Any, ...]:
        numeric = isinstance(r.record, int)
        return (r.benchmark, not numeric, r.record if numeric else 0, str(r.record), r.question_id)

    return sorted((r.model_copy(update={"sources": sorted(r.sources)}) for r in rows), key=key)


QA_QUESTIONS = register(QuerySpec(
    "qa-questions", "The loaded QA-set questions (SelfAware, TruthfulQA, TriviaQA, NQ, BoolQ) with their "
                    "time-sensitivity verdicts.",
    QuestionsParams, QuestionRow, _questions, post=_question_order, tags=frozenset({"cli", "tool"}),
    columns=("question_id", "benchmark", "question", "answerable", "time_sensitive", "release_date"),
))
