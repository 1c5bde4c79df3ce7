"""Synthetic chest-X-ray timelines in the MIMIC-Ext-CXR-QBA layout, with their ground truth.

MIMIC is credentialed, so tests and new benchmarks need timelines anyone can
make. `plan` draws a cohort (deterministic for a seed): each patient has
`visits` studies separated by heavy-tailed gaps (lognormal or Pareto days,
like real follow-up, where most gaps are weeks and a few are years) and a few
findings, each following one controlled pattern:

* emergence: absent, then present to the end;
* resolution: present, then absent to the end;
* emergence_resolution (E→R): absent, present, absent again;
* resolution_emergence (R→E): present, absent, present again (recurrence);
* worsening / improvement: present throughout, severity rising / falling;
* persistent: present throughout at one severity.

Two more patterns, with two events of one kind (MI-CXR's "second new appearance /
disappearance" questions need them), are opt-in (`DOUBLE_EVENT_PATTERNS`, at least four visits):

* relapsing: absent, present, absent, present again (two emergences);
* remitting: present, absent, present, absent again (two resolutions).

Patterns are dealt round-robin over patients and finding slots, so every
pattern appears once a cohort has as many finding slots as patterns. `write` puts the
scene graphs and sibling metadata files where the release has them
(`scene_data/p9X/p9XXXXXXX/s9XXXXXXX.scene_graph.json` and `.metadata.json`;
time offsets as pandas timedelta text), MI-CXR-style questions about the
patterns (`micxr_synth_questions.jsonl`, five visits only), a
`cxr_source.json` naming the synthetic release, and the ground truth
(`ground_truth.json`, which the loader ignores). Synthetic patient and study
ids start with 9, so they never collide with MIMIC's (1... and 5...).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
from dataclasses import dataclass
from enum import StrEnum
from itertools import pairwise
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from chronokg.ingest.cxr import SOURCE_FILE

PATTERNS = (
    "emergence", "resolution", "emergence_resolution", "resolution_emergence", "worsening", "improvement",
    "persistent",
)
DOUBLE_EVENT_PATTERNS = ("relapsing", "remitting")  # opt-in: two emergences / two resolutions
PATTERN_TEXT = {
    "emergence": "absent at first, then newly appears and persists to the last study",
    "resolution": "present at first, then resolves and stays absent",
    "emergence_resolution": "newly appears after the first study and resolves before the last",
    "resolution_emergence": "present at first, resolves, then recurs before the last study",
    "worsening": "present throughout and progressively worsens",
    "improvement": "present throughout and progressively improves",
    "persistent": "present throughout without change",
    "relapsing": "newly appears, resolves, then appears again",
    "remitting": "present at first, resolves, recurs, then resolves again",
}
SEVERITIES = ("mild", "moderate", "severe")
SYNTH_DATASET = "chronokg-cxr-synth"
SYNTH_RELEASE = dt.date(2026, 1, 1)  # nominal known-from date of every synthetic release
QUESTIONS_FILE = "micxr_synth_questions.jsonl"
TRUTH_FILE = "ground_truth.json"
NO_CHANGE = "No such change"


class GapDistribution(StrEnum):
    lognormal = "lognormal"
    pareto = "pareto"


LOGNORMAL_SIGMA = 1.25
PARETO_ALPHA = 1.3


@dataclass(frozen=True)
class FindingSpec:
    entity: str
    sides: tuple[str | None, ...]
    region: str  # with {side} for lateral findings
    categories: tuple[str, ...]
    subcategories: tuple[str, ...]


FINDINGS = (
    FindingSpec("pleural effusion", ("left", "right", "bilateral"), "{side} pleural space", ("ANATOMICAL_FINDING",),
                ("PLEURA",)),
    FindingSpec("consolidation", ("left", "right"), "{side} lower lung zone", ("ANATOMICAL_FINDING", "DISEASE"),
                ("LUNG_FIELD", "PULMONARY_DISEASES")),
    FindingSpec("atelectasis", ("left", "right", "bilateral"), "{side} lung base", ("ANATOMICAL_FINDING",),
                ("LUNG_FIELD",)),
    FindingSpec("pneumothorax", ("left", "right"), "{side} apical zone", ("ANATOMICAL_FINDING",), ("PLEURA",)),
    FindingSpec("pulmonary edema", ("bilateral",), "lungs", ("ANATOMICAL_FINDING", "DISEASE"),
                ("LUNG_FIELD", "CARDIOVASCULAR_DISEASES")),
    FindingSpec("cardiomegaly", (None,), "heart", ("ANATOMICAL_FINDING",), ("CARDIAC_SILHOUETTE",)),
    FindingSpec("pneumonia", ("left", "right"), "{side} lung", ("DISEASE",), ("INFECTION",)),
    FindingSpec("lung nodule", ("left", "right"), "{side} upper lung zone", ("ANATOMICAL_FINDING",), ("LUNG_FIELD",)),
)


class StudyTruth(BaseModel):
    study_id: str
    study_index: int
    days_since_first: float
    image_id: str


class FindingTruth(BaseModel):
    finding: str
    laterality: str | None
    pattern: str
    present: list[bool]
    severity: list[str | None]


class PatientTruth(BaseModel):
    patient_id: str
    studies: list[StudyTruth]
    findings: list[FindingTruth]


class QuestionTruth(BaseModel):
    q_id: int
    patient_id: str
    finding: str
    laterality: str | None
    pattern: str
    group_type: str
    qtype: str
    choices: list[str]
    answer: str


class Cohort(BaseModel):
    """The ground truth of one synthetic cohort: which pattern each patient's finding follows."""

    seed: int
    visits: int
    gap_distribution: GapDistribution
    median_gap_days: float
    findings_per_patient: int
    patterns: list[str] = Field(default_factory=lambda: list(PATTERNS), description="Patterns dealt, in order")
    patients: list[PatientTruth]
    questions: list[QuestionTruth] = Field(default_factory=list)

    def gaps(self) -> list[float]:
        """Every gap between consecutive visits, in days."""
        out: list[float] = []
        for p in self.patients:
            days = [s.days_since_first for s in p.studies]
            out.extend(round((b - a) * 24) / 24 for a, b in pairwise(days))
        return out

    def pattern_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(self.patterns, 0)
        for p in self.patients:
            for f in p.findings:
                counts[f.pattern] += 1
        return counts


