"""Wikidata entity JSON (ChroKnowBench's general domain) as bitemporal facts.

Accepted inputs: one entity as `Special:EntityData/Q….json` returns it
(`{"entities": {QID: entity}}`) or bare, a JSON list of entities, and the
JSON dumps (`latest-all.json[.gz|.bz2]`: a `[` line, one entity per line
ending in `,`, a `]` line), which are streamed in chunks inside one
transaction. Each statement of a selected property becomes one fact:

* subject = QID, predicate = PID, object = the QID of an item value, else a
  literal value: quantities as exact decimal text ("329327", unit in attrs),
  times as ISO text at their precision ("1953", "1953-05", "1953-05-12"),
  strings and monolingual text as given, coordinates as WKT `Point(lon lat)`;
* valid time from the qualifiers: `[P580 start, P582 end)`, falling back to
  P1319 earliest date / P1326 latest date. A bound is the first day of the
  period it names (an end in 2009 closes the interval at 2009-01-01, where
  a successor starting in 2009 takes over). Start and end in the same period
  (2009–2009) would make an empty interval: the end is widened to the end
  of that period (`end_widened`). Decade/century/millennium precisions are
  kept as the first year of the period at year precision (`start_precision`
  keeps Wikidata's number); coarser ones drop the bound (counted);
* a statement with only P585 point in time is valid from that point until
  the next point of the same property on the same item (a series such as
  population), the last one for its own precision period (a month for a
  monthly figure): we do not claim a value holds beyond what was observed;
* Julian-calendar dates of day precision are converted to Gregorian, as
  Wikidata's RDF does; coarser ones are kept as written (attrs `calendar`);
* somevalue/novalue statements, dates before year 1 or after 9999 and
  intervals ending before they start are skipped, counted, and named by
  statement id in the summary (`skipped_statements`, printed by the CLI);
  a day that does not exist (2023-02-30) is read at month precision and
  named the same way (`invalid_day_as_month`);
* known time = the revision: `known_from` is the entity's `modified` date,
  and each revision is one `Source` (`wikidata:{QID}@{lastrevid}`). Loading
  a newer revision closes (`known_to`) the facts of the properties it covers
  that it no longer asserts; a deprecated rank is kept as an attribute, it
  is not a retraction.
"""

from __future__ import annotations

import bisect
import bz2
import calendar
import datetime as dt
import gzip
import hashlib
import json
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from chronokg.errors import InputError
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch
from chronokg.graph.counts import graph_counts
from chronokg.graph.dates import Precision
from chronokg.graph.merge import DEFAULT_POLICY
from chronokg.graph.model import Fact, Scalar, Source
from chronokg.graph.store import GraphStore
from chronokg.graph.writer import write_batch, write_stream
from chronokg.ingest.common import LoadSummary, expand_paths, loads, read_json
from chronokg.progress import Progress

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
_PERIOD_YEARS = {9: 1, 8: 10, 7: 100, 6: 1000}  # years in a period of each year-or-coarser precision
_QID = re.compile(r"^[QPL][1-9]\d*$")
_PID = re.compile(r"^P[1-9]\d*$")
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
        bad = [p for p in chosen if not _PID.match(p)]
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


# --- time resolution ------------------------------------------------------------------------------


