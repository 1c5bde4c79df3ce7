"""The reads behind the explorer (`chronokg serve http` at `/`, `chronokg export html`) and `chronokg quality`.

Listings the page filters in the browser (trajectories, subjects with facts), what a
trajectory's detail view shows beyond `trajectory` and `change-pairs` (its questions
and their stored answers), and the data-quality checks of TempoMed-Bench's trajectory
report (`pubmed_trajectory/results/trajectory_browser_2026_relaxed_report.md` in the
seed repository: records with and without priors, missing organisations, implausible
years, same-year priors, duplicate topics and titles), each check a query tagged
"quality" so a new check is one more spec.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field, field_validator

from chronokg.queries.rows import Row
from chronokg.queries.spec import QueryParams, QuerySpec, register

EXPLORER = frozenset({"explorer"})
QUALITY = frozenset({"explorer", "quality"})
EARLIEST_YEAR = 1950  # a guideline year before this is implausible for PubMed-indexed guidance
EXAMPLES = 5  # ids a quality row names
NO_YEAR = -1  # a version without a year, in the trajectory list's query (collect drops nulls)


class NoParams(QueryParams):
    """A listing over the whole store."""


# --- trajectories ---------------------------------------------------------------------------------------


class TrajectoryListRow(Row):
    trajectory: str
    current_pmid: str
    year: int | None = None
    category: str | None = None  # the seed's organisation category (Commercial, Non-commercial, Other)
    topic: str | None = None
    caption: str | None = None
    organizations: list[str] = Field(default_factory=list)
    versions: list[str] = Field(default_factory=list)  # PMIDs of every version, oldest first (year, PMID)
    years: list[int | None] = Field(default_factory=list)  # their years, same order
    depth: int  # prior versions
    pairs: int  # change pairs whose current guideline is this trajectory's
    superseded: bool  # a newer guideline supersedes the current one (another trajectory continues it)


def _trajectory_list(_: NoParams) -> tuple[str, dict[str, Any]]:
    # One pass per trajectory, each step an id lookup or an edge walk from the row's own nodes: the change
    # pairs are reached through their current recommendation's guideline, not matched by property (that
    # was a scan of every pair per trajectory: ~80 s at 10,000 trajectories). Lists are deduplicated and
    # put in order after the query (`_in_order`).
    cypher = (
        "MATCH (t:Trajectory)"
        "\nOPTIONAL MATCH (g:Guideline {id: t.current_pmid})"
        "\nOPTIONAL MATCH (g)<-[:FROM_GUIDELINE]-(:Fact)<-[:CURRENT]-(c:ChangePair)"
        "\nWITH t, g, count(DISTINCT c) AS pairs"
        "\nOPTIONAL MATCH (g)-[:ISSUED_BY]->(o:Organization)"
        "\nWITH t, g, pairs, collect(o.caption) AS organizations"
        "\nOPTIONAL MATCH (v:Guideline)-[:IN_TRAJECTORY]->(t)"
        "\nWITH t, g, pairs, organizations, collect(v.id) AS versions,"
        " collect(coalesce(v.year, $no_year)) AS years"
        "\nRETURN t.id AS trajectory, t.current_pmid AS current_pmid, g.year AS year, t.category AS category,"
        " coalesce(t.topic, g.topic) AS topic, coalesce(t.caption, g.caption) AS caption, organizations,"
        " versions, years, 0 AS depth, pairs, EXISTS { MATCH (:Guideline)-[:SUPERSEDES]->(g) } AS superseded"
        "\nORDER BY trajectory"
    )
    return cypher, {"no_year": NO_YEAR}


def _by_year_then_id(year: int | None, pmid: str) -> tuple[bool, int, str]:
    return (year is None, year or 0, pmid)


def _in_order(rows: list[TrajectoryListRow], _: NoParams) -> list[TrajectoryListRow]:
    """Lists in a stated order whatever the engine, each name once: organisations by name, versions oldest
    first (year, then PMID), their years alongside; depth is the versions before the current one."""
    out = []
    for r in rows:
        years = [None if y == NO_YEAR else y for y in r.years]
        chain = sorted(set(zip(years, r.versions, strict=True)), key=lambda yv: _by_year_then_id(*yv))
        out.append(r.model_copy(update={"organizations": sorted(set(r.organizations)),
                                        "depth": max(len(chain) - 1, 0),
                                        "versions": [v for _, v in chain], "years": [y for y, _ in chain]}))
    return out


TRAJECTORY_LIST = register(QuerySpec(
    "trajectory-list", "Every guideline trajectory: current PMID and year, organisation category, topic, title, "
    "organisations, versions, depth and change pairs.", NoParams, TrajectoryListRow, _trajectory_list, post=_in_order,
    tags=frozenset({"cli", "explorer"}),
    columns=("current_pmid", "year", "category", "depth", "pairs", "organizations", "topic"),
))


class GuidelineOnly(QueryParams):
    guideline: str = Field(description="The trajectory's current PMID (its row's current_pmid)")


class QuestionRow(Row):
    question: str
    kind: str  # source (the seed's own item) | generated (chronokg generate)
    pair: str | None = None
    text: str | None = None
    family: str | None = None
    variant: str | None = None
    correct: str | None = None
    choices: list[str] = Field(default_factory=list)  # the options' text, in order
    choice_labels: list[str] = Field(default_factory=list)  # their letters (none stored: A, B, ... in order)
    key_query: str | None = None
    key_params: str | None = None
    evidence_hash: str | None = None
    answers: int = 0  # stored predictions (eval runs written to the store)


def _trajectory_questions(p: GuidelineOnly) -> tuple[str, dict[str, Any]]:
    # the trajectory's own pairs, reached as `trajectory-list` and `trajectory-pairs` reach them
    head = (
        "MATCH (:Guideline {id: $guideline})<-[:FROM_GUIDELINE]-(:Fact)<-[:CURRENT]-(c:ChangePair)"
        "\nWITH DISTINCT c"
    )
    cypher = (
        head + "\nMATCH (q:SourceQuestion)-[:ABOUT]->(c)"
        "\nRETURN q.id AS question, 'source' AS kind, c.id AS pair, q.question AS text, null AS family,"
        " null AS variant, q.correct AS correct, coalesce(q.choices, []) AS choices, [] AS choice_labels,"
        " null AS key_query, null AS key_params, null AS evidence_hash,"
        " 0 AS answers"
        "\nUNION ALL\n"
        + head + "\nMATCH (q:Question)-[:DERIVED_FROM]->(c)"
        "\nOPTIONAL MATCH (p:Prediction)-[:ANSWERS]->(q)"
        "\nWITH q, c, count(p) AS answers"
        "\nRETURN q.id AS question, 'generated' AS kind, c.id AS pair, q.input AS text, q.family AS family,"
        " q.variant AS variant, q.answer AS correct, coalesce(q.choices, []) AS choices,"
        " coalesce(q.choice_labels, []) AS choice_labels, q.key_query AS key_query, q.key_params AS key_params,"
        " q.evidence_hash AS evidence_hash, answers"
    )
    return cypher, {"guideline": p.guideline}


def _by_pair(rows: list[QuestionRow], _: GuidelineOnly) -> list[QuestionRow]:
    return sorted(rows, key=lambda r: (r.pair or "", r.kind != "source", r.question))


TRAJECTORY_QUESTIONS = register(QuerySpec(
    "trajectory-questions", "The questions about a trajectory's change pairs (those trajectory-pairs lists): the "
    "seed's own and those generated into the store, with how many stored runs answered each.", GuidelineOnly,
    QuestionRow, _trajectory_questions, post=_by_pair, tags=frozenset({"cli", "explorer"}),
    columns=("question", "kind", "pair", "variant", "correct", "answers"),
))


class QuestionIdParams(QueryParams):
    question: str = Field(description="A generated question's id")


class AnswerRow(Row):
    run: str
    model: str | None = None
    sample: int | None = None
    answer: str | None = None
    correct: bool | None = None
    score: float | None = None


def _question_answers(p: QuestionIdParams) -> tuple[str, dict[str, Any]]:
    return (
        "MATCH (p:Prediction)-[:ANSWERS]->(:Question {id: $question})"
        "\nRETURN p.run_id AS run, p.model AS model, p.sample AS sample, p.answer AS answer,"
        " p.correct AS correct, p.score AS score"
        "\nORDER BY run, model, sample"
    ), {"question": p.question}


QUESTION_ANSWERS = register(QuerySpec(
    "question-answers", "Every stored run's answer to one generated question.", QuestionIdParams, AnswerRow,
    _question_answers, tags=frozenset({"cli", "explorer"}),
))


# --- subjects (timelines) -------------------------------------------------------------------------------


class SubjectListParams(QueryParams):
    kind: str | None = Field(default=None, description="Only subjects of this kind (guideline, clinical_decision, "
                                                       "a Wikidata item, a CFR section, ...)")
    text: str | None = Field(default=None, description="Words in the subject's id or caption")
    limit: int = Field(default=200, ge=1, le=5000, description="At most this many subjects")


class SubjectRow(Row):
    subject: str
    kind: str | None = None
    caption: str | None = None
    facts: int


def _subject_list(p: SubjectListParams) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {"limit": p.limit}
    where = ["EXISTS { MATCH (:Fact)-[:SUBJECT]->(e) }"]
    if p.kind is not None:
        where.insert(0, "e.kind = $kind")
        params["kind"] = p.kind
    if p.text is not None:
        where.append("(toLower(e.id) CONTAINS toLower($text) OR toLower(coalesce(e.caption, '')) "
                     "CONTAINS toLower($text))")
        params["text"] = p.text
    cypher = (
        "MATCH (e:Entity) WHERE " + " AND ".join(where)
        + "\nWITH e ORDER BY e.id LIMIT $limit"
        "\nMATCH (f:Fact)-[:SUBJECT]->(e)"
        "\nRETURN e.id AS subject, e.kind AS kind, e.caption AS caption, count(f) AS facts"
        "\nORDER BY subject"
    )
    return cypher, params


SUBJECT_LIST = register(QuerySpec(
    "subject-list", "Subjects that have facts (any source), with their kind and caption: what a timeline can show.",
    SubjectListParams, SubjectRow, _subject_list, tags=frozenset({"cli", "explorer"}),
))


class KindRow(Row):
    kind: str | None = None
    subjects: int


SUBJECT_KINDS = register(QuerySpec(
    "subject-kinds", "The kinds of subject that have facts, with how many of each.", NoParams, KindRow,
    lambda _: ("MATCH (e:Entity) WHERE EXISTS { MATCH (:Fact)-[:SUBJECT]->(e) }"
               "\nRETURN e.kind AS kind, count(e) AS subjects ORDER BY kind", {}),
    tags=frozenset({"cli", "explorer"}),
))


# --- data quality ---------------------------------------------------------------------------------------


class QualityParams(QueryParams):
    latest_year: int | None = Field(default=None, description="Years after this are implausible [default: this "
                                                              "year]")


class QualityRow(Row):
    section: str
    check: str
    count: int
    total: int
    examples: list[str] = Field(default_factory=list)

    @field_validator("examples")
    @classmethod
    def _first_ids(cls, ids: list[str]) -> list[str]:
        """The first EXAMPLES ids by value: the Cypher collects them all, in no order any engine promises."""
        return sorted(ids)[:EXAMPLES]


def _latest(p: QualityParams) -> int:
    return p.latest_year if p.latest_year is not None else dt.date.today().year


# Every check is one block of one shape: the records it looks at (`total`), the ids of those failing it (`ids`),
# and a row naming its section and check; a query is its checks' blocks joined by UNION ALL.


def _failing(match: str, var: str, when: str, ident: str, group: str = "") -> str:
    """`match` yields one `var` per record: count them all, collect `ident` of those where `when` holds."""
    return f"{match}\nWITH {group}count({var}) AS total, collect(CASE WHEN {when} THEN {ident} END) AS ids"


def _check(section: str, check: str, rows: str, count: str = "size(ids)", label: str = "") -> str:
    """`rows` binds `total` and `ids`; the row's check is `check`, after the Cypher string `label` if given."""
    named = f"{label} + ': {check}'" if label else f"'{check}'"
    return f"{rows}\nRETURN '{section}' AS section, {named} AS check, {count} AS count, total, ids AS examples"


