"""A columnar interval index of the current facts, kept beside an embedded store's file.

Why: `changed_between` over a whole store is a scan of every version in Cypher (seconds at a
million facts); over sorted numpy columns it is a few vectorised passes. The index is a
sidecar (`<store>.kgl.intervals.npz`) written after each checkpoint of a writer, stamped with
the checkpoint file's identity (inode, size, mtime); a reader uses it only when the stamp
matches the file it loaded, so a stale or missing sidecar (an older store, a writer killed
between its checkpoint and the sidecar) is never used: the query falls back to its Cypher.

Each row is one fact known now (`known_to IS NULL`): subject, predicate and value
(`coalesce(object_id, toString(value))`, computed by the engine so the text is the Cypher's)
as codes into sorted string tables, and the valid interval as day ordinals. Rows are sorted
by (subject, predicate, value), so codes order as the strings do and every answer comes out
in the Cypher's `ORDER BY subject, predicate` with sorted value lists.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

FORMAT = 2
SUFFIX = ".intervals.npz"
NO_START = -(2**31) + 1  # an open start: before every day
NO_END = 2**31 - 1  # an open end: after every day
FACTS = (
    "MATCH (f:Fact) WHERE f.known_to IS NULL AND f.subject_id IS NOT NULL AND f.predicate IS NOT NULL "
    "RETURN f.subject_id AS s, f.predicate AS p, coalesce(f.object_id, toString(f.value)) AS v, "
    "f.valid_from AS a, f.valid_to AS b, f.id AS id, f.object_id AS o, f.value AS lit, f.precision AS prec, "
    "f.known_from AS k, f.source_id AS src"
)
CAPTIONS = "MATCH (e:Entity) RETURN e.id AS id, e.caption AS c"
LITERAL_KINDS = (str, int, float, bool)

Fingerprint = tuple[int, int, int]
Change = tuple[str, str, list[str], list[str]]


def sidecar(path: str | Path) -> Path:
    return Path(str(path) + SUFFIX)


def fingerprint(path: str | Path) -> Fingerprint | None:
    """Which checkpoint file is at `path` now: (inode, size, mtime ns); a save renames a new file in."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _days(values: Any, missing: int) -> npt.NDArray[np.int32] | None:
    """Day ordinals (`missing` for None), converting each distinct day once; None if any is not a date.
    An int32 array is taken as ordinals already (the bulk loader converts each part as it goes)."""
    import numpy as np
    import pandas as pd

    if isinstance(values, np.ndarray):
        return values.astype(np.int32, copy=False)
    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
    if any(type(d) is not dt.date for d in uniques):
        return None  # a time or text where a day belongs: not ours to interpret; Cypher answers
    days = np.array([d.toordinal() for d in uniques] + [missing], dtype=np.int32)
    out: npt.NDArray[np.int32] = days[codes]  # code -1 (None) picks the last entry: `missing`
    return out


def _strings(values: Any) -> dict[str, Any]:
    """A sorted string table as one UTF-8 blob and character offsets (no pickled objects on disk)."""
    import numpy as np

    texts = [str(v) for v in values]
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    return {"blob": np.frombuffer("".join(texts).encode(), dtype=np.uint8), "offsets": offsets}


Column = Callable[[str], Any]  # a column of the FACTS query by its name ("s", "p", ...): a list (or day ordinals)


def build_columns(graph: Any) -> dict[str, Any] | None:
    """The index's arrays from a kglite graph (a read of every current fact), or None when its facts hold
    something it cannot index."""
    result = graph.cypher(FACTS)
    if isinstance(result, str):
        return None
    return assemble(result.column, graph)


