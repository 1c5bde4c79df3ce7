"""Dates at the precision sources give them.

Many sources only give a year (a guideline issued in 2015) or a month. A
value is stored as the first day of its period together with its precision,
so intervals stay comparable across sources and the precision is never lost.
"""

from __future__ import annotations

import datetime as dt
import re
from enum import StrEnum


class Precision(StrEnum):
    YEAR = "year"
    MONTH = "month"
    DAY = "day"
    NONE = "none"  # no date given at all (an undated statement): there is no precision to claim


def id_precision(precision: str) -> str:
    """The precision a fact's id hashes. Undated facts were once stored at `day`; hashing `none` as `day` keeps
    their ids, so a store loaded before still matches a new load of the same input fact for fact."""
    return Precision.DAY.value if precision == Precision.NONE.value else precision


_ISO = re.compile(r"^(?P<y>-?\d{1,4})(?:-(?P<m>\d{1,2})(?:-(?P<d>\d{1,2}))?)?$")


def parse_date(text: str | int | dt.date) -> tuple[dt.date, Precision]:
    """Parse `2015`, `2015-06` or `2015-06-30` (or a date / int year) with its precision."""
    if isinstance(text, dt.datetime):
        return text.date(), Precision.DAY
    if isinstance(text, dt.date):
        return text, Precision.DAY
    if isinstance(text, int):
        return dt.date(text, 1, 1), Precision.YEAR
    m = _ISO.match(text.strip())
    if not m:
        raise ValueError(f"not a date: {text!r} (expected YYYY, YYYY-MM or YYYY-MM-DD)")
    year = int(m["y"])
    if m["d"]:
        return dt.date(year, int(m["m"]), int(m["d"])), Precision.DAY
    if m["m"]:
        return dt.date(year, int(m["m"]), 1), Precision.MONTH
    return dt.date(year, 1, 1), Precision.YEAR


def parse_day(text: str) -> dt.date:
    """A day as a person or an agent names it, on the command line and to the tool servers alike: ISO 8601
    (`2016-06-01`) or a bare year (`2016`, its first day). Raises ValueError naming the forms."""
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        if text.isdigit() and len(text) == 4:
            return dt.date(int(text), 1, 1)
        raise ValueError(f"{text[:40]!r} is not a date (YYYY-MM-DD or YYYY)") from None


def as_date(text: str | int | dt.date) -> dt.date:
    """The first day of the period a date string names."""
    return parse_date(text)[0]


def year_start(year: int) -> dt.date:
    return dt.date(year, 1, 1)


# Releases, editions and revisions of the sources chronokg reads fall in this range; a date outside it
# is a typo or a corrupt field (a five-digit year), never a real release.
RELEASE_RANGE = (dt.date(1800, 1, 1), dt.date(2200, 12, 31))


def implausible_release(day: dt.date) -> str | None:
    """Why `day` cannot be a release date, or None when it can."""
    low, high = RELEASE_RANGE
    if low <= day <= high:
        return None
    return f"{day.isoformat()} is not a plausible release date (expected {low.year}-{high.year})"