def _union(*blocks: str) -> str:
    return "\nUNION ALL\n".join(blocks)


_HAS_ORG = "EXISTS { MATCH (g)-[:ISSUED_BY]->(:Organization) } AS has_org"
# Priors are the other versions in the trajectory (its IN_TRAJECTORY members besides the current one).
_PRIORS = "OPTIONAL MATCH (v:Guideline)-[:IN_TRAJECTORY]->(t) WHERE v.id <> t.current_pmid"
_IMPLAUSIBLE = "g.year IS NULL OR g.year < $earliest OR g.year > $latest"


def _quality_records(_: QualityParams) -> tuple[str, dict[str, Any]]:
    with_priors = f"MATCH (t:Trajectory)\n{_PRIORS}\nWITH t, count(v) AS priors"
    return _union(*(
        _check("records", check, _failing(with_priors, "t", when, "t.current_pmid"))
        for check, when in (("trajectories with priors", "priors > 0"), ("trajectories without priors", "priors = 0"))
    )), {}


def _quality_organizations(_: QualityParams) -> tuple[str, dict[str, Any]]:
    current = f"MATCH (t:Trajectory)\nOPTIONAL MATCH (g:Guideline {{id: t.current_pmid}})\nWITH t, {_HAS_ORG}"
    return _union(
        _check("organisations", "trajectories whose current guideline has no organisation",
               _failing(current, "t", "NOT has_org", "t.current_pmid")),
        _check("organisations", "guideline versions with no organisation",
               _failing(f"MATCH (g:Guideline)\nWITH g, {_HAS_ORG}", "g", "NOT has_org", "g.id")),
    ), {}


