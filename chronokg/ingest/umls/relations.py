"""Relation state across releases: facts opened, continued and closed per release, concept names."""

from __future__ import annotations

from collections.abc import Iterator

from chronokg.errors import InputError, StoreError
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch, caption_version
from chronokg.graph.dates import Precision
from chronokg.graph.merge import DEFAULT_POLICY
from chronokg.graph.model import Fact, Source
from chronokg.graph.store import GraphStore
from chronokg.ingest.umls.models import (
    CHUNK,
    CONCEPT,
    CUI_MASK,
    KIND,
    MRCONSO_COLUMNS,
    MRREL_COLUMNS,
    PAGE,
    RANK,
    RELA_BITS,
    RELA_MASK,
    SUBJECT_SHIFT,
    Filters,
    Release,
    ReleaseRef,
    ReleaseStats,
)
from chronokg.ingest.umls.rrf import check_conso_flags, check_rows, cui_code, cui_number, read_rrf
from chronokg.progress import Progress

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
        return (subject << SUBJECT_SHIFT) | (obj << RELA_BITS) | rela

    def triple(self, key: int) -> tuple[str, str, str]:
        return cui_code(key >> SUBJECT_SHIFT), self.relas[key & RELA_MASK], cui_code((key >> RELA_BITS) & CUI_MASK)


def coarser_precision(a: Precision, b: Precision) -> Precision:
    return a if RANK[a] <= RANK[b] else b


# Releases load oldest first (`plan` skips older ones): a concept's name is its latest release's.
POLICY = DEFAULT_POLICY.with_latest(schema.ENTITY, "caption")


class Loader:
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
                {"kind": KIND, "after": after, "limit": PAGE},
            )
            for r in rows:
                if r["start"] not in by_date:
                    raise StoreError(f"UMLS fact {r['id']} starts on {r['start']}, the date of no loaded release: "
                                     "the store's UMLS releases are inconsistent")
                key = self.vocab.key(int(r["s"][1:]), int(r["o"][1:]), self.vocab.rela(r["p"]))
                sabs = self.vocab.sab_set(tuple(r["sabs"].split("|")) if r["sabs"] else ())
                self.open[key] = (sabs << 16) | by_date[r["start"]]
            if len(rows) < PAGE:
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
        ruis: dict[str, tuple[int, tuple[str, ...]]] = {}  # of kept rows: one RUI with two contents is an error
        sabs, relas, vocab, path = self.filters.sabs, self.filters.relas, self.vocab, rel.mrrel
        self._start(path.stat().st_size, f"reading {rel.name} MRREL.RRF")
        n = 0
        for n, f in read_rrf(path, MRREL_COLUMNS, self._advance):
            cui1 = cui_number(path, n, "CUI1", f[0])
            cui2 = cui_number(path, n, "CUI2", f[4])
            rela, sab = f[7], f[10]
            if not rela or (relas is not None and rela not in relas) or (sabs is not None and sab not in sabs):
                continue
            if cui1 == cui2:
                continue
            stats.kept_rows += 1
            if f[8]:
                row = (f[0], f[4], rela, sab, f[1], f[5], f[3])
                first = ruis.setdefault(f[8], (n, row))
                if first[1] != row:
                    raise InputError(path, f"line {n}", f"RUI {f[8]} is given again with other content; first "
                                                        f"given on line {first[0]}")
            ix = vocab.rela(rela)
            if ix > RELA_MASK:
                raise InputError(path, f"line {n}", f"more than {RELA_MASK} distinct RELAs")
            key = vocab.key(cui2, cui1, ix)
            kept[key] = vocab.add_sab(kept.get(key, 0), sab)
        check_rows(path, rel.rows.get("MRREL.RRF"), n)
        stats.rows, stats.relations = n, len(kept)
        return kept

    def names(self, rel: Release, needed: set[int]) -> dict[int, str]:
        """Preferred English names of the needed concepts, from the release's MRCONSO."""
        names: dict[int, str] = {}
        path = rel.mrconso
        self._start(path.stat().st_size, f"reading {rel.name} MRCONSO.RRF")
        n = 0
        auis: dict[str, tuple[int, tuple[str, ...]]] = {}  # of the needed concepts' atoms
        for n, f in read_rrf(path, MRCONSO_COLUMNS, self._advance):
            cui = cui_number(path, n, "CUI", f[0])
            check_conso_flags(path, n, f)
            if cui in needed and f[7]:
                first = auis.setdefault(f[7], (n, tuple(f[:-1])))
                if first[1] != tuple(f[:-1]):
                    raise InputError(path, f"line {n}", f"AUI {f[7]} is given again with other content; first "
                                                        f"given on line {first[0]}")
            if f[1] == "ENG" and f[2] == "P" and f[4] == "PF" and f[6] == "Y" and cui in needed and cui not in names:
                if not f[14].strip():
                    raise InputError(path, f"line {n}", "STR: empty preferred name")
                names[cui] = f[14]
        check_rows(path, rel.rows.get("MRCONSO.RRF"), n)
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
            precision=first.precision if last is None else coarser_precision(first.precision, last.precision),
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
        needed = {key >> SUBJECT_SHIFT for key in kept} | {(key >> RELA_BITS) & CUI_MASK for key in kept}
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
                    batch.entity(cui_code(cui), kind=CONCEPT, caption=caption, known_from=rel.date)
                else:  # renamed within this load: the versions so far, and this one
                    history = self.renamed.get(cui)
                    if history is None:
                        old = self.previous.get(cui)
                        history = [caption_version(self.timeline[written[1]].date, old)] if old else []
                    history = self.renamed[cui] = [*history, caption_version(rel.date, caption)]
                    batch.entity(cui_code(cui), kind=CONCEPT, caption=caption, caption_versions=history)
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
