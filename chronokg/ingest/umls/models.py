"""UMLS constants (ChroKnowBench's relations, RRF columns) and the models of filters, releases and load summaries."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from chronokg.graph.dates import Precision
from chronokg.ingest.common import LoadSummary

KIND: Final = "umls"
CONCEPT: Final = "umls_concept"
# The twelve relations of ChroKnowBench's biomedical domain.
CHROKNOW_RELAS: Final = (
    "isa", "inverse_isa", "may_treat", "may_be_treated_by", "may_prevent", "may_be_prevented_by", "induces",
    "causative_agent_of", "has_mechanism_of_action", "has_physiologic_effect", "direct_procedure_site_of",
    "has_direct_procedure_site",
)
MRREL_COLUMNS: Final = (
    "CUI1", "AUI1", "STYPE1", "REL", "CUI2", "AUI2", "STYPE2", "RELA", "RUI", "SRUI", "SAB", "SL", "RG", "DIR",
    "SUPPRESS", "CVF",
)
MRCONSO_COLUMNS: Final = (
    "CUI", "LAT", "TS", "LUI", "STT", "SUI", "ISPREF", "AUI", "SAUI", "SCUI", "SDUI", "SAB", "TTY", "CODE", "STR",
    "SRL", "SUPPRESS", "CVF",
)
ALL: Final = "*"
CHUNK: Final = 20_000  # staged nodes + edges per written batch
PAGE: Final = 20_000  # open facts read from the store per query
# Characters in one field of an RRF row (README, "Input limits"): NLM documents STR as at most 3,000.
MAX_TEXT = 10_000
RELEASE = re.compile(r"(?<!\d)(\d{4})(A[A-Z])")
DEFAULT_MONTH: Final = {"AA": 5, "AB": 11}
RANK: Final = {Precision.YEAR: 0, Precision.MONTH: 1, Precision.DAY: 2}
# A relation key packs (subject CUI number, object CUI number, RELA index) into one int.
_CUI_BITS, RELA_BITS = 24, 16
CUI_MASK, RELA_MASK = (1 << _CUI_BITS) - 1, (1 << RELA_BITS) - 1
SUBJECT_SHIFT = _CUI_BITS + RELA_BITS


class Filters(BaseModel):
    """Which MRREL rows are kept: SABs (None = all) and RELAs (None = all)."""

    model_config = ConfigDict(frozen=True)

    sabs: frozenset[str] | None = None
    relas: frozenset[str] | None = frozenset(CHROKNOW_RELAS)

    @staticmethod
    def label(values: frozenset[str] | None) -> str:
        return ALL if values is None else ",".join(sorted(values))


class ReleaseRef(BaseModel):
    """A release on the timeline: its name and date."""

    model_config = ConfigDict(frozen=True)

    name: str
    date: dt.date
    precision: Precision

    @property
    def source_id(self) -> str:
        return f"{KIND}:{self.name}"


class Release(ReleaseRef):
    """A release folder given to this load."""

    folder: Path
    mrrel: Path
    mrconso: Path
    rows: dict[str, int] = Field(default_factory=dict, description="Row counts per file from MRFILES.RRF")


class ReleaseStats(BaseModel):
    """What one release contributed."""

    release: str
    date: dt.date
    skipped: bool = False
    rows: int = 0
    kept_rows: int = 0
    relations: int = 0
    opened: int = 0
    continued: int = 0
    closed: int = 0
    concepts: int = 0
    named: int = 0


class UmlsLoadSummary(LoadSummary):
    releases: list[ReleaseStats] = Field(default_factory=list)
