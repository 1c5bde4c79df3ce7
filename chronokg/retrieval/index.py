"""The passage index: faiss vectors, passage texts in SQLite, validity intervals as numpy arrays.

A folder (beside the store by default) holds:

* `vectors.faiss`: inner-product faiss index over unit vectors (cosine); the faiss id of a
  passage is its row number. `flat` (exact) below `IVF_MIN_ROWS` passages, `ivf` above
  (IndexIVFFlat, adaptive nprobe), chosen at build time (benchmarks/bench_retrieval.py);
* `passages.sqlite`: row -> key, kind, text, source, title, validity and known intervals;
* `spans.npy`: per row `valid_from, valid_to, known_from, known_to, alive` as day ordinals, so
  the rows valid on a day are one vectorised comparison;
* `meta.json`: the embedding model, dimension, index kind and counts (written last).

Validity meets ranking by **filtering inside faiss**: the rows valid on the asked day become a
bitmap `IDSelector`, so faiss ranks only valid passages and every result is valid (no
over-fetch that can come back short, no copy of a passage per period). The measurements
behind this choice are in benchmarks/README.md.

Updates are incremental (`sync`: new passages are embedded and appended, changed intervals
rewritten, vanished passages tombstoned); `compact` drops tombstones and may switch kind
without re-embedding; `rebuild` starts over. One writer at a time (a lock file); readers
open the folder read-only and never write.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import math
import shutil
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from chronokg.errors import ChronoKGError
from chronokg.progress import Progress
from chronokg.retrieval.embed import RAG_EXTRA, Embedder
from chronokg.retrieval.index_layout import (
    COLUMNS,
    EMBED_BATCH,
    FORMAT,
    NPROBE_BASE,
    SCHEMA,
    date,
    passage_record,
    passage_spans,
)
from chronokg.retrieval.index_layout import INT_MAX as INT_MAX  # re-exported: indexing, rag, cli, benchmarks
from chronokg.retrieval.index_layout import INT_MIN as INT_MIN
from chronokg.retrieval.index_layout import IVF_MIN_ROWS as IVF_MIN_ROWS
from chronokg.retrieval.index_layout import IndexError_ as IndexError_
from chronokg.retrieval.index_layout import IndexMeta as IndexMeta
from chronokg.retrieval.index_layout import Kind as Kind
from chronokg.retrieval.index_layout import Strategy as Strategy
from chronokg.retrieval.index_layout import SyncReport as SyncReport
from chronokg.retrieval.passages import Passage

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:
        raise ChronoKGError(f"faiss is not installed: {RAG_EXTRA}") from exc
    return faiss


class PassageIndex:
    """One index folder. `open` for reading (and `writer()` for updates), `create` for a new one."""

    def __init__(self, folder: Path, meta: IndexMeta, index: Any, spans: npt.NDArray[np.int32],
                 read_only: bool = True) -> None:
        self.folder = folder
        self.meta = meta
        self.index = index
        self.spans = spans
        self.read_only = read_only
        self._db: sqlite3.Connection | None = None
        self._bitmaps: dict[tuple[Any, ...], tuple[npt.NDArray[np.uint8], float]] = {}

    # --- opening and saving ------------------------------------------------------------------------

    @classmethod
    def create(cls, folder: Path, model: str, dim: int, kind: Kind = "flat", nlist: int = 0,
               store: str | None = None) -> PassageIndex:
        """An empty index (in memory until `save`); `kind="ivf"` needs `train` before rows are added."""
        import numpy as np

        meta = IndexMeta(model=model, dim=dim, kind=kind, nlist=nlist, store=store)
        return cls(folder, meta, new_index(kind, dim, nlist), np.zeros((0, 5), dtype=np.int32), read_only=False)

    @classmethod
    def open(cls, folder: Path, read_only: bool = True) -> PassageIndex:
        import numpy as np

        faiss = _faiss()
        meta_path = folder / "meta.json"
        if not meta_path.exists():
            raise IndexError_(f"no passage index at {folder} (build one: chronokg index build)")
        try:
            meta = IndexMeta.model_validate_json(meta_path.read_text(encoding="utf-8"))
            index = faiss.read_index(str(folder / "vectors.faiss"))
            spans = np.load(folder / "spans.npy")
        except (OSError, ValueError, RuntimeError) as exc:
            raise IndexError_(f"{folder}: damaged passage index ({exc}); rebuild it: chronokg index build "
                              "--rebuild") from exc
        if meta.format != FORMAT:
            raise IndexError_(f"{folder}: index format {meta.format}, this chronokg reads {FORMAT} (passages now carry "
                              "their guideline's topic, title and organisation); rebuild it: chronokg index build "
                              "--rebuild")
        if not (index.ntotal == len(spans) == meta.rows):
            raise IndexError_(f"{folder}: vectors ({index.ntotal}), spans ({len(spans)}) and metadata ({meta.rows}) "
                              "disagree (an interrupted write?); rebuild it: chronokg index build --rebuild")
        return cls(folder, meta, index, spans, read_only=read_only)

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            path = self.folder / "passages.sqlite"
            if self.read_only:
                self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            else:
                self.folder.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(path, check_same_thread=False)
                self._db.execute(SCHEMA)
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def save(self) -> None:
        """Vectors and spans (temp file + rename), then the metadata: a reader sees all or the old state."""
        import numpy as np

        if self.read_only:
            raise IndexError_(f"{self.folder}: opened read-only")
        faiss = _faiss()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.db.commit()
        tmp = self.folder / "vectors.faiss.part"
        faiss.write_index(self.index, str(tmp))
        tmp.replace(self.folder / "vectors.faiss")
        with (self.folder / "spans.npy.part").open("wb") as fh:
            np.save(fh, self.spans)
        (self.folder / "spans.npy.part").replace(self.folder / "spans.npy")
        self.meta.rows = int(self.index.ntotal)
        self.meta.alive = int(self.spans[:, 4].sum()) if len(self.spans) else 0
        self.meta.updated = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        (self.folder / "meta.json.part").write_text(self.meta.model_dump_json(indent=2), encoding="utf-8")
        (self.folder / "meta.json.part").replace(self.folder / "meta.json")
        self._bitmaps.clear()

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.folder.iterdir() if p.is_file())

    # --- writing -------------------------------------------------------------------------------------

    def train(self, vectors: npt.NDArray[np.float32]) -> None:
        if not self.index.is_trained:
            self.index.train(vectors)

    def append(self, passages: Sequence[Passage], vectors: npt.NDArray[np.float32]) -> None:
        """Add rows at the end (ids = row numbers)."""
        import numpy as np

        if len(passages) != len(vectors):
            raise ValueError("one vector per passage")
        if not passages:
            return
        start = int(self.index.ntotal)
        ids = np.arange(start, start + len(passages), dtype=np.int64)
        if self.meta.kind == "flat":
            self.index.add(vectors)
        else:
            self.index.add_with_ids(vectors, ids)
        self.db.executemany(f"INSERT INTO passages (row, {', '.join(COLUMNS)}) VALUES "
                            f"(?, {', '.join('?' * len(COLUMNS))})",
                            [(int(r), *passage_record(p)) for r, p in zip(ids, passages, strict=True)])
        self.spans = np.concatenate([self.spans, np.array([passage_spans(p) for p in passages], dtype=np.int32)])

    def sync(self, passages: Iterable[Passage], embedder: Embedder, batch: int = EMBED_BATCH,
             progress: Progress | None = None) -> SyncReport:
        """Bring the index in line with `passages` (the store's, now): embed only what is new."""
        import numpy as np

        started = time.perf_counter()
        report = SyncReport()
        existing = {key: (row, f"{heading}: {text}" if heading else text) for row, key, text, heading in
                    self.db.execute("SELECT row, key, text, heading FROM passages WHERE alive = 1")}
        seen: set[int] = set()
        new: list[Passage] = []
        updates: list[tuple[int, Passage]] = []
        for p in passages:
            found = existing.get(p.key)
            if found is None or found[1] != p.embedded:
                if found is not None:  # the embedded text changed (a caption): retire the old row, embed anew
                    self._retire(found[0])
                new.append(p)
                continue
            row = found[0]
            seen.add(row)
            if tuple(int(x) for x in self.spans[row]) != passage_spans(p):
                updates.append((row, p))
            else:
                report.unchanged += 1
        for row, p in updates:
            self.spans[row] = passage_spans(p)
            self.db.execute(f"UPDATE passages SET {', '.join(f'{c} = ?' for c in COLUMNS[1:])} WHERE row = ?",
                            (*passage_record(p)[1:], row))
        report.changed = len(updates)
        gone = [row for row, _ in existing.values() if row not in seen]
        for row in gone:
            if self.spans[row, 4]:
                self._retire(row)
                report.removed += 1
        if new and not self.index.is_trained:
            raise IndexError_(f"{self.folder}: an untrained IVF index cannot take rows; rebuild it")
        if progress is not None and new:
            progress.start(len(new), "embedding new passages")
        for i in range(0, len(new), batch):
            part = new[i:i + batch]
            t0 = time.perf_counter()
            vectors = embedder.encode([p.embedded for p in part])
            report.embed_s += time.perf_counter() - t0
            if vectors.shape[1] != self.meta.dim:
                raise IndexError_(f"{embedder.name} gives {vectors.shape[1]} dimensions, the index has "
                                  f"{self.meta.dim}")
            self.append(part, vectors)
            if progress is not None:
                progress.advance(len(part))
        report.added = len(new)
        report.rows = int(self.index.ntotal)
        report.alive = int(np.count_nonzero(self.spans[:, 4])) if len(self.spans) else 0
        report.kind = self.meta.kind
        report.total_s = time.perf_counter() - started
        return report

    def _retire(self, row: int) -> None:
        self.spans[row, 4] = 0
        self.db.execute("UPDATE passages SET alive = 0, key = key || '#retired-' || row WHERE row = ?", (row,))

    def vectors(self) -> npt.NDArray[np.float32]:
        """Every stored vector, in row order (flat: as stored; ivf: through its direct map)."""
        import numpy as np

        n = int(self.index.ntotal)
        if n == 0:
            return np.zeros((0, self.meta.dim), dtype=np.float32)
        if self.meta.kind == "ivf":
            self.index.make_direct_map()
        out: npt.NDArray[np.float32] = self.index.reconstruct_n(0, n) if self.meta.kind == "flat" else \
            np.vstack([self.index.reconstruct(i) for i in range(n)])
        return out

    # --- reading -------------------------------------------------------------------------------------

    def mask(self, as_of: dt.date | None, known_at: dt.date | None = None) -> npt.NDArray[np.bool_]:
        """Rows alive, valid on `as_of` (any time when None) and known at `known_at` (known now when None)."""
        s = self.spans
        m = s[:, 4] == 1
        if as_of is not None:
            d = as_of.toordinal()
            m &= (s[:, 0] <= d) & (s[:, 1] > d)
        if known_at is None:
            m &= s[:, 3] == INT_MAX
        else:
            k = known_at.toordinal()
            m &= (s[:, 2] <= k) & (s[:, 3] > k)
        out: npt.NDArray[np.bool_] = m
        return out

    def bitmap(self, as_of: dt.date | None, known_at: dt.date | None = None) -> tuple[npt.NDArray[np.uint8], float]:
        """The packed selector bitmap for a day and the share of rows it keeps (cached per day)."""
        import numpy as np

        key = (as_of, known_at)
        found = self._bitmaps.get(key)
        if found is None:
            m = self.mask(as_of, known_at)
            share = float(m.mean()) if len(m) else 0.0
            found = (np.packbits(m, bitorder="little"), share)
            if len(self._bitmaps) > 256:
                self._bitmaps.clear()
            self._bitmaps[key] = found
        return found

    def search(self, vectors: npt.NDArray[np.float32], k: int, as_of: dt.date | None = None,
               known_at: dt.date | None = None, strategy: Strategy = "filter",
               nprobe: int | None = None) -> list[list[tuple[int, float]]]:
        """For each query vector, up to k (row, cosine) pairs among the rows valid on `as_of`, best first."""
        import numpy as np

        faiss = _faiss()
        n = int(self.index.ntotal)
        if n == 0 or len(vectors) == 0:
            return [[] for _ in range(len(vectors))]
        bits, share = self.bitmap(as_of, known_at)
        if share == 0.0:
            return [[] for _ in range(len(vectors))]
        kk = min(k, n)
        if strategy == "overfetch":
            return self._overfetch(vectors, kk, self.mask(as_of, known_at), share, nprobe)
        selector = faiss.IDSelectorBitmap(n, faiss.swig_ptr(bits))
        if self.meta.kind == "ivf":
            probes = nprobe or self.nprobe(share)
            params: Any = faiss.SearchParametersIVF(sel=selector, nprobe=probes)
        else:
            params = faiss.SearchParameters(sel=selector)
        scores, ids = self.index.search(np.ascontiguousarray(vectors, dtype=np.float32), kk, params=params)
        del selector  # `bits` must outlive the search: it is referenced, not copied
        return [[(int(i), float(s)) for i, s in zip(row_ids, row_scores, strict=True) if i >= 0]
                for row_ids, row_scores in zip(ids, scores, strict=True)]

    def nprobe(self, share: float) -> int:
        """IVF probes for a filter keeping `share` of the rows: fewer valid rows per list, more lists to read."""
        return max(1, min(self.meta.nlist, math.ceil(NPROBE_BASE / max(share, 1e-3))))

    def _overfetch(self, vectors: npt.NDArray[np.float32], k: int, mask: npt.NDArray[np.bool_], share: float,
                   nprobe: int | None) -> list[list[tuple[int, float]]]:
        """Search without a filter for k / share x 2 hits, drop invalid ones, widen until k are left."""
        faiss = _faiss()
        n = int(self.index.ntotal)
        out: list[list[tuple[int, float]]] = []
        for v in vectors:
            fetch = min(n, max(k, math.ceil(2 * k / share)))
            while True:
                params = faiss.SearchParametersIVF(nprobe=nprobe or self.nprobe(1.0)) if self.meta.kind == "ivf" \
                    else None
                scores, ids = self.index.search(v.reshape(1, -1), fetch, params=params)
                hits = [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0 and mask[i]]
                if len(hits) >= k or fetch >= n:
                    out.append(hits[:k])
                    break
                fetch = min(n, fetch * 4)
        return out

    def passages(self, rows: Sequence[int]) -> dict[int, Passage]:
        """The stored passages of these rows."""
        if not rows:
            return {}
        marks = ", ".join("?" * len(rows))
        cur = self.db.execute(f"SELECT row, {', '.join(COLUMNS)} FROM passages WHERE row IN ({marks})",
                              [int(r) for r in rows])
        out: dict[int, Passage] = {}
        for rec in cur:
            values = dict(zip(COLUMNS, rec[1:], strict=True))
            for name in ("valid_from", "valid_to", "known_from", "known_to"):
                values[name] = date(values[name])
            out[int(rec[0])] = Passage.model_validate(values)
        return out

    def rows_of_facts(self, fact_ids: Iterable[str]) -> set[int]:
        ids = list(fact_ids)
        if not ids:
            return set()
        marks = ", ".join("?" * len(ids))
        return {int(r) for (r,) in self.db.execute(f"SELECT row FROM passages WHERE fact_id IN ({marks})", ids)}


def new_index(kind: Kind, dim: int, nlist: int) -> Any:
    faiss = _faiss()
    if kind == "flat":
        return faiss.IndexFlatIP(dim)
    quantizer = faiss.IndexFlatIP(dim)
    return faiss.IndexIVFFlat(quantizer, dim, max(1, nlist), faiss.METRIC_INNER_PRODUCT)  # keeps a ref


def ivf_lists(rows: int) -> int:
    """IVF lists for `rows` vectors: about 4 sqrt(n) (faiss's guideline), at least 1."""
    return max(1, int(4 * math.sqrt(rows)))


@contextlib.contextmanager
def write_lock(folder: Path, timeout_s: float = 30.0) -> Iterator[None]:
    """The one writer of an index folder; another waits up to `timeout_s`, then fails naming the folder."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with folder.with_name(folder.name + ".lock").open("a+") as fh:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise IndexError_(f"{folder}: another process is updating this index") from None
                time.sleep(0.1)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def encode_all(embedder: Embedder, items: Sequence[Passage], batch: int = EMBED_BATCH,
               progress: Progress | None = None) -> npt.NDArray[np.float32]:
    """The embedded texts of `items`, `batch` at a time, each batch reported to `progress` (the model's first
    load happens inside the first batch: the bar is up before it, so a slow start is never a silent one)."""
    import numpy as np

    if progress is not None:
        progress.start(len(items), "embedding passages")
    parts = []
    for i in range(0, len(items), batch):
        part = items[i:i + batch]
        parts.append(embedder.encode([p.embedded for p in part]))
        if progress is not None:
            progress.advance(len(part))
    return np.concatenate(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)


def build(folder: Path, passages: Iterable[Passage], embedder: Embedder, kind: Kind | Literal["auto"] = "auto",
          store: str | None = None, batch: int = EMBED_BATCH,
          progress: Progress | None = None) -> tuple[PassageIndex, SyncReport]:
    """A new index of `passages` in `folder` (replacing what is there): embed all, then add (IVF: train first)."""

    started = time.perf_counter()
    items = list(passages)
    t0 = time.perf_counter()
    vectors = encode_all(embedder, items, batch, progress)
    embed_s = time.perf_counter() - t0
    building = folder.with_name(folder.name + ".building")
    if building.exists():
        shutil.rmtree(building)
    if progress is not None:
        progress.start(len(items), "writing the index of the passages (an IVF index trained first)")
    index = from_vectors(building, items, vectors, embedder.name, embedder.dim, kind, store)
    index.save()
    index.close()
    if progress is not None:
        progress.advance(len(items))
    replace_folder(building, folder)
    index = PassageIndex.open(folder, read_only=False)
    report = SyncReport(added=len(items), embed_s=embed_s, total_s=time.perf_counter() - started,
                        rows=len(items), alive=len(items), kind=index.meta.kind)
    return index, report


def replace_folder(new: Path, folder: Path) -> None:
    """Put the folder `new` in the place of `folder` (two renames; readers see the old or the new index)."""
    old = folder.with_name(folder.name + ".old")
    if old.exists():
        shutil.rmtree(old)
    if folder.exists():
        folder.rename(old)
    new.rename(folder)
    if old.exists():
        shutil.rmtree(old)


def from_vectors(folder: Path, passages: Sequence[Passage], vectors: npt.NDArray[np.float32], model: str, dim: int,
                 kind: Kind | Literal["auto"] = "auto", store: str | None = None) -> PassageIndex:
    """An index (unsaved) of passages whose vectors are already computed; replaces the folder's database."""
    chosen: Kind = ("ivf" if len(passages) >= IVF_MIN_ROWS else "flat") if kind == "auto" else kind
    nlist = ivf_lists(len(passages)) if chosen == "ivf" else 0
    if (folder / "passages.sqlite").exists():
        raise IndexError_(f"{folder}: already holds an index (build into a new folder)")
    index = PassageIndex.create(folder, model, dim, chosen, nlist, store)
    if chosen == "ivf":
        train = vectors
        limit = 64 * nlist
        if len(vectors) > limit:
            import numpy as np

            pick = np.random.default_rng(0).choice(len(vectors), limit, replace=False)
            train = vectors[np.sort(pick)]
        index.train(train)
    index.append(passages, vectors)
    return index
