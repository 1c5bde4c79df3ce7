"""Queries the ConflictMedQA family reads: its recommendation pairs, and the answer key of every scenario.

`conflictmedqa-pairs` lists every change pair (DriftMed or TempoMed, or any source that
links a `ChangePair` to a CURRENT and a PRIOR recommendation fact) with what a scenario
needs: both texts, their valid intervals, the change category, the disease and its group,
the factor of a DriftMed scenario pair. It also works on stores where some pairs have no
guideline (DriftMed), where `change-pair-list` would give no years.

`conflictmedqa-key` is the answer key of every ConflictMedQA question: the pair's two
recommendations with whether each is in force on the asked date, any other recommendation
of the same clinical decision, and (for guideline-based pairs) the version chain of their
guidelines, so a newer version loaded later changes the evidence of exactly its questions.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field

from chronokg.queries.catalog import MAX_CHAIN, known_clause, valid_clause
from chronokg.queries.guidelines import change_pair_head
from chronokg.queries.rows import Row
from chronokg.queries.spec import MAX_ITEMS, QueryParams, QuerySpec, register

UP_TO_DATE = "up_to_date"
OUTDATED = "outdated"
RECOMMENDATION_KINDS = (UP_TO_DATE, OUTDATED, "other")


class ConflictPairsParams(QueryParams):
    sources: list[str] | None = Field(default=None, max_length=MAX_ITEMS,
                                      description="Only change pairs loaded from these releases")


class ConflictPairRow(Row):
    pair: str
    decision: str | None = None
    current_fact: str | None = None
    prior_fact: str | None = None
    current_text: str | None = None
    prior_text: str | None = None
    current_from: dt.date | None = None
    current_to: dt.date | None = None
    prior_from: dt.date | None = None
    prior_to: dt.date | None = None
    category: str | None = None
    clinical_focus: str | None = None
    disease_group: str | None = None
    factor: str | None = None
    summary: str | None = None
    current_pmid: str | None = None
    prior_pmid: str | None = None
    current_year: int | None = None
    prior_year: int | None = None
    driftmed_id: int | None = None
    prior_driftmed_id: int | None = None
    records: list[Any] = Field(default_factory=list)
    source_kinds: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)


def _pairs(p: ConflictPairsParams) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {}
    cypher = change_pair_head(params, p.sources, collect=", collect(DISTINCT s.kind) AS kinds")
    cypher += (
        "\nOPTIONAL MATCH (q:SourceQuestion)-[:ABOUT]->(c)"
        "\nWITH c, sources, kinds, cf, pf, cg, pg, collect(q.record) AS records"
        "\nRETURN c.id AS pair, c.decision_id AS decision, cf.id AS current_fact, pf.id AS prior_fact,"
        " cf.value AS current_text, pf.value AS prior_text, cf.valid_from AS current_from,"
        " cf.valid_to AS current_to, pf.valid_from AS prior_from, pf.valid_to AS prior_to,"
        " c.category AS category, c.clinical_focus AS clinical_focus, c.disease_group AS disease_group,"
        " c.factor AS factor, c.summary AS summary, c.current_pmid AS current_pmid, c.prior_pmid AS prior_pmid,"
        " cg.year AS current_year, pg.year AS prior_year, cf.driftmed_id AS driftmed_id,"
        " pf.driftmed_id AS prior_driftmed_id, records, kinds AS source_kinds, sources"
        "\nORDER BY pair"
    )
    return cypher, params


def _pairs_clean(rows: list[ConflictPairRow], _: ConflictPairsParams) -> list[ConflictPairRow]:
    """Lists collected by the engine in no fixed order: sorted, so the rows (and hashes) are stable."""
    return [r.model_copy(update={"records": sorted(r.records, key=str), "source_kinds": sorted(r.source_kinds),
                                 "sources": sorted(r.sources)}) for r in rows]


CONFLICT_PAIRS = register(QuerySpec(
    "conflictmedqa-pairs", "Every change pair with both recommendations, their intervals, change category, "
                           "disease (group) and factor: what ConflictMedQA scenarios are written from.",
    ConflictPairsParams, ConflictPairRow, _pairs, post=_pairs_clean, tags=frozenset({"tool"}),
    columns=("pair", "category", "clinical_focus", "disease_group", "factor", "driftmed_id"),
))


class ConflictKeyParams(QueryParams):
    pair: str = Field(description="A change pair id")
    date: dt.date = Field(description="The day whose guidelines count as current")


class ConflictKeyRow(Row):
    kind: str  # up_to_date | outdated | other (recommendations) | version (a guideline of the chain)
    fact_id: str | None = None
    text: str | None = None
    valid_from: dt.date | None = None
    valid_to: dt.date | None = None
    in_force: bool | None = None
    guideline: str | None = None
    year: int | None = None


def _key(p: ConflictKeyParams) -> tuple[str, dict[str, Any]]:
    fields = ("f.id AS fact_id, f.value AS text, f.valid_from AS valid_from, f.valid_to AS valid_to,"
              f" ({valid_clause('f', '$date')}) AS in_force, null AS guideline, null AS year")
    cypher = (
        "MATCH (c:ChangePair {id: $pair})-[r:CURRENT|PRIOR]->(f:Fact)"
        f"\nWHERE {known_clause('f', None)}"
        f"\nRETURN CASE WHEN type(r) = 'CURRENT' THEN '{UP_TO_DATE}' ELSE '{OUTDATED}' END AS kind, {fields}"
        "\nUNION ALL"
        "\nMATCH (c:ChangePair {id: $pair})-[:CURRENT|PRIOR]->(x:Fact)"
        "\nWITH c, collect(x.id) AS own"
        "\nMATCH (f:Fact {subject_id: c.decision_id})"
        f"\nWHERE f.predicate IN ['recommendation'] AND NOT f.id IN own AND {known_clause('f', None)}"
        f"\nRETURN 'other' AS kind, {fields}"
        "\nUNION ALL"
        "\nMATCH (c:ChangePair {id: $pair})-[:CURRENT|PRIOR]->(:Fact)-[:FROM_GUIDELINE]->(g0:Guideline)"
        f"\nMATCH (g0)-[:SUPERSEDES*0..{MAX_CHAIN}]-(v:Guideline)"
        "\nWITH DISTINCT v"
        "\nRETURN 'version' AS kind, null AS fact_id, null AS text, v.issued AS valid_from, null AS valid_to,"
        " null AS in_force, v.id AS guideline, v.year AS year"
    )
    return cypher, {"pair": p.pair, "date": p.date}


def _key_order(rows: list[ConflictKeyRow], _: ConflictKeyParams) -> list[ConflictKeyRow]:
    order = {k: n for n, k in enumerate((*RECOMMENDATION_KINDS, "version"))}

    def key(r: ConflictKeyRow) -> tuple[Any, ...]:
        return (order.get(r.kind, 9), r.year or 0, r.valid_from or dt.date.min, r.guideline or "", r.fact_id or "")

    return sorted(rows, key=key)


def in_force(rows: list[Any]) -> list[str]:
    """The recommendation texts in force in `conflictmedqa-key` evidence (rows or their dicts), up-to-date first."""
    out = []
    for r in rows:
        row = r if isinstance(r, dict) else r.model_dump()
        if row.get("kind") in RECOMMENDATION_KINDS and row.get("in_force") and row.get("text") is not None:
            out.append(str(row["text"]))
    return out


def current_text(rows: list[Any]) -> str | None:
    """The answer an answer key records: the recommendation in force on its date (the up-to-date one first)."""
    texts = in_force(rows)
    return texts[0] if texts else None


CONFLICT_KEY = register(QuerySpec(
    "conflictmedqa-key", "A change pair's two recommendations with whether each is in force on DATE, other "
                         "recommendations of its decision, and its guidelines' version chain.",
    ConflictKeyParams, ConflictKeyRow, _key, post=_key_order, tags=frozenset({"cli", "tool", "answer-key"}),
))
