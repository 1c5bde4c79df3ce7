"""The interval sidecar of a bulk load, built from the columns the load already holds.

Why: building it by a Cypher read of every current fact after the save cost 6.9 s and
~1.5 GB at a million facts (the whole of the load's peak-memory miss, benchmarks/README.md).
The loader has every new fact's columns in hand, and every change to a stored
fact passes through it as an update; with the sidecar of the store before the load, that
is the whole state.

What "current" means is the FACTS query's: `known_to IS NULL` and a subject and predicate.
A superseded or corrected fact is an update setting `known_to` (its row leaves); a second
release's facts are new rows; `releases drop` and other Cypher writes go through
`KgliteStore.write`, whose checkpoint rebuilds the sidecar by Cypher, so a load after them
starts from an exact sidecar again.

Where the merge cannot be exact, `finish` returns None and the store falls back to the
Cypher build (`interval_index.refresh`): the store held facts but no sidecar describing
them (an older store, writes since its last one); an update of a stored fact that was not
current that touches `known_to`, `subject_id` or `predicate` (it might become current); a
day that is not a date. Captions are read from the graph (entities with one only).
"""

from __future__ import annotations

import datetime as dt
from itertools import chain
from typing import Any, Protocol

from chronokg.graph import interval_index, interval_reads, schema
from chronokg.graph.interval_reads import NO_END, NO_START

DAYS = {"valid_from": ("a", NO_START), "valid_to": ("b", NO_END), "known_from": ("k", NO_START)}
TEXT = {"subject_id": "s", "predicate": "p", "object_id": "o", "value": "lit", "precision": "prec",
        "source_id": "src"}


class _Frame(Protocol):
    label: str
    ids: list[str]
    columns: dict[str, list[Any]]
    days: dict[str, Any] | None


class _Plan(Protocol):
    @property
    def frames(self) -> Any: ...

    @property
    def updates(self) -> Any: ...


class SidecarFeed:
    """Collects what each part's plan adds to and changes in the facts; `finish` gives the sidecar's arrays.

    `previous`: the arrays of the sidecar of the store before the load (`{}` when it held no fact),
    or None when there is none to trust (then `finish` returns None: the Cypher build).
    """

    def __init__(self, previous: dict[str, Any] | None) -> None:
        self.previous = previous
        self.exact = previous is not None
        self.parts: list[dict[str, Any]] = []
        self.updates: list[dict[str, Any]] = []

    def plan(self, plan: _Plan) -> None:
        """Note a part's validated plan (before it is applied)."""
        if not self.exact:
            return
        for frame in plan.frames:
            if frame.label != schema.FACT or not frame.ids:
                continue
            n = len(frame.ids)
            # Held until the end of the load (10M facts): ids as one UTF-8 blob, no literal column when none.
            lits = frame.columns.get("value")
            cols: dict[str, Any] = {"id": _Texts(frame.ids), "lit": lits if lits else _Nones(n)}
            for key, name in TEXT.items():
                if name != "lit":  # text columns as codes into their distinct values: one string per value,
                    cols[name] = _Coded(frame.columns.get(key) or [None] * n)  # not one per row (10M rows)
            ordinals = frame.days or {}  # converted once, as the facts were staged (`FactTable.day_ordinals`)
            for key, (name, missing) in DAYS.items():
                days = ordinals.get(key)
                if days is None:
                    days = interval_index._days(frame.columns.get(key) or [None] * n, missing)
                if days is None:
                    self.exact = False
                    return
                cols[name] = days
            retracted = frame.columns.get("known_to")
            cols["gone"] = _Nones(n, False) if not retracted else [x is not None for x in retracted]
            self.parts.append(cols)
        for label, updates in plan.updates:
            if label == schema.FACT:
                self.updates.extend(updates)

    def finish(self, graph: Any) -> dict[str, Any] | None:
        """The sidecar's arrays for the graph after the load, or None (the Cypher build must answer)."""
        import numpy as np

        if not self.exact or self.previous is None:
            return None
        parts = [_previous_part(self.previous), *self.parts] if self.previous else self.parts
        if parts and not self.updates and all(_columnar(part) for part in parts):
            return _finish_columns(parts, graph)
        rows = _previous_rows(self.previous) if self.previous else _empty()
        for name in list(rows):
            cols = [rows[name], *(part[name] for part in self.parts)]
            if isinstance(rows[name], np.ndarray):
                rows[name] = np.concatenate(cols)
            else:
                rows[name] = [x for col in cols for x in (col.values() if isinstance(col, _Packed) else col)]
            for part in self.parts:
                del part[name]  # each column's parts go as soon as it is joined
        self.parts.clear()
        if self.updates and not _apply(rows, self.updates):
            return None
        keep = [i for i, (gone, s, p) in enumerate(zip(rows["gone"], rows["s"], rows["p"], strict=True))
                if not gone and s is not None and p is not None]
        if len(keep) < len(rows["id"]):
            rows = {k: (v[keep] if isinstance(v, np.ndarray) else [v[i] for i in keep]) for k, v in rows.items()}
        rows["v"] = _values(graph, rows["o"], rows["lit"])
        return interval_index.assemble(rows.__getitem__, graph)


