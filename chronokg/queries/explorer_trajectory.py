"""One trajectory as the explorer's detail view shows it: the same versions and change pairs its row in
`trajectory-list` counts.

A trajectory is one current guideline and the prior versions its records name (its `IN_TRAJECTORY`
members); its change pairs are those whose current recommendation is from its current guideline. A prior
version can belong to several trajectories (a 2012 guideline superseded by a 2015 and a 2017 one): walking
`SUPERSEDES` both ways from the current one would reach the other trajectories' versions and pairs too, so
these reads stay inside the trajectory and name, per version, the later versions elsewhere that also
supersede it (where the data branches).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field

from chronokg.queries.rows import ChangePairRow, Row
from chronokg.queries.spec import QueryParams, QuerySpec, register


class TrajectoryParams(QueryParams):
    guideline: str = Field(description="The trajectory's current PMID (its row's current_pmid)")


class TrajectoryVersionRow(Row):
    pmid: str
    year: int | None = None
    issued: dt.date | None = None
    caption: str | None = None
    current: bool  # the trajectory's current guideline
    organizations: list[str] = Field(default_factory=list)
    supersedes: list[str] = Field(default_factory=list)  # versions of this trajectory it supersedes
    superseded_by: list[str] = Field(default_factory=list)  # versions of this trajectory superseding it
    elsewhere: list[str] = Field(default_factory=list)  # later versions outside this trajectory superseding it


def _versions(p: TrajectoryParams) -> tuple[str, dict[str, Any]]:
    cypher = (
        "MATCH (:Guideline {id: $guideline})-[:IN_TRAJECTORY]->(t:Trajectory)"
        "\nWHERE t.current_pmid = $guideline"
        "\nMATCH (g:Guideline)-[:IN_TRAJECTORY]->(t)"
        "\nWITH DISTINCT t, g"
        "\nOPTIONAL MATCH (g)-[:ISSUED_BY]->(o:Organization)"
        "\nWITH t, g, collect(DISTINCT o.caption) AS organizations"
        "\nOPTIONAL MATCH (g)-[:SUPERSEDES]->(p:Guideline)"
        "\nWITH t, g, organizations, collect(DISTINCT p.id) AS older"
        "\nOPTIONAL MATCH (n:Guideline)-[:SUPERSEDES]->(g)"
        "\nWITH t, g, organizations, older, collect(DISTINCT n.id) AS newer"
        "\nRETURN g.id AS pmid, g.year AS year, g.issued AS issued, g.caption AS caption,"
        " g.id = t.current_pmid AS current, organizations, older AS supersedes, newer AS superseded_by"
        "\nORDER BY pmid"
    )
    return cypher, {"guideline": p.guideline}


def _inside(rows: list[TrajectoryVersionRow], _: TrajectoryParams) -> list[TrajectoryVersionRow]:
    """Links split by membership (the Cypher returns every SUPERSEDES neighbour), lists sorted, versions oldest
    first (year, then PMID: the list's order)."""
    members = {r.pmid for r in rows}
    out = [r.model_copy(update={
        "organizations": sorted(r.organizations),
        "supersedes": sorted(x for x in r.supersedes if x in members),
        "superseded_by": sorted(x for x in r.superseded_by if x in members),
        "elsewhere": sorted(x for x in r.superseded_by if x not in members),
    }) for r in rows]
    return sorted(out, key=lambda r: (r.year is None, r.year or 0, r.pmid))


def _pairs(p: TrajectoryParams) -> tuple[str, dict[str, Any]]:
    # The walk `trajectory-list` counts with: pairs whose current recommendation is from the current guideline.
    cypher = (
        "MATCH (cg:Guideline {id: $guideline})<-[:FROM_GUIDELINE]-(cf:Fact)<-[:CURRENT]-(c:ChangePair)"
        "\nWITH DISTINCT c, cg, cf"
        "\nOPTIONAL MATCH (c)-[:PRIOR]->(pf:Fact)"
        "\nOPTIONAL MATCH (pg:Guideline {id: c.prior_pmid})"
        "\nRETURN c.decision_id AS decision_id, c.current_pmid AS current_pmid, c.prior_pmid AS prior_pmid,"
        " cg.year AS current_year, pg.year AS prior_year, cf.value AS current_recommendation,"
        " pf.value AS prior_recommendation, c.summary AS summary, c.category AS category"
        "\nORDER BY prior_year, prior_pmid, decision_id"
    )
    return cypher, {"guideline": p.guideline}


TRAJECTORY_VERSIONS = register(QuerySpec(
    "trajectory-versions", "One trajectory's versions (its current guideline and the priors its records name), "
    "oldest first, each with the versions it supersedes inside the trajectory and those elsewhere that also "
    "supersede it.", TrajectoryParams, TrajectoryVersionRow, _versions, post=_inside,
    tags=frozenset({"cli", "explorer"}),
    columns=("pmid", "year", "current", "supersedes", "superseded_by", "elsewhere", "organizations"),
))
TRAJECTORY_PAIRS = register(QuerySpec(
    "trajectory-pairs", "One trajectory's change pairs: those whose current recommendation is from its current "
    "guideline (what trajectory-list counts as its pairs).", TrajectoryParams, ChangePairRow, _pairs,
    tags=frozenset({"cli", "explorer"}),
    columns=("decision_id", "prior_pmid", "prior_year", "current_pmid", "current_year", "prior_recommendation",
             "current_recommendation"),
))
