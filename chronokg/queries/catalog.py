"""The named Cypher query catalog.

Each query is written once in Neo4j 5 Cypher and runs unchanged on every
engine, and is declared once as a `QuerySpec` in `QUERIES` (its parameters,
rows, Cypher and help): the CLI, answer keys, tools and metrics all run it by
name. Optional filters add `WHERE` terms rather than `$x IS NULL OR ...` tests,
so every variant can use the indexes. The functions below are the same queries
with Python signatures.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field

from chronokg.graph.counts import label_counts, relationship_counts
from chronokg.graph.store import GraphStore
from chronokg.queries import direct
from chronokg.queries.rows import (
    ChangePairRow,
    ChangeRow,
    FactRow,
    HopRow,
    RecommendationRow,
    StatsRow,
    VersionRow,
)
from chronokg.queries.spec import MAX_COUNT, QueryParams, QuerySpec, register

MAX_CHAIN = 32  # supersession hops followed from a guideline: far above any real chain

VALID_AT = "({v}.valid_from IS NULL OR {v}.valid_from <= {t}) AND ({v}.valid_to IS NULL OR {v}.valid_to > {t})"
KNOWN_AT = "({v}.known_from IS NULL OR {v}.known_from <= {t}) AND ({v}.known_to IS NULL OR {v}.known_to > {t})"
KNOWN_NOW = "{v}.known_to IS NULL"

FACT_RETURN = """
OPTIONAL MATCH (s:Entity {id: f.subject_id})
OPTIONAL MATCH (o:Entity {id: f.object_id})
RETURN f.id AS id, f.subject_id AS subject, s.caption AS subject_caption, f.predicate AS predicate,
       f.object_id AS object, o.caption AS object_caption, f.value AS value,
       f.valid_from AS valid_from, f.valid_to AS valid_to, f.precision AS precision,
       f.known_from AS known_from, f.known_to AS known_to, f.source_id AS source_id"""


def caption_at(var: str, param: str) -> str:
    """`var`'s caption as known at `param`: the newest of its `caption_versions` ("YYYY-MM-DD<TAB>name", one a
    release) known by then; none when it has versions but none known by then (no release had named it yet);
    its caption when it has no versions (a source whose names are not dated)."""
    best = (f"reduce(b = '', c IN coalesce({var}.caption_versions, []) | "
            f"CASE WHEN left(c, 10) <= toString({param}) AND c > b THEN c ELSE b END)")
    return (f"CASE WHEN {best} <> '' THEN substring({best}, 11) "
            f"WHEN size(coalesce({var}.caption_versions, [])) = 0 THEN {var}.caption ELSE null END")


def fact_return(known_at: str | None) -> str:
    """`FACT_RETURN`, with the captions known at `known_at` (a parameter) when one is given."""
    if known_at is None:
        return FACT_RETURN
    return (FACT_RETURN.replace("s.caption AS subject_caption", f"{caption_at('s', known_at)} AS subject_caption")
            .replace("o.caption AS object_caption", f"{caption_at('o', known_at)} AS object_caption"))


def valid_clause(var: str, param: str) -> str:
    return VALID_AT.format(v=var, t=param)


def known_clause(var: str, param: str | None) -> str:
    """Known at `param`, or (no param) asserted and not retracted by the latest loaded release."""
    return KNOWN_NOW.format(v=var) if param is None else KNOWN_AT.format(v=var, t=param)


def predicate_clause(var: str, param: str, anchored: bool) -> str:
    """`var.predicate` equals `param`; written `IN [..]` when another index already anchors `var`.

    With two indexed equalities (subject_id and predicate) kglite walks the predicate
    index, which has few values and so holds most facts: 100x slower at 1M facts
    (benchmarks/README.md). `IN [..]` means the same and leaves the subject index in charge.
    """
    return f"{var}.predicate IN [{param}]" if anchored else f"{var}.predicate = {param}"


def _fact_filters(subject: str | None, predicate: str | None, params: dict[str, Any]) -> list[str]:
    where = []
    if subject is not None:
        where.append("f.subject_id = $subject")
        params["subject"] = subject
    if predicate is not None:
        where.append(predicate_clause("f", "$predicate", anchored=subject is not None))
        params["predicate"] = predicate
    return where


# --- parameters -----------------------------------------------------------------------------------------

Day = dt.date


class AsOfParams(QueryParams):
    date: Day = Field(description="The day the facts were true (valid time)")
    subject: str | None = Field(default=None, description="Subject id as the source gives it (QID, CUI, PMID, ...)")
    predicate: str | None = Field(default=None, description="Predicate id (PID, RELA, recommendation, ...)")
    known_at: Day | None = Field(default=None, description="What the releases known on this day said "
                                                            "(default: the latest releases)")
    limit: int | None = Field(default=None, ge=1, le=MAX_COUNT, description="At most this many facts")


class TimelineParams(QueryParams):
    subject: str = Field(description="Subject id")
    predicate: str | None = Field(default=None, description="Only this predicate")
    known_at: Day | None = Field(default=None, description="As the releases known on this day said it")
    include_retracted: bool = Field(default=False, description="Also list versions a later release retracted")


class ChangedParams(QueryParams):
    start: Day = Field(alias="from", description="The first day")
    end: Day = Field(alias="to", description="The second day")
    predicate: str | None = Field(default=None, description="Only this predicate")
    subject: str | None = Field(default=None, description="Only this subject")


class TwoHopParams(QueryParams):
    subject: str = Field(description="Where the two hops start")
    date: Day = Field(description="The day both hops must be valid")
    predicate: str | None = Field(default=None, description="Predicate of the first hop")
    predicate2: str | None = Field(default=None, description="Predicate of the second hop")


class RecommendedParams(QueryParams):
    date: Day = Field(description="The day the recommendation was in force")
    topic: str | None = Field(default=None, description="Words in the guideline topic or title")
    organization: str | None = Field(default=None, alias="org",
                                     description="Issuing organization (id or words in its name)")
    guideline: str | None = Field(default=None, description="Any version's PMID (or id): selects its trajectory")
    known_at: Day | None = Field(default=None, description="As the releases known on this day said it")


class GuidelineParams(QueryParams):
    guideline: str = Field(description="Any version's PMID (or id)")


# --- Cypher ---------------------------------------------------------------------------------------------


def facts_as_of_cypher(
    valid_at: dt.date, subject: str | None = None, predicate: str | None = None,
    known_at: dt.date | None = None, limit: int | None = None,
) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {"valid_at": valid_at}
    where = _fact_filters(subject, predicate, params)
    where.append(valid_clause("f", "$valid_at"))
    if known_at is not None:
        params["known_at"] = known_at
    where.append(known_clause("f", "$known_at" if known_at is not None else None))
    head = "\nWITH f"
    if limit is not None:
        # Cut before the caption lookups: otherwise every matching fact is joined to its entities first.
        head += " ORDER BY f.subject_id, f.predicate, f.valid_from, f.id LIMIT $limit"
    cypher = "MATCH (f:Fact)\nWHERE " + "\n  AND ".join(where) + head
    cypher += fact_return("$known_at" if known_at is not None else None)
    cypher += "\nORDER BY subject, predicate, valid_from, id"
    if limit is not None:
        cypher += "\nLIMIT $limit"
        params["limit"] = limit
    return cypher, params


def _timeline_cypher(p: TimelineParams) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {}
    where = _fact_filters(p.subject, p.predicate, params)
    if p.known_at is not None:
        params["known_at"] = p.known_at
        where.append(known_clause("f", "$known_at"))
    elif not p.include_retracted:
        where.append(known_clause("f", None))
    cypher = "MATCH (f:Fact)\nWHERE " + "\n  AND ".join(where) + "\nWITH f"
    cypher += fact_return("$known_at" if p.known_at is not None else None)
    # Open starts first, open ends last; ties (same-year supersession) fall back to the end.
    cypher += (
        "\nORDER BY predicate, valid_from IS NOT NULL, valid_from, valid_to IS NULL, valid_to, "
        "known_from, id"
    )
    return cypher, params


def _changed_cypher(p: ChangedParams) -> tuple[str, dict[str, Any]]:
    t1, t2 = sorted((p.start, p.end))
    params: dict[str, Any] = {"t1": t1, "t2": t2}
    where = _fact_filters(p.subject, p.predicate, params)
    where.append(known_clause("f", None))
    filters = "".join(f" AND {w}" for w in where)
    value = "coalesce(g.object_id, toString(g.value))"
    # The pairs with a version starting or ending in (t1, t2]: two range conditions joined by
    # UNION (the valid_from one uses the range index; UNION also removes duplicates) rather
    # than one OR, which scans every fact. Each pair's versions are then read in a subquery:
    # kglite uses the subject_id index there, but scans all facts for every pair when the
    # pattern follows a WITH (minutes at 1M facts; see benchmarks/README.md). The importing
    # `WITH` form of CALL runs on every Neo4j 5 release.
    cypher = (
        "CALL {"
        f"\n  MATCH (f:Fact) WHERE f.valid_from > $t1 AND f.valid_from <= $t2{filters}"
        "\n  RETURN f.subject_id AS subject, f.predicate AS predicate"
        "\n  UNION"
        f"\n  MATCH (f:Fact) WHERE f.valid_to > $t1 AND f.valid_to <= $t2{filters}"
        "\n  RETURN f.subject_id AS subject, f.predicate AS predicate"
        "\n}"
        "\nCALL {"
        "\n  WITH subject, predicate"
        "\n  MATCH (g:Fact {subject_id: subject})"
        f"\n  WHERE {predicate_clause('g', 'predicate', anchored=True)} AND {known_clause('g', None)}"
        f"\n  RETURN collect(CASE WHEN {valid_clause('g', '$t1')} THEN {value} END) AS before,"
        f"\n         collect(CASE WHEN {valid_clause('g', '$t2')} THEN {value} END) AS after"
        "\n}"
        "\nRETURN subject, predicate, before, after"
        "\nORDER BY subject, predicate"
    )
    return cypher, params


def _changed_only(rows: list[ChangeRow], _: ChangedParams) -> list[ChangeRow]:
    """Pairs whose *set* of values differs (the Cypher returns every pair touched in the window)."""
    out = []
    for r in rows:
        before, after = sorted(set(r.before)), sorted(set(r.after))
        if before != after:
            out.append(ChangeRow(subject=r.subject, predicate=r.predicate, before=before, after=after))
    return out


def _two_hop_cypher(p: TwoHopParams) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {"subject": p.subject, "valid_at": p.date}
    p1 = f" AND {predicate_clause('f', '$predicate', anchored=True)}" if p.predicate else ""
    p2 = f" AND {predicate_clause('g', '$predicate2', anchored=True)}" if p.predicate2 else ""
    if p.predicate:
        params["predicate"] = p.predicate
    if p.predicate2:
        params["predicate2"] = p.predicate2
    cypher = (
        "MATCH (f:Fact {subject_id: $subject})-[:OBJECT]->(m:Entity)\n"
        f"WHERE {valid_clause('f', '$valid_at')} AND {known_clause('f', None)}{p1}\n"
        "MATCH (g:Fact {subject_id: m.id})-[:OBJECT]->(t:Entity)\n"
        f"WHERE {valid_clause('g', '$valid_at')} AND {known_clause('g', None)}{p2}\n"
        "RETURN f.subject_id AS subject, f.predicate AS predicate, m.id AS middle, "
        "g.predicate AS predicate2, t.id AS target\n"
        "ORDER BY predicate, middle, predicate2, target"
    )
    return cypher, params


def _guideline_scope(
    guideline: str | None, organization: str | None, topic: str | None, params: dict[str, Any]
) -> str:
    """Cypher that binds `g` to every guideline version in the selected trajectories."""
    where = []
    if guideline is not None:
        where.append("g0.id = $guideline")
        params["guideline"] = guideline
    if organization is not None:
        where.append(
            "EXISTS { MATCH (g0)-[:ISSUED_BY]->(o:Organization) "
            "WHERE o.id = $organization OR toLower(o.caption) CONTAINS toLower($organization) }"
        )
        params["organization"] = organization
    if topic is not None:
        where.append(
            "(toLower(coalesce(g0.topic, '')) CONTAINS toLower($topic) "
            "OR toLower(coalesce(g0.caption, '')) CONTAINS toLower($topic))"
        )
        params["topic"] = topic
    head = "MATCH (g0:Guideline)"
    if where:
        head += "\nWHERE " + "\n  AND ".join(where)
    return head + f"\nMATCH (g0)-[:SUPERSEDES*0..{MAX_CHAIN}]-(g:Guideline)\nWITH DISTINCT g"


def _recommended_cypher(p: RecommendedParams) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {"date": p.date}
    if p.known_at is not None:
        params["known_at"] = p.known_at
    cypher = (
        _guideline_scope(p.guideline, p.organization, p.topic, params)
        + "\nMATCH (f:Fact)-[:FROM_GUIDELINE]->(g)"
        + "\nWHERE f.predicate = 'recommendation' AND " + valid_clause("f", "$date")
        + " AND " + known_clause("f", "$known_at" if p.known_at is not None else None)
        + "\nOPTIONAL MATCH (g)-[:ISSUED_BY]->(o:Organization)"
        # One organization per row: the first by name (a guideline issued by several has no "first" otherwise).
        + "\nWITH f, g, min(o.caption) AS organization"
        + "\nRETURN f.subject_id AS decision_id, f.value AS recommendation, g.id AS guideline,"
        + " g.year AS guideline_year, organization,"
        + " g.topic AS topic, f.clinical_focus AS clinical_focus, f.valid_from AS valid_from,"
        + " f.valid_to AS valid_to"
        + "\nORDER BY decision_id, guideline"
    )
    return cypher, params


def _trajectory_cypher(p: GuidelineParams) -> tuple[str, dict[str, Any]]:
    cypher = (
        f"MATCH (:Guideline {{id: $guideline}})-[:SUPERSEDES*0..{MAX_CHAIN}]-(g:Guideline)"
        "\nWITH DISTINCT g"
        f"\nOPTIONAL MATCH (g)-[:SUPERSEDES*1..{MAX_CHAIN}]->(older:Guideline)"
        "\nWITH g, count(DISTINCT older) AS depth"
        "\nOPTIONAL MATCH (g)-[:ISSUED_BY]->(o:Organization)"
        "\nWITH g, depth, collect(DISTINCT o.caption) AS organizations"
        "\nOPTIONAL MATCH (g)-[:SUPERSEDES]->(p:Guideline)"
        "\nWITH g, depth, organizations, collect(DISTINCT p.id) AS supersedes"
        "\nOPTIONAL MATCH (n:Guideline)-[:SUPERSEDES]->(g)"
        "\nWITH g, depth, organizations, supersedes, collect(DISTINCT n.id) AS superseded_by"
        "\nRETURN g.id AS pmid, g.year AS year, g.issued AS issued, g.caption AS caption,"
        " organizations, supersedes, superseded_by"
        "\nORDER BY issued, depth, pmid"
    )
    return cypher, {"guideline": p.guideline}


def _sorted_links(rows: list[VersionRow], _: GuidelineParams) -> list[VersionRow]:
    """Every list sorted by its value (`collect` keeps no order any engine promises)."""
    return [r.model_copy(update={"organizations": sorted(r.organizations), "supersedes": sorted(r.supersedes),
                                 "superseded_by": sorted(r.superseded_by)}) for r in rows]


def _change_pairs_cypher(p: GuidelineParams) -> tuple[str, dict[str, Any]]:
    cypher = (
        f"MATCH (:Guideline {{id: $guideline}})-[:SUPERSEDES*0..{MAX_CHAIN}]-(g:Guideline)"
        "\nWITH DISTINCT g"
        "\nMATCH (c:ChangePair {current_pmid: g.id})"
        "\nOPTIONAL MATCH (c)-[:CURRENT]->(cf:Fact)"
        "\nOPTIONAL MATCH (c)-[:PRIOR]->(pf:Fact)"
        "\nOPTIONAL MATCH (cg:Guideline {id: c.current_pmid})"
        "\nOPTIONAL MATCH (pg:Guideline {id: c.prior_pmid})"
        "\nRETURN c.decision_id AS decision_id, c.current_pmid AS current_pmid, c.prior_pmid AS prior_pmid,"
        " cg.year AS current_year, pg.year AS prior_year, cf.value AS current_recommendation,"
        " pf.value AS prior_recommendation, c.summary AS summary, c.category AS category"
        "\nORDER BY prior_year, current_year, decision_id"
    )
    return cypher, {"guideline": p.guideline}


# --- the specs ------------------------------------------------------------------------------------------

FACT_COLUMNS = ("subject", "predicate", "object", "object_caption", "value", "valid_from", "valid_to", "precision",
                "source_id")

AS_OF = register(QuerySpec(
    "as-of", "What was true on DATE, according to what was known at --known-at (default: now).",
    AsOfParams, FactRow, lambda p: facts_as_of_cypher(p.date, p.subject, p.predicate, p.known_at, p.limit),
    columns=FACT_COLUMNS, tags=frozenset({"cli", "tool", "answer-key"}), direct=direct.facts_as_of,
))
TIMELINE = register(QuerySpec(
    "timeline", "Every version of a subject's facts, in valid-time order.", TimelineParams, FactRow,
    _timeline_cypher, tags=frozenset({"cli", "tool", "answer-key"}), direct=direct.timeline,
    columns=("predicate", "object", "object_caption", "value", "valid_from", "valid_to", "known_from", "known_to"),
))
CHANGED_BETWEEN = register(QuerySpec(
    "changed-between", "(subject, predicate) pairs whose values on --to differ from those on --from.",
    ChangedParams, ChangeRow, _changed_cypher, post=_changed_only, tags=frozenset({"cli", "tool"}),
    direct=direct.changed_between,
))
TWO_HOP = register(QuerySpec(
    "two-hop", "Follow object links two steps from a subject, each hop valid on DATE.", TwoHopParams, HopRow,
    _two_hop_cypher, tags=frozenset({"cli", "tool"}), direct=direct.two_hop,
))
RECOMMENDED_ON = register(QuerySpec(
    "recommended-on", "What was recommended on DATE, answered from the guideline version in force then.",
    RecommendedParams, RecommendationRow, _recommended_cypher, tags=frozenset({"cli", "tool", "answer-key"}),
    columns=("decision_id", "recommendation", "guideline", "guideline_year", "organization", "valid_from",
             "valid_to"),
))
TRAJECTORY = register(QuerySpec(
    "trajectory", "A guideline's supersession chain, oldest first (any version's PMID selects it).",
    GuidelineParams, VersionRow, _trajectory_cypher, post=_sorted_links, tags=frozenset({"cli", "tool"}),
    follow=("change-pairs",),
))
CHANGE_PAIRS = register(QuerySpec(
    "change-pairs", "The change pairs (current recommendation replaces prior) within a guideline's trajectory.",
    GuidelineParams, ChangePairRow, _change_pairs_cypher, tags=frozenset({"cli", "tool"}),
    columns=("decision_id", "prior_pmid", "prior_year", "current_pmid", "current_year", "prior_recommendation",
             "current_recommendation"),
))


# --- the same queries with Python signatures ------------------------------------------------------------


def facts_as_of(
    store: GraphStore, valid_at: dt.date, subject: str | None = None, predicate: str | None = None,
    known_at: dt.date | None = None, limit: int | None = None,
) -> list[FactRow]:
    """What was true at `valid_at`, according to what was known at `known_at` (default: now)."""
    return AS_OF.run(store, {"date": valid_at, "subject": subject, "predicate": predicate, "known_at": known_at,
                             "limit": limit})


def timeline(
    store: GraphStore, subject: str, predicate: str | None = None, known_at: dt.date | None = None,
    include_retracted: bool = False,
) -> list[FactRow]:
    """Every version of a subject's facts in valid-time order, with their intervals."""
    return TIMELINE.run(store, {"subject": subject, "predicate": predicate, "known_at": known_at,
                                "include_retracted": include_retracted})