def _superseding(where: str) -> str:
    """Out of every SUPERSEDES edge, the `newer>older` PMID pairs where `where` holds of g (newer) and p."""
    return ("MATCH (:Guideline)-[s:SUPERSEDES]->(:Guideline)\nWITH count(s) AS total"
            f"\nOPTIONAL MATCH (g:Guideline)-[:SUPERSEDES]->(p:Guideline) WHERE {where}"
            "\nWITH total, collect(g.id + '>' + p.id) AS ids")


def _quality_years(p: QualityParams) -> tuple[str, dict[str, Any]]:
    return _union(
        _check("years", "guideline versions with an implausible year",
               _failing("MATCH (g:Guideline)", "g", _IMPLAUSIBLE, "g.id")),
        _check("years", "same-year priors (a version superseding one of its own year)",
               _superseding("g.year = p.year")),
        _check("years", "priors newer than the version superseding them", _superseding("g.year < p.year")),
    ), {"earliest": EARLIEST_YEAR, "latest": _latest(p)}


def _duplicates(field: str, what: str) -> str:
    rows = (
        f"MATCH (t:Trajectory)\nWITH count(t) AS total"
        f"\nOPTIONAL MATCH (t:Trajectory) WHERE t.{field} IS NOT NULL"
        f"\nWITH total, toLower(trim(t.{field})) AS key, collect(t.current_pmid) AS pmids"
        "\nWITH total, collect(CASE WHEN size(pmids) > 1 THEN key END) AS ids,"
        " sum(CASE WHEN size(pmids) > 1 THEN size(pmids) ELSE 0 END) AS n"
    )
    return _check("duplicates", f"trajectories sharing a {what} with another", rows, count="n")