class Skip(Exception):
    """A statement (or a bound) that is not loaded, with the counter it adds to."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Resolved:
    """A time as a Gregorian date (first day of its period) with its effective Wikidata precision."""

    date: dt.date
    precision: int
    julian: bool

    @property
    def grain(self) -> Precision:
        if self.precision >= PRECISION_DAY:
            return Precision.DAY
        return Precision.MONTH if self.precision == PRECISION_MONTH else Precision.YEAR

    def iso(self) -> str:
        if self.precision >= PRECISION_DAY:
            return self.date.isoformat()
        if self.precision == PRECISION_MONTH:
            return f"{self.date.year:04d}-{self.date.month:02d}"
        return f"{self.date.year:04d}"

    def period_end(self) -> dt.date | None:
        """First day after the period (None past year 9999)."""
        d, p = self.date, self.precision
        try:
            if p >= PRECISION_DAY:
                return d + dt.timedelta(days=1)
            if p == PRECISION_MONTH:
                return dt.date(d.year + d.month // 12, d.month % 12 + 1, 1)
            return dt.date(d.year + _PERIOD_YEARS[p], 1, 1)
        except (ValueError, OverflowError):
            return None


def period_start_year(year: int, precision: int) -> int:
    """First year of the decade/century/millennium a year names (Wikibase: 1900 at century = 19th)."""
    if precision >= PRECISION_YEAR:
        return year
    if precision == 8:
        return year - year % 10
    size = _PERIOD_YEARS[precision]
    return ((year - 1) // size) * size + 1


def _julian_to_ordinal(y: int, m: int, d: int) -> int:
    a = (14 - m) // 12
    yy, mm = y + 4800 - a, m + 12 * a - 3
    jdn = d + (153 * mm + 2) // 5 + 365 * yy + yy // 4 - 32083
    return jdn - 1721425  # proleptic Gregorian ordinal (0001-01-01 = 1)


def resolve(t: WdTime, counts: Counter[str] | None = None) -> Resolved:
    """The Gregorian first day of the period `t` names; raises `Skip` outside years 1..9999."""
    p = min(t.precision, PRECISION_DAY)
    if p < MIN_PRECISION:
        raise Skip("coarse_time")
    year, month, day = t.year, t.month, t.day
    if p <= PRECISION_YEAR:
        year, month, day = period_start_year(year, p), 1, 1
    elif p == PRECISION_MONTH or day == 0:
        if month == 0:
            p, month = PRECISION_YEAR, 1
        else:
            p = min(p, PRECISION_MONTH)
        day = 1
    if not 1 <= month <= 12:
        raise ValueError(f"month {month} out of range in {t}")
    if year < 1:
        raise Skip("before_year_1")
    if year > 9999:
        raise Skip("after_year_9999")
    julian = t.calendar == JULIAN
    if p >= PRECISION_DAY and julian and not t.gregorian:
        leap = year % 4 == 0
        if day > (29 if month == 2 and leap else calendar.monthrange(2001, month)[1]):
            p, day = PRECISION_MONTH, 1
            if counts is not None:
                counts["invalid_day_as_month"] += 1
            return Resolved(dt.date(year, month, 1), p, julian)
        ordinal = _julian_to_ordinal(year, month, day)
        if ordinal < 1:
            raise Skip("before_year_1")
        return Resolved(dt.date.fromordinal(ordinal), p, julian)
    if day > calendar.monthrange(year, month)[1]:
        p, day = PRECISION_MONTH, 1
        if counts is not None:
            counts["invalid_day_as_month"] += 1
    return Resolved(dt.date(year, month, day), p, julian)


def xsd_datetime(r: Resolved) -> str:
    """The xsd:dateTime Wikidata's RDF writes for a time (month/day 01 below their precision)."""
    return f"{r.date.year:04d}-{r.date.month:02d}-{r.date.day:02d}T00:00:00Z"


def normalize_amount(text: str) -> str:
    """A quantity amount as exact, canonical decimal text: "+1.50" → "1.5", "+100" → "100"."""
    try:
        d = Decimal(text.strip())
    except InvalidOperation as exc:
        raise ValueError(f"not a decimal amount: {text!r}") from exc
    out = format(d.normalize(), "f")
    return "0" if out in ("-0", "0") else out


def unit_id(unit: str | None) -> str | None:
    """`http://www.wikidata.org/entity/Q712226` → `Q712226`; "1" (no unit) → None."""
    if unit is None or unit == "1":
        return None
    return unit.removeprefix(ENTITY_URI)


# --- facts from a record --------------------------------------------------------------------------


def _bound(claim: Claim, pids: Sequence[str], earliest: bool, counts: Counter[str]) -> tuple[Resolved, str] | None:
    """The first qualifier of `pids` that gives a usable date, and which one it was."""
    for pid in pids:
        values = claim.times.get(pid, ())
        got: list[Resolved] = []
        for t in values:
            if t is None:
                counts["unknown_bound"] += 1
                continue
            try:
                got.append(resolve(t, counts))
            except Skip as skip:
                if skip.reason != "coarse_time":
                    raise
                counts["coarse_bound_dropped"] += 1
        if got:
            pick = min(got, key=lambda r: r.date) if earliest else max(got, key=lambda r: r.date)
            return pick, pid
    return None


def _coarser(*grains: Precision) -> Precision:
    order = [Precision.YEAR, Precision.MONTH, Precision.DAY]
    return min(grains, key=order.index)