def visit_gaps(rng: random.Random, n: int, dist: GapDistribution, median_days: float) -> list[float]:
    """`n` heavy-tailed gaps in days (at least one day, to the hour)."""
    out = []
    for _ in range(n):
        if dist is GapDistribution.pareto:
            scale = median_days / 2 ** (1 / PARETO_ALPHA)  # the median of Pareto(alpha, scale)
            gap = scale * rng.paretovariate(PARETO_ALPHA)
        else:
            gap = rng.lognormvariate(math.log(median_days), LOGNORMAL_SIGMA)
        out.append(max(1.0, round(gap * 24) / 24))
    return out


def pattern_course(rng: random.Random, pattern: str, visits: int) -> tuple[list[bool], list[str | None]]:
    """Presence and severity at each visit for one pattern."""
    idx = range(visits)
    level = rng.randrange(len(SEVERITIES))
    if pattern == "emergence":
        k = rng.randrange(1, visits)
        present = [i >= k for i in idx]
    elif pattern == "resolution":
        k = rng.randrange(1, visits)
        present = [i < k for i in idx]
    elif pattern in ("emergence_resolution", "resolution_emergence"):
        a = rng.randrange(1, visits - 1)
        b = rng.randrange(a + 1, visits)
        inside = [a <= i < b for i in idx]
        present = inside if pattern == "emergence_resolution" else [not x for x in inside]
    elif pattern in ("worsening", "improvement"):
        steps = sorted(rng.sample(range(1, visits), k=min(2, visits - 1)))
        levels = [sum(i >= s for s in steps) for i in idx]  # 0 .. 2, rising at least once
        if pattern == "improvement":
            levels = [levels[-1] - x for x in levels]
        return [True] * visits, [SEVERITIES[x] for x in levels]
    elif pattern == "persistent":
        present = [True] * visits
    elif pattern in DOUBLE_EVENT_PATTERNS:
        a, b, c = sorted(rng.sample(range(1, visits), 3))  # absent from a, back at b, absent again from c
        present = [i < a or b <= i < c for i in idx]
        if pattern == "relapsing":  # absent, present, absent, present
            present = [a <= i < b or i >= c for i in idx]
    else:
        raise ValueError(f"unknown pattern {pattern!r}")
    return present, [SEVERITIES[level] if p else None for p in present]