def _quality_duplicates(_: QualityParams) -> tuple[str, dict[str, Any]]:
    return _union(_duplicates("topic", "topic"), _duplicates("caption", "title")), {}


def _quality_pairs(_: QualityParams) -> tuple[str, dict[str, Any]]:
    whole = ("MATCH (c:ChangePair)\nWITH c, EXISTS { MATCH (c)-[:CURRENT]->(:Fact) }"
             " AND EXISTS { MATCH (c)-[:PRIOR]->(:Fact) } AS whole")
    asked = "MATCH (c:ChangePair)\nWITH c, EXISTS { MATCH (:SourceQuestion)-[:ABOUT]->(c) } AS asked"
    return _union(
        _check("change pairs", "change pairs missing a recommendation", _failing(whole, "c", "NOT whole", "c.id")),
        _check("change pairs", "change pairs without a source question", _failing(asked, "c", "NOT asked", "c.id")),
    ), {}


def _per_category(what: str, condition: str) -> str:
    per_trajectory = (
        "MATCH (t:Trajectory) WHERE t.category IS NOT NULL"
        f"\nOPTIONAL MATCH (g:Guideline {{id: t.current_pmid}})\n{_PRIORS}"
        f"\nWITH t, g, count(v) AS priors, {_HAS_ORG}"
    )
    rows = _failing(per_trajectory, "t", condition, "t.current_pmid", group="t.category AS category, ")
    return _check("categories", what, rows, label="category")