def _main_value(value: Value, counts: Counter[str]) -> tuple[str | None, Scalar, dict[str, Scalar]]:
    """(object, literal value, attrs) of a main snak."""
    attrs: dict[str, Scalar] = {"datatype": value.datatype}
    if value.entity is not None:
        return value.entity, None, attrs
    if value.time is not None:
        r = resolve(value.time, counts)
        attrs["value_precision"] = r.precision
        if r.julian:
            attrs["value_calendar"] = "julian"
        return None, r.iso(), attrs
    if value.amount is not None:
        attrs["unit"] = unit_id(value.unit)
        return None, value.amount, attrs
    if value.text is not None:
        attrs["language"] = value.language
        return None, value.text, attrs
    raise Skip("unsupported_value")


def _point(claim: Claim, counts: Counter[str]) -> Resolved | None:
    if any(claim.times.get(q) for q in (START, END, EARLIEST, LATEST)):
        return None
    found = _bound(claim, (POINT,), True, counts)
    return None if found is None else found[0]


def build_facts(record: EntityRecord, selection: Selection, counts: Counter[str] | None = None,
                named: dict[str, list[str]] | None = None) -> list[Fact]:
    """The facts one entity revision asserts for the selected properties; skips are counted in `counts`, and
    the statements behind each count named in `named` (the first `NAMED_SKIPS` per reason)."""
    counts = counts if counts is not None else Counter()
    taken = selection.taken(record)
    claims = [c for c in record.claims if c.pid in taken]

    def name(claim: Claim, before: Counter[str]) -> None:
        if named is not None and counts != before:
            for reason in counts - before:
                ids = named.setdefault(reason, [])
                if len(ids) < NAMED_SKIPS:
                    ids.append(claim.statement_id or f"{record.id}/{claim.pid}")

    # Point-in-time series: each point is valid until the next non-deprecated point of its property.
    points: dict[str, dict[dt.date, Resolved]] = {}
    point_of: dict[int, Resolved] = {}
    unusable: dict[int, str] = {}
    for i, c in enumerate(claims):
        if c.snaktype != "value":
            continue
        before = counts.copy()
        try:
            pt = _point(c, counts)
        except Skip as skip:
            unusable[i] = skip.reason
            continue
        except ValueError as exc:
            raise ValueError(f"statement {c.statement_id or c.pid}: {exc}") from exc
        finally:
            name(c, before)
        if pt is not None:
            point_of[i] = pt
            series = points.setdefault(c.pid, {})
            if c.rank != "deprecated" and (pt.date not in series or pt.precision < series[pt.date].precision):
                series[pt.date] = pt
    ordered = {pid: _Series(sorted(series), series) for pid, series in points.items()}
    facts: list[Fact] = []
    for i, c in enumerate(claims):
        before = counts.copy()
        if c.snaktype != "value" or i in unusable:
            counts[unusable.get(i, c.snaktype)] += 1
            name(c, before)
            continue
        try:
            facts.append(_fact(record, c, point_of.get(i), ordered.get(c.pid), counts))
        except Skip as skip:
            counts[skip.reason] += 1
        except ValueError as exc:
            raise ValueError(f"statement {c.statement_id or c.pid}: {exc}") from exc
        finally:
            name(c, before)
    return facts


@dataclass(frozen=True, slots=True)
class _Series:
    """The points of one property, in date order."""

    dates: list[dt.date]
    points: Mapping[dt.date, Resolved]

    def after(self, day: dt.date) -> Resolved | None:
        i = bisect.bisect_right(self.dates, day)
        return self.points[self.dates[i]] if i < len(self.dates) else None