def _hex_id(rng: random.Random) -> str:
    """An image id shaped like MIMIC-CXR's DICOM ids (five groups of eight hex digits)."""
    return "-".join(f"{rng.getrandbits(32):08x}" for _ in range(5))


def plan(patients: int, visits: int = 5, seed: int = 0, findings: int = 3,
         gaps: GapDistribution = GapDistribution.lognormal, median_gap_days: float = 30.0,
         patterns: tuple[str, ...] = PATTERNS) -> Cohort:
    """Draw a cohort (nothing is written): ids, visit times and each finding's course (`patterns` dealt
    round-robin; add `DOUBLE_EVENT_PATTERNS` for findings with two events of one kind)."""
    if patients < 1:
        raise ValueError("patients must be at least 1")
    if visits < 3:
        raise ValueError("visits must be at least 3 (E→R and R→E need three)")
    if not 1 <= findings <= len(FINDINGS):
        raise ValueError(f"findings per patient must be between 1 and {len(FINDINGS)}")
    if median_gap_days < 1:
        raise ValueError("the median gap must be at least one day")
    unknown = [x for x in patterns if x not in PATTERN_TEXT]
    if unknown or not patterns:
        raise ValueError(f"unknown pattern(s) {', '.join(unknown) or '(none given)'}: use {', '.join(PATTERN_TEXT)}")
    if visits < 4 and set(patterns) & set(DOUBLE_EVENT_PATTERNS):
        raise ValueError("relapsing and remitting patterns need at least four visits")
    rng = random.Random(seed)
    patient_ids = rng.sample(range(10**7), patients)
    study_ids = rng.sample(range(10**7), patients * visits)
    cohort: list[PatientTruth] = []
    for i, pnum in enumerate(patient_ids):
        pid = f"p9{pnum:07d}"
        hours = [0]  # whole hours, so day boundaries are exact
        for gap in visit_gaps(rng, visits - 1, gaps, median_gap_days):
            hours.append(hours[-1] + round(gap * 24))
        days = [h / 24 for h in hours]
        studies = [StudyTruth(study_id=f"s9{study_ids[i * visits + k]:07d}", study_index=k, days_since_first=d,
                              image_id=_hex_id(rng)) for k, d in enumerate(days)]
        specs = rng.sample(FINDINGS, findings)
        truths = []
        for j, spec in enumerate(specs):
            pattern = patterns[(i * findings + j) % len(patterns)]
            present, grades = pattern_course(rng, pattern, visits)
            truths.append(FindingTruth(finding=spec.entity, laterality=rng.choice(spec.sides), pattern=pattern,
                                       present=present, severity=grades))
        cohort.append(PatientTruth(patient_id=pid, studies=studies, findings=truths))
    result = Cohort(seed=seed, visits=visits, gap_distribution=gaps, median_gap_days=median_gap_days,
                    findings_per_patient=findings, patterns=list(patterns), patients=cohort)
    if visits == 5:
        result.questions = list(_question_truths(result))
    return result


# --- scene graphs --------------------------------------------------------------------


def _spec(finding: str) -> FindingSpec:
    return next(s for s in FINDINGS if s.entity == finding)


def _describe(f: FindingTruth) -> str:
    return f"{f.laterality} {f.finding}" if f.laterality else f.finding


