"""Chest-X-ray timelines: MIMIC-Ext-CXR-QBA scene graphs and MI-CXR questions.

Inputs (files or folders, scanned recursively):

* scene graphs `pXX/pXXXXXXXX/sXXXXXXXX.scene_graph.json` as released in
  MIMIC-Ext-CXR-QBA (`scene_data.zip`): `patient_id`, `study_id`,
  `observations` (an object keyed by obs id, as released; a list is accepted
  too), `study_quality`, `study_img_localization_quality` (keyed by image id);
* study timing (`study_index`, `timestamp_since_first`, `timespan_since_prev`,
  `procedure`), looked up per field in this order: the sibling
  `sXXXXXXXX.metadata.json`, a `study_metadata.csv[.gz]` table among the
  inputs, then the scene graph itself (top level, or under `metadata`).
  Offsets are days: a number, a pandas timedelta text (`"3 days 04:00:00"`)
  or an ISO 8601 duration (`"P3DT4H"`). Without `study_index` the order is
  the time order;
* MI-CXR question files (`.jsonl`, or a `.json` list): `q_id`/`qid`,
  `group_type` (TEL|ICR|GTS), `qtype`, `images` {T1..T5}, `question`,
  `choices` {A..E}, `answer`;
* optionally `cxr_source.json` (`dataset`, `version`, `release_date`,
  `caption`) naming the release; without it the release is
  MIMIC-Ext-CXR-QBA 1.0.0 (PhysioNet, 2025-07-22). MIMIC is credentialed
  data, so there is no download command.

Model: Patient -HAS_STUDY-> Study -NEXT {days}-> Study (the patient's loaded
studies in study order) and Study -HAS_OBSERVATION-> Observation. Each
observation with a finding entity and a positiveness (`pos`/`neg`; without
one, the probability) supports a fact `finding_present` (true/false) on the
subject `{patient}:{finding}[:{laterality}]` (laterality left/right/bilateral;
`unspecified` adds none); a study says present if any of its observations
of that subject does, and a present one with a severity modifier adds a fact
`finding_severity`. Facts link to their Study and Observations. A fact
is valid from its study's date until the patient's next loaded study (the
last is open). MIMIC dates are shifted per patient and anonymised, so every
patient's day 0 (`timestamp_since_first` 0, their first study in the release)
is anchored on a synthetic base date (`BASE_DATE`, 2000-01-01) and each study
keeps its real offset in whole days (precision day). Studies on the same day give the earlier one's facts an
empty interval, so as-of that day answers from the latest one.

A patient's studies must be loaded together: a load that adds to or omits
studies of a patient already in the store is rejected (its last facts'
intervals would be wrong). Large inputs are written patient folder by patient
folder in one transaction (so a patient's scene graphs must share a folder, as
released), and a bad file anywhere leaves the store unchanged.

Question images map to studies by this rule: the `sNNNNNNNN` folder of an
image path (`files/p14/p14993854/s52186348/<dicom>.jpg`), else a bare study
id, else the image id (file stem) matched against the image ids the scene
graphs carry. Every image must map to a loaded study (this load or the
store) of one patient, in time order; otherwise the load fails with an
InputError naming the file and q_id, unless `allow_unmatched` keeps such
questions attached to the studies that did match (and counts them).
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import io
import json
import math
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from chronokg.errors import InputError
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch
from chronokg.graph.counts import graph_counts
from chronokg.graph.dates import Precision
from chronokg.graph.model import Fact, Source, stable_id
from chronokg.graph.store import GraphStore
from chronokg.graph.writer import write_stream
from chronokg.ingest.common import (
    MAX_DEPTH,
    LoadSummary,
    check_depth,
    check_release,
    file_sha256,
    read_json,
    read_json_blocks,
    read_text,
    slug,
)
from chronokg.ingest.micxr_types import qtype_problem
from chronokg.progress import Progress

KIND = "cxr"
QUESTION_KIND = "mi-cxr"
BENCHMARK = "mi-cxr"
FINDING_PRESENT = "finding_present"
FINDING_SEVERITY = "finding_severity"
BASE_DATE = dt.date(2000, 1, 1)
MAX_FOLLOW_UP_DAYS = 36_525  # a century: offsets beyond it are input errors, not dates
DATASET = "MIMIC-Ext-CXR-QBA"
VERSION = "1.0.0"
RELEASE_DATE = dt.date(2025, 7, 22)  # PhysioNet publication of MIMIC-Ext-CXR-QBA 1.0.0
SOURCE_FILE = "cxr_source.json"
SCENE_SUFFIX = ".scene_graph.json"
META_SUFFIX = ".metadata.json"
STUDY_TABLES = ("study_metadata.csv", "study_metadata.csv.gz")
CHUNK_STUDIES = 2000  # studies parsed and written per step of the one transaction

# Relationship types of this source (labels Patient, Study, Observation are in graph.schema).
HAS_STUDY = "HAS_STUDY"  # (Patient)->(Study)
NEXT = "NEXT"  # (Study)->(Study): the patient's next loaded study, {days}
HAS_OBSERVATION = "HAS_OBSERVATION"  # (Study)->(Observation)
OBSERVES = "OBSERVES"  # (Observation)->(Entity): the patient-finding subject it reports on
FROM_STUDY = "FROM_STUDY"  # (Fact)->(Study)
FROM_OBSERVATION = "FROM_OBSERVATION"  # (Fact)->(Observation)
ABOUT_STUDY = "ABOUT_STUDY"  # (SourceQuestion)->(Study), {slots: ["T1", ...]}
ABOUT_PATIENT = "ABOUT_PATIENT"  # (SourceQuestion)->(Patient)

_NO_LATERALITY = {"", "none", "unspecified", "unknown", "n/a", "na", "null"}
_POSITIVE = {"pos", "positive", "true", "yes"}
_NEGATIVE = {"neg", "negative", "false", "no"}
_PROBABLY = {"positive", "probable", "likely"}
_PROBABLY_NOT = {"negative", "unlikely"}
# The sides a finding subject may carry; anything else would silently make a new subject (`p1:effusion:lft`).
_SIDES = {"left", "right", "bilateral"}
_CHANGE_WORDS = (  # first match wins; "no new" before "new"
    ("no_new", ("no new",)),
    ("resolved", ("resol", "clear", "disappear", "no longer")),
    ("new", ("new", "appear", "recurr")),
    ("worsened", ("wors", "increas", "progress", "enlarg")),
    ("improved", ("improv", "decreas", "smaller", "regress")),
    ("unchanged", ("unchang", "stable", "no change", "persist", "similar")),
)
_TIMEDELTA = re.compile(
    r"^(?:(?P<days>[-+]?\d+(?:\.\d+)?)\s*days?)?\s*,?\s*"
    r"(?:(?P<sign>[-+])?(?P<h>\d+):(?P<m>\d{2})(?::(?P<s>\d{2}(?:\.\d+)?))?)?$"
)
_ISO_DURATION = re.compile(
    r"^P(?:(?P<w>\d+(?:\.\d+)?)W)?(?:(?P<d>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)


# --- input models ------------------------------------------------------------------


class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class RegionRef(_Loose):
    region: str


class ObservationIn(_Loose):
    """One observation node of a scene graph (only the fields this loader uses are typed)."""

    obs_id: str = Field(min_length=1)
    name: str | None = None
    summary_sentence: str | None = None
    regions: list[RegionRef | str] = Field(default_factory=list)
    laterality: str | None = None
    obs_entities: list[str] = Field(default_factory=list)
    obs_categories: list[str] = Field(default_factory=list)
    obs_subcategories: list[str] = Field(default_factory=list)
    probability: str | None = None
    certainty: str | None = None
    positiveness: str | None = None
    modifiers: dict[str, list[str]] | list[list[str]] | None = None
    changes: list[str] = Field(default_factory=list)
    from_report: bool | None = None
    obs_quality: dict[str, Any] | None = None
    localization: dict[str, Any] | None = None


class SceneGraphIn(_Loose):
    patient_id: str | int
    study_id: str | int
    observations: dict[str, dict[str, Any]] | list[dict[str, Any]]
    study_quality: dict[str, Any] | None = None
    study_img_localization_quality: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None


class StudyTimingIn(_Loose):
    """Per-study metadata, wherever it comes from."""

    patient_id: str | int | None = None
    study_id: str | int | None = None
    study_index: int | None = None
    timestamp_since_first: float | str | None = None
    timespan_since_prev: float | str | None = None
    procedure: str | None = None
    image_ids: list[str] | None = None


class QuestionIn(_Loose):
    """One MI-CXR question (`qid` in the GitHub README, `q_id` in the Hugging Face release)."""

    q_id: int | str = Field(validation_alias=AliasChoices("q_id", "qid"))
    group_type: Literal["TEL", "ICR", "GTS"]
    qtype: str = Field(min_length=1)
    images: dict[str, str] | list[str]
    question: str = Field(min_length=1)
    choices: dict[str, str] | list[str]
    answer: str = Field(min_length=1)


class SourceInfo(_Loose):
    dataset: str = DATASET
    version: str = VERSION
    release_date: dt.date | None = RELEASE_DATE
    caption: str | None = None


class CxrLoadSummary(LoadSummary):
    """A load summary with what the questions could not be tied to."""

    patients: int = 0
    studies: int = 0
    observations: int = 0
    questions: int = 0
    unmatched_questions: int = Field(0, description="Questions kept with some image matching no loaded study")


# --- small parsers -----------------------------------------------------------------


def _brief(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors()[:3]:
        where = ".".join(str(p) for p in e["loc"]) or "record"
        parts.append(f"{where}: {e['msg']}")
    return "; ".join(parts)


def norm_id(value: str | int, prefix: str) -> str:
    """`10000032` and `"10000032"` become `p10000032` (MIMIC's spelling); other ids are kept."""
    text = str(value).strip()
    return f"{prefix}{text}" if text.isdigit() else text


def parse_days(value: float | str | None) -> float | None:
    """An offset in days from a number, a pandas timedelta text or an ISO 8601 duration."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a time offset: {value!r}")
    if isinstance(value, int | float):
        days = float(value)
    else:
        text = value.strip()
        if not text:
            return None
        try:
            days = float(text)
        except ValueError:
            days = _parse_days_text(text)
    if math.isnan(days) or math.isinf(days):
        raise ValueError(f"not a time offset: {value!r}")
    if abs(days) > MAX_FOLLOW_UP_DAYS:
        raise ValueError(f"{value!r} days is more than a century of follow-up: not a plausible time offset")
    return days


def _parse_days_text(text: str) -> float:
    m = _ISO_DURATION.match(text.upper())
    if m and any(m.groupdict().values()):
        g = {k: float(v) if v else 0.0 for k, v in m.groupdict().items()}
        return g["w"] * 7 + g["d"] + g["h"] / 24 + g["m"] / 1440 + g["s"] / 86400
    m = _TIMEDELTA.match(text)
    if m and (m["days"] is not None or m["h"] is not None):
        days = float(m["days"] or 0)
        if m["h"] is not None:
            part = int(m["h"]) / 24 + int(m["m"]) / 1440 + float(m["s"] or 0) / 86400
            days += -part if m["sign"] == "-" else part
        return days
    raise ValueError(f"not a time offset: {text!r} (expected days, '3 days 04:00:00' or 'P3DT4H')")


def presence(obs: ObservationIn) -> bool | None:
    """True for a positive finding, False for a negative one, None when the graph does not say."""
    pos = (obs.positiveness or "").strip().lower()
    if pos in _POSITIVE:
        return True
    if pos in _NEGATIVE:
        return False
    prob = (obs.probability or "").strip().lower()
    if not pos and prob in _PROBABLY:
        return True
    if not pos and prob in _PROBABLY_NOT:
        return False
    return None


def vocabulary_error(obs: ObservationIn) -> str | None:
    """Why an observation's `positiveness` or `laterality` is outside the scene graphs' vocabulary, or None:
    an unknown one would silently drop the finding or file it under a new subject."""
    pos = (obs.positiveness or "").strip().lower()
    if pos and pos not in _POSITIVE | _NEGATIVE:
        return f"unknown positiveness {obs.positiveness!r} (expected 'pos' or 'neg')"
    side = (obs.laterality or "").strip().lower()
    if side not in _SIDES | _NO_LATERALITY:
        return f"unknown laterality {obs.laterality!r} (expected left, right, bilateral or unspecified)"
    return None


def laterality(value: str | None) -> str | None:
    text = (value or "").strip().lower()
    return None if text in _NO_LATERALITY else text


def change_type(changes: Iterable[str]) -> str | None:
    """The kind of change a scene graph's change phrases name (new, resolved, worsened, ...)."""
    texts = [c.lower() for c in changes if c and c.strip()]
    if not texts:
        return None
    for kind, words in _CHANGE_WORDS:
        if any(w in t for t in texts for w in words):
            return kind
    return "other"


def severity(obs: ObservationIn) -> str | None:
    mods = obs.modifiers
    if isinstance(mods, dict):
        values = mods.get("severity") or []
        return values[0] if values else None
    for pair in mods or []:
        if len(pair) == 2 and pair[0] == "severity":
            return pair[1]
    return None


def finding_subject(patient: str, finding: str, side: str | None) -> str:
    """The fact subject of one finding of one patient: `p10000032:pleural effusion:left`."""
    return f"{patient}:{finding}" if side is None else f"{patient}:{finding}:{side}"


def study_date(days_since_first: float, base: dt.date = BASE_DATE) -> dt.date:
    return base + dt.timedelta(days=math.floor(days_since_first))


def _quality(value: dict[str, Any] | None) -> str | None:
    return None if not value else json.dumps(value, sort_keys=True, default=str)


# --- parsed records ----------------------------------------------------------------


@dataclass
class StudyRecord:
    path: Path
    patient: str
    study: str
    index: int | None
    days: float
    days_prev: float | None
    procedure: str | None
    quality: str | None
    image_ids: list[str]
    observations: list[ObservationIn]


@dataclass
class StudyRef:
    """What questions need to know about a study (loaded now or already in the store)."""

    patient: str
    index: int | None
    days: float


@dataclass
class Inputs:
    scene_graphs: list[Path] = field(default_factory=list)
    metadata: dict[Path, Path] = field(default_factory=dict)  # scene graph -> sibling metadata file
    tables: list[Path] = field(default_factory=list)
    questions: list[Path] = field(default_factory=list)
    source_files: list[Path] = field(default_factory=list)


def classify(path: Path) -> str | None:
    """scene_graph, metadata, table, questions, source, or None (ignored inside a folder)."""
    name = path.name
    if name.endswith(SCENE_SUFFIX):
        return "scene_graph"
    if name.endswith(META_SUFFIX):
        return "metadata"
    if name in STUDY_TABLES:
        return "table"
    if name == SOURCE_FILE:
        return "source"
    if name.endswith(".jsonl") or (name.endswith(".json") and re.search(r"(?i)micxr|mi-cxr|question", name)):
        return "questions"
    return None


def expand(paths: Iterable[Path]) -> Inputs:
    found: list[tuple[Path, str]] = []
    for p in paths:
        if p.is_dir():
            for q in sorted(p.rglob("*")):
                kind = classify(q) if q.is_file() else None
                if kind is not None:
                    found.append((q, kind))
        elif p.is_file():
            kind = classify(p) or ("questions" if p.suffix == ".json" else None)
            if kind is None:
                raise InputError(p, None, "not a scene graph, metadata, study table or question file")
            found.append((p, kind))
        else:
            raise InputError(p, None, "no such file or directory")
    inputs = Inputs()
    metas = {q: q for q, k in found if k == "metadata"}
    for q, kind in found:
        if kind == "scene_graph":
            inputs.scene_graphs.append(q)
            sibling = q.with_name(q.name[: -len(SCENE_SUFFIX)] + META_SUFFIX)
            if sibling in metas or sibling.is_file():
                inputs.metadata[q] = sibling
        elif kind == "table":
            inputs.tables.append(q)
        elif kind == "questions":
            inputs.questions.append(q)
        elif kind == "source":
            inputs.source_files.append(q)
    if not inputs.scene_graphs and not inputs.questions:
        raise InputError(", ".join(map(str, paths)), None,
                         f"no scene graphs (*{SCENE_SUFFIX}) or MI-CXR question files (.jsonl) found")
    return inputs


def read_source_info(files: list[Path]) -> SourceInfo:
    if not files:
        return SourceInfo()
    infos = []
    for f in files:
        data = read_json(f)
        try:
            infos.append(SourceInfo.model_validate(data))
        except ValidationError as exc:
            raise InputError(f, None, _brief(exc)) from exc
    if len({(i.dataset, i.version) for i in infos}) > 1:
        raise InputError(files[1], None, f"names another release than {files[0]}; load one release at a time")
    return infos[0]


def read_tables(tables: list[Path]) -> dict[str, dict[str, Any]]:
    """study id -> row of `study_metadata.csv[.gz]`."""
    rows: dict[str, dict[str, Any]] = {}
    for path in tables:
        try:
            raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
            reader = csv.DictReader(io.StringIO(raw.decode("utf-8")))
            for n, row in enumerate(reader, start=2):
                if not row.get("study_id"):
                    raise InputError(path, f"line {n}", "missing study_id")
                rows[norm_id(row["study_id"], "s")] = {k: (v if v != "" else None) for k, v in row.items()}
        except (OSError, UnicodeDecodeError, csv.Error, gzip.BadGzipFile, EOFError) as exc:
            raise InputError(path, None, f"unreadable study metadata table: {exc}") from exc
    return rows


# --- scene graphs ------------------------------------------------------------------


def _object(path: Path) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise InputError(path, None, f"expected a JSON object, got {type(data).__name__}")
    return data


def _timing(path: Path, record: str, sources: list[tuple[str, dict[str, Any]]]) -> StudyTimingIn:
    """Merge timing fields: earlier sources win field by field."""
    merged: dict[str, Any] = {}
    for _, data in reversed(sources):
        merged.update({k: v for k, v in data.items() if v is not None})
    try:
        return StudyTimingIn.model_validate(merged)
    except ValidationError as exc:
        raise InputError(path, record, f"bad study metadata: {_brief(exc)}") from exc


def parse_scene_graph(path: Path, meta_path: Path | None, table: dict[str, dict[str, Any]]) -> StudyRecord:
    data = _object(path)
    try:
        sg = SceneGraphIn.model_validate(data)
    except ValidationError as exc:
        raise InputError(path, None, _brief(exc)) from exc
    patient, study = norm_id(sg.patient_id, "p"), norm_id(sg.study_id, "s")
    if not patient or not study:
        raise InputError(path, None, "empty patient_id or study_id")
    stem = path.name[: -len(SCENE_SUFFIX)]
    if stem != study:
        raise InputError(path, study, f"file name says study {stem} but the scene graph says {study}")
    folder = path.parent.name
    if re.fullmatch(r"p\d+", folder) and not patient.startswith(folder):  # p10/ groups p10000032/
        raise InputError(path, study, f"folder says patient {folder} but the scene graph says {patient}")
    sources: list[tuple[str, dict[str, Any]]] = []
    if meta_path is not None:
        sources.append((str(meta_path), _object(meta_path)))
    if study in table:
        sources.append(("study_metadata table", table[study]))
    if sg.metadata:
        sources.append((f"{path} (metadata)", sg.metadata))
    for where, meta in sources:
        for key, expected in (("patient_id", patient), ("study_id", study)):
            if meta.get(key) is not None and norm_id(meta[key], key[0]) != expected:
                raise InputError(path, study, f"{where} gives {key} {meta[key]}, the scene graph {expected}")
    sources.append(("scene graph", data))
    timing = _timing(path, study, sources)
    try:
        days = parse_days(timing.timestamp_since_first)
        days_prev = parse_days(timing.timespan_since_prev)
    except ValueError as exc:
        raise InputError(meta_path or path, study, str(exc)) from exc
    if days is None:
        raise InputError(path, study, "no timestamp_since_first (looked in the sibling metadata file, "
                                      "study_metadata.csv and the scene graph)")
    if days < 0 or (days_prev is not None and days_prev < 0):
        raise InputError(meta_path or path, study, "time offsets must not be negative")
    items = list(sg.observations.values()) if isinstance(sg.observations, dict) else sg.observations
    observations = []
    for k, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise InputError(path, f"{study} observation {k}", "expected an object")
        try:
            observations.append(ObservationIn.model_validate(item))
        except ValidationError as exc:
            raise InputError(path, f"{study} observation {item.get('obs_id', k)}", _brief(exc)) from exc
        bad = vocabulary_error(observations[-1])
        if bad:
            raise InputError(path, f"{study} observation {observations[-1].obs_id}", bad)
    if len({o.obs_id for o in observations}) != len(observations):
        raise InputError(path, study, "duplicate obs_id")
    images = set(timing.image_ids or []) | set(sg.study_img_localization_quality or {})
    for o in observations:
        images.update((o.localization or {}).keys())
    return StudyRecord(
        path=path, patient=patient, study=study, index=timing.study_index, days=days, days_prev=days_prev,
        procedure=timing.procedure, quality=_quality(sg.study_quality), image_ids=sorted(images),
        observations=observations,
    )


class TimelineBuilder:
    """Stages patients' studies, observations and finding facts."""

    def __init__(self, src: Source, base_date: dt.date) -> None:
        self.src = src
        self.base = base_date
        self.studies: dict[str, StudyRef] = {}
        self.images: dict[str, str] = {}
        self.patients = 0
        self.observations = 0

    def patient(self, batch: GraphBatch, patient: str, records: list[StudyRecord]) -> None:
        ordered = _ordered(records)
        batch.node(schema.PATIENT, patient, caption=patient)
        self.patients += 1
        prev: StudyRecord | None = None
        for k, rec in enumerate(ordered):
            index = rec.index if rec.index is not None else k
            nxt = ordered[k + 1] if k + 1 < len(ordered) else None
            start = study_date(rec.days, self.base)
            end = None if nxt is None else study_date(nxt.days, self.base)
            days_prev = rec.days_prev if rec.days_prev is not None else (
                None if prev is None else rec.days - prev.days)
            batch.node(schema.STUDY, rec.study, patient_id=patient, study_index=index, days_since_first=rec.days,
                       days_since_prev=days_prev, study_date=start, precision=Precision.DAY.value,
                       procedure=rec.procedure, num_observations=len(rec.observations), quality=rec.quality,
                       image_ids=rec.image_ids, caption=f"{patient} study {index} (day {math.floor(rec.days)})")
            batch.edge(HAS_STUDY, schema.PATIENT, patient, schema.STUDY, rec.study, study_index=index)
            batch.edge(schema.LOADED_FROM, schema.STUDY, rec.study, schema.SOURCE, self.src.id)
            if prev is not None:
                batch.edge(NEXT, schema.STUDY, prev.study, schema.STUDY, rec.study, days=rec.days - prev.days)
            self.studies[rec.study] = StudyRef(patient=patient, index=index, days=rec.days)
            for image in rec.image_ids:
                self.images[image] = rec.study
            self._observations(batch, rec, start, end)
            prev = rec

    def _observations(self, batch: GraphBatch, rec: StudyRecord, start: dt.date, end: dt.date | None) -> None:
        by_subject: dict[tuple[str, str | None], list[tuple[bool, str, ObservationIn]]] = defaultdict(list)
        for obs in rec.observations:
            oid = f"{rec.study}:{obs.obs_id}"
            regions = [r.region if isinstance(r, RegionRef) else r for r in obs.regions]
            batch.node(schema.OBSERVATION, oid, obs_id=obs.obs_id, study_id=rec.study, patient_id=rec.patient,
                       caption=obs.name, summary=obs.summary_sentence, entities=obs.obs_entities,
                       categories=obs.obs_categories, subcategories=obs.obs_subcategories, regions=regions,
                       laterality=obs.laterality, certainty=obs.certainty, probability=obs.probability,
                       positiveness=obs.positiveness, changes=obs.changes, change_type=change_type(obs.changes),
                       severity=severity(obs), from_report=obs.from_report, quality=_quality(obs.obs_quality))
            batch.edge(HAS_OBSERVATION, schema.STUDY, rec.study, schema.OBSERVATION, oid)
            self.observations += 1
            present = presence(obs)
            if present is None:
                continue
            for entity in obs.obs_entities:
                finding = " ".join(entity.lower().split())
                if finding:
                    by_subject[(finding, laterality(obs.laterality))].append((present, oid, obs))
        for (finding, side), items in sorted(by_subject.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
            subject = finding_subject(rec.patient, finding, side)
            value = any(p for p, _, _ in items)  # positive if any observation of the study says so
            chosen = [(oid, obs) for p, oid, obs in items if p == value]
            first = chosen[0][1]
            caption = f"{side + ' ' if side else ''}{finding} ({rec.patient})"
            batch.entity(subject, kind="cxr_finding", caption=caption)
            attrs: dict[str, str | None] = {
                "patient_id": rec.patient, "study_id": rec.study, "finding": finding, "laterality": side,
                "certainty": first.certainty, "change_type": change_type(c for _, o in chosen for c in o.changes),
                "obs_ids": ",".join(obs.obs_id for _, obs in chosen),
            }
            self._fact(batch, subject, FINDING_PRESENT, value, start, end, attrs, rec.study, chosen)
            grade = next((s for s in (severity(o) for _, o in chosen) if s), None) if value else None
            if grade is not None:
                self._fact(batch, subject, FINDING_SEVERITY, grade, start, end, attrs, rec.study, chosen)
            for oid, _ in chosen:
                batch.edge(OBSERVES, schema.OBSERVATION, oid, schema.ENTITY, subject)

    def _fact(self, batch: GraphBatch, subject: str, predicate: str, value: str | bool, start: dt.date,
              end: dt.date | None, attrs: dict[str, str | None], study: str,
              chosen: list[tuple[str, ObservationIn]]) -> None:
        fact = Fact(subject=subject, predicate=predicate, value=value, valid_from=start, valid_to=end,
                    precision=Precision.DAY, known_from=self.src.release_date, source_id=self.src.id,
                    source_kind=KIND, attrs=dict(attrs))
        fid = batch.fact(fact, subject_kind="cxr_finding")
        batch.edge(FROM_STUDY, schema.FACT, fid, schema.STUDY, study)
        for oid, _ in chosen:
            batch.edge(FROM_OBSERVATION, schema.FACT, fid, schema.OBSERVATION, oid)


def _ordered(records: list[StudyRecord]) -> list[StudyRecord]:
    """A patient's studies in study order, checked against their time offsets."""
    indexed = [r for r in records if r.index is not None]
    if indexed and len(indexed) != len(records):
        missing = next(r for r in records if r.index is None)
        raise InputError(missing.path, missing.study, "study_index is missing here but given for other studies "
                                                      f"of patient {missing.patient}")
    if indexed:
        seen: dict[int, StudyRecord] = {}
        for r in records:
            assert r.index is not None
            if r.index in seen:
                raise InputError(r.path, r.study, f"study_index {r.index} is also used by {seen[r.index].study}")
            seen[r.index] = r
        ordered = sorted(records, key=lambda r: (r.index, r.study))
    else:
        ordered = sorted(records, key=lambda r: (r.days, r.study))
    for a, b in pairwise(ordered):
        if b.days < a.days:
            raise InputError(b.path, b.study, f"study_index {b.index} comes after {a.study} (index {a.index}) but "
                                              f"its timestamp_since_first ({b.days}) is earlier ({a.days})")
    return ordered


# --- questions ---------------------------------------------------------------------


@dataclass
class ParsedQuestion:
    path: Path
    record: str
    q: QuestionIn
    slots: list[tuple[str, str]]  # (T1, image) in slot order
    choices: list[tuple[str, str]]  # (A, text)


def _slot_key(slot: str) -> tuple[int, str]:
    m = re.search(r"\d+", slot)
    return (int(m.group()) if m else 0, slot)


def _jsonl(path: Path) -> list[tuple[str, Any]]:
    """Records of a JSON-lines file; pretty-printed records fall back to the shared block reader.

    Reading line by line keeps large files linear (MI-CXR's test set is one record per line).
    """
    lines = read_text(path).splitlines()
    try:
        out: list[tuple[str, Any]] = []
        for line_no, line in enumerate(lines, start=1):
            if line.strip():
                out.append((f"{len(out) + 1} (line {line_no})", json.loads(line)))
    except json.JSONDecodeError:
        return [(f"{n} (line {line})", obj) for n, line, obj in read_json_blocks(path)]
    except RecursionError:
        raise InputError(path, f"{len(out) + 1}", f"JSON nested more than {MAX_DEPTH} levels deep") from None
    for where, obj in out:
        check_depth(obj, path, where)
    if not out:
        raise InputError(path, None, "the file has no records")
    return out


def parse_questions(path: Path) -> list[ParsedQuestion]:
    if path.suffix == ".jsonl":
        items = _jsonl(path)
    else:
        data = read_json(path)
        if isinstance(data, dict) and isinstance(data.get("questions"), list):
            data = data["questions"]
        if not isinstance(data, list):
            raise InputError(path, None, "expected a list of MI-CXR questions")
        items = [(str(n), obj) for n, obj in enumerate(data, start=1)]
    out = []
    for where, obj in items:
        if not isinstance(obj, dict):
            raise InputError(path, where, "expected a question object")
        qid = obj.get("q_id", obj.get("qid"))
        record = f"{where} (q_id {qid})"
        try:
            q = QuestionIn.model_validate(obj)
        except ValidationError as exc:
            raise InputError(path, record, _brief(exc)) from exc
        images = q.images if isinstance(q.images, dict) else {f"T{k}": v for k, v in enumerate(q.images, 1)}
        choices = q.choices if isinstance(q.choices, dict) else {
            chr(ord("A") + k): v for k, v in enumerate(q.choices)}
        if not images:
            raise InputError(path, record, "no images")
        if q.answer.strip() not in choices:
            raise InputError(path, record, f"answer {q.answer!r} is not one of the choices {sorted(choices)}")
        if (problem := qtype_problem(q.qtype, q.group_type)) is not None:
            raise InputError(path, record, problem)
        out.append(ParsedQuestion(path=path, record=record, q=q,
                                  slots=sorted(images.items(), key=lambda kv: _slot_key(kv[0])),
                                  choices=sorted(choices.items())))
    return out


_DIGITS_STUDY = re.compile(r"s?\d+")
_STUDY_PART = re.compile(r"s\d+")
_PATIENT_PART = re.compile(r"p\d+")


def image_study(image: str) -> tuple[str | None, str | None, str]:
    """(study id, patient id, image id) an image reference names; ids are None when absent."""
    text = image.strip()
    if _DIGITS_STUDY.fullmatch(text):
        return norm_id(text.lstrip("s"), "s"), None, text
    parts = [p for p in text.replace("\\", "/").split("/") if p]
    folders = parts[:-1]
    studies = [p for p in folders if _STUDY_PART.fullmatch(p)]
    # files/p14/p14993854/s52186348/x.jpg: the patient folder is the last p-folder (p14 only groups them).
    patients = [p for p in folders if _PATIENT_PART.fullmatch(p)]
    stem = parts[-1].split(".")[0] if parts else text
    return (studies[-1] if studies else None), (patients[-1] if patients else None), stem


def store_studies(store: GraphStore, ids: Iterable[str]) -> dict[str, StudyRef]:
    rows = store.run("MATCH (s:Study) WHERE s.id IN $ids RETURN s.id AS id, s.patient_id AS patient, "
                     "s.study_index AS idx, s.days_since_first AS days", {"ids": sorted(set(ids))})
    return {r["id"]: StudyRef(patient=r["patient"], index=r["idx"], days=float(r["days"] or 0)) for r in rows}


def store_images(store: GraphStore, images: Iterable[str]) -> dict[str, str]:
    rows = store.run("MATCH (s:Study) UNWIND s.image_ids AS image WITH s, image WHERE image IN $images "
                     "RETURN image, s.id AS id", {"images": sorted(set(images))})
    return {r["image"]: r["id"] for r in rows}


class QuestionBuilder:
    """Stages MI-CXR questions linked to the studies their images show."""

    def __init__(self, allow_unmatched: bool) -> None:
        self.allow_unmatched = allow_unmatched
        self.count = 0
        self.unmatched = 0

    def stage(self, batch: GraphBatch, questions: list[ParsedQuestion], studies: dict[str, StudyRef],
              images: dict[str, str]) -> None:
        sources: dict[Path, Source] = {}
        for pq in questions:
            if pq.path not in sources:
                digest = file_sha256(pq.path)
                sources[pq.path] = Source(
                    id=f"{QUESTION_KIND}:{digest[:12]}", kind=QUESTION_KIND, caption=f"MI-CXR questions {pq.path.name}",
                    version=digest[:12], checksum=f"sha256:{digest}", path=str(pq.path))
                batch.source(sources[pq.path])
            self._question(batch, pq, sources[pq.path], studies, images)

    def _question(self, batch: GraphBatch, pq: ParsedQuestion, src: Source, studies: dict[str, StudyRef],
                  images: dict[str, str]) -> None:
        matched: list[tuple[str, str]] = []
        missing: list[str] = []
        for slot, image in pq.slots:
            study, patient, stem = image_study(image)
            sid = study if study in studies else images.get(stem)
            if sid is None:
                missing.append(f"{slot} {image!r}")
                continue
            if patient is not None and not studies[sid].patient.startswith(patient):
                raise InputError(pq.path, pq.record, f"{slot} {image!r} is in patient folder {patient} but study "
                                                     f"{sid} belongs to {studies[sid].patient}")
            matched.append((slot, sid))
        if missing and not self.allow_unmatched:
            raise InputError(pq.path, pq.record, f"image(s) {', '.join(missing)} match no loaded study: load the "
                                                 "patient's scene graphs first or together (or allow unmatched)")
        patients = sorted({studies[sid].patient for _, sid in matched})
        if len(patients) > 1:
            raise InputError(pq.path, pq.record, f"images show studies of several patients: {', '.join(patients)}")
        for (s1, a), (s2, b) in pairwise(matched):
            if (studies[b].days, studies[b].index or 0) <= (studies[a].days, studies[a].index or 0):
                raise InputError(pq.path, pq.record, f"{s2} ({b}) is not later than {s1} ({a}): images must be "
                                                     "in time order")
        q = pq.q
        qid = f"{BENCHMARK}-{q.q_id}-{stable_id(q.question, pq.choices, pq.slots)[:8]}"
        batch.node(schema.SOURCE_QUESTION, qid, benchmark=BENCHMARK, record=q.q_id, question=q.question,
                   choices=[text for _, text in pq.choices], correct=q.answer.strip(), group_type=q.group_type,
                   qtype=q.qtype, patient_id=patients[0] if patients else None,
                   study_ids=[sid for _, sid in matched], images=[image for _, image in pq.slots])
        batch.edge(schema.LOADED_FROM, schema.SOURCE_QUESTION, qid, schema.SOURCE, src.id)
        slots: dict[str, list[str]] = defaultdict(list)
        for slot, sid in matched:
            slots[sid].append(slot)
        for sid, names in slots.items():
            batch.edge(ABOUT_STUDY, schema.SOURCE_QUESTION, qid, schema.STUDY, sid, slots=names)
        if patients:
            batch.edge(ABOUT_PATIENT, schema.SOURCE_QUESTION, qid, schema.PATIENT, patients[0])
        self.count += 1
        self.unmatched += bool(missing)


# --- the load ----------------------------------------------------------------------


def _chunks(files: list[Path], size: int) -> Iterator[list[Path]]:
    """Scene graphs grouped by folder (one patient's folder stays whole), about `size` per chunk."""
    by_dir: dict[Path, list[Path]] = defaultdict(list)
    for f in files:
        by_dir[f.parent].append(f)
    chunk: list[Path] = []
    for folder in sorted(by_dir):
        chunk.extend(sorted(by_dir[folder]))
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def release_source(info: SourceInfo, release_date: dt.date | None) -> Source:
    check_release(release_date or info.release_date, SOURCE_FILE, None)
    return Source(
        id=f"{KIND}:{slug(info.dataset)}:{slug(info.version)}", kind=KIND,
        caption=info.caption or f"{info.dataset} {info.version} scene graphs", version=info.version,
        release_date=release_date or info.release_date,
    )


def load(store: GraphStore, paths: Iterable[Path], *, release_date: dt.date | None = None,
         base_date: dt.date = BASE_DATE, allow_unmatched: bool = False, chunk_studies: int = CHUNK_STUDIES,
         progress: Progress | None = None) -> CxrLoadSummary:
    """Load scene graphs and MI-CXR questions in one transaction; bad input raises InputError, writes nothing."""
    paths = list(paths)
    inputs = expand(paths)
    src = release_source(read_source_info(inputs.source_files), release_date)
    table = read_tables(inputs.tables)
    questions = [pq for f in inputs.questions for pq in parse_questions(f)]
    # Studies and images that questions name but this load may not: look them up before writing.
    named = [image_study(image) for pq in questions for _, image in pq.slots]
    known_studies = store_studies(store, [s for s, _, _ in named if s]) if questions else {}
    known_images = store_images(store, [stem for _, _, stem in named]) if questions else {}
    known_studies.update(store_studies(store, known_images.values()) if known_images else {})

    timeline = TimelineBuilder(src, base_date)
    asked = QuestionBuilder(allow_unmatched)
    staged: dict[str, int] = defaultdict(int)
    done: dict[str, Path] = {}

    def batches() -> Iterator[GraphBatch]:
        first = True
        for chunk in _chunks(inputs.scene_graphs, chunk_studies):
            batch = GraphBatch()
            if first:
                batch.source(src)
                first = False
            by_patient: dict[str, list[StudyRecord]] = defaultdict(list)
            for f in chunk:
                rec = parse_scene_graph(f, inputs.metadata.get(f), table)
                by_patient[rec.patient].append(rec)
            _check_patients(store, by_patient, done)
            for patient in sorted(by_patient):
                timeline.patient(batch, patient, by_patient[patient])
            _count(staged, batch)
            yield batch
            if progress is not None:
                progress.advance(len(chunk))
        if questions:
            batch = GraphBatch()
            asked.stage(batch, questions, {**known_studies, **timeline.studies}, {**known_images, **timeline.images})
            _count(staged, batch)
            yield batch
            if progress is not None:
                progress.advance(len(questions))

    before = graph_counts(store)
    if progress is not None:  # counted in inputs (scene graphs, then questions), the unit of its total
        progress.start(len(inputs.scene_graphs) + len(questions), "loading")
    write_stream(store, batches())
    files = [*inputs.scene_graphs, *inputs.metadata.values(), *inputs.tables, *inputs.questions, *inputs.source_files]
    return CxrLoadSummary(
        source_kind=KIND, paths=[str(p) for p in files], records=len(inputs.scene_graphs) + len(questions),
        staged=dict(staged), before=before, after=graph_counts(store), patients=timeline.patients,
        studies=len(timeline.studies), observations=timeline.observations, questions=asked.count,
        unmatched_questions=asked.unmatched,
    )


def _count(staged: dict[str, int], batch: GraphBatch) -> None:
    for key, n in batch.counts().items():
        staged[key] += n


def _check_patients(store: GraphStore, by_patient: dict[str, list[StudyRecord]], done: dict[str, Path]) -> None:
    """A patient's studies come in one folder and one load, so their intervals can be computed whole."""
    for patient, records in by_patient.items():
        if patient in done:
            raise InputError(records[0].path, records[0].study, f"patient {patient} also has scene graphs in "
                                                                f"{done[patient].parent}: keep a patient's studies "
                                                                "in one folder")
        done[patient] = records[0].path
        seen: dict[str, Path] = {}
        for r in records:
            if r.study in seen:
                raise InputError(r.path, r.study, f"study {r.study} is also in {seen[r.study]}")
            seen[r.study] = r.path
    rows = store.run("MATCH (s:Study) WHERE s.patient_id IN $patients RETURN s.patient_id AS patient, s.id AS id",
                     {"patients": sorted(by_patient)})
    stored: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        stored[row["patient"]].add(row["id"])
    for patient, ids in stored.items():
        here = {r.study for r in by_patient[patient]}
        if ids != here:
            rec = by_patient[patient][0]
            raise InputError(rec.path, rec.study, f"patient {patient} already has studies {sorted(ids)} in the store "
                                                  f"but this load has {sorted(here)}: load all of a patient's studies "
                                                  "together")
