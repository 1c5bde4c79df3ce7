"""`known-grid`: valid time across, known time down, for one subject or one guideline trajectory.

Each row of the grid is a known time: the release date of a Source that asserts the subject's facts
(or of a release of the same source whose date is where a fact's known time starts or ends), and any
known-time change the facts record without a release of their own (the demo corpus dates its
retractions on the facts). Each column is a valid-time change point: a day some fact of the subject
starts or stops being valid, so between two columns nothing changes in valid time for any row.
A cell is what `as-of` answers for that date known at that row: valid on the date
(`valid_from <= date < valid_to`) and known on the row's day (`known_from <= day < known_to`), the
catalog's rules (`VALID_AT`, `KNOWN_AT`), applied to the facts read once instead of one read per cell.
One output row per (known time, date, fact); an empty cell is one row with no fact.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field

from chronokg.queries.catalog import MAX_CHAIN
from chronokg.queries.rows import Row
from chronokg.queries.spec import QueryParams, QuerySpec, register

MAX_COLUMNS = 400  # valid-time points a grid may ask for (the rows are known times x points x facts)
MAX_FACTS = 2000  # facts read for one grid: a subject or trajectory past this is cut, in (subject, valid_from) order


class GridParams(QueryParams):
    subject: str = Field(description="One subject (QID, CUI, decision id, CXR finding, ...), or with --trajectory "
                                     "any guideline version's PMID")
    trajectory: bool = Field(default=False, description="The subject is a guideline: grid its whole trajectory "
                                                        "(its versions and the decisions of its change pairs)")
    columns: int = Field(default=60, ge=1, le=MAX_COLUMNS, description="At most this many valid-time points "
                                                                        "(evenly chosen, first and last kept)")


class GridRow(Row):
    """A cell's fact (or an empty cell), with its known time and valid-time date; the query's own rows are
    the facts (`row = 'fact'`) and the releases (`row = 'release'`) the cells are built from."""

    row: str = "cell"
    known: dt.date | None = None  # the row's known time
    releases: list[str] = Field(default_factory=list)  # Source ids released that day (none: a fact's own date)
    release_captions: list[str] = Field(default_factory=list)
    date: dt.date | None = None  # the column: valid on this day
    id: str | None = None
    subject: str | None = None
    subject_caption: str | None = None
    predicate: str | None = None
    object: str | None = None
    object_caption: str | None = None
    value: str | int | float | bool | None = None
    valid_from: dt.date | None = None
    valid_to: dt.date | None = None
    precision: str | None = None
    known_from: dt.date | None = None
    known_to: dt.date | None = None
    source_id: str | None = None


def _facts(p: GridParams) -> tuple[str, dict[str, Any]]:
    """The MATCH that binds `f` to each fact in scope."""
    if not p.trajectory:
        return "MATCH (f:Fact) WHERE f.subject_id = $subject", {"subject": p.subject}
    return (
        f"MATCH (:Guideline {{id: $subject}})-[:SUPERSEDES*0..{MAX_CHAIN}]-(g:Guideline)"
        "\nWITH DISTINCT g"
        "\nOPTIONAL MATCH (c:ChangePair {current_pmid: g.id})"
        "\nWITH collect(DISTINCT g.id) + collect(DISTINCT c.decision_id) AS subjects"
        "\nUNWIND subjects AS scoped"
        "\nMATCH (f:Fact) WHERE f.subject_id = scoped"
    ), {"subject": p.subject}


def _grid_cypher(p: GridParams) -> tuple[str, dict[str, Any]]:
    match, params = _facts(p)
    facts = (
        match + "\nWITH f ORDER BY f.subject_id, f.valid_from, f.id LIMIT $max_facts"
        "\nOPTIONAL MATCH (s:Entity {id: f.subject_id})"
        "\nOPTIONAL MATCH (o:Entity {id: f.object_id})"
        "\nRETURN 'fact' AS row, null AS known, [] AS releases, [] AS release_captions, f.id AS id,"
        " f.subject_id AS subject, s.caption AS subject_caption, f.predicate AS predicate, f.object_id AS object,"
        " o.caption AS object_caption, f.value AS value, f.valid_from AS valid_from, f.valid_to AS valid_to,"
        " f.precision AS precision, f.known_from AS known_from, f.known_to AS known_to, f.source_id AS source_id"
    )
    # The releases: those asserting a fact in scope, and those of the same source whose day a fact's known
    # time starts or ends on (a release that retracted or re-dated it).
    releases = (
        match + "\nOPTIONAL MATCH (f)-[:ASSERTED_IN]->(a:Source)"
        "\nWITH collect(DISTINCT a.id) AS asserted, collect(DISTINCT f.source_kind) AS kinds,"
        " collect(DISTINCT f.known_from) + collect(DISTINCT f.known_to) AS days"
        "\nMATCH (s:Source) WHERE s.release_date IS NOT NULL AND (s.id IN asserted"
        " OR (s.kind IN kinds AND s.release_date IN days))"
        "\nRETURN 'release' AS row, s.release_date AS known, [s.id] AS releases, [s.caption] AS release_captions,"
        " null AS id, null AS subject, null AS subject_caption, null AS predicate, null AS object,"
        " null AS object_caption, null AS value, null AS valid_from, null AS valid_to, null AS precision,"
        " null AS known_from, null AS known_to, null AS source_id"
    )
    return facts + "\nUNION ALL\n" + releases, {**params, "max_facts": MAX_FACTS}


def valid_on(f: GridRow, day: dt.date) -> bool:
    """The catalog's valid-time rule (`VALID_AT`): open ends open."""
    return (f.valid_from is None or f.valid_from <= day) and (f.valid_to is None or f.valid_to > day)


