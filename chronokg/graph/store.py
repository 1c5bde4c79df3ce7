"""The engine-neutral store interface.

Both engines take the same Neo4j 5 Cypher text. A store runs reads that return
plain Python values, and writes a sequence of statements atomically: all of
them or none.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from chronokg.graph.read_limits import LimitedResult, ReadLimits

Row = dict[str, Any]
Params = Mapping[str, Any]
Statement = tuple[str, Params]


@runtime_checkable
class GraphStore(Protocol):
    """What every engine provides. See `open_store` to get one from a URI."""

    @property
    def uri(self) -> str: ...

    @property
    def engine(self) -> str: ...

    @property
    def read_only(self) -> bool:
        """A reader: every write is refused, and nothing is ever written back."""
        ...

    def run(self, cypher: str, params: Params | None = None) -> list[Row]:
        """Run a read query and return rows of plain Python values."""
        ...

    def explain(self, cypher: str, params: Params | None = None) -> list[str]:
        """The operator names of the engine's plan for `cypher` (EXPLAIN: nothing runs)."""
        ...

    def run_limited(self, cypher: str, params: Params | None, limits: ReadLimits) -> LimitedResult:
        """Run a read from outside, read-only and under `limits` (use `guard.guarded_read`, which checks first)."""
        ...

    def write(self, statements: Iterable[Statement]) -> None:
        """Run write statements in one transaction: on any error nothing is kept."""
        ...

    def declare_properties(self, label: str, keys: Sequence[str]) -> None:
        """Make `keys` acceptable on nodes of `label` (a no-op where the engine needs nothing)."""
        ...

    def ensure_schema(self) -> None:
        """Create constraints and indexes if missing; safe to call on every open."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> GraphStore: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...
