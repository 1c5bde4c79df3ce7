"""Wikidata constants, the property selection, and the neutral entity record (JSON and SPARQL paths)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from chronokg.graph import schema
from chronokg.graph.merge import DEFAULT_POLICY
from chronokg.graph.model import Source

KIND = "wikidata"
# Revisions are releases: a statement's rank and qualifiers, and an entity's label, are those of the
# revision loaded last (load revisions oldest first; known time is reconciled by revision number).
POLICY = DEFAULT_POLICY.with_latest(schema.FACT).with_latest(schema.ENTITY, "caption")
ENTITY_URI = "http://www.wikidata.org/entity/"
GREGORIAN = ENTITY_URI + "Q1985727"
JULIAN = ENTITY_URI + "Q1985786"
# ChroKnowBench's time-dependent relations in its general (Wikidata) domain.
TEMPORAL_PROPERTIES: tuple[str, ...] = ("P39", "P54", "P108", "P463", "P69", "P169", "P1037", "P1308")
START, END, POINT, EARLIEST, LATEST = "P580", "P582", "P585", "P1319", "P1326"
TIME_QUALIFIERS: tuple[str, ...] = (START, END, POINT, EARLIEST, LATEST)
ENTITY_KINDS = {"item": "wikidata_item", "property": "wikidata_property", "lexeme": "wikidata_lexeme"}
CHUNK_ENTITIES = 500  # entities per streamed chunk of a dump
MIN_PRECISION = 6  # millennium; coarser bounds are dropped
NAMED_SKIPS = 20  # statement ids a load summary names per skip reason (the count is always whole)
PRECISION_DAY, PRECISION_MONTH, PRECISION_YEAR = 11, 10, 9
PERIOD_YEARS = {9: 1, 8: 10, 7: 100, 6: 1000}  # years in a period of each year-or-coarser precision
QID_PATTERN = re.compile(r"^[QPL][1-9]\d*$")
PID_PATTERN = re.compile(r"^P[1-9]\d*$")
_TIME = re.compile(r"^(?P<sign>[+-]?)(?P<y>\d{1,16})-(?P<m>\d{2})-(?P<d>\d{2})(?:T[\d:.]*(?:Z|[+-]\d{2}:\d{2})?)?$")


# --- selection of properties --------------------------------------------------------------------


class Selection(BaseModel):
    """Which properties to load: ChroKnowBench's temporal ones, all with time qualifiers, all, or a list."""

    model_config = ConfigDict(frozen=True)

    mode: Literal["temporal", "timed", "all", "list"] = "temporal"
    pids: tuple[str, ...] = TEMPORAL_PROPERTIES

    @classmethod
    def parse(cls, text: str) -> Selection:
        """`temporal`, `timed`, `all`, or a comma-separated list of PIDs."""
        word = text.strip().lower()
        if word in ("temporal", "timed", "all"):
            return cls(mode=word)
        return cls.of(p for p in re.split(r"[,\s]+", text.strip()) if p)

    @classmethod
    def of(cls, pids: Iterable[str]) -> Selection:
        chosen = tuple(dict.fromkeys(p.strip().upper() for p in pids))
        bad = [p for p in chosen if not PID_PATTERN.match(p)]
        if bad or not chosen:
            raise ValueError(f"not property ids: {', '.join(bad) or '(none)'} (expected P39, P108, ...)")
        return cls(mode="list", pids=chosen)

    def taken(self, record: EntityRecord) -> set[str]:
        present = {c.pid for c in record.claims}
        if self.mode == "all":
            return present
        if self.mode == "timed":
            return {c.pid for c in record.claims if any(q in c.times for q in TIME_QUALIFIERS)}
        return present & set(self.pids)

    def covers(self, record: EntityRecord, pid: str, taken: set[str]) -> bool:
        """Whether loading `record` speaks for `pid`: facts of it the record lacks are retracted."""
        if self.mode == "all":
            return True
        if self.mode == "timed":
            return pid in taken or pid not in record.present
        return pid in self.pids

    def prefilter(self, claims: dict[str, Any]) -> dict[str, Any]:
        """The raw claims worth validating: a big entity's other properties are never parsed."""
        if self.mode == "all":
            return claims
        if self.mode == "timed":
            return {p: sts for p, sts in claims.items() if isinstance(sts, list) and any(
                isinstance(st, dict) and isinstance(st.get("qualifiers"), dict)
                and any(q in st["qualifiers"] for q in TIME_QUALIFIERS) for st in sts)}
        return {p: sts for p, sts in claims.items() if p in self.pids}


# --- the neutral record: what both the JSON and the SPARQL paths produce ------------------------


@dataclass(frozen=True, slots=True)
class WdTime:
    """A Wikibase time value; `gregorian` says whether year/month/day are already Gregorian."""

    year: int
    month: int
    day: int
    precision: int
    calendar: str = GREGORIAN
    gregorian: bool = True

    @classmethod
    def parse(cls, text: str, precision: int, calendar_model: str | None, gregorian: bool | None = None) -> WdTime:
        """Parse `+1978-08-30T00:00:00Z` (JSON) or `1978-08-30T00:00:00Z` (xsd:dateTime)."""
        m = _TIME.match(text.strip())
        if not m:
            raise ValueError(f"not a Wikibase time: {text!r}")
        year = int(m["y"]) * (-1 if m["sign"] == "-" else 1)
        cal = calendar_model or GREGORIAN
        return cls(year, int(m["m"]), int(m["d"]), precision, cal,
                   cal != JULIAN if gregorian is None else gregorian)


@dataclass(frozen=True, slots=True)
class Value:
    """The value of a main snak, by Wikibase datatype."""

    datatype: str
    entity: str | None = None
    text: str | None = None
    language: str | None = None
    amount: str | None = None
    unit: str | None = None
    time: WdTime | None = None


@dataclass(frozen=True, slots=True)
class Claim:
    """One statement: its main value and its time qualifiers (None = somevalue/novalue)."""

    pid: str
    statement_id: str | None
    rank: str
    snaktype: str
    value: Value | None
    times: Mapping[str, tuple[WdTime | None, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EntityRecord:
    """One revision of one entity."""

    id: str
    kind: str
    lastrevid: int
    modified: dt.datetime
    label: str | None
    claims: tuple[Claim, ...]
    properties: frozenset[str] = frozenset()  # every property the entity has, loaded or not
    checksum: str | None = None  # of the revision's whole JSON: one revision id with other content conflicts

    @property
    def present(self) -> frozenset[str]:
        return self.properties or frozenset(c.pid for c in self.claims)

    @property
    def source_id(self) -> str:
        return source_id(self.id, self.lastrevid)

    def source(self, path: str | None) -> Source:
        caption = f"Wikidata {self.id}" + (f" ({self.label})" if self.label else "") + f" revision {self.lastrevid}"
        return Source(id=self.source_id, kind=KIND, caption=caption, version=str(self.lastrevid),
                      release_date=self.modified.date(), path=path, checksum=self.checksum)


def source_id(qid: str, revision: int | str) -> str:
    return f"{KIND}:{qid}@{revision}"
