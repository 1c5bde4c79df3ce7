"""Releases: names and default dates, locating their files, and which are already in the store."""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from chronokg.errors import InputError
from chronokg.graph.dates import Precision, parse_date
from chronokg.graph.store import GraphStore
from chronokg.ingest.common import check_release
from chronokg.ingest.umls.models import DEFAULT_MONTH, KIND, RELEASE, Filters, Release, ReleaseRef
from chronokg.ingest.umls.rrf import mrfiles

# --- releases ------------------------------------------------------------------------


def release_name(folder: Path) -> str:
    """`2020AA` from a folder named after the release (or its `META/` subfolder)."""
    for part in (folder.name, folder.parent.name if folder.name.upper() == "META" else ""):
        m = RELEASE.search(part.upper())
        if m:
            return m[0]
    raise InputError(folder, None, "cannot tell the release from the folder name: name the folder after the "
                                   "release, e.g. 2020AA")


def default_release_date(name: str) -> tuple[dt.date, Precision] | None:
    """NLM's usual schedule: AA in May, AB in November (first day, month precision)."""
    month = DEFAULT_MONTH.get(name[4:])
    return None if month is None else (dt.date(int(name[:4]), month, 1), Precision.MONTH)


def locate(folder: Path, dates: Mapping[str, dt.date | str]) -> Release:
    """Find a release's files and date."""
    if not folder.is_dir():
        raise InputError(folder, None, "no such release folder")
    name = release_name(folder)
    meta = folder / "META" if (folder / "META" / "MRREL.RRF").is_file() else folder
    for fname in ("MRREL.RRF", "MRCONSO.RRF"):
        if not (meta / fname).is_file():
            raise InputError(folder, None, f"no {fname} here or under META/ (is this a UMLS release folder?)")
    if name in dates:
        try:
            date, precision = parse_date(dates[name])
        except ValueError as exc:
            raise InputError(folder, None, f"release date for {name}: {exc}") from exc
    else:
        default = default_release_date(name)
        if default is None:
            raise InputError(folder, None, f"no conventional date for release {name}: give one with "
                                           f"--release-date {name}=YYYY-MM-DD")
        date, precision = default
    check_release(date, folder, None, f"release {name}")
    return Release(name=name, date=date, precision=precision, folder=folder, mrrel=meta / "MRREL.RRF",
                   mrconso=meta / "MRCONSO.RRF", rows=mrfiles(meta))


class _Stored(NamedTuple):
    ref: ReleaseRef
    sab_filter: str
    rela_filter: str


def stored_releases(store: GraphStore) -> dict[str, _Stored]:
    rows = store.run(
        "MATCH (s:Source) WHERE s.kind = $kind RETURN s.version AS name, s.release_date AS date, "
        "s.date_precision AS precision, s.sab_filter AS sabs, s.rela_filter AS relas", {"kind": KIND},
    )
    return {
        r["name"]: _Stored(ReleaseRef(name=r["name"], date=r["date"], precision=Precision(r["precision"] or "month")),
                           r["sabs"], r["relas"])
        for r in rows
    }


def plan(store: GraphStore, folders: Iterable[Path], filters: Filters,
         dates: Mapping[str, dt.date | str]) -> tuple[list[ReleaseRef], list[Release], list[Release]]:
    """The timeline (stored and new releases by date), the new releases, and those already loaded."""
    given = [locate(Path(f), dates) for f in folders]
    if not given:
        raise InputError("(no release folders)", None, "give at least one UMLS release folder")
    names = [r.name for r in given]
    for r in given:
        if names.count(r.name) > 1:
            raise InputError(r.folder, None, f"release {r.name} is given twice")
    unknown = sorted(set(dates) - set(names))
    if unknown:
        raise InputError(given[0].folder, None, f"--release-date names releases not given: {', '.join(unknown)}")
    stored = stored_releases(store)
    sab_label, rela_label = Filters.label(filters.sabs), Filters.label(filters.relas)
    for name, s in stored.items():
        if (s.sab_filter, s.rela_filter) != (sab_label, rela_label):
            raise InputError(given[0].folder, None, (
                f"the store holds UMLS {name} loaded with SABs {s.sab_filter} and RELAs {s.rela_filter}; "
                f"this load selects SABs {sab_label} and RELAs {rela_label}. Every release must be loaded with "
                "the same filters (or the validity intervals would be wrong): repeat them, or use a fresh store"))
    new, old = [], []
    for r in given:
        if r.name in stored:
            if r.name in dates and stored[r.name].ref.date != r.date:
                raise InputError(r.folder, None, f"{r.name} is loaded with release date {stored[r.name].ref.date}, "
                                                 f"not {r.date}")
            old.append(r)
        else:
            new.append(r)
    new.sort(key=lambda r: r.date)
    timeline = sorted([s.ref for s in stored.values()]
                      + [ReleaseRef(name=r.name, date=r.date, precision=r.precision) for r in new],
                      key=lambda r: r.date)
    for a, b in itertools.pairwise(timeline):
        if a.date == b.date:
            raise InputError(given[0].folder, None, f"releases {a.name} and {b.name} have the same date {a.date}")
    if stored and new:
        latest = max((s.ref for s in stored.values()), key=lambda r: r.date)
        early = [r for r in new if r.date < latest.date]
        if early:
            raise InputError(early[0].folder, None, (
                f"out-of-order load: the store already holds UMLS {latest.name} ({latest.date}), and "
                f"{early[0].name} ({early[0].date}) is older. Releases are added oldest first; to add an older "
                "one, load all releases together into a fresh store"))
    return timeline, new, old
