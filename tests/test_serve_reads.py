"""A read worker's cheap path: remembered guard verdicts, catalog reads in the worker itself.

And serve's loose ends: the MCP session as the caller the workers are shared by, and no faulthandler
traceback from a read that dies at its memory limit in a worker.
"""

from __future__ import annotations

import faulthandler
import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from pydantic import BaseModel

from chronokg.errors import QueryRefused
from chronokg.graph.guard import ReadLimits
from chronokg.graph.kglite_store import KgliteStore
from chronokg.serve import ToolHost
from chronokg.serve.mcp_server import build_server
from chronokg.serve.reads import GuardVerdicts
from chronokg.serve.tools import ToolResult
from chronokg.serve.workers import WorkerPool

LIMITS = ReadLimits(timeout_s=3.0, max_rows=1000, max_result_mb=1.0, max_work=10**12, memory_mb=2048)
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("facts_as_of", {"date": "2016-06-01", "subject": "un-secretary-general"}),
    ("timeline", {"subject": "un-secretary-general"}),
    ("changed_between", {"from": "2000-01-01", "to": "2020-01-01"}),
    ("recommended_on", {"date": "2016-06-01", "topic": "resuscitation"}),
    ("trajectory", {"guideline": "aha-ecc-2015"}),
    ("cypher", {"query": "MATCH (f:Fact {subject_id: $s}) RETURN f.predicate AS p, f.value AS v ORDER BY v",
                "params": {"s": "s7"}}),
]


def test_a_worker_answers_every_tool_as_the_guarded_read_in_process_does(served_store: KgliteStore) -> None:
    """Catalog reads run in the worker (no fork per read), cypher through the guard's fork: same rows either way,
    and a row limit still cuts and says so."""
    with ToolHost(served_store, limits=LIMITS) as plain:
        expected = [plain.call_tool(name, args) for name, args in CALLS]
        small = ToolHost(served_store, limits=LIMITS.model_copy(update={"max_rows": 2}))
        cut_expected = small.call_tool(*CALLS[2])
    host = ToolHost(served_store, limits=LIMITS)
    host.start_workers(1)
    cut_host = ToolHost(served_store, limits=LIMITS.model_copy(update={"max_rows": 2}))
    cut_host.start_workers(1)
    try:
        got = [host.call_tool(name, args) for name, args in CALLS]
        again = [host.call_tool(name, args) for name, args in CALLS]  # answered with the remembered verdicts
        cut = cut_host.call_tool(*CALLS[2])
    finally:
        host.close()
        cut_host.close()
    assert all(r.ok and r.rows for r in expected), expected
    assert [r.rows for r in got] == [r.rows for r in expected] == [r.rows for r in again]
    assert [(r.truncated, r.total_rows) for r in got] == [(r.truncated, r.total_rows) for r in expected]
    assert cut.truncated and len(cut.rows) == 2 and cut.rows == cut_expected.rows
    assert cut.total_rows == cut_expected.total_rows


def test_the_guard_checks_a_text_once_and_a_refused_text_every_time(served_store: KgliteStore) -> None:
    verdicts = GuardVerdicts(size=2)
    read = "MATCH (f:Fact) RETURN count(f) AS n"
    for _ in range(3):
        assert verdicts.guarded_read(served_store, read, None, LIMITS).rows[0]["n"] > 0
    assert verdicts.checks == 1
    for _ in range(2):
        with pytest.raises(QueryRefused, match=r"\[text check\]"):
            verdicts.check(served_store, "MATCH (f:Fact) DETACH DELETE f", None)
    with pytest.raises(QueryRefused, match=r"\[plan check\]|\[text check\]"):
        verdicts.check(served_store, "MATCH (f:Fact) CALL { CREATE (:Entity {id: 'x'}) } RETURN f", None)
    assert verdicts.checks == 4  # refusals are never remembered
    verdicts.check(served_store, "RETURN 1 AS a", None)
    verdicts.check(served_store, "RETURN 2 AS a", None)  # the oldest text (read) is forgotten: at most 2
    verdicts.check(served_store, read, None)
    assert verdicts.checks == 7


