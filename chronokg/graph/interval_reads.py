"""Reading the interval sidecar: `changed_between` over its columns and one subject's point reads.

Why apart from `interval_index`: that module writes and stamps the sidecar (at a writer's checkpoint);
this one only answers from a loaded copy, on the read path of every query that uses it.
"""

from __future__ import annotations

import datetime as dt
import itertools
from dataclasses import dataclass
from typing import Any

NO_START = -(2**31) + 1  # an open start: before every day
NO_END = 2**31 - 1  # an open end: after every day
FIXED_TABLE_BYTES = 64 * 2**20  # the most a string table's fixed-width copy may take (`IntervalIndex._fixed`)
ChangeColumns = tuple[list[str], list[str], list[list[str]], list[list[str]]]


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
    singletons: bool  # every value group is one row (then a row mask is already a group mask)


class IntervalIndex:
    """The loaded sidecar: answers `changed_between` as the catalog's Cypher does."""

    def __init__(self, cols: dict[str, Any]) -> None:
        import numpy as np

        self.s, self.p, self.v, self.vf, self.vt = (cols[k] for k in ("s", "p", "v", "vf", "vt"))
        self._cols = cols
        self._names: dict[str, list[str]] = {}
        self._arrays: dict[str, Any] = {}
        self._fixed_tables: dict[str, Any] = {}
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
                          np.diff(np.append(key_starts, len(starts))), len(starts) == n)
        # valid_from, or "never" for a row without a value (it is in no day's set): one comparison fewer a day.
        self._starts = np.where(self.v >= 0, self.vf, NO_END)

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

    def changed_columns(self, t1: dt.date, t2: dt.date, subject: str | None = None,
                        predicate: str | None = None) -> ChangeColumns:
        """`changed_between`'s answer as four columns: subjects, predicates, the values on the earlier day and on
        the later day (each list sorted), for the (subject, predicate) pairs where the sets differ, ordered by
        subject and predicate. The catalog builds its rows from them without a tuple per row.

        The scan is numpy over every row; per answered pair only the lists it returns are made in Python
        (names taken through object arrays in C). At 10M facts a 3-year window answers ~770k pairs, and
        those objects, not the scan, are most of the cost (benchmarks/README.md)."""
        import numpy as np

        g = self._g
        if not len(g.starts):
            return [], [], [], []
        a, b = sorted((t1.toordinal(), t2.toordinal()))
        at_a, at_b = self._valid_groups(a), self._valid_groups(b)
        changed = self._changed_keys(at_a, at_b, subject, predicate)
        firsts = g.key_starts[changed]
        if not len(firsts):
            return [], [], [], []
        in_changed = np.repeat(changed, g.key_sizes)
        before, after = (self._value_lists(in_changed & at, changed) for at in (at_a, at_b))
        return (self._objects("subjects")[g.skey[firsts]].tolist(),
                self._objects("predicates")[g.pkey[firsts]].tolist(), before, after)

    def _changed_keys(self, at_a: Any, at_b: Any, subject: str | None, predicate: str | None) -> Any:
        """Which (subject, predicate) keys hold different value sets on the two days (and pass the filters)."""
        import numpy as np

        g = self._g
        changed = np.logical_or.reduceat(at_a != at_b, g.key_starts)
        if subject is not None:
            changed &= g.skey[g.key_starts] == self._code("subjects", subject)
        if predicate is not None:
            changed &= g.pkey[g.key_starts] == self._code("predicates", predicate)
        return changed

    def _value_lists(self, mask: Any, changed: Any) -> list[list[str]]:
        """Each changed key's values among the groups in `mask` (those valid on one day), in code order (the
        strings' order), each key a list of its own."""
        import numpy as np

        g = self._g
        firsts = g.key_starts[changed]  # each changed key's groups: firsts[i] .. lasts[i]
        lasts = firsts + g.key_sizes[changed] - 1
        # Groups valid up to each group (a cumsum, then two takes: about half a reduceat over every key); int32
        # holds any count of rows (their codes are int32 too) in half the memory traffic.
        upto = np.cumsum(mask, dtype=np.int32)
        counts = upto[lasts] - np.where(firsts > 0, upto[firsts - 1], 0)
        codes = g.val[mask]
        if not len(counts) or counts.max() <= 1:  # at most one value a day per key, a fact's usual shape
            if len(codes) == len(counts):
                return [[t] for t in self._texts("values", codes)]
            ones = counts == 1
            every = np.full(len(counts), -1, dtype=np.int64)
            every[ones] = codes
            return [[t] if one else [] for t, one in zip(self._texts("values", every), ones.tolist(), strict=True)]
        bounds = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=bounds[1:])
        texts = self._texts("values", codes)
        return [texts[lo:hi] for lo, hi in itertools.pairwise(bounds.tolist())]

    def _texts(self, table: str, codes: Any) -> list[str]:
        """The strings of `codes` (code -1: some string, for the caller to drop), as new str objects from the
        table's fixed-width copy where it has one. Why: at 10M facts the value table holds ~1M strings over
        tens of MB, and touching one at a random code is a cache and TLB miss (~0.7 us a string on the loaded
        2-core VM, most of a `changed_between` answer); new strings made in answer order lie together."""
        fixed = self._fixed(table)
        if fixed is not None:
            texts: list[str] = fixed[codes].tolist()
            return texts
        names = self.names(table)
        return [names[c] for c in codes.tolist()]

    def _fixed(self, table: str) -> Any:
        """The table as one numpy fixed-width text array (an empty entry last, for code -1), or None where it
        would exceed `FIXED_TABLE_BYTES` or a string ends in NUL (which numpy's fixed width drops)."""
        import numpy as np

        if table not in self._fixed_tables:
            names = self.names(table)
            width = max(1, max(map(len, names), default=1))
            fits = 4 * width * (len(names) + 1) <= FIXED_TABLE_BYTES
            fixed = None
            if fits and not any(t.endswith("\x00") for t in names):
                fixed = np.array([*names, ""], dtype=f"U{width}")
            self._fixed_tables[table] = fixed
        return self._fixed_tables[table]

    def _valid_groups(self, day: int) -> Any:
        """Whether each (subject, predicate, value) group has a version valid on day ordinal `day`."""
        import numpy as np

        valid = self._starts <= day
        valid &= self.vt > day
        return valid if self._g.singletons else np.logical_or.reduceat(valid, self._g.starts)

    def _objects(self, table: str) -> Any:
        """A string table as a numpy object array (its strings shared with `names`): a fancy index takes
        the names of many codes in one C loop."""
        import numpy as np

        if table not in self._arrays:
            names = self.names(table)
            arr = np.empty(len(names), dtype=object)
            arr[:] = names
            self._arrays[table] = arr
        return self._arrays[table]


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


