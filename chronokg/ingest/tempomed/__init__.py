"""TempoMed-Bench: guideline trajectories, recommendation facts and change pairs.

Three inputs are accepted, alone or together (a folder):

* the released MCQ file (`questions_*.jsonl`: pretty-printed JSON records
  separated by blank lines). Each record pairs a current guideline (PMID, year)
  with a prior one and gives, in choices A and B, the current and the prior
  recommendation for one clinical decision;
* trajectory JSON (`Topic, Title, year_of_current_guidance, PMID,
  Organization[], prior_guidelines[...]`);
* difference files (`{current}_{prior}_extracted_diffs.json`).

Each record becomes guidelines, an organization, a supersession edge, a
trajectory, two recommendation facts with validity, a change pair, and (for
MCQs) the question itself as source material. A recommendation is valid from
the year its guideline was issued until the year of the version that replaces
it. Same-year pairs (a 2020 update of a 2020 guideline) are kept: the prior's
interval is then empty, so as-of any date in that year answers with the
current one, and `timeline`/`trajectory` still list the prior first.
"""

from __future__ import annotations

import datetime as dt
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from chronokg.errors import InputError
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch, origin_text
from chronokg.graph.dates import Precision, year_start
from chronokg.graph.merge import describe
from chronokg.graph.model import Fact, Source, stable_id
from chronokg.graph.store import GraphStore
from chronokg.ingest.common import (
    LoadSummary,
    apply,
    caption,
    expand_paths,
    file_source,
    read_json,
    read_json_blocks,
    slug,
)
from chronokg.ingest.limits import check_texts, too_long
from chronokg.progress import Progress

KIND = "tempomed"
RECOMMENDATION = "recommendation"
SUPERSEDED_BY = "superseded_by"
# TempoMed-Bench's first public release (upstream commit of 2026-05-12): the
# known time of its facts unless the user names another.
DEFAULT_RELEASE = dt.date(2026, 5, 12)
DIFF_SUFFIX = "_extracted_diffs.json"
# Characters in any text field of a record: the released file's longest is 1,311 (a question stem), so a
# record past this is damaged or hostile, not a long question, and is refused rather than stored whole.
MAX_TEXT = 20_000
# An MCQ record's fields, as compared between two records with the same idx (the years are compared by the
# guidelines' own merge rule).
RECORD_FIELDS = ("PMID_current", "PMID_prior", "Question", "choices", "Correct", "Explanation")
# The keys of a released MCQ record and of its Answer: any other (a `Choice_F`, a misspelt `Year_curent`) would be
# passed over silently, so it is refused.
MCQ_KEYS = frozenset({"idx", "PMID_current", "PMID_prior", "Year_current", "Year_prior", "Question", "Answer"})
ANSWER_KEYS = frozenset({"Choice_A", "Choice_B", "Choice_C", "Choice_D", "Choice_E", "Correct", "Explanation"})


def _known_keys(path: Path, record: str, obj: dict[str, Any], known: frozenset[str], where: str) -> None:
    unknown = sorted(k for k in obj if k not in known)
    if unknown:
        shown = ", ".join(repr(caption(k, 40)) for k in unknown[:5]) + (f" and {len(unknown) - 5} more"
                                                                       if len(unknown) > 5 else "")
        raise InputError(path, record, f"unknown key{'s' if len(unknown) > 1 else ''} {shown} in {where} "
                                       f"(known: {', '.join(sorted(known))})")

_DOC = (
    r"(?i:guidelines?|guidance|recommendations?|statement|consensus(?: statement)?|position statement"
    r"|standards?|criteria|checklist|curriculum|policy|requirements)"
)
_ORG_PATTERNS = (
    re.compile(
        rf"According to (?:the )?(?P<org>[^?]+?) {_DOC}\b[^?]*? (?:issued|published|released) "
        rf"(?:by [^?]+? )?in (?P<year>\d{{4}})"
    ),
    re.compile(rf"According to (?:the )?(?P<year>\d{{4}}) (?P<org>[^?,]+?) {_DOC}\b"),
)
_ORG_NOISE = re.compile(
    r"(?:\s+(?:clinical practice|practice|joint|multi-society|medical physics practice|reporting|task force"
    r"|peer review|residency program))+$",
    re.I,
)


