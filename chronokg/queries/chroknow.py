"""Queries the ChroKnowBench family reads: source rows, the facts of a (subject, relation) in a window, the
objects a relation takes across subjects (for distractors), and CFR paragraph changes (for Legal cloze items).

`facts-during` is the answer key of every ChroKnow question: the facts of one (subject, predicate) valid at
some time in [from, to) (a calendar year for ChroKnowBench rows, the day of a CFR edition for cloze items),
with their objects' captions and aliases, so a new release that changes what held that year changes the
evidence of exactly the questions about it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field

from chronokg.queries.catalog import known_clause
from chronokg.queries.rows import Row
from chronokg.queries.spec import MAX_COUNT, MAX_ITEMS, QueryParams, QuerySpec, register

Scalar = str | int | float | bool | None


class RowsParams(QueryParams):
    fewshot: bool = Field(default=False, description="The few-shot pools (Fewshots/) instead of the benchmark rows")
    sources: list[str] | None = Field(default=None, max_length=MAX_ITEMS,
                                      description="Only rows loaded from these releases")


class ChroKnowRow(Row):
    id: str
    benchmark: str
    seed_domain: str | None = None
    split: str | None = None
    file_name: str | None = None
    record: int | None = None
    subject: str | None = None
    question: str | None = None
    question_type: str | None = None
    subject_text: str | None = None
    relation: str | None = None
    temporal_state: str | None = None
    row_json: str | None = None
    source_id: str


def _rows(p: RowsParams) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {"fewshot": p.fewshot}
    where = ["q.benchmark STARTS WITH 'chroknow:'", "coalesce(q.fewshot, false) = $fewshot"]
    if p.sources is not None:
        where.append("s.id IN $sources")
        params["sources"] = p.sources
    cypher = (
        "MATCH (q:SourceQuestion)-[:LOADED_FROM]->(s:Source)"
        f"\nWHERE {' AND '.join(where)}"
        "\nOPTIONAL MATCH (q)-[:ABOUT]->(e:Entity)"
        "\nRETURN q.id AS id, q.benchmark AS benchmark, q.seed_domain AS seed_domain, q.split AS split,"
        " q.file_name AS file_name, q.record AS record, e.id AS subject, q.question AS question,"
        " q.question_type AS question_type, q.subject_text AS subject_text, q.relation AS relation,"
        " q.temporal_state AS temporal_state, q.row_json AS row_json, s.id AS source_id"
        "\nORDER BY file_name, record, id"
    )
    return cypher, params


CHROKNOW_ROWS = register(QuerySpec(
    "chroknow-rows", "ChroKnowBench rows (or few-shot rows) as loaded, with each row's JSON exactly as read.",
    RowsParams, ChroKnowRow, _rows, tags=frozenset({"tool"}),
    columns=("id", "seed_domain", "split", "file_name", "record", "question"),
))


class DuringParams(QueryParams):
    subject: str = Field(description="Subject id")
    predicate: str = Field(description="Predicate (relation) id")
    start: dt.date = Field(alias="from", description="The first day of the window")
    end: dt.date = Field(alias="to", description="The day after the window")


class DuringRow(Row):
    fact_id: str
    object: str | None = None
    caption: str | None = None
    aliases: list[str] | None = None
    value: Scalar = None
    valid_from: dt.date | None = None
    valid_to: dt.date | None = None


def _during(p: DuringParams) -> tuple[str, dict[str, Any]]:
    cypher = (
        "MATCH (f:Fact {subject_id: $subject})"
        f"\nWHERE f.predicate IN [$predicate] AND {known_clause('f', None)}"
        "\n  AND (f.valid_from IS NULL OR f.valid_from < $end) AND (f.valid_to IS NULL OR f.valid_to > $start)"
        "\nOPTIONAL MATCH (o:Entity {id: f.object_id})"
        "\nRETURN f.id AS fact_id, f.object_id AS object, o.caption AS caption, o.aliases AS aliases,"
        " f.value AS value, f.valid_from AS valid_from, f.valid_to AS valid_to"
    )
    return cypher, {"subject": p.subject, "predicate": p.predicate, "start": p.start, "end": p.end}


def _during_order(rows: list[DuringRow], _: DuringParams) -> list[DuringRow]:
    """Earliest first (open starts first), then by object or value, so the evidence hash is stable."""
    return sorted(rows, key=lambda r: (r.valid_from is not None, r.valid_from or dt.date.min,
                                       str(r.object or r.value), r.fact_id))


FACTS_DURING = register(QuerySpec(
    "facts-during", "The facts of SUBJECT and PREDICATE valid at some time in [FROM, TO), with object aliases.",
    DuringParams, DuringRow, _during, post=_during_order, tags=frozenset({"cli", "tool", "answer-key"}),
))


def shown(row: DuringRow | dict[str, Any]) -> str:
    """A `facts-during` row's object caption (or id), or its literal value, as text."""
    r = row if isinstance(row, dict) else row.model_dump()
    if r.get("object") is not None:
        return str(r.get("caption") or r["object"])
    return str(r.get("value"))


class RelationParams(QueryParams):
    predicate: str = Field(description="Predicate (relation) id")


class RelationRow(Row):
    object: str | None = None
    caption: str | None = None
    aliases: list[str] | None = None
    value: Scalar = None
    subjects: list[str]


