"""MI-CXR questions: read, matched to loaded studies by image, staged."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from chronokg.errors import InputError
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch
from chronokg.graph.model import Source, stable_id
from chronokg.graph.store import GraphStore
from chronokg.ingest.common import (
    MAX_DEPTH,
    check_depth,
    file_sha256,
    read_json,
    read_json_blocks,
    read_text,
)
from chronokg.ingest.cxr.files import StudyRef
from chronokg.ingest.cxr.models import ABOUT_PATIENT, ABOUT_STUDY, BENCHMARK, MAX_TEXT, QUESTION_KIND, QuestionIn
from chronokg.ingest.cxr.parsers import brief, norm_id
from chronokg.ingest.limits import check_texts, check_unicode, escapes_surrogate
from chronokg.ingest.micxr_types import qtype_problem

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
                where = f"{len(out) + 1} (line {line_no})"
                obj = check_texts(json.loads(line), path, where, MAX_TEXT, len(line))
                out.append((where, check_unicode(obj, path, where) if escapes_surrogate(line) else obj))
    except json.JSONDecodeError:
        return [(f"{n} (line {line})", obj) for n, line, obj in read_json_blocks(path, MAX_TEXT)]
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
        data = read_json(path, MAX_TEXT)
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
            raise InputError(path, record, brief(exc)) from exc
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