def organization_from_question(question: str, year: int) -> str | None:
    """The issuing organization named in the stem ("According to the X guideline issued in YYYY")."""
    for pattern in _ORG_PATTERNS:
        for m in pattern.finditer(question):
            if int(m["year"]) != year:
                continue
            org = _ORG_NOISE.sub("", m["org"].strip()).strip(" ,.")
            if 2 <= len(org) <= 200 and org[0].isupper():
                return org
    return None


def _pmid(path: Path, record: str, obj: dict[str, Any], key: str) -> str:
    value = obj.get(key)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip().isdigit():
        raise InputError(path, record, f"field {key!r} must be a PMID (digits), got {value!r}")
    return value.strip()


def _year(path: Path, record: str, obj: dict[str, Any], key: str) -> int:
    value = obj.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InputError(path, record, f"field {key!r} must be an integer year, got {value!r}")
    if not 1800 <= value <= 2200:
        raise InputError(path, record, f"field {key!r} is not a plausible year: {value}")
    return value


def _text(path: Path, record: str, obj: dict[str, Any], key: str, required: bool = True) -> str | None:
    value = obj.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(path, record, f"field {key!r} must be non-empty text, got {describe(value)}")
    if len(value) > MAX_TEXT:
        raise InputError(path, record, too_long(key, len(value), MAX_TEXT))
    return value.strip()


def _mcq_fields(question: str, current: str, prior: str, answer: dict[str, Any], choices: list[str]) -> dict[str, Any]:
    """What an MCQ record says, by field (`RECORD_FIELDS`), as stored."""
    return {"PMID_current": current, "PMID_prior": prior, "Question": question, "choices": choices,
            "Correct": answer.get("Correct"), "Explanation": answer.get("Explanation")}


def _differences(here: dict[str, Any], there: dict[str, Any]) -> str:
    """Each field the two records give differently, both values shown where they first differ (cut short)."""
    parts = []
    for key in RECORD_FIELDS:
        a, b = here.get(key), there.get(key)
        if a != b:
            if isinstance(a, str) and isinstance(b, str):
                start = max(0, next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
                                    min(len(a), len(b))) - 20)
                a, b = ("…" if start else "") + a[start:], ("…" if start else "") + b[start:]
            parts.append(f"{key} is {describe(a, 60)} here, but {describe(b, 60)} there")
    return "; ".join(parts)


