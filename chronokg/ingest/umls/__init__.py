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
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Final, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from chronokg.errors import InputError, StoreError
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch, caption_version
from chronokg.graph.counts import graph_counts
from chronokg.graph.dates import Precision, parse_date
from chronokg.graph.merge import DEFAULT_POLICY
from chronokg.graph.model import Fact, Source
from chronokg.graph.store import GraphStore
from chronokg.graph.writer import write_stream
from chronokg.ingest.common import LoadSummary, check_release
from chronokg.progress import Progress

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
_PAGE: Final = 20_000  # open facts read from the store per query
_RELEASE = re.compile(r"(?<!\d)(\d{4})(A[A-Z])")
_DEFAULT_MONTH: Final = {"AA": 5, "AB": 11}
_RANK: Final = {Precision.YEAR: 0, Precision.MONTH: 1, Precision.DAY: 2}
# A relation key packs (subject CUI number, object CUI number, RELA index) into one int.
_CUI_BITS, _RELA_BITS = 24, 16
_CUI_MASK, _RELA_MASK = (1 << _CUI_BITS) - 1, (1 << _RELA_BITS) - 1
_SUBJECT_SHIFT = _CUI_BITS + _RELA_BITS


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


# --- reading RRF -------------------------------------------------------------------


def read_rrf(path: Path, columns: tuple[str, ...],
             advance: Callable[[int], None] | None = None) -> Iterator[tuple[int, list[str]]]:
    """Rows of a pipe-delimited RRF file as (line number, fields), each checked for its width.

    Every row must end with `|` and a line end, so a file cut mid-row fails on
    its last line. `advance` is told the bytes read, now and then.
    """
    width = len(columns)
    n = read = 0
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, start=1):
            read += len(raw)
            if advance is not None and read >= 1 << 22:
                advance(read)
                read = 0
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(path, f"line {n}", f"not UTF-8 text: {exc.reason}") from exc
            if not line.endswith("\n"):
                raise InputError(path, f"line {n}", "truncated file: the last line has no line end (cut mid-row?)")
            fields = line.rstrip("\r\n").split("|")
            if len(fields) != width + 1 or fields[-1]:
                found = len(fields) - 1 if not fields[-1] else f"{len(fields)} (no trailing '|')"
                raise InputError(path, f"line {n}", f"expected {width} '|'-terminated fields "
                                                    f"({','.join(columns)}), found {found}")
            yield n, fields
    if n == 0:
        raise InputError(path, None, "empty file")


# MRCONSO's term status, string type and preferred-atom flag (UMLS Reference Manual, "Abbreviations used in
# data elements"): the preferred-name filter reads them, so a value outside these would silently drop a name.
_TS = frozenset({"P", "S", "p", "s"})  # lower case: older releases' suppressible preferred / non-preferred
_STT = frozenset({"PF", "VC", "VCW", "VO", "VW"})
_ISPREF = frozenset({"Y", "N"})


def _check_conso_flags(path: Path, n: int, f: list[str]) -> None:
    for column, value, allowed in (("TS", f[2], _TS), ("STT", f[4], _STT), ("ISPREF", f[6], _ISPREF)):
        if value not in allowed:
            raise InputError(path, f"line {n}", f"{column}: {value!r} is not one of {', '.join(sorted(allowed))}")


def _cui_number(path: Path, n: int, column: str, value: str) -> int:
    if len(value) != 8 or value[0] != "C" or not value[1:].isdigit():
        what = "empty" if not value else f"{value!r} is not a CUI (C + 7 digits)"
        raise InputError(path, f"line {n}", f"{column}: {what}")
    return int(value[1:])


def _cui(number: int) -> str:
    return f"C{number:07d}"


def _check_rows(path: Path, expected: int | None, found: int) -> None:
    if expected is not None and expected != found:
        raise InputError(path, f"line {found}", f"truncated or altered file: MRFILES.RRF lists {expected} rows, "
                                                f"found {found}")


