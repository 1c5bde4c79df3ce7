"""Heavy reads never starve light ones: fair queueing by caller, a heavy lane, one memory budget.

Behaviour, not timings: who gets a worker in which order (the scheduler's dispatch log), counters, and
which call finishes first. The pool tests run real reads on the embedded engine in forked workers.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest

from chronokg.graph.guard import ReadLimits
from chronokg.graph.kglite_store import KgliteStore
from chronokg.serve import ToolHost
from chronokg.serve.fair import CALLER, Scheduler
from chronokg.serve.gate import Gate, caller_key
from chronokg.serve.tools import ToolResult
from chronokg.serve.workers import HEAVY_NICE, WorkerPool, cpu_s, read_pids
from tests.serve_helpers import CARTESIAN

pytestmark = pytest.mark.slow  # heavy reads run to their time limit

LIMITS = ReadLimits(timeout_s=3.0, max_rows=1000, max_result_mb=1.0, max_work=10**12, memory_mb=2048)
CHEAP = ("timeline", {"subject": "un-secretary-general"})


# --- the scheduler alone ----------------------------------------------------------------------------------------

def _drain(s: Scheduler, n: int) -> list[str]:
    out = []
    for w in range(n):
        t = s.pick(0.0)
        assert t is not None
        s.start(t, w, 0.0)
        out.append(f"{t.caller}{t.seq}")
    return out


def test_a_callers_queue_is_served_in_turn_with_others_not_ahead_of_them() -> None:
    fair = Scheduler(heavy_slots=1, slice_s=1.0)
    fifo = Scheduler(heavy_slots=1, slice_s=1.0, mode="fifo")
    for s in (fair, fifo):
        for _ in range(5):
            s.submit("h")
        s.submit("c")
        s.submit("d")
    assert _drain(fair, 4) == ["h0", "c5", "d6", "h1"]  # one turn each, whatever h has queued
    assert _drain(fifo, 4) == ["h0", "h1", "h2", "h3"]  # the old way: c waits behind all of h


def test_a_read_past_its_slice_makes_its_caller_heavy_and_the_heavy_lane_is_capped() -> None:
    s = Scheduler(heavy_slots=1, slice_s=1.0)
    for caller in ("h", "h", "c"):
        s.submit(caller)
    first = s.pick(0.0)
    assert first is not None and first.caller == "h"
    s.start(first, 0, 0.0)
    assert s.outgrow(0.5) == [] and s.heavy_running == 0  # still within its slice
    assert s.outgrow(1.5) == [first] and s.heavy_running == 1 and s.is_heavy("h", 1.5)
    nxt = s.pick(1.5)  # h's second read waits: the heavy lane (1 slot) is full; c goes
    assert nxt is not None and nxt.caller == "c" and not nxt.heavy
    s.start(nxt, 1, 1.5)
    assert s.pick(1.5) is None and s.waiting() == 1
    s.finish(first)
    again = s.pick(2.0)
    assert again is not None and again.caller == "h" and again.heavy and s.heavy_running == 1
    s.finish(nxt)
    s.submit("h")  # a marked caller waiting its turn keeps its mark however long it waits ...
    assert s.outgrow(1.5 + s.heavy_for_s - 1) == [] and s.is_heavy("h", 1.5 + 2 * s.heavy_for_s - 2)
    s.withdraw(next(t for q in s._queues.values() for t in q if t.caller == "h"))
    assert not s.is_heavy("h", 1.5 + 3 * s.heavy_for_s)  # ... and the mark wears off once it sends nothing long


def test_a_read_outgrowing_its_slice_with_the_heavy_lane_full_is_stopped_and_comes_back_in_that_lane() -> None:
    s = Scheduler(heavy_slots=1, slice_s=1.0)
    a, b = s.submit("a"), s.submit("b")
    for w, t in enumerate((s.pick(0.0), s.pick(0.0))):
        assert t is not None
        s.start(t, w, 0.0)
    assert s.outgrow(2.0) == [a, b] and s.heavy_running == 1 and (a.heavy, b.preempt) == (True, True)
    s.finish(b)  # the pool stopped it
    again = s.submit("b", pinned=True)
    assert s.pick(2.0) is None  # the heavy lane is full: b waits for a, whatever its mark says
    s.finish(a)
    assert s.pick(2.0) is again and again.heavy and s.preempted == 1


# --- the caller a request counts against ------------------------------------------------------------------------

def test_a_read_is_heavy_by_the_cpu_it_used_not_by_the_time_it_waited_for_a_core() -> None:
    s = Scheduler(heavy_slots=1, slice_s=0.5, overtime_slots=1)
    waiting, working = s.submit("cheap"), s.submit("heavy")
    for w, t in enumerate((s.pick(0.0), s.pick(0.0))):
        assert t is not None
        s.start(t, w, 0.0)
    # 1.5 s in, the cheap read used 0.1 s of CPU (it waited for a core), the heavy one 0.6 s: the heavy one moves
    # to the heavy lane and marks its caller; the cheap one goes into overtime (a fresh worker takes its place in
    # the light lane), keeps running, and marks nobody
    assert s.outgrow(1.5, {0: 0.1, 1: 0.6}) == [waiting, working]
    assert working.heavy and s.is_heavy("heavy", 1.5) and s.heavy_running == 1
    assert waiting.overtime and not waiting.heavy and not waiting.preempt and not s.is_heavy("cheap", 1.5)
    assert s.set_aside() == 2 and s.light_running() == 0
    queued, other = s.submit("cheap"), s.submit("third")
    assert s.pick(1.6) is other  # the caller with a read in overtime waits for it; the others do not
    s.start(other, 2, 1.6)
    s.finish(other)
    assert s.outgrow(3.0, {0: 0.2, 1: 1.0}) == []  # nothing new
    # the read in overtime works its slice after all: it needs the heavy lane, which is full, so it is stopped
    assert s.outgrow(4.0, {0: 0.7, 1: 2.0}) == [waiting] and waiting.preempt and not waiting.overtime
    assert s.overtime_running == 0 and s.is_heavy("cheap", 4.0) and s.preempted == 1
    s.finish(waiting)
    s.finish(working)
    assert s.set_aside() == 0 and s.pick(5.0) is queued


def test_reads_cpu_is_measured_from_proc() -> None:
    start = cpu_s(os.getpid())
    end = time.process_time() + 0.3
    while time.process_time() < end:
        pass
    assert 0.2 <= cpu_s(os.getpid()) - start <= 2.0 and cpu_s(2**22 + 12345) == 0.0


def test_the_caller_is_the_session_else_the_client_id_else_the_connection() -> None:
    base: dict[str, Any] = {"type": "http", "client": ("10.0.0.7", 5555), "headers": []}
    assert caller_key(base) == "anonymous|conn:10.0.0.7:5555"
    # two local agents without ids: two callers (keyed by address, one heavy agent made both heavy)
    assert caller_key({**base, "client": ("127.0.0.1", 40001)}) != caller_key({**base, "client": ("127.0.0.1", 40002)})
    assert caller_key({**base, "headers": [(b"x-chronokg-client", b"agent-3")]}, "token:ab") == \
        "token:ab|client:agent-3"
    assert caller_key({**base, "headers": [(b"x-chronokg-client", b"a"), (b"mcp-session-id", b"s1")]}) == \
        "anonymous|mcp:s1"


def test_the_gate_tells_the_workers_who_is_calling() -> None:
    import anyio

    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(CALLER.get())
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def sent(message: Any) -> None:
        return None

    async def received() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    gate = Gate(app, tokens=["t" * 20])
    scope = {"type": "http", "method": "GET", "path": "/x", "client": ("127.0.0.1", 1),
             "headers": [(b"authorization", b"Bearer " + b"t" * 20), (b"x-chronokg-client", b"agent-9")]}
    anyio.run(gate, scope, received, sent)
    assert len(seen) == 1 and seen[0].startswith("token:") and seen[0].endswith("|client:agent-9")


# --- the pool, with real reads ----------------------------------------------------------------------------------

def _wait_for(predicate: Any, what: str, limit_s: float = 60.0) -> None:
    """Poll a counter (a generous bound, only so a broken pool fails instead of hanging)."""
    end = time.monotonic() + limit_s
    while not predicate():
        assert time.monotonic() < end, f"never happened: {what}"
        time.sleep(0.01)


def _heavy_then_cheap(served_store: KgliteStore, scheduling: str) -> tuple[list[tuple[str, int]], list[str], list[Any]]:
    """One worker. Caller h sends two reads that run to the time limit; once the first has outgrown its slice
    (or, first come first served, once both are queued), caller c sends one cheap read."""
    host = ToolHost(served_store, limits=LIMITS)
    host.start_workers(1, scheduling=scheduling, slice_s=0.2, heavy_slots=1)  # type: ignore[arg-type]
    pool = host.workers
    assert pool is not None
    done: list[str] = []
    results: dict[str, Any] = {}

    def call(label: str, caller: str, name: str, args: dict[str, Any]) -> None:
        results[label] = host.call_tool(name, args, caller=caller)
        done.append(label)

    threads = [threading.Thread(target=call, args=("h1", "h", "cypher", {"query": CARTESIAN}))]
    threads[0].start()
    _wait_for(lambda: len(pool.scheduler.running) == 1, "h1 started")
    threads.append(threading.Thread(target=call, args=("h2", "h", "cypher", {"query": CARTESIAN})))
    threads[1].start()
    _wait_for(lambda: pool.scheduler.waiting() == 1, "h2 queued")
    if scheduling == "fair":
        _wait_for(lambda: pool.scheduler.outgrown >= 1, "h1 outgrew its slice")
        _wait_for(lambda: [os.getpriority(os.PRIO_PROCESS, pid) for w in pool._workers if w.process.pid
                           for pid in read_pids(w.process.pid)] == [HEAVY_NICE], "h1 yields the CPU")
    threads.append(threading.Thread(target=call, args=("c", "c", *CHEAP)))
    threads[2].start()
    for t in threads:
        t.join()
    order = list(pool.scheduler.order)
    host.close()
    return order, done, [results[k] for k in ("h1", "h2", "c")]


def test_a_heavy_callers_queue_does_not_hold_back_a_cheap_read(served_store: KgliteStore) -> None:
    order, done, (h1, h2, c) = _heavy_then_cheap(served_store, "fair")
    assert h2.error is not None and h2.error.type == "limit_exceeded"  # it ran, in the heavy lane, after c
    assert c.ok and c.rows
    assert h1.error is not None and h1.error.type == "limit_exceeded"  # the existing per-read limit still holds
    assert [caller for caller, _ in order] == ["h", "c", "h"]  # c got a worker before h's queued read
    assert done[0] == "c"  # ... and finished while h's first read still ran (a fresh worker took its lane)


def test_first_come_first_served_is_kept_as_the_baseline_and_queues_the_cheap_read_last(
        served_store: KgliteStore) -> None:
    order, done, (_, _, c) = _heavy_then_cheap(served_store, "fifo")
    assert c.ok and [caller for caller, _ in order] == ["h", "h", "c"] and done == ["h1", "h2", "c"]


def test_reads_together_stay_within_the_memory_budget(served_store: KgliteStore) -> None:
    """The budget (256 MB for all reads) stops the read holding the most, far below its own 2 GB limit."""
    host = ToolHost(served_store, limits=LIMITS.model_copy(update={"timeout_s": 120.0}))
    # a slice longer than the read: it stays in the light lane at full CPU priority, so on a busy machine its
    # memory, not its time, is what stops it
    host.start_workers(2, memory_budget_mb=256, slice_s=1000.0)
    pool = host.workers
    assert pool is not None
    try:
        big = host.call_tool("cypher", {"query": CARTESIAN})
        after = host.call_tool(*CHEAP)
    finally:
        host.close()
    assert big.error is not None and big.error.type == "limit_exceeded", big
    assert "memory budget for all reads together (256 MB)" in big.error.message
    assert pool.budget_stops == 1 and pool.peak_read_mb > 256
    assert after.ok and after.rows  # the pool goes on


def test_two_unknown_heavy_callers_share_one_heavy_slot_and_cheap_reads_keep_their_workers(
        served_store: KgliteStore) -> None:
    """Two workers, one heavy slot: both heavy reads outgrow their slice; one moves to the heavy lane, the other
    is stopped and runs again after it; a cheap read sent meanwhile gets a worker at once. A time limit of 1.5 s:
    on a core of its own the cartesian read reaches its 2 GB memory limit in about 3 s, and this test is about
    the time limit."""
    host = ToolHost(served_store, limits=LIMITS.model_copy(update={"timeout_s": 1.5}))
    host.start_workers(2, slice_s=0.2, heavy_slots=1)
    pool = host.workers
    assert pool is not None
    results: dict[str, Any] = {}
    done: list[str] = []

    def call(label: str, name: str, args: dict[str, Any]) -> None:
        results[label] = host.call_tool(name, args, caller=label)
        done.append(label)

    heavy = [threading.Thread(target=call, args=(c, "cypher", {"query": CARTESIAN})) for c in ("g", "h")]
    try:
        for t in heavy:
            t.start()
        _wait_for(lambda: pool.scheduler.preempted == 1, "one heavy read stopped to make room")
        _wait_for(lambda: pool.scheduler.waiting() == 1, "the stopped read queued again")
        cheap = threading.Thread(target=call, args=("c", *CHEAP))
        cheap.start()
        for t in [*heavy, cheap]:
            t.join()
    finally:
        host.close()
    assert results["c"].ok and results["c"].rows and done[0] == "c"
    for label in ("g", "h"):  # both ran to their own time limit, the stopped one after the other
        error = results[label].error
        assert error is not None and error.type == "limit_exceeded" and "time limit" in error.message, error
    callers = [caller for caller, _ in pool.scheduler.order]
    assert sorted(callers[:2]) == ["g", "h"] and callers[2] == "c" and len(callers) == 4
    assert pool.scheduler.heavy_running == 0


def _burn(name: str, args: Any) -> ToolResult:  # pragma: no cover - runs in a forked worker
    """A read that works in its worker itself, as a catalog read does (no forked child): `burn:SECONDS` of CPU."""
    end = time.process_time() + float(name.split(":")[1])
    while time.process_time() < end:
        pass
    return ToolResult(tool=name)


@pytest.mark.slow  # seconds of CPU in forked workers
def test_a_read_in_its_worker_outgrowing_its_slice_with_the_heavy_lane_full_is_stopped_too() -> None:
    """One worker, one heavy slot. g's read works its slice and takes the heavy lane; h's (a caller not yet known
    as heavy) then outgrows its slice in the light lane. It has no forked child to kill (a catalog read runs in
    its worker): its worker is killed and replaced, h's read queued again in the heavy lane, and a cheap read
    sent meanwhile finishes first. Before, h's read held the light worker to its end and the cheap read waited."""
    pool = WorkerPool(_burn, 1, call_timeout_s=120, fork_lock=threading.Lock(), slice_s=0.2, heavy_slots=1)
    done: list[str] = []
    results: dict[str, ToolResult] = {}

    def call(label: str, seconds: float) -> None:
        results[label] = pool.call(f"burn:{seconds}", ToolResult(tool="x"), caller=label)
        done.append(label)

    threads = {label: threading.Thread(target=call, args=(label, s)) for label, s in
               (("g", 4.0), ("h", 4.0), ("c", 0.01))}
    try:
        threads["g"].start()
        _wait_for(lambda: pool.scheduler.heavy_running == 1, "g in the heavy lane")
        threads["h"].start()
        _wait_for(lambda: pool.scheduler.preempted == 1, "h outgrew its slice with the heavy lane full")
        threads["c"].start()
        for t in threads.values():
            t.join(120)
    finally:
        pool.close()
    assert all(r.ok for r in results.values()), results
    assert done[0] == "c", done
    assert pool.restarts >= 1  # h's worker, killed to stop its read