def _change(f: FindingTruth, k: int) -> list[str]:
    if k == 0:
        return []
    before, now = f.present[k - 1], f.present[k]
    if not before and now:
        return ["new"]
    if before and not now:
        return ["resolved"]
    if not now:
        return []
    a, b = SEVERITIES.index(f.severity[k - 1] or "mild"), SEVERITIES.index(f.severity[k] or "mild")
    return ["worsened"] if b > a else ["improved"] if b < a else ["unchanged"]


def _observation(obs_id: str, f: FindingTruth, k: int, image: str) -> dict[str, Any]:
    spec = _spec(f.finding)
    region = spec.region.format(side=f.laterality or "").strip()
    present = f.present[k]
    grade = f.severity[k]
    name = f"{grade} {_describe(f)}" if present else f"no {_describe(f)}"
    changes = _change(f, k)
    sentence = f"There is {name}."
    return {
        "obs_id": obs_id, "name": name, "summary_sentence": sentence, "child_type": None, "child_level": 0,
        "regions": [{"region": region, "distances": []}], "non_resolved_regions": [], "laterality": f.laterality,
        "default_regions": [], "obs_entities": [f.finding], "obs_entities_parents": [],
        "non_resolved_obs_entities": [], "obs_categories": list(spec.categories),
        "obs_subcategories": list(spec.subcategories), "probability": "positive" if present else "negative",
        "certainty": "certain", "positiveness": "pos" if present else "neg",
        "modifiers": {"temporal": [], "severity": [grade] if present and grade else [], "texture": [], "spread": []},
        "changes": changes, "change_sentence": f"{name.capitalize()}, {changes[0]}." if changes else None,
        "from_report": True, "obs_quality": {"entity_quality": 2, "region_quality": 4},
        "localization": {image: {"image_id": image, "localization_reference_ids": [region],
                                 "bboxes": [[100.0, 100.0, 900.0, 900.0]], "instance_mask_ids": [region],
                                 "missing_localization": [], "is_fallback": False, "localization_quality": 4}},
    }


def _technique(obs_id: str, image: str) -> dict[str, Any]:
    """A finding-free observation, as reports have (it yields no fact)."""
    return {
        "obs_id": obs_id, "name": "portable AP view", "summary_sentence": "Portable AP view of the chest.",
        "regions": [], "laterality": None, "obs_entities": [], "obs_categories": ["TECHNICAL"],
        "obs_subcategories": [], "probability": None, "certainty": "certain", "positiveness": None,
        "modifiers": {"temporal": [], "severity": [], "texture": [], "spread": []}, "changes": [],
        "from_report": True, "localization": {image: {"image_id": image, "bboxes": [], "is_fallback": True}},
    }


def scene_graph(patient: PatientTruth, k: int) -> dict[str, Any]:
    study = patient.studies[k]
    observations: dict[str, dict[str, Any]] = {}
    for j, f in enumerate(patient.findings, start=1):
        observations[f"O{j:02d}"] = _observation(f"O{j:02d}", f, k, study.image_id)
    tech = f"O{len(patient.findings) + 1:02d}"
    observations[tech] = _technique(tech, study.image_id)
    return {
        "patient_id": patient.patient_id, "study_id": study.study_id,
        "sentences": {f"S{n:02d}": {"sent_id": f"S{n:02d}", "section": "FINDINGS", "section_type": "FINDINGS",
                                    "sentence": o["summary_sentence"]} for n, o in enumerate(observations.values(), 1)},
        "top_level_obs_ids": list(observations), "observations": observations,
        "located_at_relations": [
            {"region": r["region"], "observation_id": oid, "distances": [], "where_specified": "direct"}
            for oid, o in observations.items() for r in o["regions"]
        ],
        "obs_relations": [],
        "obs_sent_relations": [{"observation_id": oid, "sentence_id": f"S{n:02d}"}
                               for n, oid in enumerate(observations, 1)],
        "study_quality": {"region_quality": 4, "entity_quality": 2, "issue_level": 5},
        "study_img_localization_quality": {study.image_id: 4},
    }