def _quality_categories(p: QualityParams) -> tuple[str, dict[str, Any]]:
    """The seed report's "Category Summary": per organisation category, trajectories with priors, missing
    organisations and implausible current years (no rows where no trajectory has a category)."""
    return _union(
        _per_category("trajectories with priors", "priors > 0"),
        _per_category("trajectories whose current guideline has no organisation", "NOT has_org"),
        _per_category("trajectories with an implausible current year", _IMPLAUSIBLE),
    ), {"earliest": EARLIEST_YEAR, "latest": _latest(p)}


def _by_check(rows: list[QualityRow], _: QualityParams) -> list[QualityRow]:
    """Grouped rows (one per category) come in no order an engine promises: by check, so by category first."""
    return sorted(rows, key=lambda r: (r.section, r.check))


QUALITY_CHECKS = tuple(register(QuerySpec(
    name, help, QualityParams, QualityRow, build, tags=QUALITY,
    post=_by_check if name == "quality-categories" else None,
)) for name, help, build in (
    ("quality-records", "Trajectories with and without prior versions.", _quality_records),
    ("quality-organizations", "Trajectories and guideline versions with no issuing organisation.",
     _quality_organizations),
    ("quality-years", "Implausible guideline years, same-year priors and priors newer than their successor.",
     _quality_years),
    ("quality-duplicates", "Trajectories sharing a topic or a title.", _quality_duplicates),
    ("quality-pairs", "Change pairs missing a recommendation or without a source question.", _quality_pairs),
    ("quality-categories", "Per organisation category: trajectories with priors, without an organisation, with an "
     "implausible current year.", _quality_categories),
))


class KeyRow(Row):
    question: str
    key_query: str | None = None
    key_params: str | None = None  # JSON object
    evidence_hash: str | None = None


QUESTION_KEY = register(QuerySpec(
    "question-key", "A generated question's answer key: the query, its parameters and the evidence hash at "
    "generation.", QuestionIdParams, KeyRow,
    lambda p: ("MATCH (q:Question {id: $question}) RETURN q.id AS question, q.key_query AS key_query,"
               " q.key_params AS key_params, q.evidence_hash AS evidence_hash", {"question": p.question}),
    tags=EXPLORER,
))


# --- runs -----------------------------------------------------------------------------------------------


class RunSummaryRow(Row):
    run: str
    started: str | None = None
    model: str | None = None
    family: str | None = None
    variant: str | None = None
    answered: int
    correct: int
    accuracy: float | None = None


def _run_summary(_: NoParams) -> tuple[str, dict[str, Any]]:
    return (
        "MATCH (r:Run)<-[:IN_RUN]-(p:Prediction)"
        "\nWITH r, p.model AS model, p.family AS family, p.variant AS variant, count(p) AS answered,"
        " sum(CASE WHEN p.correct = true THEN 1 ELSE 0 END) AS correct"
        "\nRETURN r.id AS run, toString(r.started) AS started, model, family, variant, answered, correct,"
        " CASE WHEN answered = 0 THEN null ELSE toFloat(correct) / answered END AS accuracy"
        "\nORDER BY started, run, model, family, variant"
    ), {}


RUN_SUMMARY = register(QuerySpec(
    "run-summary", "Every run stored in the graph: answered and correct predictions per model, family and variant "
    "(eval run writes them, --write by default).", NoParams, RunSummaryRow, _run_summary,
    tags=frozenset({"cli", "explorer"}),
))