def _fact(record: EntityRecord, c: Claim, point: Resolved | None, series: _Series | None,
          counts: Counter[str]) -> Fact:
    if c.value is None:
        raise Skip("unsupported_value")
    obj, literal, attrs = _main_value(c.value, counts)
    attrs.update(rank=c.rank, statement_id=c.statement_id)
    valid_from = valid_to = None
    grains: list[Precision] = []
    if point is not None:
        valid_from, start_q = point.date, POINT
        nxt = series.after(point.date) if series is not None else None
        attrs.update(start_qualifier=start_q, start_precision=point.precision)
        grains.append(point.grain)
        if nxt is not None:
            valid_to = nxt.date
            attrs.update(end_qualifier=f"next:{POINT}", end_precision=nxt.precision)
            grains.append(nxt.grain)
        else:
            valid_to = point.period_end()
            attrs.update(end_qualifier=f"period:{POINT}", end_precision=point.precision)
        attrs["calendar"] = "julian" if point.julian else None
    else:
        start = _bound(c, (START, EARLIEST), True, counts)
        end = _bound(c, (END, LATEST), False, counts)
        julian = False
        if start is not None:
            valid_from = start[0].date
            attrs.update(start_qualifier=start[1], start_precision=start[0].precision)
            grains.append(start[0].grain)
            julian = start[0].julian
        if end is not None:
            valid_to = end[0].date
            attrs.update(end_qualifier=end[1], end_precision=end[0].precision)
            grains.append(end[0].grain)
            julian = julian or end[0].julian
            if valid_from is not None and valid_to == valid_from:
                valid_to = end[0].period_end()
                attrs["end_widened"] = True
        attrs["calendar"] = "julian" if julian else None
    if valid_from is not None and valid_to is not None and valid_to < valid_from:
        raise Skip("inverted_interval")
    return Fact(
        subject=record.id, predicate=c.pid, object=obj, value=literal if obj is None else None,
        valid_from=valid_from, valid_to=valid_to, precision=_coarser(*grains) if grains else Precision.DAY,
        known_from=record.modified.date(), source_id=record.source_id, source_kind=KIND,
        attrs={k: v for k, v in attrs.items() if v is not None},
    )


# --- entity JSON ------------------------------------------------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


def _empty_list_is_empty_dict(value: Any) -> Any:
    # PHP serializes an empty map as [] in Wikidata dumps.
    return {} if value == [] else value


class JDataValue(_Model):
    type: str
    value: Any


class JSnak(_Model):
    snaktype: Literal["value", "somevalue", "novalue"]
    property: str
    datatype: str | None = None
    datavalue: JDataValue | None = None


class JStatement(_Model):
    id: str | None = None
    rank: Literal["preferred", "normal", "deprecated"] = "normal"
    mainsnak: JSnak
    qualifiers: dict[str, list[JSnak]] = Field(default_factory=dict)

    _fix = field_validator("qualifiers", mode="before")(_empty_list_is_empty_dict)


class JLabel(_Model):
    language: str
    value: str


class JEntity(_Model):
    id: str
    type: str
    lastrevid: int
    modified: dt.datetime
    labels: dict[str, JLabel] = Field(default_factory=dict)
    claims: dict[str, list[JStatement]] = Field(default_factory=dict)

    _fix = field_validator("labels", "claims", mode="before")(_empty_list_is_empty_dict)


class JTimeValue(_Model):
    """A Wikibase time. Its precision (0 = billion years .. 14 = second) and calendar (Gregorian or Julian, the
    two Wikibase allows) are checked: an unknown calendar would be read as Gregorian, shifting Julian dates."""

    time: str
    precision: int = Field(ge=0, le=14)
    calendarmodel: str = GREGORIAN

    @field_validator("calendarmodel")
    @classmethod
    def _known_calendar(cls, value: str) -> str:
        if value not in (GREGORIAN, JULIAN):
            raise ValueError(f"unknown calendarmodel {value!r} (expected {GREGORIAN} or {JULIAN})")
        return value


class JQuantity(_Model):
    amount: str
    unit: str = "1"


class JMonolingual(_Model):
    text: str
    language: str


class JEntityId(_Model):
    id: str | None = None
    numeric_id: int | None = Field(default=None, alias="numeric-id")
    entity_type: str = Field(default="item", alias="entity-type")

    def qid(self) -> str:
        if self.id:
            return self.id
        prefix = {"item": "Q", "property": "P", "lexeme": "L"}.get(self.entity_type)
        if prefix is None or self.numeric_id is None:
            raise ValueError(f"entity id without id or numeric-id ({self.entity_type})")
        return f"{prefix}{self.numeric_id}"


class JGlobe(_Model):
    latitude: float
    longitude: float
    globe: str | None = None


EARTH = ENTITY_URI + "Q2"


def wkt_point(latitude: float, longitude: float, globe: str | None) -> str:
    """Wikidata's RDF form of a coordinate (other globes are prefixed with their IRI)."""
    point = f"Point({longitude!r} {latitude!r})"
    return point if globe in (None, EARTH) else f"<{globe}> {point}"