class GuidelineBuilder:
    """Stages one or more TempoMed inputs into a single batch."""

    def __init__(self, release_date: dt.date) -> None:
        self.batch = GraphBatch()
        self.release_date = release_date
        self.records = 0
        self.questions: dict[Any, tuple[Path, str, dict[str, Any]]] = {}  # MCQ idx -> (origin, fields) in this load

    def file_source(self, path: Path, what: str) -> Source:
        src = file_source(path, KIND, self.release_date, what, prefix="TempoMed-Bench")
        self.batch.source(src)
        return src

    def guideline(self, pmid: str, year: int, src: Source, caption: str | None = None,
                  topic: str | None = None, organizations: Iterable[str] = ()) -> None:
        self.batch.node(schema.GUIDELINE, pmid, pmid=pmid, year=year, issued=year_start(year),
                        precision=Precision.YEAR.value, caption=caption, topic=topic)
        self.batch.entity(pmid, kind="guideline", caption=caption)
        self.batch.edge(schema.LOADED_FROM, schema.GUIDELINE, pmid, schema.SOURCE, src.id)
        for org in organizations:
            oid = slug(org)
            if oid:
                self.batch.node(schema.ORGANIZATION, oid, caption=org)
                self.batch.edge(schema.ISSUED_BY, schema.GUIDELINE, pmid, schema.ORGANIZATION, oid)

    def supersession(self, current: str, cur_year: int, prior: str, src: Source,
                     reason: str | None = None) -> None:
        self.batch.edge(schema.SUPERSEDES, schema.GUIDELINE, current, schema.GUIDELINE, prior, reason=reason)
        traj = f"traj:{current}"
        self.batch.node(schema.TRAJECTORY, traj, current_pmid=current)
        self.batch.edge(schema.IN_TRAJECTORY, schema.GUIDELINE, current, schema.TRAJECTORY, traj)
        self.batch.edge(schema.IN_TRAJECTORY, schema.GUIDELINE, prior, schema.TRAJECTORY, traj)
        self.batch.fact(
            Fact(subject=prior, predicate=SUPERSEDED_BY, object=current, valid_from=year_start(cur_year),
                 precision=Precision.YEAR, known_from=src.release_date, source_id=src.id, source_kind=KIND),
            subject_kind="guideline", object_kind="guideline",
        )

    def recommendation(self, *, decision: str, guideline: str, text: str, start: int, end: int | None,
                       src: Source, clinical_focus: str | None = None, **attrs: Any) -> str:
        """A recommendation fact valid from its guideline's year until the year of its replacement."""
        fact = Fact(
            subject=decision, predicate=RECOMMENDATION, value=text, valid_from=year_start(start),
            valid_to=None if end is None else year_start(end), precision=Precision.YEAR,
            known_from=src.release_date, source_id=src.id, source_kind=src.kind,
            attrs={"guideline_id": guideline, "clinical_focus": clinical_focus, **attrs},
        )
        fid = self.batch.fact(fact, subject_kind="clinical_decision")
        self.batch.edge(schema.FROM_GUIDELINE, schema.FACT, fid, schema.GUIDELINE, guideline)
        return fid

    def change_pair(self, *, decision: str, current: str, prior: str, current_fact: str, prior_fact: str,
                    summary: str | None, src: Source, clinical_focus: str | None = None,
                    category: str | None = None) -> str:
        """Links the current recommendation to the prior one it replaces."""
        pair = f"cp:{decision}:{prior}>{current}"
        self.batch.node(schema.CHANGE_PAIR, pair, decision_id=decision, current_pmid=current, prior_pmid=prior,
                        summary=summary, clinical_focus=clinical_focus, category=category)
        self.batch.edge(schema.CURRENT, schema.CHANGE_PAIR, pair, schema.FACT, current_fact)
        self.batch.edge(schema.PRIOR, schema.CHANGE_PAIR, pair, schema.FACT, prior_fact)
        self.batch.edge(schema.LOADED_FROM, schema.CHANGE_PAIR, pair, schema.SOURCE, src.id)
        return pair

    def change(self, *, decision: str, caption: str, current: str, cur_year: int, prior: str,
               prior_year: int, current_rec: str, prior_rec: str, summary: str | None,
               clinical_focus: str | None, src: Source, extra: dict[str, Any] | None = None) -> str:
        """One decision with a prior and a current recommendation, and the change pair between them."""
        self.batch.entity(decision, kind="clinical_decision", caption=caption)
        extra = extra or {}
        prior_fact = self.recommendation(decision=decision, guideline=prior, text=prior_rec, start=prior_year,
                                         end=cur_year, src=src, clinical_focus=clinical_focus,
                                         **extra.get("prior", {}))
        current_fact = self.recommendation(decision=decision, guideline=current, text=current_rec,
                                           start=cur_year, end=None, src=src, clinical_focus=clinical_focus,
                                           **extra.get("current", {}))
        return self.change_pair(decision=decision, current=current, prior=prior, current_fact=current_fact,
                                prior_fact=prior_fact, summary=summary, src=src, clinical_focus=clinical_focus)

    # --- the three input formats -------------------------------------------------

    def mcq_file(self, path: Path) -> None:
        src = self.file_source(path, "mcq")
        for n, _line, obj in read_json_blocks(path, max_text=sys.maxsize):  # checked below, named by idx
            record = f"{n} (idx {caption(str(obj.get('idx', '?')), 40)})"
            check_texts(obj, path, record, MAX_TEXT)
            self.batch.at(path, record)
            _known_keys(path, record, obj, MCQ_KEYS, "an MCQ record")
            current = _pmid(path, record, obj, "PMID_current")
            prior = _pmid(path, record, obj, "PMID_prior")
            cur_year = _year(path, record, obj, "Year_current")
            prior_year = _year(path, record, obj, "Year_prior")
            if prior_year > cur_year:
                raise InputError(path, record, f"prior guideline {prior} ({prior_year}) is newer than "
                                               f"current {current} ({cur_year})")
            if prior == current:
                raise InputError(path, record, f"guideline {current} cannot supersede itself")
            question = _text(path, record, obj, "Question")
            answer = obj.get("Answer")
            if not isinstance(answer, dict):
                raise InputError(path, record, "field 'Answer' must be an object with Choice_A..Choice_E")
            _known_keys(path, record, answer, ANSWER_KEYS, "its Answer")
            choice_a = _text(path, record, answer, "Choice_A")
            choice_b = _text(path, record, answer, "Choice_B")
            assert question is not None and choice_a is not None and choice_b is not None
            choices = [str(answer.get(f"Choice_{c}", "")) for c in "ABCDE" if answer.get(f"Choice_{c}")]
            _check_correct(path, record, answer)
            idx = obj.get("idx", n)
            fields = _mcq_fields(obj["Question"], current, prior, answer, choices)
            seen = self.questions.setdefault(idx, (path, record, fields))
            if seen[2] != fields:
                raise InputError(path, record, f"idx {idx} is also {origin_text(seen[0], seen[1])}, which "
                                               f"differs: {_differences(fields, seen[2])}")
            org = organization_from_question(question, cur_year)
            self.guideline(current, cur_year, src, organizations=[org] if org else [])
            self.guideline(prior, prior_year, src)
            self.supersession(current, cur_year, prior, src)
            decision = f"tm-{current}-{prior}-{stable_id(question, choice_a, choice_b)[:8]}"
            pair = self.change(
                decision=decision, caption=caption(question), current=current, cur_year=cur_year, prior=prior,
                prior_year=prior_year, current_rec=choice_a, prior_rec=choice_b,
                summary=_text(path, record, answer, "Explanation", required=False), clinical_focus=None, src=src,
            )
            qid = f"tmq-{idx}-{stable_id(question)[:8]}"
            self.batch.node(schema.SOURCE_QUESTION, qid, benchmark=KIND, record=idx,
                            question=obj["Question"], choices=choices, correct=answer.get("Correct"),
                            explanation=answer.get("Explanation"))
            self.batch.edge(schema.ABOUT, schema.SOURCE_QUESTION, qid, schema.CHANGE_PAIR, pair)
            self.records += 1

    def check_store(self, store: GraphStore) -> None:
        """A record that contradicts, in any field, the question the store holds for its idx in this release
        (the same release date) is an error naming both records."""
        if not self.questions:
            return
        rows = store.run(STORED_QUESTIONS, {"idxs": list(self.questions), "release": self.release_date})
        for row in rows:
            path, record, fields = self.questions[row["idx"]]
            stored = {"PMID_current": row["current"], "PMID_prior": row["prior"], "Question": row["question"],
                      "choices": list(row["choices"] or []), "Correct": row["correct"],
                      "Explanation": row["explanation"]}
            if stored != fields:
                raise InputError(path, record, f"idx {row['idx']} of release {self.release_date} is already in "
                                               f"the store from {row['origin'] or row['id']}, which differs: "
                                               f"{_differences(fields, stored)}")

    def trajectory_file(self, path: Path) -> None:
        data = read_json(path, MAX_TEXT)
        items = data if isinstance(data, list) else [data]
        if not items:
            raise InputError(path, None, "no trajectories in the file")
        src = self.file_source(path, "trajectory")
        for n, obj in enumerate(items, start=1):
            record = str(n)
            self.batch.at(path, record)
            if not isinstance(obj, dict):
                raise InputError(path, record, "expected a trajectory object")
            current = _pmid(path, record, obj, "PMID")
            cur_year = _year(path, record, obj, "year_of_current_guidance")
            topic = _text(path, record, obj, "Topic", required=False)
            title = _text(path, record, obj, "Title", required=False)
            orgs = _orgs(path, record, obj.get("Organization"))
            self.guideline(current, cur_year, src, caption=title, topic=topic, organizations=orgs)
            category = _category(path, record, obj) or category_of(path)
            self.batch.node(schema.TRAJECTORY, f"traj:{current}", current_pmid=current, topic=topic, caption=title,
                            category=category)
            priors = obj.get("prior_guidelines")
            if not isinstance(priors, list):
                raise InputError(path, record, "field 'prior_guidelines' must be a list")
            versions: list[tuple[int, str, str | None]] = []
            for k, prior in enumerate(priors, start=1):
                sub = f"{n}.prior_guidelines[{k}]"
                if not isinstance(prior, dict):
                    raise InputError(path, sub, "expected an object")
                pmid = _pmid(path, sub, prior, "PMID")
                year = _year(path, sub, prior, "year")
                if year > cur_year:
                    raise InputError(path, sub, f"prior guideline {pmid} ({year}) is newer than current "
                                                f"{current} ({cur_year})")
                self.guideline(pmid, year, src, caption=_text(path, sub, prior, "title", required=False),
                               topic=topic, organizations=_orgs(path, sub, prior.get("Organization")))
                versions.append((year, pmid, _text(path, sub, prior, "reason", required=False)))
            # A chain: each version supersedes the next older one.
            chain = sorted(versions, key=lambda v: v[0], reverse=True)
            newer, newer_year = current, cur_year
            for year, pmid, reason in chain:
                self.supersession(newer, newer_year, pmid, src, reason=reason)
                self.batch.edge(schema.IN_TRAJECTORY, schema.GUIDELINE, pmid, schema.TRAJECTORY,
                                f"traj:{current}")
                newer, newer_year = pmid, year
            self.records += 1

    def diff_file(self, path: Path, years: dict[str, int]) -> None:
        m = re.match(r"^(\d+)_(\d+)" + re.escape(DIFF_SUFFIX) + "$", path.name)
        if not m:
            raise InputError(path, None, f"a difference file is named {{current}}_{{prior}}{DIFF_SUFFIX}")
        current, prior = m[1], m[2]
        missing = [p for p in (current, prior) if p not in years]
        if missing:
            raise InputError(path, None, f"no year known for guideline(s) {', '.join(missing)}: load their "
                                         "trajectory file or MCQs first, or together with this file")
        cur_year, prior_year = years[current], years[prior]
        data = read_json(path, MAX_TEXT)
        if not isinstance(data, list):
            raise InputError(path, None, "expected a list of differences")
        if not data:
            raise InputError(path, None, "no differences in the file")
        self.batch.at(path, "(file name)")
        src = self.file_source(path, "diffs")
        self.guideline(current, cur_year, src)
        self.guideline(prior, prior_year, src)
        self.supersession(current, cur_year, prior, src)
        for n, obj in enumerate(data, start=1):
            record = str(n)
            self.batch.at(path, record)
            if not isinstance(obj, dict):
                raise InputError(path, record, "expected an object")
            focus = _text(path, record, obj, "clinical_focus")
            cur_rec = _text(path, record, obj, "current_recommendation")
            prior_rec = _text(path, record, obj, "prior_recommendation")
            assert focus is not None and cur_rec is not None and prior_rec is not None
            decision = f"tm-{current}-{prior}-{stable_id(focus)[:8]}"
            self.change(
                decision=decision, caption=focus, current=current, cur_year=cur_year, prior=prior,
                prior_year=prior_year, current_rec=cur_rec, prior_rec=prior_rec,
                summary=_text(path, record, obj, "change_summary", required=False), clinical_focus=focus,
                src=src, extra={
                    "current": {"raw_text": obj.get("current_recommendation_raw_text")},
                    "prior": {"raw_text": obj.get("prior_recommendation_raw_text")},
                },
            )
            self.records += 1