def test_a_caller_known_light_goes_ahead_of_callers_not_known_yet_one_read_at_a_time() -> None:
    """c's last read stayed within its slice: its next read goes before five callers not known yet (each of which
    may hold a worker for a slice of CPU, seconds of wall time on a busy machine), one read at a time; a read that
    works its slice makes its caller unknown again."""
    s = Scheduler(heavy_slots=1, slice_s=1.0)
    s.submit("c")
    short = s.pick(0.0)
    assert short is not None
    s.start(short, 0, 0.0)
    s.finish(short, 0.1)
    assert s.is_light("c", 0.2)
    for k in range(5):
        s.submit(f"new{k}")
    s.submit("c")
    s.submit("c")
    assert _drain(s, 3) == ["c6", "new01", "new12"]  # c first; its second read waits its turn while the first runs
    long = next(t for t in s.running.values() if t.caller == "c")
    assert s.outgrow(0.9, {0: 1.5, 1: 0.1, 2: 0.1}) == [long] and not s.is_light("c", 0.9)
    s.finish(long, 1.0)
    assert not s.is_light("c", 1.1) and s.is_heavy("c", 1.1)
    fifo = Scheduler(heavy_slots=1, slice_s=1.0, mode="fifo")
    fifo.submit("c")
    t = fifo.pick(0.0)
    assert t is not None
    fifo.start(t, 0, 0.0)
    fifo.finish(t, 0.1)
    assert not fifo.is_light("c", 0.2)  # first come, first served knows nobody
