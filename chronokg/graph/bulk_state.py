"""What one bulk load (`graph.bulk.write_bulk`) knows beyond the graph, so its parts need not read back what it wrote.

Reading back, id by id, what earlier parts of the same load had just written was a
fifth of a million-fact load (benchmarks/README.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from chronokg.graph import schema
from chronokg.graph.writer import ENGINE_KEYS, stored_nodes

if TYPE_CHECKING:
    from chronokg.graph.store import Params, Row


class GraphReader(Protocol):
    """The read side of a staged graph (`graph.bulk.GraphReader`), as this module needs it: declared here
    so that `bulk` imports this module and not the other way round (no import circle)."""

    def run(self, cypher: str, params: Params | None = None) -> list[Row]: ...

    def count(self, label: str) -> int: ...


class _Frame(Protocol):
    label: str
    ids: list[str]
    columns: dict[str, list[Any]]


class Plan(Protocol):
    """What `write` needs of a part's plan (`graph.bulk.Plan`)."""

    @property
    def frames(self) -> Sequence[_Frame]: ...

    @property
    def updates(self) -> Sequence[tuple[str, list[dict[str, Any]]]]: ...

_NO_PROPS: dict[str, Any] = {}  # shared by the rows of `LoadState.rows` that hold no property: never changed


class SeenIds:
    """64-bit hashes of the ids one load created, as a few sorted arrays (merged as they grow, LSM-style).

    Membership is a hint: a hit is looked up in the graph, so a collision costs one lookup,
    never a wrong answer. At 10M facts this is 80 MB where a set of the id strings is ~1 GB.
    """

    def __init__(self) -> None:
        self.runs: list[Any] = []

    @staticmethod
    def _hashes(ids: Sequence[str]) -> Any:
        import numpy as np

        return np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids))

    def add(self, ids: Sequence[str]) -> None:
        import numpy as np

        if not ids:
            return
        self.runs.append(np.sort(self._hashes(ids)))
        while len(self.runs) > 1 and len(self.runs[-2]) <= 2 * len(self.runs[-1]):
            last = self.runs.pop()
            self.runs[-1] = np.sort(np.concatenate([self.runs[-1], last]), kind="stable")

    def maybe(self, ids: Sequence[str]) -> list[str]:
        """Those of `ids` whose hash this load has seen (a superset of those it created)."""
        import numpy as np

        if not self.runs or not ids:
            return []
        h = self._hashes(ids)
        hit = np.zeros(len(ids), dtype=bool)
        for run in self.runs:
            pos = np.minimum(np.searchsorted(run, h), len(run) - 1)
            hit |= run[pos] == h
        return [ids[i] for i in np.flatnonzero(hit).tolist()]


@dataclass
class LoadState:
    """What one `write_bulk` call knows beyond the graph, so its parts need not read back what it wrote.

    A label with no node when the load first meets it ("fresh") holds only what this
    load created: its stored rows are those kept here (`rows`), or for facts, the few
    ids whose hash was seen (`fact_ids`) are looked up; labels the store already held
    are looked up whole, as before. Indexes of a label dropped for the native loader
    stay dropped until the end of the load and are rebuilt once (`rebuild`).
    """

    fresh: dict[str, bool] = field(default_factory=dict)
    rows: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # fresh label -> id -> props
    fact_ids: SeenIds = field(default_factory=SeenIds)
    dropped: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # label -> (name, DDL) to rebuild

    def is_fresh(self, reader: GraphReader, label: str) -> bool:
        fresh = self.fresh.get(label)
        if fresh is None:
            fresh = self.fresh[label] = reader.count(label) == 0
        return fresh

    def stored(self, reader: GraphReader, label: str, ids: list[str]) -> dict[str, dict[str, Any]]:
        """The stored properties of those of `ids` that exist (as `writer.stored_nodes` reads them)."""
        if not self.is_fresh(reader, label):
            return stored_nodes(reader, label, ids) if reader.count(label) else {}
        if label == schema.FACT:
            maybe = self.fact_ids.maybe(ids)
            return stored_nodes(reader, label, maybe) if maybe else {}
        rows = self.rows.get(label)
        if not rows:
            return {}
        return {i: rows[i] for i in ids if i in rows}  # read only: merge never changes `old`

    def known(self, reader: GraphReader, label: str, ids: list[str]) -> Any:
        """Which of `ids` exist (a numpy mask): for a fresh label other than facts, one C lookup per id in
        what the load wrote, no row built."""
        import numpy as np

        if label != schema.FACT and self.is_fresh(reader, label):
            rows = self.rows.get(label, {})
            return np.fromiter(map(rows.__contains__, ids), dtype=bool, count=len(ids))
        stored = self.stored(reader, label, ids)
        return np.fromiter(map(stored.__contains__, ids), dtype=bool, count=len(ids))

    def written(self, plan: Plan) -> None:
        """Remember what a plan wrote to fresh labels (called once it is applied)."""
        for frame in plan.frames:
            if not self.fresh.get(frame.label):
                continue
            if frame.label == schema.FACT:
                self.fact_ids.add(frame.ids)
                continue
            rows = self.rows.setdefault(frame.label, {})
            cols = [(k, c) for k, c in frame.columns.items() if k not in ENGINE_KEYS]
            if not cols:  # ids only (a million entities named by facts): one shared empty row, copied on update
                rows.update(dict.fromkeys(frame.ids, _NO_PROPS))
                continue
            for i, nid in enumerate(frame.ids):
                rows[nid] = {k: c[i] for k, c in cols if c[i] is not None}
        for label, updates in plan.updates:
            mirror = self.rows.get(label) if self.fresh.get(label) else None
            if mirror is None:
                continue
            for u in updates:
                row = mirror[u["id"]] = dict(mirror[u["id"]])
                for k, v in u["props"].items():
                    if k in ENGINE_KEYS:
                        continue
                    if v is None:
                        row.pop(k, None)
                    else:
                        row[k] = v

    def rebuild(self, graph: Any) -> None:
        """Build the indexes dropped during the load, once, over everything loaded. No deadline: at 10M facts
        on a loaded machine one build ran past kglite's default 180 s and failed the whole load."""
        for label in list(self.dropped):
            for _, ddl in self.dropped.pop(label):
                graph.cypher(ddl, timeout_ms=0)


__all__ = ["LoadState", "SeenIds"]
