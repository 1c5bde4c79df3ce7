"""Wikidata times resolved to dates and precisions (calendars, coarse precisions, skips); values normalised."""

from __future__ import annotations

import calendar
import datetime as dt
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from chronokg.graph.dates import Precision
from chronokg.ingest.wikidata.records import (
    ENTITY_URI,
    JULIAN,
    MIN_PRECISION,
    PERIOD_YEARS,
    PRECISION_DAY,
    PRECISION_MONTH,
    PRECISION_YEAR,
    WdTime,
)

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
            return dt.date(d.year + PERIOD_YEARS[p], 1, 1)
        except (ValueError, OverflowError):
            return None


def period_start_year(year: int, precision: int) -> int:
    """First year of the decade/century/millennium a year names (Wikibase: 1900 at century = 19th)."""
    if precision >= PRECISION_YEAR:
        return year
    if precision == 8:
        return year - year % 10
    size = PERIOD_YEARS[precision]
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