class _Packed:
    """A column held compactly through the load, expanded by `values` at its end."""

    def values(self) -> list[Any]:
        raise NotImplementedError


class _Nones(_Packed):
    """A column of one value throughout (no literal, no retraction): only its length."""

    def __init__(self, n: int, value: Any = None) -> None:
        self.n, self.value = n, value

    def values(self) -> list[Any]:
        return [self.value] * self.n


class _Texts(_Packed):
    """Distinct texts (fact ids) as one UTF-8 blob and character offsets."""

    def __init__(self, texts: list[str], packed: dict[str, Any] | None = None) -> None:
        import numpy as np

        if packed is None:  # as `interval_index._strings`, for texts that are all `str` (fact ids): no copy per id
            offsets = np.zeros(len(texts) + 1, dtype=np.int64)
            np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), out=offsets[1:])
            packed = {"blob": np.frombuffer("".join(texts).encode(), dtype=np.uint8), "offsets": offsets}
        self.blob, self.offsets = packed["blob"], packed["offsets"]

    def values(self) -> list[Any]:
        return interval_reads._table({"t_blob": self.blob, "t_offsets": self.offsets}, "t")


class _Coded(_Packed):
    """A text column as int32 codes into its distinct values."""

    def __init__(self, values: list[Any], coded: tuple[Any, list[Any]] | None = None) -> None:
        import numpy as np
        import pandas as pd

        first = values[0] if values else None
        if coded is None and values and type(first) in (str, type(None)) and values.count(first) == len(values):
            # one value throughout (a part's release, its precision): a count in C, no hash per row
            coded = np.full(len(values), -1 if first is None else 0, dtype=np.int32), [] if first is None else [first]
        if coded is None:
            codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=True)
            coded = codes.astype("int32"), uniques.tolist()
        self.codes = coded[0]
        self.table = [*coded[1], None]  # code -1 picks the last: None

    def values(self) -> list[Any]:
        table = self.table
        return [table[c] for c in self.codes.tolist()]


# --- the columnar finish: a load with no update of a stored fact and no literal value (a first load of
# object facts, as bench_store's 10M): every column stays codes and arrays, ids stay one byte blob.


def _columnar(part: dict[str, Any]) -> bool:
    """Whether a part's columns can be joined without expanding them: no literal, ASCII ids."""
    lit, ids = part["lit"], part["id"]
    return (isinstance(lit, _Nones) or all(x is None for x in lit)) and len(ids.blob) == int(ids.offsets[-1])


def _previous_part(cols: dict[str, Any]) -> dict[str, Any]:
    """The previous sidecar's rows as one part of the load (all current; codes into its own tables)."""
    import numpy as np

    names = {t: interval_reads._table(cols, t) for t in ("subjects", "predicates", "values", "precisions",
                                                           "sources")}
    n = len(cols["s"])
    lit = cols["lit"]
    return {
        "id": _Texts([], {"blob": cols["ids_blob"], "offsets": cols["ids_offsets"]}),
        "s": _Coded([], (cols["s"], names["subjects"])), "p": _Coded([], (cols["p"], names["predicates"])),
        "o": _Coded([], (np.where(cols["is_object"], cols["v"], -1), names["values"])),
        "prec": _Coded([], (cols["prec"], names["precisions"])), "src": _Coded([], (cols["src"], names["sources"])),
        "lit": _Nones(n) if not (lit >= 0).any() else [True],  # a literal: not columnar (`_columnar`)
        "a": cols["vf"], "b": cols["vt"], "k": cols["known_from"], "gone": _Nones(n, False),
    }


def _join_codes(parts: list[_Coded]) -> interval_index.Codes | None:
    """One column's parts as codes into the sorted union of their tables; None if a value is not text."""
    import numpy as np
    import pandas as pd

    tables = [part.table[:-1] for part in parts]
    every = np.fromiter(chain.from_iterable(tables), dtype=object, count=sum(map(len, tables)))  # end to end
    if not interval_index.all_text(every):
        return None  # as `interval_index.assemble`: what is not text, the Cypher answers
    codes, uniques = pd.factorize(every, sort=True)  # sorted as `sorted` sorts text
    names = uniques.tolist()
    out = np.empty(sum(len(p.codes) for p in parts), dtype=np.int64)
    at = start = 0
    for part, table in zip(parts, tables, strict=True):
        remap = np.append(codes[start: start + len(table)], -1).astype(np.int64)  # -1 picks the last
        start += len(table)
        out[at: at + len(part.codes)] = remap[part.codes]
        at += len(part.codes)
    return interval_index.Codes(out, names)


