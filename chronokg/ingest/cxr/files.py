"""Parsed study records, and finding the input files: scene graphs, study tables, question files."""

from __future__ import annotations

import csv
import gzip
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from chronokg.errors import InputError
from chronokg.ingest.common import (
    RecordKeys,
    read_json,
)
from chronokg.ingest.cxr.models import (
    MAX_TEXT,
    META_SUFFIX,
    SCENE_SUFFIX,
    SOURCE_FILE,
    STUDY_TABLES,
    ObservationIn,
    SourceInfo,
)
from chronokg.ingest.cxr.parsers import brief, norm_id
from chronokg.ingest.limits import check_texts

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
        data = read_json(f, MAX_TEXT)
        try:
            infos.append(SourceInfo.model_validate(data))
        except ValidationError as exc:
            raise InputError(f, None, brief(exc)) from exc
    if len({(i.dataset, i.version) for i in infos}) > 1:
        raise InputError(files[1], None, f"names another release than {files[0]}; load one release at a time")
    return infos[0]


def read_tables(tables: list[Path]) -> dict[str, dict[str, Any]]:
    """study id -> row of `study_metadata.csv[.gz]`."""
    rows: dict[str, dict[str, Any]] = {}
    keys = RecordKeys("study_id")
    for path in tables:
        try:
            raw = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
            reader = csv.DictReader(io.StringIO(raw.decode("utf-8")))
            for n, row in enumerate(reader, start=2):
                check_texts(row, path, f"line {n}", MAX_TEXT)
                if not row.get("study_id"):
                    raise InputError(path, f"line {n}", "missing study_id")
                study = norm_id(row["study_id"], "s")
                if keys.check(study, row, path, f"line {n}"):
                    rows[study] = {k: (v if v != "" else None) for k, v in row.items()}
        except (OSError, UnicodeDecodeError, csv.Error, gzip.BadGzipFile, EOFError) as exc:
            raise InputError(path, None, f"unreadable study metadata table: {exc}") from exc
    return rows