def assemble(column: Column, graph: Any) -> dict[str, Any] | None:
    """The index's arrays from the current facts as columns (`column(name)`, named as the FACTS query's
    fields), with the captions read from `graph`; None when the facts hold something it cannot index.
    Rows are sorted by (subject, predicate, value, valid_from, id): a total order, so the arrays do not
    depend on the order the rows came in (a Cypher read, or the bulk loader's own columns)."""
    import numpy as np

    # One column at a time, each turned into codes and dropped: the rows as Python objects all at once
    # would more than double a million-fact load's peak memory.
    vf, vt = _days(column("a"), NO_START), _days(column("b"), NO_END)
    if vf is None or vt is None:
        return None
    s_codes, s_names = _factor(column("s"))
    p_codes, p_names = _factor(column("p"))
    v_codes, v_names = _factor(column("v"))
    if any(not isinstance(x, str) for names in (s_names, p_names, v_names) for x in names):
        return None  # ids or values that are not text: the Cypher answers
    ids = column("id")
    if not set(map(type, ids)) <= {str}:  # (a generator over a million ids was most of a second)
        return None
    order = _order(s_codes, p_codes, v_codes, vf, ids)
    cols: dict[str, Any] = {
        "format": np.array([FORMAT], dtype=np.int64),
        "s": s_codes[order].astype(np.int32), "p": p_codes[order].astype(np.int32),
        "v": v_codes[order].astype(np.int32), "vf": vf[order], "vt": vt[order],
    }
    del s_codes, p_codes, v_codes, vf, vt
    rows = _fact_rows(graph, column, ids, order, s_names, v_names)
    if rows is None:
        return None
    cols.update(rows)
    for name, table in (("subjects", s_names), ("predicates", p_names), ("values", v_names)):
        for part, arr in _strings(table).items():
            cols[f"{name}_{part}"] = arr
    return cols


def _order(s: Any, p: Any, v: Any, vf: Any, ids: list[str]) -> Any:
    """Row order by (subject, predicate, value, valid_from), ties (rare: versions alike but for their id)
    by id."""
    import numpy as np

    order = np.lexsort((vf, v, p, s))
    n = len(order)
    if n < 2:
        return order
    keys = [k[order] for k in (s, p, v, vf)]
    same = np.ones(n - 1, dtype=bool)
    for k in keys:
        same &= k[1:] == k[:-1]
    if not same.any():
        return order
    pos = np.flatnonzero(same)  # row i+1 ties with row i
    lo = 0
    while lo < len(pos):  # each run of ties: rows pos[lo] .. pos[hi]+1
        hi = lo
        while hi + 1 < len(pos) and pos[hi + 1] == pos[hi] + 1:
            hi += 1
        a, b = int(pos[lo]), int(pos[hi]) + 2
        order[a:b] = sorted(order[a:b].tolist(), key=ids.__getitem__)
        lo = hi + 1
    return order


def _factor(values: list[Any]) -> tuple[Any, list[Any]]:
    """Codes (-1 for None) into the sorted distinct values."""
    import pandas as pd

    codes, uniques = pd.factorize(pd.Series(values, dtype=object), sort=True, use_na_sentinel=True)
    return codes, list(uniques)


def _fact_rows(graph: Any, column: Column, ids: list[str], order: Any, s_names: Any,
               v_names: Any) -> dict[str, Any] | None:
    """What `facts_as_of` returns beyond the interval: ids, object or literal, precision, known_from,
    source, and the entities' captions (of each subject, and of each value that is an entity)."""
    import numpy as np

    known = _days(column("k"), NO_START)
    if known is None:
        return None
    lit_codes, lit_names = _factor([None if x is None else (type(x).__name__, x) for x in column("lit")])
    if any(type(x[1]) not in LITERAL_KINDS for x in lit_names):
        return None
    prec_codes, prec_names = _factor(column("prec"))
    src_codes, src_names = _factor(column("src"))
    if any(not isinstance(x, str) for x in (*prec_names, *src_names)):
        return None
    positions = order.tolist()
    out: dict[str, Any] = {
        "is_object": np.array([x is not None for x in column("o")], dtype=bool)[order],
        "lit": lit_codes[order].astype(np.int32), "lit_kind": np.array(
            [LITERAL_KINDS.index(type(x[1])) for x in lit_names], dtype=np.int8),
        "prec": prec_codes[order].astype(np.int32), "src": src_codes[order].astype(np.int32),
        "known_from": known[order],
    }
    ordered_ids = [ids[i] for i in positions]
    del ids, positions
    for name, table in (("ids", ordered_ids), ("literals", [str(x[1]) if type(x[1]) is not float else repr(x[1])
                                                            for x in lit_names]),
                        ("precisions", list(prec_names)), ("sources", list(src_names))):
        for part, arr in _strings(table).items():
            out[f"{name}_{part}"] = arr
    del ordered_ids
    captions = {r["id"]: r["c"] for r in graph.cypher(CAPTIONS).to_list()}
    for name, keys in (("subject_captions", s_names), ("value_captions", v_names)):
        found = [captions.get(k) for k in keys]
        out[f"{name}_has"] = np.array([c is not None for c in found], dtype=bool)
        for part, arr in _strings(["" if c is None else c for c in found]).items():
            out[f"{name}_{part}"] = arr
    return out


