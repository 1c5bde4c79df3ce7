"""The embedded default engine: kglite, running the same Neo4j 5 Cypher text."""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, cast

import kglite

from chronokg.errors import StoreBusy, StoreError
from chronokg.graph import interval_index, interval_reads, kglite_files, log_binding, schema
from chronokg.graph.guard import KGLITE_READ_OPERATORS
from chronokg.graph.kglite_files import WAL_HEADER, remove_leftovers, unreplayed_log, writer_refusal
from chronokg.graph.kglite_limited import bounded_read
from chronokg.graph.read_limits import LimitedResult, ReadLimits
from chronokg.graph.store import Capabilities, GraphStore, Params, Row, Statement
from chronokg.settings import Settings
from chronokg.store_uri import StoreURI

ddl_name = schema.ddl_name

MEMORY = ":memory:"


class KgliteStore(GraphStore):
    """A store in one `.kgl` file (or in memory): one writer at a time, any number of readers.

    A writer takes kglite's cross-process writer lease (waiting up to `lock_timeout`
    seconds for another writer to finish) and checkpoints the file at close only if
    it changed something. A reader (`read_only=True`) loads the last checkpoint
    without the lease or the log, refuses every write, and never writes the file:
    readers run beside each other and beside a writer, and see the store as it was
    before or after that writer's checkpoint, never half of it.
    """

    engine = "kglite"
    capabilities = Capabilities(read_operators=KGLITE_READ_OPERATORS, bulk_loader=True, forked_reads=True,
                                in_worker_reads=True, interval_sidecar=True, notices=True, checkpoint=True,
                                deferred_indexes=True)

    @classmethod
    def open(cls, uri: StoreURI, settings: Settings, *, read_only: bool = False,
             on_wait: Callable[[str], None] | None = None, quick_open: bool = False,
             load: bool = False) -> KgliteStore:
        """`kglite://PATH[?durable=full|normal|off]`; a one-shot `load` on a file keeps no log unless the URI says."""
        unknown = sorted({k for k, _ in uri.options} - {"durable"})
        if unknown:
            raise StoreError(f"unknown option(s) {', '.join(unknown)} in {uri.redacted()!r} (known: durable)")
        durable = uri.option("durable")
        if durable is None:
            durable = "off" if load and uri.location != MEMORY else "normal"
        return cls(uri.location, durable=durable, read_only=read_only, lock_timeout=settings.lock_timeout,
                   on_wait=on_wait, quick_open=quick_open)

    def __init__(self, path: str | Path, durable: str = "normal", *, read_only: bool = False,
                 lock_timeout: float = 0.0, on_wait: Callable[[str], None] | None = None,
                 quick_open: bool = False) -> None:
        """`durable`: "normal" logs every commit (survives a crashed process); "off" keeps no log and
        relies on the checkpoint written at close, which uses far less memory for very large loads.

        Every reader maps the file and defers its property indexes until its first Cypher read
        (`ensure_indexes`). `quick_open=True` (readers only: one-shot CLI queries) never builds them for
        `run`: an indexed lookup is then a scan (milliseconds each), cheaper than the build for one query,
        so long-lived readers leave it off."""
        if durable not in {"full", "normal", "off"}:
            raise StoreError(f"durable must be full, normal or off, not {durable!r}")
        self._path = str(path)
        self._durable = durable
        self._read_only = read_only
        self._dirty = False
        self._new = False
        self._committed = False
        self._lease: Any = None  # the handle holding the writer lease, once a bulk load swapped in its copy
        self._quick = quick_open and read_only
        # A reader's property indexes are built at its first Cypher read, not at open (`ensure_indexes`): answers
        # from the interval sidecar need none, and building them was most of opening (3.6 s at 1M facts).
        self._deferred = read_only
        self._stamp: interval_index.Stamp | None = None  # the checkpoint a reader loaded
        self._intervals: interval_reads.IntervalIndex | bool | None = False  # False: not looked for yet
        # A writer's checkpoint rebuilds the interval sidecar only when a fact or a caption may have changed;
        # otherwise (a run's predictions, a benchmark's questions) the sidecar of `_base` is re-stamped.
        self._facts_touched = False
        self._base: interval_index.Stamp | None = None
        self._ready: Path | None = None  # a bulk load's sidecar, built from its own columns, not yet stamped
        self._bound = True  # the log's first commit since the checkpoint is recorded (`graph.log_binding`)
        self.notices: list[str] = []
        # kglite announces advisory query warnings on stderr; callers get clean output.
        kglite.set_query_warning_policy("silent")
        self._declared: dict[str, set[str]] = {}
        self._g: Any = None
        lock_files = kglite_files.existing_lock_files(Path(self._path))
        try:
            if read_only:
                self._g = self._load()
            elif self._path == MEMORY:
                self._g = kglite.KnowledgeGraph()
            else:
                Path(self._path).parent.mkdir(parents=True, exist_ok=True)
                self._new = not Path(self._path).exists()
                self._dirty = self._new
                self._g = self._open_waiting(durable, lock_timeout, on_wait)
                remove_leftovers(Path(self._path))  # temp files of killed saves and loads: the lease is ours now
                self._bound = log_binding.on_open(self._path, logged=durable != "off")
                self._base = interval_index.stamp_of(self._path)
                self._facts_touched = self._dirty  # new, or commits replayed from the log
        except (kglite.KgError, ValueError) as exc:
            raise StoreError(f"cannot open embedded store {self._path}: {exc}") from exc
        finally:
            if self._g is None and not read_only and self._path != MEMORY:
                kglite_files.remove_lock_files(Path(self._path), lock_files)  # a failed open leaves none it made
        if read_only:
            for label, decl in ((self._g.schema_definition() or {}).get("nodes", {})).items():
                self._declared.setdefault(label, set()).update(decl.get("optional", []))
        else:
            self.ensure_schema()

    def _load(self) -> Any:
        """The last checkpoint, read-only: no lease, no log, nothing written."""
        if self._path == MEMORY:
            graph = kglite.KnowledgeGraph()
        else:
            if not Path(self._path).is_file():
                raise StoreError(f"no store at {self._path}: load data first (chronokg ingest …) or create an "
                                 "empty one with chronokg init")
            before = interval_index.stamp_of(self._path)
            # Mapped: the file's columns are read in place, not decoded onto the heap (0.08 s at 1M facts, not
            # 0.45 s); a writer's save renames a new file in, so the mapped one never changes under a reader.
            with warnings.catch_warnings():  # kglite's warning on an unreplayed log: said once, below, by chronokg
                warnings.filterwarnings("ignore", message="the write-ahead log at ", category=UserWarning)
                graph = kglite.load(self._path, storage="mapped", defer_index_rebuild=True)
            after = interval_index.stamp_of(self._path)
            self._stamp = before if before == after else None  # replaced meanwhile: trust no sidecar
            notice = unreplayed_log(Path(self._path))
            if notice:
                self.notices.append(notice)
        return graph  # read_only(True) would build every index: `ensure_indexes` sets it, reads before use begin_read

    def _open_waiting(self, durable: str, lock_timeout: float, on_wait: Callable[[str], None] | None) -> Any:
        """Open as the writer, waiting (bounded) while another process holds the writer lease."""
        deadline = time.monotonic() + max(0.0, lock_timeout)
        told = 0.0
        while True:
            try:
                return self._open(durable)
            except kglite.WriterLeaseHeldError as exc:
                holder = kglite_files.holder_words(exc)
                now = time.monotonic()
                if now >= deadline:
                    waited = f" after waiting {lock_timeout:g} s" if lock_timeout > 0 else ""
                    raise StoreBusy(f"{self._path} is being written by {holder}{waited}; only one process may "
                                    "write a store at a time: try again when it finishes (readers are not "
                                    "affected), or wait longer with CHRONOKG_LOCK_TIMEOUT") from None
                if on_wait is not None and now - told >= 5.0:
                    on_wait(f"waiting for {holder} to finish writing {self._path} "
                            f"(up to {deadline - now:.0f} s more)")
                    told = now
                time.sleep(min(0.25, max(0.0, deadline - now)))

    def _open(self, durable: str) -> Any:
        level = cast(Literal["full", "normal", "off"], durable)
        refusal = writer_refusal(Path(self._path))  # a damaged commit kglite would drop without a word
        if refusal:
            raise StoreError(refusal)
        wal = Path(self._path + "-wal")
        replay = wal.exists() and wal.stat().st_size > WAL_HEADER
        if durable == "off" and replay:
            # The log may hold commits a crash left unreplayed; kglite refuses to open it without a
            # log. Replay and checkpoint it first, then reopen as asked.
            replaying = kglite_files.open_logged(self._path, "normal")
            replaying.save()
            replaying.close()
        graph = kglite_files.open_logged(self._path, level)
        if replay and durable != "off":
            self._dirty = True  # replayed commits: checkpoint them at close so readers see them
        return graph

    @property
    def uri(self) -> str:
        uri = StoreURI("kglite", self._path)
        return str(uri if self._durable == "normal" else uri.with_option("durable", self._durable))

    @property
    def path(self) -> str:
        return self._path

    def run(self, cypher: str, params: Params | None = None) -> list[Row]:
        if not self._quick:
            self.ensure_indexes()
        try:
            # A quick reader runs each query in a read transaction (O(1); refuses writes like read_only).
            target = self._g.begin_read() if self._quick else self._g
            result = target.cypher(cypher, params=dict(params or {}))
        except (kglite.KgError, ValueError) as exc:
            raise StoreError(f"query failed on {self.uri}: {exc}") from exc
        if isinstance(result, str):  # only a FORMAT CSV query returns text
            raise StoreError(f"unexpected text result from {self.uri}")
        rows: list[Row] = result.to_list()
        return rows

    def explain(self, cypher: str, params: Params | None = None) -> list[str]:
        """The operations of the engine's plan for `cypher` (EXPLAIN: nothing runs)."""
        if not self._quick:
            self.ensure_indexes()
        try:
            target = self._g.begin_read() if self._quick else self._g
            plan = target.cypher("EXPLAIN " + cypher, params=dict(params or {}))
        except (kglite.KgError, ValueError) as exc:
            raise StoreError(f"cannot plan query on {self.uri}: {exc}") from exc
        if isinstance(plan, str):
            return ["FormatCsv"]
        return [str(step.get("operation", "")) for step in plan.to_list()]

    def run_limited(self, cypher: str, params: Params | None, limits: ReadLimits) -> LimitedResult:
        """A read under limits, in a forked read-only copy of the graph that is killed when time is up."""
        self.ensure_indexes()  # the copy is made read-only, which builds a quick reader's indexes anyway
        return bounded_read(self._g, self.uri, self._read_only, cypher, params, limits, fork=True)

    def run_here(self, cypher: str, params: Params | None, limits: ReadLimits) -> LimitedResult:
        """The same read in this process, with the engine's deadline, work budget and row limit only: for a
        caller that is itself a forked, read-only sandbox (serve's read workers), where a second fork per read
        cost most of a cheap call (benchmarks/README.md)."""
        self.ensure_indexes()
        return bounded_read(self._g, self.uri, self._read_only, cypher, params, limits, fork=False)

    @property
    def quick(self) -> bool:
        """A quick-opened reader whose property indexes are still unbuilt (lookups scan)."""
        return self._quick

    @property
    def read_only(self) -> bool:
        return self._read_only

    def write(self, statements: Iterable[Statement]) -> None:
        if self._read_only:
            raise StoreError(f"{self.uri} is open read-only: writes go through a writer (chronokg ingest, init)")
        tx = self._g.begin()
        ran = 0
        touches = False
        try:
            # Errors raised while producing statements (bad input) pass through unchanged;
            # errors from the engine are reported as a failed write. Either way nothing is kept.
            for cypher, params in statements:
                ran += 1
                touches = touches or "Fact" in cypher or "Entity" in cypher  # labels are never parameters
                try:
                    tx.cypher(cypher, params=dict(params))
                except (kglite.KgError, ValueError) as exc:
                    raise StoreError(f"write failed on {self.uri}, nothing was changed: {exc}") from exc
        except BaseException:
            tx.rollback()
            raise
        if not ran:  # nothing to write (a stream whose every chunk was already stored): no commit, no rewrite
            tx.rollback()
            return
        try:
            tx.commit()
        except kglite.KgError as exc:
            raise StoreError(f"commit failed on {self.uri}, nothing was changed: {exc}") from exc
        self._dirty = self._committed = True
        self._facts_touched = self._facts_touched or touches
        if not self._bound and self._lease is None:
            self._bound = log_binding.after_commit(self._path)

    def _sidecar(self, graph: Any) -> None:
        """After `graph` was saved as the checkpoint: its interval sidecar, rebuilt or carried over."""
        if self._facts_touched:
            interval_index.refresh(graph, self._path)
        else:
            interval_index.carry(self._path, self._base)
        self._base = interval_index.stamp_of(self._path)
        self._facts_touched = False

    def declare_properties(self, label: str, keys: Sequence[str]) -> None:
        known = self._declared.setdefault(label, set())
        missing = set(keys) - known - {"id"}
        if not missing:
            return
        if self._read_only:
            raise StoreError(f"{self.uri} is open read-only: it cannot declare properties")
        known |= missing
        # define_schema replaces a label's declaration whole, so declare the union.
        self._g.define_schema({"nodes": {label: {"optional": sorted(known)}}})
        self._dirty = True

    def ensure_schema(self) -> None:
        current = (self._g.schema_definition() or {}).get("nodes", {})
        for label, decl in current.items():
            self._declared.setdefault(label, set()).update(decl.get("optional", []))
        for label, props in schema.BASE_PROPERTIES.items():
            self.declare_properties(label, props)
        # Only what is missing: even a no-op `IF NOT EXISTS` is a logged commit, which readers would then
        # be told is waiting in the log.
        present = {r["name"] for r in [*self._g.cypher("SHOW INDEXES").to_list(),
                                       *self._g.cypher("SHOW CONSTRAINTS").to_list()]}
        for ddl in schema.embedded_ddl():  # what it leaves out and why: schema.EMBEDDED_OMITS
            if ddl_name(ddl) not in present:
                self._g.cypher(ddl)
                self._dirty = True

    @contextmanager
    def staged(self) -> Iterator[Any]:
        """A copy of the graph for a bulk load (`graph.bulk`), published as the store's state on success.

        The copy is copy-on-write (O(1)); the native bulk loaders write into it,
        outside any log. Leaving the block normally saves it as the store's new
        checkpoint (kglite writes a temp file and renames it over the store: one
        atomic step) and continues with it; an exception drops it, so a load that
        fails, or a process killed meanwhile, leaves the file and this handle as
        they were. The writer lease stays with the handle that took it. Writes after
        a bulk load are kept in memory and checkpointed at close (as `durable=off`).
        """
        if self._read_only:
            raise StoreError(f"{self.uri} is open read-only: writes go through a writer (chronokg ingest, init)")
        if self._dirty and self._durable != "off" and self._path != MEMORY and self._lease is None:
            self._g.save()  # fold the log in: a checkpoint saved over a log that runs ahead of it is refused
            log_binding.after_checkpoint(self._path, writing=True)
            self._dirty = False
        self._drop_ready()
        graph = self._g.copy()
        try:
            yield graph
            if self._path != MEMORY:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", kglite.MappedFallbackWarning)
                    graph.save(self._path)
                self._bound = log_binding.after_checkpoint(self._path, writing=False)  # later writes: unlogged
        except BaseException:
            self._drop_ready()
            raise
        if self._path != MEMORY:
            ready, self._ready = self._ready, None
            if ready is None:
                self._facts_touched = True  # a bulk load: facts, most often
                self._sidecar(graph)
            else:
                interval_index.stamp_and_publish(self._path, ready, interval_index.stamp_of(self._path))
                self._base = interval_index.stamp_of(self._path)
                self._facts_touched = False
        if self._lease is None and self._path != MEMORY:
            self._lease = self._g
        self._g = graph
        self._dirty = False
        self._committed = True
        for label, decl in ((graph.schema_definition() or {}).get("nodes", {})).items():
            self._declared.setdefault(label, set()).update(decl.get("optional", []))

    def sidecar_before(self, graph: Any) -> dict[str, Any] | None:
        """The interval sidecar's arrays of the store as a bulk load starts (`graph`: its staged copy):
        `{}` when it holds no fact, None when no sidecar describes it (an older store, writes since)."""

        if not int(graph.node_type_counts().get(schema.FACT, 0)):
            return {}
        if self._path == MEMORY or self._facts_touched:
            return None
        return interval_index.arrays(self._path, self._base)  # None unless current and whole

    def publish_sidecar(self, cols: dict[str, Any] | None) -> None:
        """The sidecar of the staged copy about to be saved, built by the bulk load (None: build it by Cypher
        after the save). Written unstamped now, so its arrays are not held through the save (the load's peak
        memory); stamped and renamed in once the save is done."""
        self._drop_ready()
        if cols is not None and self._path != MEMORY:
            self._ready = interval_index.write_unstamped(self._path, cols)

    def _drop_ready(self) -> None:
        ready, self._ready = self._ready, None
        if ready is not None:
            ready.unlink(missing_ok=True)

    def declare_staged(self, graph: Any, label: str, keys: Sequence[str]) -> None:
        """Declare `keys` of `label` on a staged copy (the store's own declarations follow on publish)."""
        declared = set(((graph.schema_definition() or {}).get("nodes", {})).get(label, {}).get("optional", []))
        missing = set(keys) - declared - {"id"}
        if missing:
            graph.define_schema({"nodes": {label: {"optional": sorted(declared | missing)}}})

    def save(self) -> None:
        """Write a checkpoint (the log already holds every committed write)."""
        if self._path != MEMORY and not self._read_only:
            self._g.save()
            self._bound = log_binding.after_checkpoint(self._path, writing=self._lease is None)
            self._dirty = False
            self._sidecar(self._g)

    def close(self) -> None:
        """A writer checkpoints what it changed; a reader, or a writer that changed nothing, writes nothing."""
        graph, self._g = self._g, None
        lease, self._lease = self._lease, None
        if graph is None or self._path == MEMORY or self._read_only:
            return
        if lease is not None:
            # A bulk load's copy: it is not the lease holder; checkpoint it, then let the holder go unsaved.
            if self._dirty:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", kglite.MappedFallbackWarning)
                    graph.save(self._path)
                self._sidecar(graph)
            log_binding.after_checkpoint(self._path, writing=False)
            del lease
            return
        if not self._dirty:  # before the handle goes, with it the lease
            log_binding.after_checkpoint(self._path, writing=False)
        if self._dirty and not self._facts_touched:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", kglite.MappedFallbackWarning)
                graph.close()
            log_binding.after_checkpoint(self._path, writing=False)
            interval_index.carry(self._path, self._base)
        elif self._dirty:
            try:  # read before close (the graph is gone after it): what the checkpoint will hold
                cols = interval_index.build_columns(graph)
            except Exception:
                cols = None
            interval_index.sidecar(self._path).unlink(missing_ok=True)  # about to be stale
            with warnings.catch_warnings():
                # kglite notes columns it keeps on the heap on a mapped load: storage detail, the data is intact.
                warnings.simplefilter("ignore", kglite.MappedFallbackWarning)
                graph.close()
            log_binding.after_checkpoint(self._path, writing=False)
            try:
                interval_index.write(self._path, cols, interval_index.stamp_of(self._path))
            except OSError:
                interval_index.sidecar(self._path).unlink(missing_ok=True)
        # else: dropping the handle releases the lease without rewriting the file

    def __enter__(self) -> KgliteStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is not None and self._new and not self._committed:
            # A first load that failed: the store stays as it was, which is not there at all.
            self._g = self._lease = None
            for suffix in ("", "-wal", log_binding.SUFFIX, ".lock", ".lock-owner"):
                Path(self._path + suffix).unlink(missing_ok=True)
            return
        self.close()

    def intervals(self) -> interval_reads.IntervalIndex | None:
        """The interval index of the checkpoint this reader loaded, or None (a writer, a store in memory,
        no sidecar or a stale one): then queries answer from Cypher."""
        if self._intervals is False:
            self._intervals = interval_index.load(self._path, self._stamp) if self._read_only else None
        return self._intervals if isinstance(self._intervals, interval_reads.IntervalIndex) else None

    def ensure_indexes(self) -> None:
        """Build the property indexes a reader's open left unbuilt: at its first Cypher read, or before a quick
        reader's query that needs many lookups."""
        if self._deferred and self._g is not None:
            self._g.rebuild_indexes()
            self._g.read_only(True)
            self._quick = self._deferred = False

    def raw(self) -> Any:
        """The underlying kglite graph, indexes built, for engine-specific tooling (benchmarks, debugging)."""
        self.ensure_indexes()
        return self._g
