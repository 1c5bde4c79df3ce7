"""A bulk load's parts as columns (`graph.bulk`): frames of new nodes and edges, and the column helpers that
work on them with numpy instead of a Python test per row.

A part (`GraphBatch` or `FactTable`) becomes one `Frame` per label and one `Edges` per
relationship type; `plan_part` cuts them to what is new (`take`) and the native loaders get
them as pandas frames (`pandas_frame`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch
from chronokg.graph.facts import FactTable
from chronokg.graph.merge import ORIGIN

# Python types the native loader stores as the same value a Cypher CREATE would (checked in tests).
NATIVE = (str, int, float, bool, dt.date, list)
SRC, DST = "__chronokg_src", "__chronokg_dst"


@dataclass
class Frame:
    """One label's staged nodes as columns."""

    label: str
    ids: list[str]
    columns: dict[str, list[Any]]
    days: dict[str, Any] | None = None  # facts: valid_from, valid_to, known_from as int32 ordinals (the sidecar's)

    def row(self, i: int) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.ids[i]}
        for name, col in self.columns.items():
            if col[i] is not None:
                out[name] = col[i]
        return out


@dataclass
class Edges:
    """One relationship type's staged edges: (source id, target id) -> properties.

    `known` marks edges whose endpoints the part stages itself (a `FactTable`'s), and
    `columns` holds them as two id lists when no edge has properties: at a million
    facts, a tuple and a dict per edge cost more than the engine's whole write.
    """

    rel: str
    src_label: str
    dst_label: str
    pairs: dict[tuple[str, str], dict[str, Any]]
    known: bool = False
    columns: tuple[list[str], list[str]] | None = None

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns is not None else len(self.pairs)




# --- parts as frames -------------------------------------------------------------------------------------


def batch_frames(batch: GraphBatch) -> tuple[list[Frame], list[Edges]]:
    frames = []
    for label, rows in batch.iter_nodes():
        keys = sorted({k for r in rows for k in r} - {"id"})
        frames.append(Frame(label, [r["id"] for r in rows], {k: [r.get(k) for r in rows] for k in keys}))
    edges = [Edges(rel, s, d, pairs) for (rel, s, d), pairs in batch.edges.items() if pairs]
    return frames, edges


def table_frames(table: FactTable) -> tuple[list[Frame], list[Edges]]:
    table.check_sources()
    frames = [
        Frame(schema.SOURCE, list(table.sources),
              {k: [s.model_dump().get(k) for s in table.sources.values()]
               for k in ("kind", "caption", "version", "release_date", "checksum", "path")}),
        Frame(schema.ENTITY, list(table.entities), {"kind": list(table.entities.values()),
                                                     ORIGIN: list(table.entity_origins.values())}),
    ]
    columns = {**table.columns, **table.attrs, ORIGIN: table.origins}
    frames.append(Frame(schema.FACT, table.ids, columns, table.day_ordinals()))
    ids, objects = table.ids, table.columns["object_id"]
    edges = [
        Edges(schema.SUBJECT, schema.FACT, schema.ENTITY, {}, True, (ids, table.columns["subject_id"])),
        Edges(schema.OBJECT, schema.FACT, schema.ENTITY, {}, True,
              (ids, objects) if None not in objects else pairs_of(ids, objects)),
        Edges(schema.ASSERTED_IN, schema.FACT, schema.SOURCE, {}, True, (ids, table.columns["source_id"])),
    ]
    for frame in frames:  # a column with no value at all is no property (as a CREATE of nulls stores none)
        frame.columns = {k: v for k, v in frame.columns.items() if filled(v)}
    return [f for f in frames if f.ids], [e for e in edges if len(e)]


def objects(col: list[Any]) -> Any:
    """A list as a 1-d numpy object array (items that are lists stay items: no nested array)."""
    import numpy as np

    return np.fromiter(col, dtype=object, count=len(col))


def filled(col: list[Any]) -> bool:
    """Whether a column holds a value (a count in C, not a Python test per row)."""
    return col.count(None) < len(col)


def pairs_of(ids: list[str], targets: list[Any]) -> tuple[list[str], list[str]]:
    """(id, target) of the rows whose target is not None, as two lists (numpy picks the rows)."""
    import numpy as np

    rows = np.flatnonzero(np.not_equal(objects(targets), cast(Any, None)))
    return objects(ids)[rows].tolist(), objects(targets)[rows].tolist()


def valued(cols: list[list[Any]], n: int) -> list[bool]:
    """Per row, whether any of `cols` holds a value there (numpy masks, not a test per row and column)."""
    import numpy as np

    mask = np.zeros(n, dtype=bool)
    for col in cols:
        if filled(col):
            mask |= np.not_equal(objects(col), cast(Any, None))
    out: list[bool] = mask.tolist()
    return out


def take(frame: Frame, rows: Any) -> Frame:
    """The rows `rows` (positions) of a frame, columns and day ordinals gathered by numpy."""
    import numpy as np

    rows = np.asarray(rows, dtype=np.int64)
    return Frame(frame.label, objects(frame.ids)[rows].tolist(),
                 {k: objects(c)[rows].tolist() for k, c in frame.columns.items()},
                 None if frame.days is None else {k: v[rows] for k, v in frame.days.items()})


def kinds_of(col: Sequence[Any]) -> set[type]:
    """The Python types of a column's values (None left out): one C pass, shared by `native` and `_frame`."""
    return set(map(type, col)) - {type(None)}


def native(col: Sequence[Any], kinds: set[type] | None = None) -> bool:
    """Whether the native loader stores this column exactly as Cypher would: one Python type throughout."""
    kinds = kinds_of(col) if kinds is None else kinds
    return len(kinds) == 1 and next(iter(kinds)) in NATIVE


def pandas_frame(columns: dict[str, Sequence[Any]], kinds: dict[str, set[type]] | None = None) -> Any:
    """A pandas frame of `columns`: text as pandas' string dtype (read several times faster by the loader
    than object columns), everything else as Python objects (kglite infers dates, lists, ints with gaps).
    `kinds`: the columns' `kinds_of` where known already."""
    import pandas as pd

    kinds = kinds or {}

    def series(name: str, values: Sequence[Any]) -> Any:
        of = kinds.get(name)
        return pd.Series(values, dtype="string[python]" if (kinds_of(values) if of is None else of) == {str}
                         else object)

    return pd.DataFrame({k: series(k, v) for k, v in columns.items()})


__all__ = ["DST", "NATIVE", "SRC", "Edges", "Frame", "batch_frames", "filled", "kinds_of", "native", "objects",
           "pandas_frame", "table_frames", "take", "valued"]