def _relation(p: RelationParams) -> tuple[str, dict[str, Any]]:
    cypher = (
        "MATCH (f:Fact)"
        f"\nWHERE f.predicate = $predicate AND {known_clause('f', None)}"
        "\nWITH f.object_id AS object, f.value AS value, collect(DISTINCT f.subject_id) AS subjects"
        "\nOPTIONAL MATCH (o:Entity {id: object})"
        "\nRETURN object, o.caption AS caption, o.aliases AS aliases, value, subjects"
    )
    return cypher, {"predicate": p.predicate}


def _relation_order(rows: list[RelationRow], _: RelationParams) -> list[RelationRow]:
    return sorted((r.model_copy(update={"subjects": sorted(r.subjects)}) for r in rows),
                  key=lambda r: (str(r.object), str(r.value)))


RELATION_OBJECTS = register(QuerySpec(
    "relation-objects", "Every object (or value) PREDICATE takes at any time, with the subjects that have it.",
    RelationParams, RelationRow, _relation, post=_relation_order, tags=frozenset({"tool"}),
    columns=("object", "caption", "value", "subjects"),
))


class CfrChangesParams(QueryParams):
    sources: list[str] | None = Field(default=None, max_length=MAX_ITEMS,
                                      description="Only changes first published in these releases")
    max_regions: int = Field(default=1, ge=1, le=MAX_COUNT,
                             description="At most this many changed regions in a paragraph")


class CfrChangeRow(Row):
    fact_id: str
    section: str
    section_caption: str | None = None
    predicate: str
    text: str
    from_text: str
    span_start: int
    span_end: int
    old: str
    new: str
    regions: int
    valid_from: dt.date | None = None
    text_source: str


def _cfr_changes(p: CfrChangesParams) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {"max_regions": p.max_regions}
    where = ["f.source_kind = 'cfr'", "f.change = 'changed'", known_clause("f", None),
             "f.changed_regions <= $max_regions"]
    if p.sources is not None:
        where.append("coalesce(f.text_source_id, f.source_id) IN $sources")
        params["sources"] = p.sources
    cypher = (
        "MATCH (f:Fact)"
        f"\nWHERE {' AND '.join(where)}"
        "\nOPTIONAL MATCH (s:Entity {id: f.subject_id})"
        "\nRETURN f.id AS fact_id, f.subject_id AS section, s.caption AS section_caption, f.predicate AS predicate,"
        " f.value AS text, f.changed_from_text AS from_text, f.changed_span_start AS span_start,"
        " f.changed_span_end AS span_end, f.changed_old AS old, f.changed_new AS new, f.changed_regions AS regions,"
        " f.valid_from AS valid_from, coalesce(f.text_source_id, f.source_id) AS text_source"
        "\nORDER BY section, predicate, valid_from, fact_id"
    )
    return cypher, params


CFR_CHANGES = register(QuerySpec(
    "cfr-changes", "CFR paragraphs changed between editions, with the changed span (for cloze questions).",
    CfrChangesParams, CfrChangeRow, _cfr_changes, tags=frozenset({"tool"}),
    columns=("section", "predicate", "old", "new", "valid_from"),
))


class EditionsParams(QueryParams):
    title: int = Field(ge=1, le=99, description="CFR title number")


class EditionRow(Row):
    source_id: str
    release_date: dt.date


def _editions(p: EditionsParams) -> tuple[str, dict[str, Any]]:
    cypher = (
        "MATCH (s:Source) WHERE s.kind = 'cfr' AND s.id STARTS WITH $prefix AND s.release_date IS NOT NULL"
        "\nRETURN s.id AS source_id, s.release_date AS release_date"
        "\nORDER BY release_date, source_id"
    )
    return cypher, {"prefix": f"cfr:title-{p.title}@"}


CFR_EDITIONS = register(QuerySpec(
    "cfr-editions", "The loaded editions of a CFR title, oldest first.", EditionsParams, EditionRow, _editions,
    tags=frozenset({"tool"}),
))


class WikidataFactsParams(QueryParams):
    pass


class WikidataFactRow(DuringRow):
    """A `facts-during` row with what names its statement: subject, predicate, the release that made it known."""

    subject: str
    subject_caption: str | None = None
    predicate: str
    source_id: str | None = None


def _wikidata_facts(_: WikidataFactsParams) -> tuple[str, dict[str, Any]]:
    cypher = (
        "MATCH (f:Fact)"
        f"\nWHERE f.source_kind = 'wikidata' AND {known_clause('f', None)}"
        "\nOPTIONAL MATCH (s:Entity {id: f.subject_id})"
        "\nOPTIONAL MATCH (o:Entity {id: f.object_id})"
        "\nRETURN f.id AS fact_id, f.subject_id AS subject, s.caption AS subject_caption, f.predicate AS predicate,"
        " f.object_id AS object, o.caption AS caption, o.aliases AS aliases, f.value AS value,"
        " f.valid_from AS valid_from, f.valid_to AS valid_to, f.source_id AS source_id"
    )
    return cypher, {}


def _wikidata_order(rows: list[WikidataFactRow], _: WikidataFactsParams) -> list[WikidataFactRow]:
    return sorted(rows, key=lambda r: (r.subject, r.predicate, r.valid_from is not None,
                                       r.valid_from or dt.date.min, str(r.object or r.value), r.fact_id))


WIKIDATA_FACTS = register(QuerySpec(
    "wikidata-facts", "Every Wikidata fact known now (loaded with `ingest wikidata`), with subject and object "
    "captions: what ChroKnow builds General items from.", WikidataFactsParams, WikidataFactRow, _wikidata_facts,
    post=_wikidata_order,
    columns=("subject", "predicate", "object", "caption", "value", "valid_from", "valid_to"),
))
