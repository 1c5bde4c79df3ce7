"""MIMIC-Ext-CXR-QBA constants, this source's relationship types, and the pydantic models of its input records."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from chronokg.ingest.common import (
    LoadSummary,
)

# Characters in one string of a scene graph, source file or MI-CXR question (README, "Input limits").
MAX_TEXT = 20_000
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

NO_LATERALITY = {"", "none", "unspecified", "unknown", "n/a", "na", "null"}
POSITIVE = {"pos", "positive", "true", "yes"}
NEGATIVE = {"neg", "negative", "false", "no"}
PROBABLY = {"positive", "probable", "likely"}
PROBABLY_NOT = {"negative", "unlikely"}
# The sides a finding subject may carry; anything else would silently make a new subject (`p1:effusion:lft`).
SIDES = {"left", "right", "bilateral"}
CHANGE_WORDS = (  # first match wins; "no new" before "new"
    ("no_new", ("no new",)),
    ("resolved", ("resol", "clear", "disappear", "no longer")),
    ("new", ("new", "appear", "recurr")),
    ("worsened", ("wors", "increas", "progress", "enlarg")),
    ("improved", ("improv", "decreas", "smaller", "regress")),
    ("unchanged", ("unchang", "stable", "no change", "persist", "similar")),
)
TIMEDELTA = re.compile(
    r"^(?:(?P<days>[-+]?\d+(?:\.\d+)?)\s*days?)?\s*,?\s*"
    r"(?:(?P<sign>[-+])?(?P<h>\d+):(?P<m>\d{2})(?::(?P<s>\d{2}(?:\.\d+)?))?)?$"
)
ISO_DURATION = re.compile(
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