def _json_value(snak: JSnak) -> Value | None:
    dv = snak.datavalue
    if dv is None:
        raise ValueError("a value snak without datavalue")
    datatype = snak.datatype or dv.type
    if dv.type == "wikibase-entityid":
        return Value(datatype, entity=JEntityId.model_validate(dv.value).qid())
    if dv.type == "string":
        if not isinstance(dv.value, str):
            raise ValueError(f"string value is {type(dv.value).__name__}")
        return Value(datatype, text=dv.value)
    if dv.type == "monolingualtext":
        mono = JMonolingual.model_validate(dv.value)
        return Value(datatype, text=mono.text, language=mono.language)
    if dv.type == "quantity":
        q = JQuantity.model_validate(dv.value)
        return Value(datatype, amount=normalize_amount(q.amount), unit=q.unit)
    if dv.type == "time":
        t = JTimeValue.model_validate(dv.value)
        return Value(datatype, time=WdTime.parse(t.time, t.precision, t.calendarmodel))
    if dv.type == "globecoordinate":
        g = JGlobe.model_validate(dv.value)
        return Value(datatype, text=wkt_point(g.latitude, g.longitude, g.globe))
    return None


def _json_time(snak: JSnak) -> WdTime | None:
    if snak.snaktype != "value":
        return None
    if snak.datavalue is None or snak.datavalue.type != "time":
        raise ValueError(f"qualifier {snak.property} is not a time value")
    t = JTimeValue.model_validate(snak.datavalue.value)
    return WdTime.parse(t.time, t.precision, t.calendarmodel)


def record_from_json(obj: Any, path: Path | str, where: str | int | None,
                     selection: Selection | None = None) -> EntityRecord | None:
    """Validate one entity object (the selected properties); None for kinds without statements we load."""
    properties: frozenset[str] = frozenset()
    checksum = None
    if isinstance(obj, dict):
        if obj.get("type") not in (None, "item", "property"):
            return None
        canonical = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
        checksum = "sha1:" + hashlib.sha1(canonical.encode()).hexdigest()
        raw_labels, raw_claims = obj.get("labels"), obj.get("claims")
        trimmed = dict(obj)
        if isinstance(raw_labels, dict):
            trimmed["labels"] = {k: v for k, v in raw_labels.items() if k == "en"}
        if isinstance(raw_claims, dict):
            properties = frozenset(raw_claims)
            if selection is not None:
                trimmed["claims"] = selection.prefilter(raw_claims)
        obj = trimmed
    try:
        ent = JEntity.model_validate(obj)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise InputError(path, where, f"not a Wikidata entity: {loc}: {first['msg']}") from None
    if not _QID.match(ent.id):
        raise InputError(path, where, f"not an entity id: {ent.id!r}")
    label = ent.labels["en"].value if "en" in ent.labels else None
    claims: list[Claim] = []
    for pid, statements in ent.claims.items():
        for st in statements:
            here = f"{ent.id} statement {st.id or pid}"
            if st.mainsnak.property != pid:
                raise InputError(path, where, f"{here}: main snak property {st.mainsnak.property} under {pid}")
            try:
                value = _json_value(st.mainsnak) if st.mainsnak.snaktype == "value" else None
                times = {q: tuple(_json_time(s) for s in st.qualifiers[q]) for q in TIME_QUALIFIERS
                         if q in st.qualifiers}
            except (ValueError, ValidationError) as exc:
                raise InputError(path, where, f"{here}: {_one_line(exc)}") from None
            claims.append(Claim(pid, st.id, st.rank, st.mainsnak.snaktype, value, times))
    return EntityRecord(ent.id, ent.type, ent.lastrevid, ent.modified, label, tuple(claims), properties, checksum)