def _sleepy(name: str, args: BaseModel) -> ToolResult:  # pragma: no cover - runs in a worker
    if name == "slow":
        time.sleep(60)
    return ToolResult(tool=name, rows=[{"pid": os.getpid(), "faulthandler": faulthandler.is_enabled()}])


def _between_two_fast_calls(run: Any, name: str, limit_s: float, **options: Any) -> tuple[
        WorkerPool, ToolResult, ToolResult, float, ToolResult]:
    """On a one-worker pool running `run`: a fast call, `name` within `limit_s` (and how long it took), a fast
    call again (the pool, closed, and the three results)."""
    import threading

    pool = WorkerPool(run, 1, call_timeout_s=120, fork_lock=threading.Lock(), **options)
    try:
        first = pool.call("fast", ReadLimits())
        start = time.monotonic()
        result = pool.call(name, ReadLimits(), limit_s=limit_s)
        took = time.monotonic() - start
        after = pool.call("fast", ReadLimits())
    finally:
        pool.close()
    return pool, first, result, took, after


def test_a_read_run_in_its_worker_past_its_limit_is_stopped_with_its_worker(served_store: KgliteStore) -> None:
    """The worker is the sandbox of a catalog read: past `limit_s` it is killed and replaced, and the call answers
    limit_exceeded (not 'unavailable')."""
    pool, first, slow, took, after = _between_two_fast_calls(_sleepy, "slow", 0.5)
    assert slow.error is not None and slow.error.type == "limit_exceeded" and "0.5 s" in slow.error.message
    assert 0.5 <= took < 10 and pool.limit_kills == 1 and pool.restarts == 1
    assert after.ok and after.rows[0]["pid"] != first.rows[0]["pid"]  # a fresh worker


def _greedy(name: str, args: BaseModel) -> ToolResult:  # pragma: no cover - runs in a worker
    if name == "grow":  # a read run in the worker itself that grows it by ~400 MB (bytes written, so resident)
        held = b"x" * (400 * 2**20)
        time.sleep(30)
        return ToolResult(tool=name, rows=[{"n": len(held)}])
    return ToolResult(tool=name, rows=[{"pid": os.getpid()}])


def test_a_read_run_in_its_worker_counts_in_the_memory_budget_for_all_reads() -> None:
    """The budget for all reads together also sees a catalog read that runs in its worker (no forked child to
    measure): what the worker grew past its idle size. Past the budget the worker is stopped and replaced, and
    the call says the budget ran out (not 'unavailable')."""
    pool, first, grown, took, after = _between_two_fast_calls(_greedy, "grow", 60, memory_budget_mb=150)
    assert grown.error is not None and grown.error.type == "limit_exceeded", grown
    assert "memory budget for all reads together (150 MB)" in grown.error.message
    assert took < 25 and pool.budget_stops == 1 and pool.restarts == 1 and pool.limit_kills == 0
    assert after.ok and after.rows[0]["pid"] != first.rows[0]["pid"]  # a fresh worker


DIES = """
import sys
from chronokg.graph.guard import ReadLimits
from chronokg.graph.kglite_store import KgliteStore
from chronokg.serve import ToolHost
from tests.serve_helpers import CARTESIAN
limits = ReadLimits(timeout_s=60, memory_mb=64, max_work=10**12, max_rows=1000, max_result_mb=1)
host = ToolHost(KgliteStore(sys.argv[1], read_only=True), limits=limits, close_store=True)
host.start_workers(1, slice_s=1000.0)
print("RESULT", host.call_tool("cypher", {"query": CARTESIAN}).model_dump_json())
host.close()
"""