def timedelta_text(days: float) -> str:
    """Days as pandas prints a timedelta (`12 days 06:00:00`)."""
    whole = math.floor(days)
    seconds = round((days - whole) * 86400)
    if seconds >= 86400:
        whole, seconds = whole + 1, seconds - 86400
    return f"{whole} days {seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def study_metadata(patient: PatientTruth, k: int) -> dict[str, Any]:
    study = patient.studies[k]
    prev = None if k == 0 else study.days_since_first - patient.studies[k - 1].days_since_first
    return {
        "patient_id": patient.patient_id, "study_id": study.study_id, "study_index": study.study_index,
        "timestamp_since_first": timedelta_text(study.days_since_first),
        "timespan_since_prev": None if prev is None else timedelta_text(prev),
        "procedure": "CHEST (PORTABLE AP)", "num_observations": len(patient.findings) + 1,
        "image_ids": [study.image_id],
    }


def image_path(patient: PatientTruth, k: int) -> str:
    """Where MIMIC-CXR-JPG would keep this study's image (the form MI-CXR questions use)."""
    pid, study = patient.patient_id, patient.studies[k]
    return f"files/{pid[:3]}/{pid}/{study.study_id}/{study.image_id}.jpg"


# --- MI-CXR-style questions ------------------------------------------------------------


def _interval_choices() -> list[str]:
    return ["T1→T2", "T2→T3", "T3→T4", "T4→T5", NO_CHANGE]


def _first(values: list[bool]) -> int | None:
    return next((i for i, v in enumerate(values) if v), None)


def _question_truths(cohort: Cohort) -> list[QuestionTruth]:
    """One localisation (TEL or ICR) and one trajectory (GTS) question per finding (none for the opt-in
    double-event patterns: `chronokg generate micxr` asks about those)."""
    rng = random.Random(f"{cohort.seed}:questions")
    out: list[QuestionTruth] = []
    for p in cohort.patients:
        for f in p.findings:
            if f.pattern in DOUBLE_EVENT_PATTERNS:
                continue
            group, qtype, step = _localisation(f)
            intervals = _interval_choices()
            text = NO_CHANGE if step is None else intervals[step]
            out.append(QuestionTruth(q_id=len(out), patient_id=p.patient_id, finding=f.finding,
                                     laterality=f.laterality, pattern=f.pattern, group_type=group, qtype=qtype,
                                     choices=intervals, answer="ABCDE"[intervals.index(text)]))
            texts = [PATTERN_TEXT[f.pattern], *rng.sample([PATTERN_TEXT[k] for k in PATTERNS if k != f.pattern], 4)]
            rng.shuffle(texts)
            out.append(QuestionTruth(q_id=len(out), patient_id=p.patient_id, finding=f.finding,
                                     laterality=f.laterality, pattern=f.pattern, group_type="GTS",
                                     qtype="single_entity_interval_summary", choices=texts,
                                     answer="ABCDE"[texts.index(PATTERN_TEXT[f.pattern])]))
    return out


def _localisation(f: FindingTruth) -> tuple[str, str, int | None]:
    """(group, qtype, index of the interval T(k+1)->T(k+2) where the event happens, None if it does not).
    `qtype` is one of MI-CXR's released types (`ingest.micxr_types`, which the loader checks): an E→R course asks
    for its one resolution (`single_resolution`), an R→E course for its one emergence (`single_emergence`), and
    the worsening / improvement questions go under MI-CXR's one ICR type (`icr_multi_abn`), though their options
    are intervals, not MI-CXR's per-interval statements (their stems: `_STEMS`, by pattern)."""
    pairs = list(pairwise(f.present))
    appears = _first([not a and b for a, b in pairs])
    resolves = _first([a and not b for a, b in pairs])
    if f.pattern in ("emergence", "persistent", "resolution_emergence"):
        return "TEL", "single_emergence", appears
    if f.pattern in ("resolution", "emergence_resolution"):
        return "TEL", "single_resolution", resolves
    levels = [SEVERITIES.index(s) if s else -1 for s in f.severity]
    sign = 1 if f.pattern == "worsening" else -1
    step = _first([sign * (b - a) > 0 for a, b in pairwise(levels)])
    return "ICR", "icr_multi_abn", step