def _orgs(path: Path, record: str, value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(path, record, f"field 'Organization' must be a list of names, got {value!r}")
    return [v.strip() for v in value if v.strip()]


# The seed's organisation categories: its trajectory browser reads one folder per category
# (`pubmed_trajectory/heatmap_exp/pubmed_visualize_trajectory_browser.py`, DEFAULT_INPUTS:
# comm_guideline_trajectory_..., noncomm_..., other_...), labelled as these.
CATEGORIES = {"comm": "Commercial", "noncomm": "Non-commercial", "other": "Other"}


def _category(path: Path, record: str, obj: dict[str, Any]) -> str | None:
    """A trajectory's own `category`, one of the seed's three (its label or folder prefix), as its label."""
    value = _text(path, record, obj, "category", required=False)
    if value is None:
        return None
    label = CATEGORIES.get(value) or next((v for v in CATEGORIES.values() if v == value), None)
    if label is None:
        raise InputError(path, record, f"unknown category {value!r} (expected one of {', '.join(CATEGORIES.values())})")
    return label


def _check_correct(path: Path, record: str, answer: dict[str, Any]) -> None:
    """`Correct`, when given, names one of the record's choices: scoring compares a model's letter with it."""
    correct = answer.get("Correct")
    letters = [c for c in "ABCDE" if answer.get(f"Choice_{c}")]
    if correct is not None and correct not in letters:
        raise InputError(path, record, f"field 'Correct' must be one of the choice letters {', '.join(letters)}, "
                                       f"got {correct!r}")


def category_of(path: Path) -> str | None:
    """The category of a trajectory file, from the nearest folder named as the seed names its inputs."""
    for folder in path.parents:
        prefix, sep, rest = folder.name.partition("_")
        if sep and prefix in CATEGORIES and rest.startswith("guideline_trajectory"):
            return CATEGORIES[prefix]
    return None


def classify(path: Path) -> str:
    """Which TempoMed format a file is: mcq, trajectory or diffs."""
    if path.name.endswith(DIFF_SUFFIX):
        return "diffs"
    if path.suffix == ".json":
        return "trajectory"
    return "mcq"


def expand(paths: Iterable[Path]) -> list[Path]:
    return expand_paths(paths, lambda p: p.suffix in {".json", ".jsonl"}, "TempoMed-Bench files (.jsonl/.json)")


def stage(paths: Iterable[Path], release_date: dt.date = DEFAULT_RELEASE,
          known_years: dict[str, int] | None = None) -> tuple[GraphBatch, int, list[Path]]:
    """Parse and validate every input into one batch (nothing is written)."""
    builder, files = build(paths, release_date, known_years)
    return builder.batch, builder.records, files


def build(paths: Iterable[Path], release_date: dt.date = DEFAULT_RELEASE,
          known_years: dict[str, int] | None = None) -> tuple[GuidelineBuilder, list[Path]]:
    """The builder holding every input, parsed and validated (nothing is written)."""
    files = expand(paths)
    builder = GuidelineBuilder(release_date)
    kinds = {f: classify(f) for f in files}
    for f in files:
        if kinds[f] == "mcq":
            builder.mcq_file(f)
    for f in files:
        if kinds[f] == "trajectory":
            builder.trajectory_file(f)
    years = dict(known_years or {})
    years.update({gid: props["year"] for gid, props in builder.batch.nodes.get(schema.GUIDELINE, {}).items()})
    for f in files:
        if kinds[f] == "diffs":
            builder.diff_file(f, years)
    return builder, files


STORED_QUESTIONS = f"""
MATCH (q:{schema.SOURCE_QUESTION})-[:{schema.ABOUT}]->(p:{schema.CHANGE_PAIR})
      -[:{schema.LOADED_FROM}]->(s:{schema.SOURCE})
WHERE q.benchmark = '{KIND}' AND q.record IN $idxs AND s.release_date = $release
RETURN DISTINCT q.id AS id, q.record AS idx, q.question AS question, q.choices AS choices, q.correct AS correct,
       q.explanation AS explanation, q.from_record AS origin, p.current_pmid AS current, p.prior_pmid AS prior
ORDER BY id"""


def guideline_years(store: GraphStore) -> dict[str, int]:
    return {r["id"]: r["year"] for r in store.run("MATCH (g:Guideline) RETURN g.id AS id, g.year AS year")}


def load(store: GraphStore, paths: Iterable[Path], release_date: dt.date = DEFAULT_RELEASE,
         progress: Progress | None = None) -> LoadSummary:
    """Load TempoMed-Bench files in one transaction; bad input raises `InputError` and writes nothing."""
    builder, files = build(paths, release_date, known_years=guideline_years(store))
    builder.check_store(store)
    batch, records = builder.batch, builder.records
    return apply(store, batch, KIND, files, records, progress)
