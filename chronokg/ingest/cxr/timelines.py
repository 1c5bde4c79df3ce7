"""Scene graphs read into studies, and patient timelines built from them."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import defaultdict
from itertools import pairwise
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from chronokg.errors import InputError
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch
from chronokg.graph.dates import Precision
from chronokg.graph.model import Fact, Source
from chronokg.ingest.common import (
    read_json,
)
from chronokg.ingest.cxr.files import StudyRecord, StudyRef
from chronokg.ingest.cxr.models import (
    FINDING_PRESENT,
    FINDING_SEVERITY,
    FROM_OBSERVATION,
    FROM_STUDY,
    HAS_OBSERVATION,
    HAS_STUDY,
    KIND,
    MAX_TEXT,
    NEXT,
    OBSERVES,
    SCENE_SUFFIX,
    ObservationIn,
    RegionRef,
    SceneGraphIn,
    StudyTimingIn,
)
from chronokg.ingest.cxr.parsers import (
    brief,
    change_type,
    finding_subject,
    laterality,
    norm_id,
    parse_days,
    parse_quality,
    presence,
    severity,
    study_date,
    vocabulary_error,
)

# --- scene graphs ------------------------------------------------------------------


def read_object(path: Path) -> dict[str, Any]:
    data = read_json(path, MAX_TEXT)
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
        raise InputError(path, record, f"bad study metadata: {brief(exc)}") from exc


def parse_scene_graph(path: Path, meta_path: Path | None, table: dict[str, dict[str, Any]]) -> StudyRecord:
    data = read_object(path)
    try:
        sg = SceneGraphIn.model_validate(data)
    except ValidationError as exc:
        raise InputError(path, None, brief(exc)) from exc
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
        sources.append((str(meta_path), read_object(meta_path)))
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
            raise InputError(path, f"{study} observation {item.get('obs_id', k)}", brief(exc)) from exc
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
        procedure=timing.procedure, quality=parse_quality(sg.study_quality), image_ids=sorted(images),
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
                       severity=severity(obs), from_report=obs.from_report, quality=parse_quality(obs.obs_quality))
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
