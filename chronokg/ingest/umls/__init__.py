"""UMLS Metathesaurus releases: concept relations (MRREL) with validity across releases.

Input: one folder per release, named after it (`2020AA`, `2021AB`, ...), holding
`MRREL.RRF` and `MRCONSO.RRF` directly or under `META/` (and optionally
`MRFILES.RRF`, whose row counts and column lists are then checked).

Model mapping:

* **Direction.** NLM documents MRREL as read right to left: REL/RELA give the
  relationship *of the second concept to the first* (UMLS Reference Manual,
  MRREL column REL; NLM source release docs: "Metathesaurus relationships in
  MRREL.RRF are read from right to left"). A row `CUI1|..|CUI2|..|RELA` thus
  becomes the fact `CUI2 --RELA--> CUI1`: subject CUI2, predicate RELA, object
  CUI1. Inverse pairs (`isa`/`inverse_isa`, ...) are both in MRREL and both kept.
* **Identity.** A relation is the triple (subject CUI, RELA, object CUI), whatever
  vocabulary (SAB) or atoms asserted it; rows without a RELA and self-relations
  (CUI1 = CUI2, which come from atoms of one concept) are skipped; the SUPPRESS
  flag is not filtered on. Fact attr `sabs` lists (`|`-joined) the SABs
  asserting it in the release that opened its interval.
* **Valid time.** A relation is valid from the first loaded release that holds it
  until the first later loaded release that drops it: `[first, dropping)`. A
  relation that comes back later opens a new interval. Release dates: `YYYYAA`
  is taken as May 1st and `YYYYAB` as November 1st (NLM's usual schedule) at
  month precision; `--release-date 2020AA=2020-05-04` gives an exact date (day
  precision); other suffixes (the pre-2010 quarterly `AC`/`AD`) need one. An
  interval's precision is the coarser of its two ends.
* **Known time.** What the store believes is a pure function of the loaded
  releases, and each release's belief is recorded bitemporally. While a
  relation is in the latest loaded release it is an open fact `[first, None)`
  known from `first`. When a release drops it, that open version is retracted
  (`known_to` = the dropping release) and the closed version `[first, dropping)`
  is asserted, known from the dropping release (it is what established the end).
  Both versions link (`ASSERTED_IN`) to every release that contains the relation;
  `source_id` is the release that opened the interval.
* **Incremental loads.** Because of this, loading 2020AA and 2021AA in one run or
  in two runs gives the same store. A run reads only the currently open UMLS facts
  from the store. Releases already in the store are skipped (a re-load changes
  nothing); a release older than the newest loaded one is rejected (it would
  rewrite known history): load all releases together into a fresh store instead.
  All releases of a store must be loaded with the same SAB/RELA filters (recorded
  on each release's `Source`), or the intervals would be wrong.
* **Names.** Entities (kind `umls_concept`, id = the CUI) take as caption the
  concept's preferred English string (`LAT=ENG, TS=P, STT=PF, ISPREF=Y`) from the
  release's MRCONSO; the newest loaded release wins.

Memory does not grow with file size: files are streamed, filtered-out rows are
never held, MRREL is read before MRCONSO so only names of concepts in kept
relations are kept, and the per-release state (kept relation keys, packed into
ints, and the currently open relations) grows with kept relations only. The whole
load is one transaction (`write_stream`): a malformed row in any file, however
late, leaves the store as it was.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from pathlib import Path

from chronokg.graph.counts import graph_counts
from chronokg.graph.store import GraphStore
from chronokg.graph.writer import write_stream
from chronokg.ingest.umls.models import ALL as ALL
from chronokg.ingest.umls.models import CHROKNOW_RELAS as CHROKNOW_RELAS
from chronokg.ingest.umls.models import CHUNK as CHUNK
from chronokg.ingest.umls.models import CONCEPT as CONCEPT
from chronokg.ingest.umls.models import KIND as KIND
from chronokg.ingest.umls.models import MAX_TEXT as MAX_TEXT
from chronokg.ingest.umls.models import Filters as Filters
from chronokg.ingest.umls.models import Release as Release
from chronokg.ingest.umls.models import ReleaseStats as ReleaseStats
from chronokg.ingest.umls.models import UmlsLoadSummary as UmlsLoadSummary
from chronokg.ingest.umls.relations import POLICY as POLICY
from chronokg.ingest.umls.relations import Loader as Loader
from chronokg.ingest.umls.relations import coarser_precision as coarser_precision
from chronokg.ingest.umls.releases import plan as plan
from chronokg.progress import Progress


def load(
    store: GraphStore, folders: Iterable[Path], *, sabs: Iterable[str] | None = None,
    relas: Iterable[str] | None = CHROKNOW_RELAS, release_dates: Mapping[str, dt.date | str] | None = None,
    progress: Progress | None = None,
) -> UmlsLoadSummary:
    """Load UMLS releases (oldest first) in one transaction; bad input raises `InputError` and writes nothing.

    `sabs=None` keeps every vocabulary; `relas=None` keeps every relation with a RELA.
    """
    filters = Filters(sabs=None if sabs is None else frozenset(sabs),
                      relas=None if relas is None else frozenset(relas))
    folders = [Path(f) for f in folders]
    dates = {name.upper(): date for name, date in (release_dates or {}).items()}
    timeline, new, old = plan(store, folders, filters, dates)
    before = graph_counts(store)
    loader = Loader(timeline, filters, progress)
    if new:
        if len(timeline) > len(new):
            loader.read_open(store)
        write_stream(store, loader.batches(new))
    skipped = [ReleaseStats(release=r.name, date=r.date, skipped=True) for r in old]
    return UmlsLoadSummary(
        source_kind=KIND, paths=[str(f) for f in folders], records=sum(s.rows for s in loader.stats),
        staged=loader.staged, before=before, after=graph_counts(store),
        releases=sorted(loader.stats + skipped, key=lambda s: s.date),
    )