def _only(col: interval_index.Codes, keep: Any) -> interval_index.Codes:
    """The rows `keep` of a coded column, its table cut to the values they use (as `_factor` of them)."""
    import numpy as np

    codes = col.codes[keep]
    used = np.unique(codes[codes >= 0])
    if len(used) == len(col.names):
        return interval_index.Codes(codes, col.names)
    remap = np.full(len(col.names) + 1, -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    return interval_index.Codes(remap[codes], [col.names[i] for i in used.tolist()])


def _finish_columns(parts: list[dict[str, Any]], graph: Any) -> dict[str, Any] | None:
    """`finish` for a load `_columnar` allows: the same arrays, without a Python object per row."""
    import numpy as np

    cols: dict[str, Any] = {}
    for name in TEXT.values():
        if name != "lit":
            cols[name] = _join_codes([part[name] for part in parts])
            if cols[name] is None:
                return None
    for name, _ in DAYS.values():
        cols[name] = np.concatenate([part[name] for part in parts])
    gone = np.concatenate([np.zeros(p["gone"].n, dtype=bool) if isinstance(p["gone"], _Nones)
                           else np.array(p["gone"], dtype=bool) for p in parts])
    shift = np.cumsum([0, *(int(p["id"].offsets[-1]) for p in parts[:-1])])
    ids = interval_index.PackedTexts(
        np.concatenate([p["id"].blob for p in parts]),
        np.concatenate([[0], *(p["id"].offsets[1:] + at for p, at in zip(parts, shift, strict=True))]))
    for part in parts:
        part.clear()  # each part's columns go as soon as they are joined
    keep = ~gone & (cols["s"].codes >= 0) & (cols["p"].codes >= 0)
    if not keep.all():
        rows = np.flatnonzero(keep)
        ids = ids.take(rows)
        cols = {k: _only(v, rows) if isinstance(v, interval_index.Codes) else v[rows] for k, v in cols.items()}
    cols.update(id=ids, v=cols["o"], lit=interval_index.Codes(np.full(len(ids), -1, dtype=np.int64), []))
    return interval_index.assemble(cols.__getitem__, graph)


def _empty() -> dict[str, Any]:
    import numpy as np

    out: dict[str, Any] = {name: [] for name in ("id", *TEXT.values(), "gone")}
    out.update({name: np.zeros(0, dtype=np.int32) for name, _ in DAYS.values()})
    return out


def _previous_rows(cols: dict[str, Any]) -> dict[str, Any]:
    """The previous sidecar's rows as the columns `plan` collects (all of them current)."""
    names = {t: interval_reads._table(cols, t) for t in ("subjects", "predicates", "values", "ids",
                                                           "precisions", "sources")}
    literals = interval_reads._table(cols, "literals") if "literals_blob" in cols else []
    kinds = cols["lit_kind"].tolist()
    typed = [interval_reads._literal(k, t) for k, t in zip(kinds, literals, strict=True)]
    values = names["values"]
    return {
        "id": names["ids"], "s": [names["subjects"][c] for c in cols["s"].tolist()],
        "p": [names["predicates"][c] for c in cols["p"].tolist()],
        "o": [values[c] if obj else None for c, obj in zip(cols["v"].tolist(), cols["is_object"].tolist(),
                                                           strict=True)],
        "lit": [None if c < 0 else typed[c] for c in cols["lit"].tolist()],
        "prec": [names["precisions"][c] for c in cols["prec"].tolist()],
        "src": [names["sources"][c] for c in cols["src"].tolist()],
        "a": cols["vf"].copy(), "b": cols["vt"].copy(), "k": cols["known_from"].copy(),
        "gone": [False] * len(cols["s"]),
    }


def _apply(rows: dict[str, Any], updates: list[dict[str, Any]]) -> bool:
    """Apply the load's fact updates in order; False where one cannot be followed exactly."""
    wanted = {u["id"] for u in updates}
    where = {fid: i for i, fid in enumerate(rows["id"]) if fid in wanted}
    for u in updates:
        i = where.get(u["id"])
        props = u["props"]
        if i is None:
            if props.keys() & {"known_to", "subject_id", "predicate"}:
                return False  # a stored fact that was not current, and might be now
            continue
        for key, value in props.items():
            if key == "known_to":
                rows["gone"][i] = value is not None
            elif key in TEXT:
                rows[TEXT[key]][i] = value
            elif key in DAYS:
                name, missing = DAYS[key]
                if value is not None and type(value) is not dt.date:
                    return False
                rows[name][i] = missing if value is None else value.toordinal()
    return True


def _values(graph: Any, objects: list[Any], literals: list[Any]) -> list[Any]:
    """`coalesce(object_id, toString(value))`, with toString done by the engine (its text, exactly)."""
    odd = list({(type(x), x): x for x in literals if x is not None and type(x) is not str}.values())
    text: dict[tuple[type, Any], Any] = {}
    if odd:
        got = graph.cypher("UNWIND $xs AS x RETURN toString(x) AS t", params={"xs": odd}).to_list()
        text = {(type(x), x): r["t"] for x, r in zip(odd, got, strict=True)}
    return [o if o is not None else (None if x is None else x if type(x) is str else text[(type(x), x)])
            for o, x in zip(objects, literals, strict=True)]


__all__ = ["SidecarFeed"]