def known_on(f: GridRow, day: dt.date) -> bool:
    """The catalog's known-time rule (`KNOWN_AT`)."""
    return (f.known_from is None or f.known_from <= day) and (f.known_to is None or f.known_to > day)


def points(facts: list[GridRow], most: int, fallback: dt.date | None) -> list[dt.date]:
    """The valid-time change points, oldest first; past `most`, `most` of them evenly chosen (first and last kept).
    Facts with no dated bound at all give one point: `fallback` (the first known time)."""
    days = sorted({d for f in facts for d in (f.valid_from, f.valid_to) if d is not None})
    if not days:
        return [fallback] if fallback is not None and facts else []
    if len(days) <= most:
        return days
    if most == 1:
        return [days[-1]]
    return [days[round(i * (len(days) - 1) / (most - 1))] for i in range(most)]


def _cells(rows: list[GridRow], p: GridParams) -> list[GridRow]:
    facts = [r for r in rows if r.row == "fact"]
    named: dict[dt.date, dict[str, str]] = {}
    for r in rows:
        if r.row == "release" and r.known is not None:
            named.setdefault(r.known, {}).update(zip(r.releases, r.release_captions, strict=True))
    # A known time the facts record with no release of that day is a row too (no release named).
    known = sorted(set(named) | {d for f in facts for d in (f.known_from, f.known_to) if d is not None})
    columns = points(facts, p.columns, known[0] if known else None)
    order = sorted(facts, key=lambda f: (f.subject or "", f.predicate or "", f.valid_from is None,
                                         f.valid_from or dt.date.min, f.id or ""))
    out: list[GridRow] = []
    for k in known:
        ids = sorted(named.get(k, {}))
        head = {"row": "cell", "known": k, "releases": ids, "release_captions": [named[k][i] for i in ids]}
        believed = [f for f in order if known_on(f, k)]
        for day in columns:
            cell = [f for f in believed if valid_on(f, day)]
            out += [f.model_copy(update={**head, "date": day}) for f in cell] or [GridRow(**head, date=day)]
    return out


KNOWN_GRID = register(QuerySpec(
    "known-grid", "Valid time across, known time down: for one subject or trajectory, what each release believed "
    "valid on each of its valid-time change points (each cell is as-of DATE --known-at RELEASE).",
    GridParams, GridRow, _grid_cypher, post=_cells, tags=frozenset({"cli", "explorer"}),
    columns=("known", "date", "subject", "predicate", "object", "object_caption", "value", "valid_from", "valid_to"),
))
