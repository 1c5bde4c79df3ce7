"""The engine-neutral store interface, and what an engine declares it can do.

Both engines take the same Neo4j 5 Cypher text. A store runs reads that return
plain Python values, and writes a sequence of statements atomically: all of
them or none. What differs between engines is declared once, by the engine, as
its `Capabilities`; callers ask `store.capabilities`, never the engine's name,
and call the interface's methods, whose defaults here do nothing where an
engine has no such thing (docs/model.md, "Engines").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from chronokg.graph.interval_reads import IntervalIndex
    from chronokg.graph.read_limits import LimitedResult, ReadLimits
    from chronokg.settings import Settings
    from chronokg.store_uri import StoreURI

Row = dict[str, Any]
Params = Mapping[str, Any]
Statement = tuple[str, Params]


@dataclass(frozen=True)
class Capabilities:
    """What an engine can do beyond the interface every engine has; each flag names the method it turns on."""

    # Plan operators the read guard lets through (`guard.check_plan`): an allow-list in the engine's own plan
    # vocabulary, so an operator the guard has never seen is refused.
    read_operators: frozenset[str]
    # `graph.bulk.write_bulk` loads into a staged copy with native loaders (`staged()`), published atomically;
    # without it a load is one `write` transaction.
    bulk_loader: bool = False
    # `run_limited` forks a read-only copy of the graph per read (killed at its deadline): in-process calls must
    # run one at a time (no fork while another thread is inside the engine), and serve's forked read workers
    # apply. Without it reads are sessions of a thread-safe driver and need neither.
    forked_reads: bool = False
    # `run_here`: a bounded read in this process, for a caller that is itself a forked read-only sandbox.
    in_worker_reads: bool = False
    # `intervals()`: the interval index kept beside the store, which direct query paths read.
    interval_sidecar: bool = False
    # `notices`: things worth telling the user found when the store was opened (an unreplayed log).
    notices: bool = False
    # `save()`: a writer's checkpoint that a second, read-only handle then loads.
    checkpoint: bool = False
    # `ensure_indexes()`: a reader opens without building its property indexes and builds them at its first
    # Cypher read (or when asked, before a read that needs many lookups); answers from `intervals()` need none.
    deferred_indexes: bool = False


@runtime_checkable
class GraphStore(Protocol):
    """What every engine provides. See `open_store` to get one from a URI, and `Engine` for how it is opened.

    Engines subclass this class, so the methods below with a body are their defaults where a capability is absent.
    """

    capabilities: ClassVar[Capabilities]
    notices: Sequence[str]  # see `Capabilities.notices`; empty where the engine has none

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

    def run_here(self, cypher: str, params: Params | None, limits: ReadLimits) -> LimitedResult:
        """`run_limited` in this process (`Capabilities.in_worker_reads`); by default, `run_limited` itself."""
        return self.run_limited(cypher, params, limits)

    def intervals(self) -> IntervalIndex | None:
        """The current interval index beside the store (`Capabilities.interval_sidecar`), else None."""
        return None

    def ensure_indexes(self) -> None:
        """Build the property indexes a reader's open left unbuilt (`Capabilities.deferred_indexes`); a no-op
        where nothing is deferred."""
        return None

    @property
    def quick(self) -> bool:
        """A reader opened for one query, whose indexes are still unbuilt (`open_store(quick_open=True)`)."""
        return False

    def save(self) -> None:
        """Checkpoint a writer's changes for read-only handles (`Capabilities.checkpoint`); else nothing to do."""
        return None

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


class Engine(Protocol):
    """An engine class as `chronokg.graph.engines.ENGINES` holds it: its capabilities, and how a URI opens it."""

    capabilities: Capabilities

    def open(self, uri: StoreURI, settings: Settings, *, read_only: bool = False,
             on_wait: Callable[[str], None] | None = None, quick_open: bool = False,
             load: bool = False) -> GraphStore:
        """A store at `uri` (see `open_store` for the arguments); a StoreError for options the engine does not know."""
        ...