_STEM_OF = {"emergence": "single_emergence", "persistent": "single_emergence", "resolution": "single_resolution",
            "emergence_resolution": "emergence_resolution", "resolution_emergence": "recurrence",
            "worsening": "interval_worsening", "improvement": "interval_improvement"}  # a TEL/ICR question's stem
_STEMS = {
    "single_emergence": "Between which consecutive studies does {x} newly appear?",
    "emergence_resolution": "{X} appears and later resolves. Between which consecutive studies does it resolve?",
    "single_resolution": "Between which consecutive studies does {x} resolve?",
    "recurrence": "{X} resolves and later returns. Between which consecutive studies does it reappear?",
    "interval_worsening": "Between which consecutive studies does {x} first worsen?",
    "interval_improvement": "Between which consecutive studies does {x} first improve?",
    "single_entity_trajectory": "Which statement best describes the course of {x} across the study sequence?",
}


def question_records(cohort: Cohort) -> list[dict[str, Any]]:
    """The questions in MI-CXR's release format (`q_id`, `images` T1..T5 as MIMIC-CXR-JPG paths, ...)."""
    patients = {p.patient_id: p for p in cohort.patients}
    out = []
    for q in cohort.questions:
        p = patients[q.patient_id]
        x = f"{q.laterality} {q.finding}" if q.laterality else q.finding
        out.append({
            "q_id": q.q_id, "group_type": q.group_type, "qtype": q.qtype,
            "images": {f"T{k + 1}": image_path(p, k) for k in range(len(p.studies))},
            "question": _STEMS["single_entity_trajectory" if q.group_type == "GTS" else _STEM_OF[q.pattern]].format(
                x=x, X=x[0].upper() + x[1:]),
            "choices": dict(zip("ABCDE", q.choices, strict=True)), "answer": q.answer,
        })
    return out


# --- writing ---------------------------------------------------------------------------


def _dump(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def write(cohort: Cohort, out: Path) -> Path:
    """Write the cohort's files under `out`; returns the ground-truth file."""
    out.mkdir(parents=True, exist_ok=True)
    for p in cohort.patients:
        folder = out / "scene_data" / p.patient_id[:3] / p.patient_id
        for k, study in enumerate(p.studies):
            _dump(folder / f"{study.study_id}.scene_graph.json", scene_graph(p, k))
            _dump(folder / f"{study.study_id}.metadata.json", study_metadata(p, k))
    if cohort.questions:
        lines = [json.dumps(r, ensure_ascii=False) for r in question_records(cohort)]
        (out / QUESTIONS_FILE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    _dump(out / SOURCE_FILE, {
        "dataset": SYNTH_DATASET, "release_date": SYNTH_RELEASE.isoformat(),
        "version": f"seed{cohort.seed}-p{len(cohort.patients)}-v{cohort.visits}-f{cohort.findings_per_patient}"
                   f"-{cohort.gap_distribution.value}{cohort.median_gap_days:g}",
        "caption": f"synthetic chest-X-ray timelines (seed {cohort.seed}, {len(cohort.patients)} patients)",
    })
    truth = out / TRUTH_FILE
    truth.write_text(cohort.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return truth


def generate(out: Path, patients: int, visits: int = 5, seed: int = 0, findings: int = 3,
             gaps: GapDistribution = GapDistribution.lognormal, median_gap_days: float = 30.0,
             patterns: tuple[str, ...] = PATTERNS) -> Cohort:
    """Plan a cohort and write it under `out`; the returned cohort is the ground truth."""
    cohort = plan(patients, visits, seed, findings, gaps, median_gap_days, patterns)
    write(cohort, out)
    return cohort


def read_truth(path: Path) -> Cohort:
    return Cohort.model_validate_json(path.read_text(encoding="utf-8"))
