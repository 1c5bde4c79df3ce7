"""Code of Federal Regulations (eCFR / govinfo XML): sections, paragraph facts and edition-to-edition changes.

Inputs are whole-title files in either layout GPO publishes:

* eCFR ("ECFR" bulk data, and the eCFR versioner API): ``DIV1 TYPE=TITLE > DIV3 CHAPTER > (DIV4 SUBCHAP)
  > DIV5 PART > (DIV6 SUBPART) > (DIV7 SUBJGRP) > DIV8 TYPE=SECTION`` with ``N``/``NODE`` attributes,
  ``HEAD``, ``P`` (inline ``I``/``E``/...), ``CITA``, ``AUTH``/``SOURCE``; the edition date is ``AMDDATE``;
* the annual edition (``CFRDOC``): ``PART > SECTION > SECTNO, SUBJECT, P``; the edition date is
  ``REVISED`` ("Revised as of January 1, 2023"), else ``AMDDATE``.

Files are streamed with ``iterparse`` (each section is dropped once read). Several volume files of one
title and date make one edition; an edition is taken to be the whole title (a section missing from a
later edition ends there), so give every volume of an edition together.

Model (``KIND`` = ``cfr``). One entity per section (``cfr:1:1.1``, kind ``cfr_section``, caption
"§ 1.1 Definitions") and per part (``cfr:1:part-1``, kind ``cfr_part``). Facts about them, valid from
the edition date (precision day) until the first later edition that changes or drops them:

* ``paragraph:001``, ``paragraph:002``...: one predicate per paragraph, so ``changed_between`` lists
  exactly the changed paragraphs and ``timeline(subject, 'paragraph:002')`` shows one paragraph's
  versions. The number is the paragraph's identity, not its position: later editions are aligned to
  the previous one with difflib, an aligned paragraph keeps its number (changed or not), an inserted
  one takes the next unused number. Its position in the latest edition asserting it is ``position``;
  a leading "(a)" is ``designation``;
* ``heading``, ``citation`` (CITA), ``authority`` (AUTH), ``source_note`` (SOURCE) on sections and
  parts.

Changes. Facts are keyed by content and valid time (`Fact.id` includes ``valid_to``), so a fact that a
later edition ends is not edited in place: the open-ended version is *retracted* (``known_to`` = the
new edition's date, ``retracted_by``) and a *closed* version ``[valid_from, new date)`` is added
(known from the new edition, ``text_source_id`` = the edition its text came from). What was believed
before stays queryable with ``known_at``. A changed value's new version records the change for
fill-in-the-blank questions: ``change='changed'``, ``changed_from_text`` (the old value),
``changed_span_start``/``changed_span_end`` (character offsets in the new value of the changed
words), ``changed_old``/``changed_new`` (the replaced and the replacing words), ``changed_regions``
and ``prior_fact_id``. A value new in a later edition has ``change='added'``. An unchanged value is
the same fact; it only gains an ``ASSERTED_IN`` edge to the new edition.

Loading editions in separate runs reads the title's current facts from the store and continues from
them, so one-by-one and all-at-once loads give the same graph, written in one transaction per run.
Editions must arrive oldest first: an edition older than the newest one loaded is refused (load into
a fresh store instead); one already loaded from the same bytes is skipped, so re-loading changes
nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

from chronokg.errors import InputError
from chronokg.graph.batch import GraphBatch
from chronokg.graph.store import GraphStore
from chronokg.ingest.cfr.editions import Edition as Edition
from chronokg.ingest.cfr.editions import align as align
from chronokg.ingest.cfr.editions import changed_span as changed_span
from chronokg.ingest.cfr.editions import group_editions as group_editions
from chronokg.ingest.cfr.editions import source_id as source_id
from chronokg.ingest.cfr.history import TitleHistory as TitleHistory
from chronokg.ingest.cfr.history import Version as Version
from chronokg.ingest.cfr.history import loaded_editions as loaded_editions
from chronokg.ingest.cfr.xml_reader import ECFR_BASE_URL as ECFR_BASE_URL
from chronokg.ingest.cfr.xml_reader import KIND as KIND
from chronokg.ingest.cfr.xml_reader import MAX_TEXT as MAX_TEXT
from chronokg.ingest.cfr.xml_reader import POLICY as POLICY
from chronokg.ingest.cfr.xml_reader import TOKEN as TOKEN
from chronokg.ingest.cfr.xml_reader import blocks as blocks
from chronokg.ingest.cfr.xml_reader import element_text as element_text
from chronokg.ingest.cfr.xml_reader import norm as norm
from chronokg.ingest.cfr.xml_reader import parse_file as parse_file
from chronokg.ingest.common import LoadSummary, apply
from chronokg.ingest.download import Downloaded, fetch
from chronokg.progress import Progress


def stage(store: GraphStore, editions: Sequence[Edition]) -> GraphBatch:
    """Continue each title's history from the store with the editions not loaded yet (nothing is written)."""
    batch = GraphBatch(POLICY)
    for title in sorted({e.title for e in editions}):
        loaded = loaded_editions(store, title)
        latest = max(loaded, default=None)
        todo: list[Edition] = []
        for ed in (e for e in editions if e.title == title):
            path = ed.files[0].path
            if ed.date in loaded:
                if loaded[ed.date] != ed.source.checksum:
                    raise InputError(path, None, f"title {title} edition of {ed.date} is already loaded from a "
                                                 f"different file ({loaded[ed.date]}); the store keeps one "
                                                 "version of an edition")
                continue
            if latest is not None and ed.date < latest:
                raise InputError(path, None, f"title {title} edition of {ed.date} is older than the newest one "
                                             f"loaded ({latest}); load editions oldest first, or into a new store")
            todo.append(ed)
        if not todo:
            continue
        history = TitleHistory.from_store(store, title)
        for ed in todo:
            history.apply(ed, batch)
        history.stage(batch)
    return batch


def load(store: GraphStore, paths: Sequence[Path], edition_dates: Sequence[dt.date | None] | None = None,
         progress: Progress | None = None) -> LoadSummary:
    """Load CFR editions in one transaction; bad input raises InputError and writes nothing.

    `edition_dates` gives one date per path (None: read AMDDATE/REVISED from the file), or one date
    for every path.
    """
    dates: list[dt.date | None] = list(edition_dates or [])
    if len(dates) == 1:
        dates = dates * len(paths)
    if dates and len(dates) != len(paths):
        raise InputError(", ".join(map(str, paths)), None,
                         f"{len(dates)} edition dates for {len(paths)} files: give one per file, or one for all")
    files = [parse_file(p, dates[i] if dates else None) for i, p in enumerate(paths)]
    batch = stage(store, group_editions(files))
    return apply(store, batch, KIND, list(paths), sum(len(f.sections) for f in files), progress)


# --- download ------------------------------------------------------------------------------------------


def ecfr_url(title: int, date: dt.date, base_url: str = ECFR_BASE_URL) -> str:
    """The eCFR versioner API's full-text XML of a title as of a date."""
    return f"{base_url.rstrip('/')}/api/versioner/v1/full/{date.isoformat()}/title-{title}.xml"


def download(title: int, date: dt.date, target: Path, base_url: str = ECFR_BASE_URL,
             progress: Progress | None = None) -> Downloaded:
    """Fetch one title's eCFR XML as of `date` (load it with `edition_dates=[date]`)."""
    return fetch(ecfr_url(title, date, base_url), target, progress=progress)