def test_a_read_dying_at_its_memory_limit_in_a_worker_prints_no_faulthandler_traceback(
        served: tuple[Path, str]) -> None:
    """The engine aborts a read past its memory limit; with faulthandler on (python -X faulthandler, as pytest runs)
    the server's stderr got "Fatal Python error: Aborted" and a Python traceback for each. A subprocess: pytest's
    own faulthandler writes to a saved copy of the terminal, which no capture fixture sees."""
    import json
    import subprocess
    import sys

    from tests.helpers import REPO

    run = subprocess.run([sys.executable, "-X", "faulthandler", "-c", DIES, str(served[0])], cwd=REPO,
                         capture_output=True, text=True, timeout=120,
                         env={**{k: v for k, v in os.environ.items() if not k.startswith("CHRONOKG_")},
                              "PYTHONPATH": str(REPO)})
    line = next(x for x in run.stdout.splitlines() if x.startswith("RESULT "))
    error = json.loads(line.removeprefix("RESULT "))["error"]
    assert error["type"] == "limit_exceeded" and "memory limit of 64 MB" in error["message"], error
    assert "Fatal Python error" not in run.stderr and "Traceback" not in run.stderr, run.stderr[-2000:]


def test_each_mcp_connection_is_its_own_caller(served_store: KgliteStore) -> None:
    """Two MCP sessions (the official client, in process, a handshake-era protocol) calling through one server: the
    workers see two callers, each session's calls under one key (keyed by the per-request `ctx.session`, every call
    was a caller of its own)."""
    host = ToolHost(served_store, limits=LIMITS)
    host.start_workers(1)
    pool = host.workers
    assert pool is not None
    server = build_server(host)

    async def session() -> None:
        async with Client(server, read_timeout_seconds=60, mode="legacy") as client:
            for _ in range(2):
                answer = await client.call_tool(*CALLS[0])
                assert not answer.is_error

    async def both() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(session)
            group.start_soon(session)

    try:
        anyio.run(both)
    finally:
        host.close()
    callers = [caller for caller, _ in pool.scheduler.order]
    assert len(callers) == 4 and len(set(callers)) == 2, callers
    assert all(c.startswith("mcp:") and callers.count(c) == 2 for c in callers)


def test_over_streamable_http_an_mcp_caller_is_the_gates_key(served_store: KgliteStore) -> None:
    """A real streamable-HTTP MCP server (uvicorn, in a thread, workers forked first) and two official clients with
    their own bearer tokens: two callers, each keyed under its token as the gate keys it, two calls each."""
    import threading

    import uvicorn

    from chronokg.serve.clients import McpTools
    from chronokg.serve.hosts import HostPolicy
    from chronokg.serve.launch import bind
    from chronokg.serve.mcp_server import streamable_http_app

    tokens = ["mcp-caller-token-a-0123456789", "mcp-caller-token-b-0123456789"]
    host = ToolHost(served_store, limits=LIMITS)
    host.start_workers(1)
    pool = host.workers
    assert pool is not None
    sock = bind("127.0.0.1", 0)
    hosts = HostPolicy.for_bind("127.0.0.1", sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(streamable_http_app(host, bind="127.0.0.1", hosts=hosts, tokens=tokens),
                                           log_level="warning", loop="asyncio", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"

    async def agent(token: str) -> None:
        async with McpTools(url, token=token, timeout_s=60) as tools:
            for _ in range(2):
                assert (await tools.call(*CALLS[0])).ok

    async def both() -> None:
        async with anyio.create_task_group() as group:
            for token in tokens:
                group.start_soon(agent, token)

    try:
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)
        anyio.run(both)
    finally:
        server.should_exit = True
        thread.join(30)
        host.close()
    callers = [caller for caller, _ in pool.scheduler.order]
    assert len(callers) == 4 and len(set(callers)) == 2, callers
    assert all(c.startswith("token:") and callers.count(c) == 2 for c in callers), callers