def write(path: str | Path, cols: dict[str, Any] | None, stamp: Fingerprint | None) -> None:
    """Write the sidecar of the checkpoint `stamp` whole (temp name, then rename); with nothing to write,
    remove any sidecar there (it describes an older checkpoint)."""
    import numpy as np

    target = sidecar(path)
    if cols is None or stamp is None:
        target.unlink(missing_ok=True)
        return
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, stamp=np.array(stamp, dtype=np.int64), **cols)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_unstamped(path: str | Path, cols: dict[str, Any]) -> Path:
    """Write the arrays of a sidecar not yet stamped to a temp file beside it (a bulk load does this before
    its save, so they are not held in memory through it); `stamp_and_publish` finishes it."""
    import numpy as np

    target = sidecar(path)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **cols)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def stamp_and_publish(path: str | Path, tmp: Path, stamp: Fingerprint | None) -> None:
    """Add the stamp of the checkpoint now at `path` to `tmp` (from `write_unstamped`) and rename it in; on
    any failure neither it nor an older sidecar stays."""
    import io

    import numpy as np

    try:
        if stamp is None:
            raise OSError(f"no checkpoint at {path}")
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.array(stamp, dtype=np.int64))
        with zipfile.ZipFile(tmp, "a") as z:
            z.writestr("stamp.npy", buf.getvalue())
        os.replace(tmp, sidecar(path))
    except BaseException:
        tmp.unlink(missing_ok=True)
        sidecar(path).unlink(missing_ok=True)
        raise


def refresh(graph: Any, path: str | Path) -> None:
    """After `graph` was saved as the checkpoint at `path`: the matching sidecar (or none, if it fails)."""
    try:
        write(path, build_columns(graph), fingerprint(path))
    except Exception:
        sidecar(path).unlink(missing_ok=True)  # never leave one that might pass for this checkpoint


def describes(path: str | Path, stamp: Fingerprint | None) -> bool:
    """Whether the sidecar at `path` is the one of checkpoint `stamp` (reads only its stamp)."""
    import numpy as np

    if stamp is None:
        return False
    try:
        with np.load(sidecar(path), allow_pickle=False) as data:
            return tuple(int(x) for x in data["stamp"]) == stamp and int(data["format"][0]) == FORMAT
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return False


def carry(path: str | Path, old: Fingerprint | None) -> None:
    """After a checkpoint that changed no fact and no caption (e.g. a run's predictions): the sidecar of
    checkpoint `old` now describes the new file too, so it is re-stamped instead of rebuilt (a full read
    of every fact: seconds and a gigabyte at a million facts). Without a current one there is none."""
    import numpy as np

    try:
        if not describes(path, old):
            sidecar(path).unlink(missing_ok=True)
            return
        with np.load(sidecar(path), allow_pickle=False) as data:
            cols = {k: data[k] for k in data.files if k != "stamp"}
        write(path, cols, fingerprint(path))
    except Exception:
        sidecar(path).unlink(missing_ok=True)  # never leave one that might pass for this checkpoint


def load(path: str | Path, stamp: Fingerprint | None) -> IntervalIndex | None:
    """The sidecar of the checkpoint `stamp` (as the reader loaded it), or None (missing, stale, damaged)."""
    import numpy as np

    if stamp is None:
        return None
    try:
        # Read whole and closed: an open file handle shared with forked read workers (serve) would
        # interleave their seeks and reads.
        with np.load(sidecar(path), allow_pickle=False) as data:
            if tuple(int(x) for x in data["stamp"]) != stamp or int(data["format"][0]) != FORMAT:
                return None
            return IntervalIndex({k: data[k] for k in data.files})
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None


