"""`ToolHost`: the store opened read-only once, the tools over it, and how a call reaches it.

In process (the evaluation runner's `--agent tools`):

    with ToolHost.open("kglite:///data/store.kgl") as host:
        specs = host.tool_specs()                     # list[chronokg.models.ToolSpec]
        result = host.call_tool("facts_as_of", {"date": "2016-06-01", "subject": "Q646148"})
        result.content()                              # the JSON text the model reads

Calls never raise for a bad call: a refused query, a limit, unknown tools and invalid
arguments come back as `ToolResult(ok=False, error=...)`, which the HTTP server turns
into a 4xx and the MCP server into an error result. In process, calls run one at a
time (a lock): the guard forks per read, and a fork must not happen while another
thread is inside the engine (see `chronokg.serve.workers`). A server calls
`start_workers(n)` first, and calls then run in forked workers, `n` at a time.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Mapping
from types import TracebackType
from typing import Any, cast

from pydantic import BaseModel

from chronokg.errors import ChronoKGError, QueryLimitExceeded, QueryRefused, StoreError
from chronokg.graph.guard import ReadLimits
from chronokg.graph.store import GraphStore
from chronokg.models.types import ToolSpec
from chronokg.queries.spec import QUERIES, QueryError, all_queries
from chronokg.serve.fair import CALLER, Scheduling
from chronokg.serve.reads import GuardedRead, GuardVerdicts
from chronokg.serve.search import SEARCH_TOOL, SearchBackend, SearchParams, find_search, warm
from chronokg.serve.tools import (
    CYPHER,
    CypherParams,
    Tool,
    ToolError,
    ToolFailure,
    ToolResult,
    jsonable,
    page,
    query_tools,
    shown,
)
from chronokg.serve.workers import WorkerPool
from chronokg.settings import Settings


def run_tool(store: GraphStore, tool: Tool, args: BaseModel, limits: ReadLimits,
             search: SearchBackend | None = None, verdicts: GuardVerdicts | None = None,
             here: bool = False) -> ToolResult:
    """Run one validated call; every read goes through the guard (the query tools' Cypher too), as the read
    strategy `QuerySpec.run` is given. In a read worker, `verdicts` remembers the guard's checks per text and
    `here` runs catalog reads in the worker itself (`chronokg.serve.reads`)."""
    start = time.monotonic()
    truncated, total = False, None
    try:
        if tool.kind == "cypher":
            cypher = cast(CypherParams, args)
            result = GuardedRead(limits, verdicts).limited(store, cypher.query, cypher.params)
            rows, truncated, total = jsonable(result.rows), result.truncated, result.total_rows
        elif tool.kind == "query":
            read = GuardedRead(limits, verdicts, here=here and verdicts is not None)
            rows = jsonable(QUERIES.get(str(tool.query)).run(store, args, read=read))
            if read.result is not None:
                truncated, total = read.result.truncated, read.result.total_rows
        else:
            if search is None:
                raise ToolError("unavailable", "search is not available on this server")
            wanted = cast(SearchParams, args)
            rows = jsonable(list(search.search(wanted.query, wanted.as_of, wanted.k)))
    except ToolError as exc:
        return ToolResult.failed(tool.name, exc)
    except QueryLimitExceeded as exc:
        return ToolResult.failed(tool.name, ToolError("limit_exceeded", exc.reason))
    except QueryRefused as exc:
        return ToolResult.failed(tool.name, ToolError("refused", exc.reason))
    except QueryError as exc:
        return ToolResult.failed(tool.name, ToolError("invalid_arguments", str(exc)))
    except StoreError as exc:
        return ToolResult.failed(tool.name, ToolError("query_failed", str(exc)))
    except ChronoKGError as exc:
        return ToolResult.failed(tool.name, ToolError("query_failed", str(exc)))
    except (OverflowError, RecursionError) as exc:  # a value the boundary models let through and the engine cannot take
        return ToolResult.failed(tool.name, ToolError("invalid_arguments", f"{tool.name}: {exc}"))
    return ToolResult(tool=tool.name, rows=rows, truncated=truncated, total_rows=total,
                      elapsed_s=round(time.monotonic() - start, 6))


CALLS_IN_FLIGHT = 512  # tool calls a server runs or queues at once (uvicorn's limit_concurrency is 1024)
HERE_GRACE_S = 2.0  # past the engine's own deadline, a catalog read's worker is killed (`chronokg.serve.reads`)
CATALOG_PREFIX = "catalog__"  # the name a catalog query runs under in `call_query` (never a tool's name)


def catalog_tool(query: str) -> Tool:
    """Catalog query `query` (or the tool name it runs under) as a never offered query tool, so it runs the way
    the query tools run."""
    queries = all_queries()
    if query.startswith(CATALOG_PREFIX):
        query = next((q for q in queries.names() if _catalog_name(q) == query), query)
    if query not in queries:
        raise ToolError("unknown_tool", f"no query {shown(query)!r} (queries: {', '.join(sorted(queries))})")
    spec = queries.get(query)
    return Tool(_catalog_name(query), spec.help, spec.params, "query", query=query)


def _catalog_name(query: str) -> str:
    return CATALOG_PREFIX + query.replace("-", "_")


class ToolHost:
    """The tools over one read-only store; see the module docstring."""

    def __init__(self, store: GraphStore, *, limits: ReadLimits | None = None, search: SearchBackend | None = None,
                 search_note: str = "", close_store: bool = False) -> None:
        if not store.read_only:
            raise StoreError(f"{store.uri}: the tool server needs a store opened read-only (open_store(..., "
                             "read_only=True)): reads from outside never get a writer's handle")
        self.store = store
        self.limits = limits or ReadLimits()
        self._close_store = close_store
        self._tools: dict[str, Tool] = {}
        self.attach_search(search, search_note)
        self._local = threading.Lock()  # in-process engine calls (and forks) one at a time
        self._serial = store.capabilities.forked_reads  # no fork while another thread is inside the engine
        self._pool: WorkerPool | None = None
        self._threads: Any = None  # anyio.CapacityLimiter, made in the event loop on the first async call
        self.search_warm: threading.Thread | None = None  # loading the search model in the background
        self._verdicts = GuardVerdicts()  # used in the forked workers only: each has its own copy

    @classmethod
    def open(cls, uri: str | None = None, settings: Settings | None = None, *,
             limits: ReadLimits | None = None, workers: int = 0, warm_search: bool = False) -> ToolHost:
        """Open the store at `uri` (default: the settings' store) read-only, once, with the settings' limits;
        fork `workers` read workers (see `start_workers`), then look for a search backend (quick); with
        `warm_search` (a server), load its index and model in the background now (`search_warm`), so start-up does
        not wait for them, the first search waits for them only as long as they still load, and no other call
        waits at all."""
        from chronokg.graph.open import open_store

        settings = settings or Settings()
        store = open_store(uri or settings.store, settings, read_only=True)
        host = cls(store, limits=limits or ReadLimits.from_settings(settings), close_store=True)
        try:  # workers before the search backend, which may start threads (a model)
            host.start_workers(workers, scheduling=settings.serve_scheduling, slice_s=settings.serve_slice_s,
                               heavy_slots=settings.serve_heavy_slots, memory_budget_mb=settings.serve_memory_mb)
            host.attach_search(*find_search(store, settings))
            if warm_search and host.search is not None:
                host.search_warm = threading.Thread(target=warm, args=(host.search,), daemon=True,
                                                    name="chronokg-search-warm")
                host.search_warm.start()
        except BaseException:
            host.close()
            raise
        return host

    def attach_search(self, search: SearchBackend | None, note: str = "") -> None:
        """Offer `search` (or no search tool, with `note` saying why)."""
        self.search = search
        self.search_note = note
        tools = [*query_tools(), CYPHER, *([SEARCH_TOOL] if search is not None else [])]
        self._tools = {t.name: t for t in tools}

    # --- the tools -----------------------------------------------------------------------------------

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def tool_specs(self) -> list[ToolSpec]:
        """Every tool as an OpenAI tool-calling declaration."""
        return [t.spec() for t in self._tools.values()]

    def tool(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            known = ", ".join(sorted(self._tools))
            raise ToolError("unknown_tool", f"no tool {shown(name)!r} (tools: {known})") from None

    # --- calls ---------------------------------------------------------------------------------------

    def call_tool(self, name: str, arguments: Mapping[str, Any] | str | None = None,
                  caller: str | None = None) -> ToolResult:
        """Validate and run one call (blocking) for `caller` (default: `fair.CALLER`, which the servers set);
        failures come back as `ToolResult(ok=False)`. An answer holds at most `MAX_ANSWER_BYTES` of rows, from
        the `offset` argument on (`tools.page`)."""
        try:
            tool = self.tool(name)
            args, offset = tool.arguments(arguments)
        except ToolError as exc:
            return ToolResult.failed(name, exc)
        return page(self._call(tool, args, caller), offset)

    def _call(self, tool: Tool, args: BaseModel, caller: str | None) -> ToolResult:
        """Every row of one validated call (`call_tool` pages them)."""
        if tool.kind == "search" and self.search_warm is not None:
            self.search_warm.join()  # the model loading in the background: only a search waits for it
        if self._pool is not None and tool.kind != "search":
            return self._pool.call(tool.name, args, caller, self._here_limit(tool))
        with self._local if self._serial else contextlib.nullcontext():
            try:
                return run_tool(self.store, tool, args, self.limits, self.search)
            except Exception as exc:  # a bug: a structured error like a worker's, never a transport's traceback
                return ToolResult(tool=tool.name, ok=False, error=ToolFailure(
                    type="internal", message=f"{type(exc).__name__}: {exc}"))

    def call_query(self, query: str, arguments: Mapping[str, Any] | None = None,
                   caller: str | None = None) -> ToolResult:
        """Run any catalog query by name (the explorer's listings too, not only those offered as tools) exactly
        as a query tool runs: validated, through the guard, in a worker when there are workers."""
        try:
            tool = catalog_tool(query)
            args = tool.validate(arguments)
        except ToolError as exc:  # named as the caller named it, not by the internal tool name
            return ToolResult.failed(query, ToolError(exc.type, exc.message.replace(_catalog_name(query), query)))
        if self._pool is not None:
            return self._pool.call(tool.name, args, caller, self._here_limit(tool))
        with self._local if self._serial else contextlib.nullcontext():
            return run_tool(self.store, tool, args, self.limits, None)

    def _here_limit(self, tool: Tool) -> float | None:
        """When the pool kills a worker whose own read (a catalog query, `serve.reads`) outlived its time limit."""
        return self.limits.timeout_s + HERE_GRACE_S if tool.kind == "query" else None

    async def acall_tool(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> ToolResult:
        """`call_tool` from async code: it runs in a thread, so the event loop never blocks. Threads come from
        the host's own limiter (`CALLS_IN_FLIGHT`), not anyio's default 40, so waiting calls queue in the fair
        scheduler, not first come first served in front of it."""
        import anyio
        import anyio.to_thread

        caller = CALLER.get()
        if self._threads is None:
            self._threads = anyio.CapacityLimiter(CALLS_IN_FLIGHT)
        return await anyio.to_thread.run_sync(self.call_tool, name, arguments, caller, limiter=self._threads)

    def _run_local(self, name: str, args: BaseModel) -> ToolResult:
        """What a forked worker runs (it has the store to itself, so catalog reads run in it: `serve.reads`)."""
        tool = self._tools.get(name) or catalog_tool(name)
        return run_tool(self.store, tool, args, self.limits, None, verdicts=self._verdicts, here=True)

    def start_workers(self, n: int, *, call_timeout_s: float | None = None, scheduling: Scheduling = "fair",
                      slice_s: float = 0.5, heavy_slots: int | None = None,
                      memory_budget_mb: float | None = None) -> None:
        """Run store calls in `n` forked workers from now on (call before starting any thread of a server),
        shared as `scheduling` says (see `WorkerPool` and `chronokg.serve.fair`).

        On an engine that does not fork per read (`capabilities.forked_reads`; Neo4j: a READ session per read),
        calls run in the caller's thread instead and need no workers.
        """
        if self._pool is not None or n < 1 or not self.store.capabilities.forked_reads:
            return
        timeout = call_timeout_s or self.limits.timeout_s + 30
        self._pool = WorkerPool(self._run_local, n, call_timeout_s=timeout, fork_lock=self._local,
                                scheduling=scheduling, slice_s=slice_s, heavy_slots=heavy_slots,
                                memory_budget_mb=memory_budget_mb)

    @property
    def workers(self) -> WorkerPool | None:
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._close_store:
            self.store.close()

    def __enter__(self) -> ToolHost:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