def _one_line(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"{'.'.join(str(x) for x in first['loc'])}: {first['msg']}"
    return str(exc)


# --- reading files ---------------------------------------------------------------------------------


def _open_text(path: Path) -> IO[str]:
    with path.open("rb") as fh:
        magic = fh.read(3)
    if magic[:2] == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8")
    if magic == b"BZh":
        return bz2.open(path, "rt", encoding="utf-8")
    return path.open("r", encoding="utf-8")


def is_dump(path: Path) -> bool:
    """A dump (one entity per line, streamed) rather than one JSON document (read whole)."""
    if path.suffix in (".jsonl", ".ndjson"):
        return True
    try:
        with path.open("rb") as fh:
            head = fh.read(3)
        if head[:2] == b"\x1f\x8b" or head == b"BZh":
            return True
        with path.open("r", encoding="utf-8") as fh:
            return fh.readline().strip() == "["
    except (OSError, UnicodeDecodeError):
        return False


def read_document(path: Path) -> list[tuple[str, Any]]:
    """The entity objects of one JSON document: wrapper, bare entity, or a list."""
    data = read_json(path)
    if not data:
        raise InputError(path, None, "no entities in the file")
    if isinstance(data, dict) and isinstance(data.get("entities"), dict):
        return [(f"entities.{k}", v) for k, v in data["entities"].items()]
    if isinstance(data, dict):
        return [(str(data.get("id", 1)), data)]
    if isinstance(data, list):
        return [(f"[{i}]", v) for i, v in enumerate(data)]
    raise InputError(path, None, f"expected an entity object, an {{'entities': ...}} wrapper or a list, "
                                 f"got {type(data).__name__}")


def read_dump(path: Path) -> Iterator[tuple[str, Any]]:
    """Entity objects of a dump, one line at a time (a dump of any size, in constant memory)."""
    opened_array = closed = False
    lineno = 0
    try:
        with _open_text(path) as fh:
            for lineno, raw in enumerate(fh, start=1):
                line = raw.strip()
                if not line:
                    continue
                if line == "[" and not opened_array and lineno == 1:
                    opened_array = True
                    continue
                if line == "]" and opened_array:
                    closed = True
                    continue
                if closed:
                    raise InputError(path, f"line {lineno}", "data after the closing ']'")
                yield f"line {lineno}", loads(line.removesuffix(","), path, f"line {lineno}")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise InputError(path, f"line {lineno + 1}", f"cannot read (truncated or corrupt file?): {exc}") from exc
    if opened_array and not closed:
        raise InputError(path, f"line {lineno}", "the dump ends without its closing ']' (truncated file?)")


def expand(paths: Iterable[Path]) -> list[Path]:
    return expand_paths(paths, _entity_file, "Wikidata entity files (.json, .json.gz, ...)", recursive=False)


def _entity_file(p: Path) -> bool:
    return p.name.endswith((".json", ".json.gz", ".json.bz2", ".jsonl", ".ndjson", ".jsonl.gz"))


# --- known time across revisions -------------------------------------------------------------------


@dataclass
class _FactState:
    predicate: str
    known_to: dt.date | None
    revs: set[int]
    touched: bool = False


@dataclass
class _SubjectState:
    revisions: dict[int, dt.date] = field(default_factory=dict)
    facts: dict[str, _FactState] = field(default_factory=dict)


def read_states(store: GraphStore, subjects: Sequence[str], chunk: int = 1000) -> dict[str, _SubjectState]:
    """What the store already knows of these subjects from Wikidata: revisions and facts."""
    states: dict[str, _SubjectState] = {s: _SubjectState() for s in subjects}
    for i in range(0, len(subjects), chunk):
        part = list(subjects[i:i + chunk])
        for r in store.run(
            "MATCH (s:Source) WHERE s.kind = $kind AND s.entity_id IN $subjects "
            "RETURN s.entity_id AS subject, s.version AS rev, s.release_date AS date",
            {"kind": KIND, "subjects": part},
        ):
            states[r["subject"]].revisions[int(r["rev"])] = r["date"]
        for r in store.run(
            "MATCH (f:Fact) WHERE f.source_kind = $kind AND f.subject_id IN $subjects "
            "OPTIONAL MATCH (f)-[:ASSERTED_IN]->(s:Source) WHERE s.kind = $kind "
            "RETURN f.id AS id, f.subject_id AS subject, f.predicate AS predicate, f.known_to AS known_to, "
            "collect(s.version) AS revs",
            {"kind": KIND, "subjects": part},
        ):
            states[r["subject"]].facts[r["id"]] = _FactState(
                r["predicate"], r["known_to"], {int(v) for v in r["revs"] if v is not None})
    return states


def reconcile(state: _SubjectState, record: EntityRecord, fact_ids: dict[str, str],
              covered: Iterable[str]) -> int:
    """Fold one revision into a subject's known-time state; returns how many facts it retracts.

    `fact_ids` maps the ids of the facts the revision asserts to their predicates.
    A newer revision closes what it no longer asserts and reopens what it
    asserts again; an older one loaded late only adds its own facts, closed at
    the next stored revision (assumed to cover the same properties).
    """
    rev, date = record.lastrevid, record.modified.date()
    later = sorted(r for r in state.revisions if r > rev)
    newest = not later
    next_date = state.revisions[later[0]] if later else None
    for fid, predicate in fact_ids.items():
        st = state.facts.get(fid)
        if st is None:
            state.facts[fid] = _FactState(predicate, next_date, {rev}, touched=True)
            continue
        st.touched = True
        if rev not in st.revs:
            if newest and st.known_to is not None and (not st.revs or rev > max(st.revs)):
                st.known_to = None
            st.revs.add(rev)
    retracted = 0
    cover = set(covered)
    for fid, st in state.facts.items():
        if fid in fact_ids or st.predicate not in cover or not newest:
            continue
        if st.known_to is None and st.revs and rev > max(st.revs):
            st.known_to = date
            st.touched = True
            retracted += 1
    state.revisions[rev] = date
    return retracted


def _stage_known(batch: GraphBatch, subject: str, state: _SubjectState) -> None:
    """Write the known interval and first asserting revision of every touched fact."""
    facts = batch.nodes.setdefault(schema.FACT, {})
    for fid, st in state.facts.items():
        if not st.touched or not st.revs:
            continue
        first = min(st.revs)
        row = facts.setdefault(fid, {"id": fid})
        row["known_from"] = state.revisions[first]
        row["known_to"] = st.known_to  # explicit None reopens a fact a newer revision asserts again
        row["source_id"] = source_id(subject, first)
        st.touched = False


# --- staging and loading ---------------------------------------------------------------------------


class WikidataLoadSummary(LoadSummary):
    """A load summary with what was skipped (by reason) and how many facts were retracted."""

    facts: int = 0
    retracted: int = 0
    skipped: dict[str, int] = Field(default_factory=dict)
    skipped_statements: dict[str, list[str]] = Field(
        default_factory=dict, description=f"The statements behind each skipped count (the first {NAMED_SKIPS})")
    not_selected: dict[str, int] = Field(default_factory=dict,
                                         description="Properties the selection left out: entities holding each")


@dataclass
class Stager:
    """Stages entity revisions into batches, keeping known time consistent with the store."""

    store: GraphStore
    selection: Selection
    skipped: Counter[str] = field(default_factory=Counter)
    skipped_statements: dict[str, list[str]] = field(default_factory=dict)
    not_selected: Counter[str] = field(default_factory=Counter)
    records: int = 0
    facts: int = 0
    retracted: int = 0
    staged: Counter[str] = field(default_factory=Counter)

    def batch(self, items: Sequence[tuple[EntityRecord, str | None]]) -> GraphBatch:
        """One batch for these revisions (several revisions of one entity are folded in order)."""
        batch = GraphBatch(POLICY)
        ordered = sorted(items, key=lambda it: (it[0].id, it[0].lastrevid))
        states = read_states(self.store, sorted({r.id for r, _ in ordered}))
        for record, origin in ordered:
            self.stage(batch, record, origin, states[record.id])
        for subject, state in states.items():
            _stage_known(batch, subject, state)
        self.staged.update(batch.counts())
        return batch

    def stage(self, batch: GraphBatch, record: EntityRecord, origin: str | None, state: _SubjectState) -> None:
        self.records += 1
        batch.at(origin or "wikidata", record.id)
        kind = ENTITY_KINDS.get(record.kind, "wikidata_item")
        src = record.source(origin)
        batch.source(src)
        batch.node(schema.SOURCE, src.id, entity_id=record.id)
        batch.entity(record.id, kind=kind, caption=record.label, known_from=record.modified.date())
        taken = self.selection.taken(record)
        self.not_selected.update(p for p in record.present if p not in taken)
        try:
            facts = build_facts(record, self.selection, self.skipped, self.skipped_statements)
        except ValueError as exc:
            raise InputError(origin or record.id, record.id, str(exc)) from None
        ids: dict[str, str] = {}
        for fact in facts:
            ids[batch.fact(fact, subject_kind=kind, object_kind=_object_kind(fact.object))] = fact.predicate
        self.facts += len(facts)
        covered = {p for p in taken | {f.predicate for f in state.facts.values()}
                   if self.selection.covers(record, p, taken)}
        self.retracted += reconcile(state, record, ids, covered)

    def summary(self, paths: Sequence[str], before: dict[str, int], after: dict[str, int]) -> WikidataLoadSummary:
        return WikidataLoadSummary(
            source_kind=KIND, paths=list(paths), records=self.records, staged=dict(self.staged), before=before,
            after=after, facts=self.facts, retracted=self.retracted, skipped=dict(sorted(self.skipped.items())),
            skipped_statements=dict(sorted(self.skipped_statements.items())),
            not_selected=dict(self.not_selected.most_common()),
        )


def _object_kind(obj: str | None) -> str | None:
    if obj is None:
        return None
    return {"Q": "wikidata_item", "P": "wikidata_property", "L": "wikidata_lexeme"}.get(obj[0])


def _records(path: Path, items: Iterable[tuple[str, Any]],
             selection: Selection | None = None) -> Iterator[tuple[EntityRecord, str]]:
    for where, obj in items:
        record = record_from_json(obj, path, where, selection)
        if record is not None:
            yield record, str(path)


def _chunked(items: Iterable[tuple[EntityRecord, str]], size: int) -> Iterator[list[tuple[EntityRecord, str]]]:
    part: list[tuple[EntityRecord, str]] = []
    for item in items:
        part.append(item)
        if len(part) >= size:
            yield part
            part = []
    if part:
        yield part


def load(store: GraphStore, paths: Iterable[Path], selection: Selection | None = None,
         progress: Progress | None = None, chunk: int = CHUNK_ENTITIES) -> WikidataLoadSummary:
    """Load entity JSON files and dumps in one transaction; bad input raises `InputError`, writes nothing.

    Single documents are parsed and validated whole before anything is
    written; dumps are streamed `chunk` entities at a time inside the same
    transaction, so a bad line anywhere rolls back the whole load. Known
    time is reconciled against what the store held before the load, per
    chunk: within one streamed load each entity is expected once, as in a
    dump (several revisions of an entity belong in separate loads, or in
    single documents, which are folded in revision order).
    """
    files = expand(paths)
    stager = Stager(store, selection or Selection())
    before = graph_counts(store)
    skipped_entities = 0
    if not any(is_dump(f) for f in files):
        items: list[tuple[EntityRecord, str]] = []
        for f in files:
            for where, obj in read_document(f):
                record = record_from_json(obj, f, where, stager.selection)
                if record is None:
                    skipped_entities += 1
                else:
                    items.append((record, str(f)))
        write_batch(store, stager.batch(items), progress=progress)
    else:
        def all_records() -> Iterator[tuple[EntityRecord, str]]:
            for f in files:
                yield from _records(f, read_dump(f) if is_dump(f) else read_document(f), stager.selection)

        write_stream(store, (stager.batch(part) for part in _chunked(all_records(), chunk)), progress)
    if skipped_entities:
        stager.skipped["unsupported_entity"] += skipped_entities
    return stager.summary([str(f) for f in files], before, graph_counts(store))


def load_records(store: GraphStore, records: Iterable[EntityRecord], selection: Selection, origin: str,
                 progress: Progress | None = None) -> WikidataLoadSummary:
    """Load records obtained elsewhere (the SPARQL client) exactly as the JSON path would."""
    stager = Stager(store, selection)
    before = graph_counts(store)
    write_batch(store, stager.batch([(r, origin) for r in records]), progress=progress)
    return stager.summary([origin], before, graph_counts(store))


def facts_of_files(paths: Iterable[Path], selection: Selection | None = None) -> list[Fact]:
    """The facts the files assert, without a store (for exports and comparisons)."""
    selection = selection or Selection()
    out: list[Fact] = []
    for f in expand(paths):
        items = read_dump(f) if is_dump(f) else iter(read_document(f))
        for record, _ in _records(f, items, selection):
            try:
                out.extend(build_facts(record, selection))
            except ValueError as exc:
                raise InputError(f, record.id, str(exc)) from None
    return out


def records_of_files(paths: Iterable[Path]) -> Iterator[EntityRecord]:
    for f in expand(paths):
        items = read_dump(f) if is_dump(f) else iter(read_document(f))
        for record, _ in _records(f, items):
            yield record


# --- download --------------------------------------------------------------------------------------

ENTITY_DATA = "https://www.wikidata.org/wiki/Special:EntityData"


def entity_data_url(qid: str, base_url: str = ENTITY_DATA) -> str:
    if not _QID.match(qid):
        raise ValueError(f"not an entity id: {qid!r} (expected Q42, P39, ...)")
    return f"{base_url.rstrip('/')}/{qid}.json"
