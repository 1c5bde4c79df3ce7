"""Columnar fact staging: many facts of one load as columns, without a pydantic object or a dict per fact.

`GraphBatch.fact(Fact(...))` costs a validated model, a property dict and several
merges per fact: at a million facts that is most of a load's Python time. A
`FactTable` keeps one list per property, computes the same ids (`Fact.id`),
checks the same rules (`Fact`'s validator, `graph.merge` for a fact staged
twice) and hands the bulk writer (`graph.bulk`) columns it can pass to the
engine's native loader as they are.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any, cast

from chronokg.errors import InputError
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch, conflict_error, origin_text
from chronokg.graph.dates import Precision, id_precision
from chronokg.graph.interval_reads import NO_END, NO_START
from chronokg.graph.merge import DEFAULT_POLICY, ORIGIN, Policy, merge
from chronokg.graph.model import Fact, Scalar, Source

# The stored columns of a fact, in `Fact.node_properties` order (attrs follow).
COLUMNS = ("subject_id", "predicate", "object_id", "value", "valid_from", "valid_to", "precision", "known_from",
           "known_to", "source_id", "source_kind")


def _missing(col: list[Any]) -> Any:
    """Which items of a column are None, as a numpy mask (one C comparison per item)."""
    import numpy as np

    if col.count(None) == len(col):
        return np.ones(len(col), dtype=bool)
    return np.equal(np.fromiter(col, dtype=object, count=len(col)), cast(Any, None))


class FactTable:
    """Facts staged as columns (one load, any number of source releases).

    `add` checks what `Fact` checks and returns the fact's id, equal to `Fact.id`;
    the same fact added again merges by `policy` (its known time becomes the
    earliest asserted), and a conflicting value is an `InputError` naming both
    records (`at` names the current record, as on `GraphBatch`).
    """

    def __init__(self, policy: Policy = DEFAULT_POLICY) -> None:
        self.policy = policy
        self.ids: list[str] = []
        self.columns: dict[str, list[Any]] = {c: [] for c in COLUMNS}
        self._cols = [self.columns[c] for c in COLUMNS]
        self.attrs: dict[str, list[Any]] = {}
        self.origins: list[str | None] = []
        self.entities: dict[str, str | None] = {}  # id -> kind (the first kind given stays)
        self.entity_origins: dict[str, str | None] = {}  # id -> the record that first named it
        self.sources: dict[str, Source] = {}
        self._row: dict[str, int] = {}  # filled lazily (`_index`)
        self._days: dict[str, list[Any]] | None = {"valid_from": [], "valid_to": [], "known_from": []}
        self._days_n = 0  # facts `_days` covers
        self._origin: str | None = None
        self._day: dict[dt.date, str] = {}

    def at(self, path: str, record: str | int) -> None:
        """Name the record being staged: facts first staged now remember it, conflicts name it."""
        self._origin = origin_text(path, record)

    def source(self, source: Source) -> None:
        self.sources.setdefault(source.id, source)

    def entity(self, entity_id: str, kind: str | None = None) -> None:
        if entity_id not in self.entities:
            self.entity_origins[entity_id] = self._origin
            self.entities[entity_id] = kind
        elif self.entities[entity_id] is None:
            self.entities[entity_id] = kind

    def _text(self, value: object) -> str:
        """`str(value)` as `stable_id` writes it, dates from a cache (a load repeats few distinct days)."""
        if value is None:
            return ""
        if type(value) is dt.date:
            text = self._day.get(value)
            if text is None:
                text = self._day[value] = value.isoformat()
            return text
        return str(value)

    def _texts(self, col: list[Any]) -> list[str]:
        """`_text` of every item of a column, by column: text kept, dates through the cache."""
        import numpy as np

        kinds = set(map(type, col))
        if kinds <= {str}:
            return col
        if kinds <= {str, type(None)}:  # None as "", by a numpy mask (all None: no pass at all)
            if col.count(None) == len(col):
                return [""] * len(col)
            items = np.fromiter(col, dtype=object, count=len(col))
            items[np.equal(items, cast(Any, None))] = ""
            out: list[str] = items.tolist()
            return out
        if kinds <= {dt.date, type(None)}:
            day = self._day
            for d in set(col) - day.keys() - {None}:
                day[d] = d.isoformat()
            texts: dict[dt.date | None, str] = {None: ""}
            texts.update(day.items())
            return list(map(texts.__getitem__, col))
        return [self._text(v) for v in col]

    def add(self, subject: str, predicate: str, *, source_id: str, source_kind: str, object: str | None = None,
            value: str | int | float | bool | None = None, valid_from: dt.date | None = None,
            valid_to: dt.date | None = None, precision: Precision | str = Precision.DAY,
            known_from: dt.date | None = None, known_to: dt.date | None = None,
            attrs: dict[str, Scalar] | None = None, subject_kind: str | None = None,
            object_kind: str | None = None) -> str:
        """Stage one fact with its subject and object entities; returns its id (`Fact.id`)."""
        if (object is None) == (value is None):
            raise ValueError("a fact has exactly one of object (an entity id) or value (a literal)")
        if valid_from is not None and valid_to is not None and valid_to < valid_from:
            raise ValueError(f"valid_to {valid_to} is before valid_from {valid_from}")
        if known_from is not None and known_to is not None and known_to < known_from:
            raise ValueError(f"known_to {known_to} is before known_from {known_from}")
        prec = precision.value if isinstance(precision, Precision) else Precision(precision).value
        text = self._text
        key = "\x1f".join((source_kind, subject, predicate, text(object), text(value), text(valid_from),
                           text(valid_to), id_precision(prec)))
        fid = "f-" + hashlib.sha1(key.encode()).hexdigest()[:16]
        entities = self.entities
        if subject not in entities:
            entities[subject] = subject_kind
            self.entity_origins[subject] = self._origin
        elif subject_kind is not None and entities[subject] is None:
            entities[subject] = subject_kind
        if object is not None:
            if object not in entities:
                entities[object] = object_kind
                self.entity_origins[object] = self._origin
            elif object_kind is not None and entities[object] is None:
                entities[object] = object_kind
        row = self._index().get(fid)
        if row is not None:
            self._merge_again(row, fid, known_from, known_to, source_id, attrs)
            return fid
        ids = self.ids
        self._row[fid] = len(ids)
        ids.append(fid)
        self._days = None
        c = self._cols
        c[0].append(subject)
        c[1].append(predicate)
        c[2].append(object)
        c[3].append(value)
        c[4].append(valid_from)
        c[5].append(valid_to)
        c[6].append(prec)
        c[7].append(known_from)
        c[8].append(known_to)
        c[9].append(source_id)
        c[10].append(source_kind)
        self.origins.append(self._origin)
        if attrs or self.attrs:
            self._add_attrs(attrs or {})
        return fid

    def add_many(self, subjects: Sequence[str], predicates: Sequence[str], *, source_id: str, source_kind: str,
                 objects: Sequence[str | None] | None = None,
                 values: Sequence[str | int | float | bool | None] | None = None,
                 valid_from: Sequence[dt.date | None] | None = None, valid_to: Sequence[dt.date | None] | None = None,
                 precision: Precision | str = Precision.DAY, known_from: dt.date | None = None) -> list[str]:
        """Stage many facts of one release at once, as columns: the same as `add` row by row, ids included.

        The columns' i-th items are fact i (None where a fact has no object, value or date);
        the release, precision and known time are shared. Checked and built column by column
        (numpy masks, each distinct day converted once, no Python frame per fact but the id's
        hash), which is what makes a million facts cheap; a call that repeats a staged fact goes
        row by row through `add`, so merging and its errors are `add`'s.
        """
        import numpy as np

        n = len(subjects)
        none: list[Any] = [None] * n
        objs = list(objects) if objects is not None else none
        vals = list(values) if values is not None else none
        starts = list(valid_from) if valid_from is not None else none
        ends = list(valid_to) if valid_to is not None else none
        if not n == len(predicates) == len(objs) == len(vals) == len(starts) == len(ends):
            raise ValueError("add_many: every column needs one item per fact")
        prec = precision.value if isinstance(precision, Precision) else Precision(precision).value
        a_text, a_day = self._day_column(starts, NO_START)
        b_text, b_day = self._day_column(ends, NO_END)
        both = _missing(objs) == _missing(vals)
        if a_day is None or b_day is None:  # not all days: compared as `add` compares them
            self._days = None
            reversed_ = np.array([a is not None and b is not None and b < a for a, b in zip(starts, ends, strict=True)],
                                 dtype=bool)
        else:
            reversed_ = b_day < a_day  # a missing day is before or after every day: never reversed
        bad = np.flatnonzero(both | reversed_)
        if len(bad):  # add's words, for the first bad fact
            i = int(bad[0])
            if both[i]:
                raise ValueError("a fact has exactly one of object (an entity id) or value (a literal)")
            raise ValueError(f"valid_to {ends[i]} is before valid_from {starts[i]}")
        head, tail, sha1 = source_kind + "\x1f", "\x1f" + id_precision(prec), hashlib.sha1
        keys = zip(subjects, predicates, self._texts(objs), self._texts(vals), a_text, b_text, strict=True)
        ids = ["f-" + sha1(f"{head}{s}\x1f{p}\x1f{o}\x1f{v}\x1f{a}\x1f{b}{tail}".encode()).hexdigest()[:16]
               for s, p, o, v, a, b in keys]
        if len(set(ids)) < n or (self.ids and not self._index().keys().isdisjoint(ids)):
            self._days = None  # row by row from here on: the sidecar converts the days itself
            return [self.add(s, p, source_id=source_id, source_kind=source_kind, object=o, value=v, valid_from=a,
                             valid_to=b, precision=prec, known_from=known_from)
                    for s, p, o, v, a, b in zip(subjects, predicates, objs, vals, starts, ends, strict=True)]
        entities = self.entities
        named = dict.fromkeys(chain.from_iterable(zip(subjects, objs, strict=True)))  # no Python frame per fact
        named.pop(None, None)
        new = list(named) if not entities else [e for e in named if e not in entities]
        entities.update(dict.fromkeys(new))
        self.entity_origins.update(dict.fromkeys(new, self._origin))
        if (self._days is not None and len(self.ids) == self._days_n and a_day is not None and b_day is not None
                and (known_from is None or type(known_from) is dt.date)):
            k_day = np.full(n, NO_START if known_from is None else known_from.toordinal(), dtype=np.int32)
            for name, col in (("valid_from", a_day), ("valid_to", b_day), ("known_from", k_day)):
                self._days[name].append(col)
            self._days_n += n
        else:
            self._days = None
        self.ids.extend(ids)
        for col, items in zip(self._cols, (subjects, predicates, objs, vals, starts, ends, [prec] * n,
                                           [known_from] * n, none, [source_id] * n, [source_kind] * n),
                              strict=True):
            col.extend(items)
        self.origins.extend([self._origin] * n)
        for col in self.attrs.values():
            col.extend(none)
        return ids

    def _day_column(self, col: list[Any], missing: int) -> tuple[Any, Any]:
        """A column of days as the id's texts (`_text`) and as day ordinals (`missing` for None), each distinct
        day converted once (one hash per row, in C); (texts, None) if an item is not a day."""
        import numpy as np
        import pandas as pd

        codes, uniques = pd.factorize(pd.Series(col, dtype=object), use_na_sentinel=True)
        days = uniques.tolist()
        if any(type(d) is not dt.date for d in days) or int((codes < 0).sum()) != col.count(None):
            return [self._text(v) for v in col], None  # a `datetime`, text or NaN: `add`'s path, item by item
        texts = np.array([d.isoformat() for d in days] + [""], dtype=object)  # code -1 (None) picks the last
        ordinals = np.array([d.toordinal() for d in days] + [missing], dtype=np.int32)
        return texts[codes], ordinals[codes]

    def day_ordinals(self) -> dict[str, Any] | None:
        """valid_from, valid_to and known_from of every staged fact as int32 day ordinals (the interval
        sidecar's form), when every fact came by `add_many` unchanged since; else None."""
        import numpy as np

        if self._days is None or self._days_n != len(self.ids) or not self.ids:
            return None
        for name, parts in self._days.items():
            if len(parts) > 1:
                self._days[name] = [np.concatenate(parts)]
        return {name: parts[0] for name, parts in self._days.items()}

    def _index(self) -> dict[str, int]:
        """Fact id -> row, built only once a row-by-row `add` or a second `add_many` needs it."""
        if len(self._row) < len(self.ids):
            first = len(self._row)
            self._row.update(zip(self.ids[first:], range(first, len(self.ids)), strict=True))
        return self._row

    def _add_attrs(self, attrs: dict[str, Scalar]) -> None:
        n = len(self.ids)
        for name, v in attrs.items():
            col = self.attrs.get(name)
            if col is None:
                col = self.attrs[name] = [None] * (n - 1)
            col.append(v)
        for col in self.attrs.values():
            if len(col) < n:
                col.append(None)

    def add_fact(self, fact: Fact, subject_kind: str | None = None, object_kind: str | None = None) -> str:
        return self.add(fact.subject, fact.predicate, source_id=fact.source_id, source_kind=fact.source_kind,
                        object=fact.object, value=fact.value, valid_from=fact.valid_from, valid_to=fact.valid_to,
                        precision=fact.precision, known_from=fact.known_from, known_to=fact.known_to,
                        attrs=dict(fact.attrs), subject_kind=subject_kind, object_kind=object_kind)

    def _merge_again(self, row: int, fid: str, known_from: dt.date | None, known_to: dt.date | None,
                     source_id: str, attrs: dict[str, Scalar] | None) -> None:
        """The same statement staged again: merge its release-dependent properties (rare: a dict per repeat)."""
        current = self.row(row)
        staged: dict[str, Any] = {"known_from": known_from, "source_id": source_id, **(attrs or {})}
        if known_to is not None:
            staged["known_to"] = known_to
        if self._origin is not None:
            staged[ORIGIN] = self._origin
        staged = {k: v for k, v in staged.items() if v is not None}
        outcome = merge(schema.FACT, fid, current, staged, self.policy)
        if outcome.conflicts:
            first = current.get(ORIGIN) or "an earlier record"
            raise conflict_error(outcome.conflicts[0], self._origin, None, f"in {first}")
        if outcome.changes.keys() & {"known_from", "valid_from", "valid_to"}:
            self._days = None
        for key, value in outcome.changes.items():
            if key == ORIGIN:
                self.origins[row] = value
            elif key in self.columns:
                self.columns[key][row] = value
            else:
                col = self.attrs.setdefault(key, [None] * len(self.ids))
                col[row] = value

    def row(self, i: int) -> dict[str, Any]:
        """Fact `i` as the property dict `GraphBatch` would hold (None values left out)."""
        out: dict[str, Any] = {"id": self.ids[i]}
        for name, col in (*self.columns.items(), *self.attrs.items()):
            if col[i] is not None:
                out[name] = col[i]
        if self.origins[i] is not None:
            out[ORIGIN] = self.origins[i]
        return out

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self) -> Iterator[dict[str, Any]]:
        for i in range(len(self.ids)):
            yield self.row(i)

    def to_batch(self) -> GraphBatch:
        """The same content as a `GraphBatch` (for engines without a native bulk loader)."""
        batch = GraphBatch(self.policy)
        for source in self.sources.values():
            batch.source(source)
        for entity_id, kind in self.entities.items():
            batch._origin = self.entity_origins.get(entity_id)
            batch.entity(entity_id, kind=kind)
        batch._origin = None
        facts = batch.nodes.setdefault(schema.FACT, {})
        subject = batch.edges.setdefault((schema.SUBJECT, schema.FACT, schema.ENTITY), {})
        obj = batch.edges.setdefault((schema.OBJECT, schema.FACT, schema.ENTITY), {})
        asserted = batch.edges.setdefault((schema.ASSERTED_IN, schema.FACT, schema.SOURCE), {})
        for props in self.rows():
            fid = props["id"]
            facts[fid] = props
            subject[fid, props["subject_id"]] = {}
            if props.get("object_id") is not None:
                obj[fid, props["object_id"]] = {}
            asserted[fid, props["source_id"]] = {}
        for key in [k for k, v in batch.edges.items() if not v]:
            del batch.edges[key]
        return batch

    def slices(self, size: int) -> Iterator[FactTable]:
        """This table as consecutive tables of at most `size` facts (the same table if it is no larger), so a
        load frames and writes one bounded slice at a time. The first slice stages every entity (kinds and
        origins as here), each later one the entities its facts name; all stage every source."""
        n = len(self.ids)
        if n <= size:
            yield self
            return
        days = self.day_ordinals()
        for first in range(0, n, size):
            part = FactTable(self.policy)
            part.sources = self.sources
            last = min(first + size, n)
            part.ids = self.ids[first:last]
            part.columns = {k: v[first:last] for k, v in self.columns.items()}
            part._cols = [part.columns[c] for c in COLUMNS]
            part.attrs = {k: v[first:last] for k, v in self.attrs.items()}
            part.origins = self.origins[first:last]
            if first == 0:
                part.entities, part.entity_origins = dict(self.entities), dict(self.entity_origins)
            else:
                named = dict.fromkeys(chain(part.columns["subject_id"], part.columns["object_id"]))
                named.pop(None, None)
                part.entities = {e: self.entities[e] for e in named}
                part.entity_origins = {e: self.entity_origins[e] for e in named}
            if days is None:
                part._days = None
            else:
                part._days = {k: [v[first:last]] for k, v in days.items()}
                part._days_n = last - first
            yield part

    def check_sources(self) -> None:
        """Every fact's source release is staged (a loader bug otherwise)."""
        missing = set(self.columns["source_id"]) - set(self.sources)
        if missing:
            raise InputError("input", None, f"facts name source release(s) that were not staged: "
                                            f"{', '.join(sorted(missing)[:3])}")


__all__ = ["COLUMNS", "FactTable"]
