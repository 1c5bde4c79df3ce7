"""The embedded default engine: kglite, running the same Neo4j 5 Cypher text."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, cast

import kglite

from chronokg.errors import StoreError
from chronokg.graph import schema
from chronokg.graph.store import Params, Row, Statement

MEMORY = ":memory:"
# Plan operations that write (kglite's EXPLAIN names one operation per clause).
WRITE_OPERATIONS = ("Create", "Merge", "Set", "Delete", "Remove", "Drop", "Insert", "Call")


class KgliteStore:
    """A store in one `.kgl` file (or in memory), with a write-ahead log and one writer."""

    engine = "kglite"

    def __init__(self, path: str | Path, durable: str = "normal") -> None:
        """`durable`: "normal" logs every commit (survives a crashed process); "off" keeps no log and
        relies on the checkpoint written at close, which uses far less memory for very large loads."""
        if durable not in {"full", "normal", "off"}:
            raise StoreError(f"durable must be full, normal or off, not {durable!r}")
        self._path = str(path)
        self._durable = durable
        # kglite announces advisory query warnings on stderr; callers get clean output.
        kglite.set_query_warning_policy("silent")
        try:
            if self._path == MEMORY:
                self._g = kglite.KnowledgeGraph()
            else:
                Path(self._path).parent.mkdir(parents=True, exist_ok=True)
                self._g = self._open(durable)
        except (kglite.KgError, ValueError) as exc:
            raise StoreError(f"cannot open embedded store {self._path}: {exc}") from exc
        self._declared: dict[str, set[str]] = {}
        self.ensure_schema()

    def _open(self, durable: str) -> Any:
        level = cast(Literal["full", "normal", "off"], durable)
        wal = Path(self._path + "-wal")
        if durable == "off" and wal.exists() and wal.stat().st_size > 0:
            # The log may hold commits a crash left unreplayed; kglite refuses to open it without a
            # log. Replay and checkpoint it first, then reopen as asked.
            replay = kglite.open(self._path, durable="normal")
            replay.save()
            replay.close()
        return kglite.open(self._path, durable=level)

    @property
    def uri(self) -> str:
        suffix = "" if self._durable == "normal" else f"?durable={self._durable}"
        return f"kglite://{self._path}{suffix}"

    @property
    def path(self) -> str:
        return self._path

    def run(self, cypher: str, params: Params | None = None) -> list[Row]:
        try:
            result = self._g.cypher(cypher, params=dict(params or {}))
        except (kglite.KgError, ValueError) as exc:
            raise StoreError(f"query failed on {self.uri}: {exc}") from exc
        if isinstance(result, str):  # only a FORMAT CSV query returns text
            raise StoreError(f"unexpected text result from {self.uri}")
        rows: list[Row] = result.to_list()
        return rows

    def is_read_only(self, cypher: str, params: Params | None = None) -> bool:
        try:
            plan = self._g.cypher("EXPLAIN " + cypher, params=dict(params or {}))
        except (kglite.KgError, ValueError) as exc:
            raise StoreError(f"cannot plan query on {self.uri}: {exc}") from exc
        if isinstance(plan, str):
            return False
        operations = [str(step.get("operation", "")) for step in plan.to_list()]
        return not any(op.startswith(WRITE_OPERATIONS) for op in operations)

    def write(self, statements: Iterable[Statement]) -> None:
        tx = self._g.begin()
        try:
            # Errors raised while producing statements (bad input) pass through unchanged;
            # errors from the engine are reported as a failed write. Either way nothing is kept.
            for cypher, params in statements:
                try:
                    tx.cypher(cypher, params=dict(params))
                except (kglite.KgError, ValueError) as exc:
                    raise StoreError(f"write failed on {self.uri}, nothing was changed: {exc}") from exc
        except BaseException:
            tx.rollback()
            raise
        try:
            tx.commit()
        except kglite.KgError as exc:
            raise StoreError(f"commit failed on {self.uri}, nothing was changed: {exc}") from exc

    def declare_properties(self, label: str, keys: Sequence[str]) -> None:
        known = self._declared.setdefault(label, set())
        missing = set(keys) - known - {"id"}
        if not missing:
            return
        known |= missing
        # define_schema replaces a label's declaration whole, so declare the union.
        self._g.define_schema({"nodes": {label: {"optional": sorted(known)}}})

    def ensure_schema(self) -> None:
        current = (self._g.schema_definition() or {}).get("nodes", {})
        for label, decl in current.items():
            self._declared.setdefault(label, set()).update(decl.get("optional", []))
        for label, props in schema.BASE_PROPERTIES.items():
            self.declare_properties(label, props)
        for ddl in [*schema.constraint_ddl(), *schema.index_ddl()]:
            self._g.cypher(ddl)

    def save(self) -> None:
        """Write a checkpoint (the log already holds every committed write)."""
        if self._path != MEMORY:
            self._g.save()

    def close(self) -> None:
        if self._path != MEMORY:
            self._g.save()
            self._g.close()

    def __enter__(self) -> KgliteStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def raw(self) -> Any:
        """The underlying kglite graph, for engine-specific tooling (benchmarks, debugging)."""
        return self._g