def _mrfiles(meta: Path) -> dict[str, int]:
    """Row counts from MRFILES.RRF (if present), after checking the column lists we rely on."""
    path = meta / "MRFILES.RRF"
    if not path.is_file():
        return {}
    rows: dict[str, int] = {}
    expected = {"MRREL.RRF": MRREL_COLUMNS, "MRCONSO.RRF": MRCONSO_COLUMNS}
    for n, f in read_rrf(path, ("FIL", "DES", "FMT", "CLS", "RWS", "BTS")):
        name, fmt, count = f[0], f[2], f[4]
        if name not in expected:
            continue
        if tuple(fmt.split(",")) != expected[name]:
            raise InputError(path, f"line {n}", f"{name} has columns {fmt}, expected {','.join(expected[name])}")
        if not count.isdigit():
            raise InputError(path, f"line {n}", f"RWS must be a row count, got {count!r}")
        rows[name] = int(count)
    return rows


# --- releases ------------------------------------------------------------------------


def release_name(folder: Path) -> str:
    """`2020AA` from a folder named after the release (or its `META/` subfolder)."""
    for part in (folder.name, folder.parent.name if folder.name.upper() == "META" else ""):
        m = _RELEASE.search(part.upper())
        if m:
            return m[0]
    raise InputError(folder, None, "cannot tell the release from the folder name: name the folder after the "
                                   "release, e.g. 2020AA")


def default_release_date(name: str) -> tuple[dt.date, Precision] | None:
    """NLM's usual schedule: AA in May, AB in November (first day, month precision)."""
    month = _DEFAULT_MONTH.get(name[4:])
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
                   mrconso=meta / "MRCONSO.RRF", rows=_mrfiles(meta))


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


# --- relation state ---------------------------------------------------------------------


class _Vocab:
    """Interned RELA names and SAB sets, so per-relation state is a pair of ints."""

    def __init__(self) -> None:
        self.relas: list[str] = []
        self._rela_ix: dict[str, int] = {}
        self.sab_sets: list[tuple[str, ...]] = [()]
        self._sab_ix: dict[tuple[str, ...], int] = {(): 0}
        self._add: dict[tuple[int, str], int] = {}

    def rela(self, name: str) -> int:
        ix = self._rela_ix.get(name)
        if ix is None:
            ix = self._rela_ix[name] = len(self.relas)
            self.relas.append(name)
        return ix

    def sab_set(self, sabs: tuple[str, ...]) -> int:
        ix = self._sab_ix.get(sabs)
        if ix is None:
            ix = self._sab_ix[sabs] = len(self.sab_sets)
            self.sab_sets.append(sabs)
        return ix

    def add_sab(self, current: int, sab: str) -> int:
        ix = self._add.get((current, sab))
        if ix is None:
            ix = self._add[(current, sab)] = self.sab_set(tuple(sorted({*self.sab_sets[current], sab})))
        return ix

    def key(self, subject: int, obj: int, rela: int) -> int:
        return (subject << _SUBJECT_SHIFT) | (obj << _RELA_BITS) | rela

    def triple(self, key: int) -> tuple[str, str, str]:
        return _cui(key >> _SUBJECT_SHIFT), self.relas[key & _RELA_MASK], _cui((key >> _RELA_BITS) & _CUI_MASK)


def _coarser(a: Precision, b: Precision) -> Precision:
    return a if _RANK[a] <= _RANK[b] else b


# Releases load oldest first (`plan` skips older ones): a concept's name is its latest release's.
POLICY = DEFAULT_POLICY.with_latest(schema.ENTITY, "caption")


