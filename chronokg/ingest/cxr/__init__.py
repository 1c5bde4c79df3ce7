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

import datetime as dt
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path

from chronokg.errors import InputError
from chronokg.graph.batch import GraphBatch
from chronokg.graph.counts import graph_counts
from chronokg.graph.model import Source
from chronokg.graph.store import GraphStore
from chronokg.graph.writer import write_stream
from chronokg.ingest.common import (
    check_release,
    slug,
)
from chronokg.ingest.cxr.files import Inputs as Inputs
from chronokg.ingest.cxr.files import StudyRecord as StudyRecord
from chronokg.ingest.cxr.files import classify as classify
from chronokg.ingest.cxr.files import expand as expand
from chronokg.ingest.cxr.files import read_source_info as read_source_info
from chronokg.ingest.cxr.files import read_tables as read_tables
from chronokg.ingest.cxr.models import ABOUT_PATIENT as ABOUT_PATIENT
from chronokg.ingest.cxr.models import ABOUT_STUDY as ABOUT_STUDY
from chronokg.ingest.cxr.models import BASE_DATE as BASE_DATE
from chronokg.ingest.cxr.models import CHUNK_STUDIES as CHUNK_STUDIES
from chronokg.ingest.cxr.models import FROM_OBSERVATION as FROM_OBSERVATION
from chronokg.ingest.cxr.models import FROM_STUDY as FROM_STUDY
from chronokg.ingest.cxr.models import HAS_OBSERVATION as HAS_OBSERVATION
from chronokg.ingest.cxr.models import HAS_STUDY as HAS_STUDY
from chronokg.ingest.cxr.models import KIND as KIND
from chronokg.ingest.cxr.models import MAX_TEXT as MAX_TEXT
from chronokg.ingest.cxr.models import NEXT as NEXT
from chronokg.ingest.cxr.models import OBSERVES as OBSERVES
from chronokg.ingest.cxr.models import QUESTION_KIND as QUESTION_KIND
from chronokg.ingest.cxr.models import RELEASE_DATE as RELEASE_DATE
from chronokg.ingest.cxr.models import SOURCE_FILE as SOURCE_FILE
from chronokg.ingest.cxr.models import CxrLoadSummary as CxrLoadSummary
from chronokg.ingest.cxr.models import SourceInfo as SourceInfo
from chronokg.ingest.cxr.parsers import change_type as change_type
from chronokg.ingest.cxr.parsers import laterality as laterality
from chronokg.ingest.cxr.parsers import parse_days as parse_days
from chronokg.ingest.cxr.parsers import presence as presence
from chronokg.ingest.cxr.parsers import severity as severity
from chronokg.ingest.cxr.parsers import study_date as study_date
from chronokg.ingest.cxr.questions import QuestionBuilder as QuestionBuilder
from chronokg.ingest.cxr.questions import image_study as image_study
from chronokg.ingest.cxr.questions import parse_questions as parse_questions
from chronokg.ingest.cxr.questions import store_images as store_images
from chronokg.ingest.cxr.questions import store_studies as store_studies
from chronokg.ingest.cxr.timelines import TimelineBuilder as TimelineBuilder
from chronokg.ingest.cxr.timelines import parse_scene_graph as parse_scene_graph
from chronokg.ingest.cxr.timelines import read_object as read_object
from chronokg.progress import Progress

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
