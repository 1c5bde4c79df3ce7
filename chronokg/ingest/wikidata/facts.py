"""Facts from an entity record: valid time from the qualifiers, point-in-time series."""

from __future__ import annotations

import bisect
import datetime as dt
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from chronokg.graph.dates import Precision
from chronokg.graph.model import Fact, Scalar
from chronokg.ingest.wikidata.records import (
    EARLIEST,
    END,
    KIND,
    LATEST,
    NAMED_SKIPS,
    POINT,
    START,
    Claim,
    EntityRecord,
    Selection,
    Value,
)
from chronokg.ingest.wikidata.times import Resolved, Skip, resolve, unit_id

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


def coarser_precision(*grains: Precision) -> Precision:
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
            facts.append(build_fact(record, c, point_of.get(i), ordered.get(c.pid), counts))
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


def build_fact(record: EntityRecord, c: Claim, point: Resolved | None, series: _Series | None,
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
        valid_from=valid_from, valid_to=valid_to, precision=coarser_precision(*grains) if grains else Precision.NONE,
        known_from=record.modified.date(), source_id=record.source_id, source_kind=KIND,
        attrs={k: v for k, v in attrs.items() if v is not None},
    )
