"""Queries over guideline trajectories that benchmark generation and answer keys read.

`decision-at` is the answer key of every TempoMed-Bench item and probe: the
recommendation in force for one clinical decision on a date, beside the version
chain of its trajectory (so a new version of the trajectory changes the evidence
of exactly its questions). `change-pair-list` enumerates the change pairs a
generator builds questions from.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field

from chronokg.queries.catalog import MAX_CHAIN, known_clause, valid_clause
from chronokg.queries.rows import Row
from chronokg.queries.spec import MAX_ITEMS, QueryParams, QuerySpec, register


class DecisionAtParams(QueryParams):
    decision: str = Field(description="A clinical decision id (the subject of its recommendation facts)")
    date: dt.date = Field(description="The day asked about")
    known_at: dt.date | None = Field(default=None, description="As the releases known on this day said it "
                                                               "(default: as known now)")


class DecisionRow(Row):
    kind: str  # recommendation | version
    guideline: str
    year: int | None = None
    fact_id: str | None = None
    text: str | None = None
    valid_from: dt.date | None = None
    valid_to: dt.date | None = None
    in_force: bool | None = None


def _decision_at(p: DecisionAtParams) -> tuple[str, dict[str, Any]]:
    known = "$known_at" if p.known_at is not None else None
    cypher = (
        "MATCH (f:Fact {subject_id: $decision})-[:FROM_GUIDELINE]->(g:Guideline)"
        f"\nWHERE f.predicate IN ['recommendation'] AND {known_clause('f', known)}"
        "\nRETURN 'recommendation' AS kind, g.id AS guideline, g.year AS year, f.id AS fact_id, f.value AS text,"
        f" f.valid_from AS valid_from, f.valid_to AS valid_to, ({valid_clause('f', '$date')}) AS in_force"
        "\nUNION ALL"
        "\nMATCH (f:Fact {subject_id: $decision})-[:FROM_GUIDELINE]->(g0:Guideline)"
        "\nWHERE f.predicate IN ['recommendation']"
        f"\nMATCH (g0)-[:SUPERSEDES*0..{MAX_CHAIN}]-(v:Guideline)"
        "\nWITH DISTINCT v"
        "\nRETURN 'version' AS kind, v.id AS guideline, v.year AS year, null AS fact_id, null AS text,"
        " v.issued AS valid_from, null AS valid_to, null AS in_force"
    )
    params: dict[str, Any] = {"decision": p.decision, "date": p.date}
    if p.known_at is not None:
        params["known_at"] = p.known_at
    return cypher, params


def _decision_order(rows: list[DecisionRow], _: DecisionAtParams) -> list[DecisionRow]:
    def key(r: DecisionRow) -> tuple[Any, ...]:
        return (r.kind, r.year or 0, r.valid_from or dt.date.min, r.guideline, r.fact_id or "")

    return sorted(rows, key=key)


def at_date(rows: list[DecisionRow], date: dt.date) -> list[DecisionRow]:
    """`decision-at` rows for another date, without running it again: only `in_force` depends on the date,
    and it is the catalog's valid-time rule ([valid_from, valid_to), open ends). Used when one decision is
    asked about at many dates (the year-sweep probes); tests check it equals re-running the query."""
    out = []
    for r in rows:
        if r.kind == "recommendation":
            valid = (r.valid_from is None or r.valid_from <= date) and (r.valid_to is None or r.valid_to > date)
            r = r.model_copy(update={"in_force": valid})
        out.append(r)
    return out


def in_force_text(rows: list[Any]) -> str | None:
    """The recommendation in force in `decision-at` evidence (rows or their dicts), or None."""
    found = [r for r in rows if (r.get("kind") if isinstance(r, dict) else r.kind) == "recommendation"
             and (r.get("in_force") if isinstance(r, dict) else r.in_force)]
    if not found:
        return None
    first = found[-1]
    return str(first["text"] if isinstance(first, dict) else first.text)


DECISION_AT = register(QuerySpec(
    "decision-at", "The recommendation in force for one clinical decision on DATE, beside its trajectory's versions.",
    DecisionAtParams, DecisionRow, _decision_at, post=_decision_order, tags=frozenset({"cli", "tool", "answer-key"}),
))


class PairListParams(QueryParams):
    sources: list[str] | None = Field(default=None, max_length=MAX_ITEMS,
                                      description="Only change pairs loaded from these releases")
    guideline: str | None = Field(default=None, description="Only the pairs whose current guideline is this")


class PairRow(Row):
    pair: str
    decision: str
    current_pmid: str | None = None  # None: a pair from a source without guidelines (DriftMed)
    prior_pmid: str | None = None
    current_year: int | None = None
    prior_year: int | None = None
    current_text: str | None = None
    prior_text: str | None = None
    current_fact: str | None = None
    prior_fact: str | None = None
    clinical_focus: str | None = None
    category: str | None = None
    summary: str | None = None
    topic: str | None = None
    organization: str | None = None
    question_id: str | None = None
    question: str | None = None
    choices: list[str] | None = None
    correct: str | None = None
    explanation: str | None = None
    record: Any = None
    sources: list[str] = Field(default_factory=list)


def change_pair_head(params: dict[str, Any], sources: list[str] | None, where: list[str] | None = None,
                     collect: str = "") -> str:
    """The start every change-pair listing shares: each pair `c` (matching `where`) with its source ids
    `sources` (only pairs loaded from `sources`, when given; `collect` adds columns to that WITH), its two
    recommendation facts `cf` (current) and `pf` (prior) and their guidelines `cg` and `pg`."""
    cypher = "MATCH (c:ChangePair)" + (" WHERE " + " AND ".join(where) if where else "")
    cypher += "\nOPTIONAL MATCH (c)-[:LOADED_FROM]->(s:Source)\nWITH c, collect(s.id) AS sources" + collect
    if sources is not None:
        cypher += "\nWHERE any(x IN sources WHERE x IN $sources)"
        params["sources"] = sources
    return cypher + (
        "\nOPTIONAL MATCH (c)-[:CURRENT]->(cf:Fact)"
        "\nOPTIONAL MATCH (c)-[:PRIOR]->(pf:Fact)"
        "\nOPTIONAL MATCH (cg:Guideline {id: c.current_pmid})"
        "\nOPTIONAL MATCH (pg:Guideline {id: c.prior_pmid})"
    )


def _pair_list(p: PairListParams) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {}
    where = []
    if p.guideline is not None:
        where.append("c.current_pmid = $guideline")
        params["guideline"] = p.guideline
    cypher = change_pair_head(params, p.sources, where)
    cypher += (
        "\nOPTIONAL MATCH (cg)-[:ISSUED_BY]->(o:Organization)"
        "\nOPTIONAL MATCH (sq:SourceQuestion)-[:ABOUT]->(c)"
        "\nWITH c, sources, cf, pf, cg, pg, min(o.caption) AS organization, min(sq.id) AS qid"
        "\nOPTIONAL MATCH (q:SourceQuestion {id: qid})"
        "\nRETURN c.id AS pair, c.decision_id AS decision, c.current_pmid AS current_pmid,"
        " c.prior_pmid AS prior_pmid, cg.year AS current_year, pg.year AS prior_year, cf.value AS current_text,"
        " pf.value AS prior_text, cf.id AS current_fact, pf.id AS prior_fact, c.clinical_focus AS clinical_focus,"
        " c.category AS category, c.summary AS summary, coalesce(cg.topic, pg.topic) AS topic,"
        " organization, q.id AS question_id,"
        " q.question AS question, q.choices AS choices, q.correct AS correct, q.explanation AS explanation,"
        " q.record AS record, sources"
        "\nORDER BY pair"
    )
    return cypher, params


def _pair_picks(rows: list[PairRow], _: PairListParams) -> list[PairRow]:
    """Sorted `sources`, and the organization the pair's own question names ("According to the X guideline
    issued in YYYY": the loader issued the guideline by X from that stem) where its guideline has several; the
    query's pick (the first by name) otherwise. Picks that no engine's `collect` order can move."""
    from chronokg.ingest.tempomed import organization_from_question

    out = []
    for r in rows:
        named = (organization_from_question(r.question, r.current_year)
                 if r.question is not None and r.current_year is not None else None)
        out.append(r.model_copy(update={"sources": sorted(r.sources), "organization": named or r.organization}))
    return out


CHANGE_PAIR_LIST = register(QuerySpec(
    "change-pair-list", "Every change pair with its two recommendations, years, topic and source question.",
    PairListParams, PairRow, _pair_list, post=_pair_picks, tags=frozenset({"tool"}),
    columns=("pair", "current_pmid", "current_year", "prior_pmid", "prior_year", "question_id"),
))