class _Loader:
    """Streams new releases into batches.

    `open` maps each relation of the latest release read so far to its SAB set
    and the timeline index of the release that opened its interval, packed as
    `sabs << 16 | index`.
    """

    def __init__(self, timeline: list[ReleaseRef], filters: Filters, progress: Progress | None) -> None:
        self.timeline = timeline
        self.index = {r.name: i for i, r in enumerate(timeline)}
        self.filters = filters
        self.progress = progress
        self.vocab = _Vocab()
        self.open: dict[int, int] = {}
        self.entities: dict[int, tuple[int, int]] = {}  # CUI number -> (hash of the caption this load wrote, release)
        # A stream's reads see the store before the load, so the name history of a concept renamed within
        # this load is carried here (renames are rare): CUI number -> its caption versions written so far.
        self.renamed: dict[int, list[str]] = {}
        self.previous: dict[int, str] = {}  # the names of the release read before this one
        self.stats: list[ReleaseStats] = []
        self.staged: dict[str, int] = {}

    def read_open(self, store: GraphStore) -> None:
        """The UMLS facts open now (no valid or known end): the relations of the latest stored release."""
        by_date = {r.date: i for i, r in enumerate(self.timeline)}
        after = ""
        while True:
            rows = store.run(
                "MATCH (f:Fact) WHERE f.source_kind = $kind AND f.valid_to IS NULL AND f.known_to IS NULL "
                "AND f.id > $after RETURN f.id AS id, f.subject_id AS s, f.predicate AS p, f.object_id AS o, "
                "f.valid_from AS start, f.sabs AS sabs ORDER BY f.id LIMIT $limit",
                {"kind": KIND, "after": after, "limit": _PAGE},
            )
            for r in rows:
                if r["start"] not in by_date:
                    raise StoreError(f"UMLS fact {r['id']} starts on {r['start']}, the date of no loaded release: "
                                     "the store's UMLS releases are inconsistent")
                key = self.vocab.key(int(r["s"][1:]), int(r["o"][1:]), self.vocab.rela(r["p"]))
                sabs = self.vocab.sab_set(tuple(r["sabs"].split("|")) if r["sabs"] else ())
                self.open[key] = (sabs << 16) | by_date[r["start"]]
            if len(rows) < _PAGE:
                return
            after = rows[-1]["id"]

    # progress

    def _start(self, total: int, what: str) -> None:
        if self.progress is not None:
            self.progress.start(total, what)

    def _advance(self, n: int) -> None:
        if self.progress is not None and n:
            self.progress.advance(n)

    # reading a release

    def relations(self, rel: Release, stats: ReleaseStats) -> dict[int, int]:
        """The kept relations of a release: relation key -> SAB set."""
        kept: dict[int, int] = {}
        sabs, relas, vocab, path = self.filters.sabs, self.filters.relas, self.vocab, rel.mrrel
        self._start(path.stat().st_size, f"reading {rel.name} MRREL.RRF")
        n = 0
        for n, f in read_rrf(path, MRREL_COLUMNS, self._advance):
            cui1 = _cui_number(path, n, "CUI1", f[0])
            cui2 = _cui_number(path, n, "CUI2", f[4])
            rela, sab = f[7], f[10]
            if not rela or (relas is not None and rela not in relas) or (sabs is not None and sab not in sabs):
                continue
            if cui1 == cui2:
                continue
            stats.kept_rows += 1
            ix = vocab.rela(rela)
            if ix > _RELA_MASK:
                raise InputError(path, f"line {n}", f"more than {_RELA_MASK} distinct RELAs")
            key = vocab.key(cui2, cui1, ix)
            kept[key] = vocab.add_sab(kept.get(key, 0), sab)
        _check_rows(path, rel.rows.get("MRREL.RRF"), n)
        stats.rows, stats.relations = n, len(kept)
        return kept

    def names(self, rel: Release, needed: set[int]) -> dict[int, str]:
        """Preferred English names of the needed concepts, from the release's MRCONSO."""
        names: dict[int, str] = {}
        path = rel.mrconso
        self._start(path.stat().st_size, f"reading {rel.name} MRCONSO.RRF")
        n = 0
        for n, f in read_rrf(path, MRCONSO_COLUMNS, self._advance):
            cui = _cui_number(path, n, "CUI", f[0])
            _check_conso_flags(path, n, f)
            if f[1] == "ENG" and f[2] == "P" and f[4] == "PF" and f[6] == "Y" and cui in needed and cui not in names:
                if not f[14].strip():
                    raise InputError(path, f"line {n}", "STR: empty preferred name")
                names[cui] = f[14]
        _check_rows(path, rel.rows.get("MRCONSO.RRF"), n)
        return names

    # staging

    def _fact(self, key: int, start: int, end: int | None, sabs: int) -> Fact:
        """The version of a relation valid from release `start` until release `end` (None: open)."""
        subject, rela, obj = self.vocab.triple(key)
        first = self.timeline[start]
        last = None if end is None else self.timeline[end]
        return Fact(
            subject=subject, predicate=rela, object=obj, valid_from=first.date,
            valid_to=None if last is None else last.date,
            precision=first.precision if last is None else _coarser(first.precision, last.precision),
            known_from=first.date if last is None else last.date,
            source_id=first.source_id, source_kind=KIND, attrs={"sabs": "|".join(self.vocab.sab_sets[sabs])},
        )

    def _emit(self, batch: GraphBatch, done: int) -> GraphBatch:
        for k, v in batch.counts().items():
            self.staged[k] = self.staged.get(k, 0) + v
        self._advance(done)
        return batch

    def batches(self, new: list[Release]) -> Iterator[GraphBatch]:
        """Everything a load writes, batch by batch, reading each release as it goes."""
        batch = GraphBatch(POLICY)
        for rel in new:
            batch.source(Source(id=rel.source_id, kind=KIND, caption=f"UMLS Metathesaurus {rel.name}",
                                version=rel.name, release_date=rel.date, path=str(rel.folder)))
            batch.node(schema.SOURCE, rel.source_id, date_precision=rel.precision.value,
                       sab_filter=Filters.label(self.filters.sabs), rela_filter=Filters.label(self.filters.relas))
        yield self._emit(batch, 0)
        for rel in new:
            yield from self.release(rel)

    def release(self, rel: Release) -> Iterator[GraphBatch]:
        k = self.index[rel.name]
        stats = ReleaseStats(release=rel.name, date=rel.date)
        self.stats.append(stats)
        kept = self.relations(rel, stats)
        needed = {key >> _SUBJECT_SHIFT for key in kept} | {(key >> _RELA_BITS) & _CUI_MASK for key in kept}
        names = self.names(rel, needed)
        stats.concepts, stats.named = len(needed), len(names)
        closing = [key for key in self.open if key not in kept]
        self._start(len(needed) + len(kept) + len(closing), f"writing {rel.name}")

        # Entities first, so the facts' SUBJECT/OBJECT edges find them.
        batch, done = GraphBatch(POLICY), 0
        for cui in sorted(needed):
            caption = names.get(cui)
            mark = hash(caption)
            written = self.entities.get(cui)
            if written is None or written[0] != mark:
                self.entities[cui] = (mark, k)
                if written is None or caption is None:
                    batch.entity(_cui(cui), kind=CONCEPT, caption=caption, known_from=rel.date)
                else:  # renamed within this load: the versions so far, and this one
                    history = self.renamed.get(cui)
                    if history is None:
                        old = self.previous.get(cui)
                        history = [caption_version(self.timeline[written[1]].date, old)] if old else []
                    history = self.renamed[cui] = [*history, caption_version(rel.date, caption)]
                    batch.entity(_cui(cui), kind=CONCEPT, caption=caption, caption_versions=history)
            done += 1
            if len(batch) >= CHUNK:
                yield self._emit(batch, done)
                batch, done = GraphBatch(POLICY), 0
        yield self._emit(batch, done)
        self.previous = names
        del needed

        batch, done = GraphBatch(POLICY), 0
        for key, sabs in kept.items():
            packed = self.open.get(key)
            if packed is None:
                self.open[key] = (sabs << 16) | k
                batch.fact(self._fact(key, k, None, sabs))
                stats.opened += 1
            else:
                fid = self._fact(key, packed & 0xFFFF, None, packed >> 16).id
                batch.edge(schema.ASSERTED_IN, schema.FACT, fid, schema.SOURCE, rel.source_id)
                stats.continued += 1
            done += 1
            if len(batch) >= CHUNK:
                yield self._emit(_facts_only(batch), done)
                batch, done = GraphBatch(POLICY), 0
        for key in closing:
            packed = self.open.pop(key)
            start, sabs = packed & 0xFFFF, packed >> 16
            # Retract the open version, assert the closed one (linked to every release that held it).
            batch.node(schema.FACT, self._fact(key, start, None, sabs).id, known_to=rel.date)
            closed = batch.fact(self._fact(key, start, k, sabs))
            for j in range(start, k):
                batch.edge(schema.ASSERTED_IN, schema.FACT, closed, schema.SOURCE, self.timeline[j].source_id)
            stats.closed += 1
            done += 1
            if len(batch) >= CHUNK:
                yield self._emit(_facts_only(batch), done)
                batch, done = GraphBatch(POLICY), 0
        yield self._emit(_facts_only(batch), done)


def _facts_only(batch: GraphBatch) -> GraphBatch:
    """Drop the entity nodes `GraphBatch.fact` stages: they were written before (with their captions)."""
    batch.nodes.pop(schema.ENTITY, None)
    return batch


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
    loader = _Loader(timeline, filters, progress)
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