class _SortedCodes:
    """A sorted name table's codes by bisection, for the first `LOOKUPS` lookups; then `owner.subject_code`
    becomes a dict of them (a lookup in C, no bisection: what a long-lived reader wants)."""

    LOOKUPS = 256

    def __init__(self, owner: AsOfIndex, names: list[str]) -> None:
        self.owner, self.names, self.left = owner, names, self.LOOKUPS

    def get(self, name: str, default: int | None = None) -> int | None:
        import bisect

        self.left -= 1
        if self.left <= 0:
            codes = self.owner.subject_code = {n: code for code, n in enumerate(self.names)}
            return codes.get(name, default)
        i = bisect.bisect_left(self.names, name)
        return i if i < len(self.names) and self.names[i] == name else default

    def __getitem__(self, name: str) -> int:
        code = self.get(name)
        if code is None:
            raise KeyError(name)
        return code


def _view(arr: Any) -> memoryview:
    """A read-only Python view of a 1-d numpy column (no copy): `view[i]` is a plain int or bool."""
    import numpy as np

    data: Any = np.ascontiguousarray(arr)
    return memoryview(data).toreadonly()


FactDict = dict[str, Any]  # the fields of chronokg.queries.rows.FactRow, by name, in its field order


# Rows of one subject above which `AsOfIndex.facts_as_of` tests them as arrays: below it the per-row loop is
# cheaper than numpy's fixed cost per call (measured: equal at about 50 rows).
DEEP = 48


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
        # By bisection until the reader has asked enough to pay for the dict (~60 ms per 100k subjects, most of a
        # one-shot reader's first answer), then the dict, which replaces this attribute.
        self.subject_code: dict[str, int] | _SortedCodes = _SortedCodes(self, self.subjects)
        self.predicates, self.values = index.names("predicates"), index.names("values")
        self.predicate_code = {name: code for code, name in enumerate(self.predicates)}
        # First row of each subject code (and the end): a point lookup is then two reads.
        self.rows_of = _view(np.searchsorted(
            index.s, np.arange(len(self.subjects) + 1, dtype=index.s.dtype)).astype(np.int64))
        self.vf, self.vt, self.p, self.v = (_view(cols[k]) for k in ("vf", "vt", "p", "v"))
        self.arrays = cols["vf"], cols["vt"], cols["p"]  # a deep subject's rows are tested as arrays
        self.flatnonzero = np.flatnonzero
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
        # Zipped slices of the views: iterated in C, where indexing each row's value costs a call per read. A
        # subject with a long history is tested as arrays instead: a few vector operations, not a Python
        # comparison per version, so a point read stays flat in history depth (benchmarks/bench_depth.py).
        if hi - lo > DEEP:
            vfa, vta, pa = self.arrays
            mask = (vfa[lo:hi] <= t) & (vta[lo:hi] > t)
            if want >= 0:
                mask &= pa[lo:hi] == want
            hits = (self.flatnonzero(mask) + lo).tolist()
        elif want < 0:
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