def changed_between(
    store: GraphStore, t1: dt.date, t2: dt.date, predicate: str | None = None, subject: str | None = None,
) -> list[ChangeRow]:
    """(subject, predicate) pairs whose set of values at `t1` differs from the set at `t2`."""
    return CHANGED_BETWEEN.run(store, {"from": t1, "to": t2, "predicate": predicate, "subject": subject})


def two_hop_as_of(
    store: GraphStore, subject: str, valid_at: dt.date, predicate: str | None = None,
    predicate2: str | None = None,
) -> list[HopRow]:
    """Follow object links two steps from `subject`, each hop valid at `valid_at`."""
    return TWO_HOP.run(store, {"subject": subject, "date": valid_at, "predicate": predicate,
                               "predicate2": predicate2})


def recommended_on(
    store: GraphStore, date: dt.date, topic: str | None = None, organization: str | None = None,
    guideline: str | None = None, known_at: dt.date | None = None,
) -> list[RecommendationRow]:
    """What was recommended on `date`: each decision answered from the guideline version in force.

    A guideline id names its whole trajectory: any version's PMID selects every
    version linked to it by supersession, and the date picks the version.
    """
    return RECOMMENDED_ON.run(store, {"date": date, "topic": topic, "org": organization, "guideline": guideline,
                                      "known_at": known_at})


def trajectory(store: GraphStore, guideline: str) -> list[VersionRow]:
    """Every version in the supersession chain of `guideline`, oldest first.

    Versions issued in the same year are ordered by the supersession edge
    (the superseded one first).
    """
    return TRAJECTORY.run(store, GuidelineParams(guideline=guideline))


def change_pairs(store: GraphStore, guideline: str) -> list[ChangePairRow]:
    """The change pairs (current recommendation replaces prior) within `guideline`'s trajectory."""
    return CHANGE_PAIRS.run(store, GuidelineParams(guideline=guideline))


def stats(store: GraphStore) -> list[StatsRow]:
    """Counts per label, per relationship type, and facts per source release."""
    out = [StatsRow(kind="label", name=k, count=v) for k, v in label_counts(store).items()]
    out += [StatsRow(kind="relationship", name=k, count=v) for k, v in relationship_counts(store).items()]
    for r in store.run(
        "MATCH (f:Fact)-[:ASSERTED_IN]->(s:Source) "
        "RETURN s.id AS name, s.kind AS source_kind, s.version AS version, s.release_date AS release_date, "
        "count(f) AS count ORDER BY source_kind, release_date, name"
    ):
        out.append(StatsRow(kind="source", **r))
    return out