def _table(cols: dict[str, Any], name: str) -> list[str]:
    text = cols[f"{name}_blob"].tobytes().decode()
    offsets = cols[f"{name}_offsets"].tolist()
    return [text[a:b] for a, b in itertools.pairwise(offsets)]


@dataclass
class _Groups:
    """Row ranges of each (subject, predicate, value) and each (subject, predicate), precomputed once."""

    starts: Any  # first row of each value group
    skey: Any  # subject code of each group
    pkey: Any  # predicate code of each group
    val: Any  # value code of each group (-1: no value)
    key_starts: Any  # first group of each (subject, predicate)
    key_sizes: Any  # groups per (subject, predicate)


class IntervalIndex:
    """The loaded sidecar: answers `changed_between` as the catalog's Cypher does."""

    def __init__(self, cols: dict[str, Any]) -> None:
        import numpy as np

        self.s, self.p, self.v, self.vf, self.vt = (cols[k] for k in ("s", "p", "v", "vf", "vt"))
        self._cols = cols
        self._names: dict[str, list[str]] = {}
        self._as_of: AsOfIndex | None = None
        n = len(self.s)
        new = np.ones(n, dtype=bool)
        if n:
            new[1:] = (self.s[1:] != self.s[:-1]) | (self.p[1:] != self.p[:-1]) | (self.v[1:] != self.v[:-1])
        starts = np.flatnonzero(new)
        skey, pkey = self.s[starts], self.p[starts]
        knew = np.ones(len(starts), dtype=bool)
        if len(starts):
            knew[1:] = (skey[1:] != skey[:-1]) | (pkey[1:] != pkey[:-1])
        key_starts = np.flatnonzero(knew)
        self._g = _Groups(starts, skey, pkey, self.v[starts], key_starts,
                          np.diff(np.append(key_starts, len(starts))))

    def as_of(self) -> AsOfIndex:
        """The per-subject `facts_as_of` view (decodes its string tables on first use)."""
        if self._as_of is None:
            self._as_of = AsOfIndex(self)
        return self._as_of

    def names(self, table: str) -> list[str]:
        if table not in self._names:
            self._names[table] = _table(self._cols, table)
        return self._names[table]

    def _code(self, table: str, text: str) -> int:
        import bisect

        names = self.names(table)
        i = bisect.bisect_left(names, text)
        return i if i < len(names) and names[i] == text else -2  # -2: matches nothing

    def changed_between(self, t1: dt.date, t2: dt.date, subject: str | None = None,
                        predicate: str | None = None) -> list[Change]:
        """(subject, predicate, values at the earlier day, values at the later day) where the sets differ,
        ordered by subject and predicate, each list sorted."""
        import numpy as np

        g = self._g
        if not len(g.starts):
            return []
        a, b = sorted((t1.toordinal(), t2.toordinal()))
        has = self.v >= 0
        at_a = np.logical_or.reduceat((self.vf <= a) & (self.vt > a) & has, g.starts)
        at_b = np.logical_or.reduceat((self.vf <= b) & (self.vt > b) & has, g.starts)
        changed = np.logical_or.reduceat(at_a != at_b, g.key_starts)
        if subject is not None:
            changed &= g.skey[g.key_starts] == self._code("subjects", subject)
        if predicate is not None:
            changed &= g.pkey[g.key_starts] == self._code("predicates", predicate)
        if not changed.any():
            return []
        in_changed = np.repeat(changed, g.key_sizes)
        subjects, predicates, values = self.names("subjects"), self.names("predicates"), self.names("values")
        firsts = g.key_starts[changed]
        names_s = [subjects[c] for c in g.skey[firsts].tolist()]
        names_p = [predicates[c] for c in g.pkey[firsts].tolist()]
        lists = []
        for at in (at_a, at_b):  # each changed pair's values on that day, as slices of one list
            mask = in_changed & at
            texts = [values[c] for c in g.val[mask].tolist()]
            bounds = np.zeros(int(changed.sum()) + 1, dtype=np.int64)
            np.cumsum(np.add.reduceat(mask.astype(np.int64), g.key_starts)[changed], out=bounds[1:])
            edges = bounds.tolist()
            lists.append([texts[lo:hi] for lo, hi in itertools.pairwise(edges)])
        return list(zip(names_s, names_p, lists[0], lists[1], strict=True))


def _literal(kind: int, text: str) -> str | int | float | bool:
    if kind == 1:
        return int(text)
    if kind == 2:
        return float(text)
    if kind == 3:
        return text == "True"
    return text


class _Text:
    """One string table, decoded once, sliced per entry (for tables too large to turn into a list). The
    offsets are read through a memoryview: indexing one gives a Python int without making a numpy scalar
    (a numpy slice + `tolist` per entry cost ~1 us; this ~0.1 us)."""

    def __init__(self, cols: dict[str, Any], name: str) -> None:
        self.text: str = cols[f"{name}_blob"].tobytes().decode()
        self.offsets = _view(cols[f"{name}_offsets"])

    def __getitem__(self, i: int) -> str:
        return self.text[self.offsets[i] : self.offsets[i + 1]]


def _view(arr: Any) -> memoryview:
    """A read-only Python view of a 1-d numpy column (no copy): `view[i]` is a plain int or bool."""
    import numpy as np

    data: Any = np.ascontiguousarray(arr)
    return memoryview(data).toreadonly()


FactDict = dict[str, Any]  # the fields of chronokg.queries.rows.FactRow, by name, in its field order


class AsOfIndex:
    """Point reads of one subject from the sidecar: `facts_as_of` and `timeline` as the catalog's Cypher gives
    them with the latest releases (no known_at), as dicts of FactRow's fields in its field order.

    Built once per reader, on first use: a dict from subject to code (what the plain-Python floor does; a
    bisect over 100k names costs ~17 string comparisons, each a likely cache miss at 1M facts) and
    memoryviews over the columns (no numpy scalar or slice per call). Costs ~100 ms and ~10 MiB per 100k
    subjects; the columns themselves are not copied."""

    def __init__(self, index: IntervalIndex) -> None:
        import numpy as np

        cols = index._cols
        self.index = index
        self.ids, self.literals = _Text(cols, "ids"), index.names("literals") if "literals_blob" in cols else []
        self.precisions, self.sources = index.names("precisions"), index.names("sources")
        self.subject_has, self.value_has = _view(cols["subject_captions_has"]), _view(cols["value_captions_has"])
        self.subject_captions, self.value_captions = _Text(cols, "subject_captions"), _Text(cols, "value_captions")
        self.lit_kind = cols["lit_kind"].tolist()
        self.subjects = index.names("subjects")
        self.subject_code = {name: code for code, name in enumerate(self.subjects)}
        self.predicates, self.values = index.names("predicates"), index.names("values")
        self.predicate_code = {name: code for code, name in enumerate(self.predicates)}
        # First row of each subject code (and the end): a point lookup is then two reads.
        self.rows_of = _view(np.searchsorted(
            index.s, np.arange(len(self.subjects) + 1, dtype=index.s.dtype)).astype(np.int64))
        self.vf, self.vt, self.p, self.v = (_view(cols[k]) for k in ("vf", "vt", "p", "v"))
        self.lit, self.is_object, self.prec, self.src, self.known = (
            _view(cols[k]) for k in ("lit", "is_object", "prec", "src", "known_from"))

    def facts_as_of(self, subject: str, day: dt.date, predicate: str | None = None) -> list[FactDict]:
        """The subject's facts valid on `day`, in the Cypher's ORDER BY predicate, valid_from (an open start
        last), id."""
        code = self.subject_code.get(subject)
        if code is None:
            return []
        want = -1
        if predicate is not None:
            want = self.predicate_code.get(predicate, -2)
            if want == -2:
                return []
        t, vf, vt, p = day.toordinal(), self.vf, self.vt, self.p
        lo, hi = self.rows_of[code], self.rows_of[code + 1]
        # Zipped slices of the views: iterated in C, where indexing each row's value costs a call per read.
        if want < 0:
            hits = [i for i, a, b in zip(range(lo, hi), vf[lo:hi], vt[lo:hi], strict=True) if a <= t < b]
        else:
            hits = [i for i, a, b, q in zip(range(lo, hi), vf[lo:hi], vt[lo:hi], p[lo:hi], strict=True)
                    if q == want and a <= t < b]
        # Rows run in (predicate, value, valid_from) order: with one hit per predicate, already the answer's.
        if len(hits) > 1 and any(p[a] == p[b] for a, b in itertools.pairwise(hits)):
            ids = self.ids
            hits.sort(key=lambda i: (p[i], vf[i] == NO_START, vf[i], ids[i]))
        return self._rows(subject, code, hits)

    def timeline(self, subject: str, predicate: str | None = None) -> list[FactDict]:
        """Every version of the subject's facts known now, in the Cypher's ORDER BY predicate, valid_from (open
        first), valid_to (open last), known_from (none last), id."""
        code = self.subject_code.get(subject)
        if code is None:
            return []
        want = -1 if predicate is None else self.predicate_code.get(predicate, -2)
        if want == -2:
            return []
        vf, vt, p, known, ids = self.vf, self.vt, self.p, self.known, self.ids
        hits = [i for i in range(self.rows_of[code], self.rows_of[code + 1]) if want < 0 or p[i] == want]
        hits.sort(key=lambda i: (p[i], vf[i], vt[i], known[i] == NO_START, known[i], ids[i]))
        return self._rows(subject, code, hits)

    def two_hop(self, subject: str, day: dt.date, predicate: str | None = None,
                predicate2: str | None = None) -> list[tuple[str, str, str, str, str]]:
        """(subject, predicate, middle, predicate2, target): object links two steps from `subject`, each fact
        valid on `day` and known now, in the Cypher's ORDER BY predicate, middle, predicate2, target. Every
        writer stages a fact's object as an Entity with an OBJECT edge (graph/batch.py, graph/bulk.py), so the
        object id is the Cypher's `m.id`; the conformance suite compares the two."""
        out = [(subject, names_p, middle, p2, target)
               for names_p, middle in self._links(subject, day.toordinal(), predicate)
               for p2, target in self._links(middle, day.toordinal(), predicate2)]
        out.sort()
        return out

    def _links(self, subject: str, t: int, predicate: str | None) -> list[tuple[str, str]]:
        """(predicate, object id) of the subject's object facts valid at day ordinal `t`."""
        code = self.subject_code.get(subject)
        want = -1 if predicate is None else self.predicate_code.get(predicate, -2)
        if code is None or want == -2:
            return []
        vf, vt, p, v, is_obj, names_p, names_v = self.vf, self.vt, self.p, self.v, self.is_object, \
            self.predicates, self.values
        return [(names_p[p[i]], names_v[v[i]]) for i in range(self.rows_of[code], self.rows_of[code + 1])
                if vf[i] <= t < vt[i] and is_obj[i] and (want < 0 or p[i] == want)]

    def _rows(self, subject: str, code: int, hits: list[int]) -> list[FactDict]:
        if not hits:
            return []
        caption = self.subject_captions[code] if self.subject_has[code] else None
        names_p, names_v, kinds, literals = self.predicates, self.values, self.lit_kind, self.literals
        vf, vt, p, v, lit, is_obj, known = self.vf, self.vt, self.p, self.v, self.lit, self.is_object, self.known
        day, precisions, sources, prec, src = dt.date.fromordinal, self.precisions, self.sources, self.prec, self.src
        ids, at = self.ids.text, self.ids.offsets  # `_Text` inlined: a method call per string costs more
        captions, cap_at, has = self.value_captions.text, self.value_captions.offsets, self.value_has
        out = []
        for i in hits:
            start, end, lcode, k = vf[i], vt[i], lit[i], known[i]
            obj: str | None = None
            obj_caption: str | None = None
            if is_obj[i]:
                vcode = v[i]
                obj, obj_caption = names_v[vcode], captions[cap_at[vcode]:cap_at[vcode + 1]] if has[vcode] else None
            out.append({
                "id": ids[at[i]:at[i + 1]], "subject": subject, "subject_caption": caption, "predicate": names_p[p[i]],
                "object": obj, "object_caption": obj_caption,
                "value": None if lcode < 0 else _literal(kinds[lcode], literals[lcode]),
                "valid_from": None if start == NO_START else day(start),
                "valid_to": None if end == NO_END else day(end), "precision": precisions[prec[i]],
                "known_from": None if k == NO_START else day(k), "known_to": None, "source_id": sources[src[i]],
            })
        return out
