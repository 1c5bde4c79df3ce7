"""Forked read workers: how a threaded server runs guarded reads safely and in parallel.

The guard runs every read on the embedded engine in a forked child of the process
that holds the store (`graph.sandbox`). Forking from a threaded server is unsafe as
it stands: the engine releases the GIL while it runs a query, so another thread may
be inside it (holding its internal locks) at the moment of a fork, and the child
then hangs until its time limit kills it; and a child forked by one thread inherits
the pipe of another thread's read, so a fast read waits for a slow sibling to exit.
Both were seen here (a 6 ms read reported as "ran past its time limit").

So the server forks N workers once, before it starts any thread. Each worker is a
single-threaded process that inherits the read-only store copy-on-write (no reload,
no extra copy of the graph) and runs one call at a time, forking its own guarded
child as the CLI does; the parent never touches the store after forking them. Calls
wait for a free worker, taken in the order `chronokg.serve.fair` says (fair by caller, with a
lane for heavy reads); a slow read blocks one worker, not the server. All reads together stay
within one memory budget, besides each read's own limit: a guarded read's forked child counts what it
allocated since its fork, a catalog read run in the worker itself (`chronokg.serve.reads`) what its worker
allocated since last seen idle.
"""

from __future__ import annotations

import contextlib
import faulthandler
import itertools
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from chronokg.serve.fair import CALLER, Scheduler, Scheduling, Ticket
from chronokg.serve.tools import ToolFailure, ToolResult

Runner = Callable[[str, BaseModel], ToolResult]
IDLE_RESAMPLE_S = 1.0  # how often an idle worker's own size is measured again (it drifts as Python touches pages)
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")  # the unit of /proc/PID/stat's CPU times
HEAVY_NICE = 19  # the CPU priority of a read in the heavy lane: light reads run first where cores are short


@dataclass(eq=False)
class _Worker:
    process: BaseProcess
    conn: Connection
    id: int = 0
    idle_mb: float = 0.0  # its anonymous memory when last seen idle: what an in-worker read grows it by counts
    idle_seen: float = 0.0  # when (time.monotonic())


def _serve(conn: Connection, run: Runner, inherited: list[Connection]) -> None:  # pragma: no cover - in a worker
    """A worker's loop: one call at a time until the parent closes its end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the server; it closes the workers
    # A read that outgrows its memory limit aborts its forked child (the engine's allocator calls abort()); with
    # faulthandler on (pytest, python -X faulthandler) each printed "Fatal Python error: Aborted" and a traceback
    # on the server's stderr. The read still answers limit_exceeded; the noise is not ours to print.
    faulthandler.disable()
    for other in inherited:
        with contextlib.suppress(OSError):
            other.close()
    parent = os.getppid()
    while True:
        try:
            if not conn.poll(1.0):
                if os.getppid() != parent:
                    break  # the server is gone without closing us (uvicorn re-raises SIGTERM after shutdown)
                continue
            name, args = conn.recv()
        except (EOFError, OSError):
            break
        try:
            result = run(name, args)
        except BaseException as exc:  # a bug: report it, keep serving
            result = ToolResult(tool=name, ok=False, error=ToolFailure(type="internal",
                                                                     message=f"{type(exc).__name__}: {exc}"))
        try:
            conn.send(result)
        except (OSError, ValueError):
            break
    os._exit(0)  # no exit handlers: a worker holds a copy of the store and must never close or save it


class WorkerPool:
    """`n` forked single-threaded workers running `run(tool, args)`; `call` blocks until one is free.

    Which waiting call goes next is `chronokg.serve.fair`'s business: `scheduling="fair"` (per caller,
    with a heavy lane of `heavy_slots` workers; a read that outgrows its first `slice_s` moves there and a
    fresh worker takes its place, at most `2n + heavy_slots` workers in all (reads in overtime: `fair`), and
    its read runs at `HEAVY_NICE`), or `"fifo"` (the old first come,
    first served, kept to measure against). `memory_budget_mb` bounds what all running reads allocate
    together (each read keeps its own limit too): past it, the read holding the most is stopped.
    """

    def __init__(self, run: Runner, n: int, *, call_timeout_s: float, fork_lock: threading.Lock,
                 scheduling: Scheduling = "fair", slice_s: float = 0.5, heavy_slots: int | None = None,
                 memory_budget_mb: float | None = None) -> None:
        if n < 1:
            raise ValueError("a worker pool needs at least one worker")
        self._run = run
        self._ctx = multiprocessing.get_context("fork")
        self._timeout = call_timeout_s
        self._fork_lock = fork_lock
        self._workers: list[_Worker] = []
        self._idle: list[_Worker] = []
        self._retired: list[_Worker] = []
        self._ids = itertools.count()
        self._closed = False
        self.n = n
        self.heavy_slots = max(1, n // 2) if heavy_slots is None else max(1, heavy_slots)
        self.memory_budget_mb = memory_budget_mb if scheduling == "fair" else None
        self.scheduler = Scheduler(self.heavy_slots, slice_s, mode=scheduling, overtime_slots=n)
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)  # the pool's lock: every method below takes it
        # one wake-up per waiting call, woken alone when it gets a worker (notify_all woke every waiting thread at
        # each dispatch: 45 waiting callers, ~80 dispatches a second in the heavy-caller mix)
        self._waiting: dict[Ticket, threading.Condition] = {}
        self.restarts = 0
        self.budget_stops = 0
        self.limit_kills = 0  # workers killed because a read run in them outlived its `limit_s`
        self.peak_read_mb = 0.0
        for _ in range(n):
            self._idle.append(self._spawn())
        self._watch: threading.Thread | None = None
        if scheduling == "fair":
            self._watch = threading.Thread(target=self._watchdog, name="chronokg-read-watchdog", daemon=True)
            self._watch.start()

    @property
    def size(self) -> int:
        return len(self._workers)

    @property
    def scheduling(self) -> Scheduling:
        return self.scheduler.mode

    def alive(self) -> int:
        return sum(w.process.is_alive() for w in self._workers)

    def _spawn(self) -> _Worker:
        parent, child = self._ctx.Pipe()
        inherited = [parent, *(w.conn for w in self._workers)]  # the server's ends: EOF must reach each worker
        with self._fork_lock:  # no in-process store call runs in another thread while we fork
            process = self._ctx.Process(target=_serve, args=(child, self._run, inherited), daemon=True,
                                        name=f"chronokg-read-worker-{len(self._workers)}")
            process.start()
        child.close()
        worker = _Worker(process, parent, next(self._ids))
        if process.pid is not None:
            worker.idle_mb, worker.idle_seen = anon_mb(process.pid), time.monotonic()
        self._workers.append(worker)
        return worker

    def _replace(self, worker: _Worker) -> None:
        with contextlib.suppress(ProcessLookupError, AttributeError):
            worker.process.kill()
        worker.process.join(5)
        worker.conn.close()
        with self._cond:
            self._workers.remove(worker)
            self.restarts += 1
            if not self._closed and len(self._workers) - self.scheduler.set_aside() < self.n:
                self._idle.append(self._spawn())
            self._dispatch()

    def _dispatch(self) -> None:
        """Give idle workers to the calls the scheduler picks (under the lock)."""
        now = time.monotonic()
        while self._idle:
            ticket = self.scheduler.pick(now)
            if ticket is None:
                break
            worker = self._idle.pop()
            self.scheduler.start(ticket, worker.id, now)
            ticket.cpu0 = cpu_s(worker.process.pid) if worker.process.pid is not None else 0.0
            wake = self._waiting.pop(ticket, None)
            if wake is not None:
                wake.notify()

    def _worker(self, ticket: Ticket) -> _Worker | None:
        return next((w for w in self._workers if w.id == ticket.worker), None)

    def call(self, name: str, args: BaseModel, caller: str | None = None,
             limit_s: float | None = None) -> ToolResult:
        """Run `name(args)` for `caller` (default: `fair.CALLER`) when the scheduler gives it a worker.
        A worker that dies or hangs is replaced; a read stopped to make room (see `fair`) runs again.
        `limit_s`: a read that runs in the worker itself (`chronokg.serve.reads`) and is not answered within it
        has its worker killed and replaced, and answers limit_exceeded."""
        who = caller or CALLER.get()
        result = self._call_once(name, args, who, pinned=False, limit_s=limit_s)
        if isinstance(result, _Preempted):
            result = self._call_once(name, args, who, pinned=True, limit_s=limit_s)
        assert not isinstance(result, _Preempted)  # a pinned read is in the heavy lane: never stopped again
        return result

    def _call_once(self, name: str, args: BaseModel, caller: str, pinned: bool,
                   limit_s: float | None = None) -> ToolResult | _Preempted:
        with self._cond:
            ticket = self.scheduler.submit(caller, pinned)
            self._waiting[ticket] = wake = threading.Condition(self._lock)  # the pool's lock, its own wake-up
            self._dispatch()
            try:
                while ticket.worker is None:
                    wake.wait()
            except BaseException:
                self.scheduler.withdraw(ticket)
                raise
            finally:
                self._waiting.pop(ticket, None)
            worker = self._worker(ticket)
        assert worker is not None  # dispatched to a worker of the pool; only this call gives it back
        try:
            worker.conn.send((name, args))
            if not worker.conn.poll(self._timeout if limit_s is None else min(limit_s, self._timeout)):
                self._finish(ticket, None)
                self._replace(worker)
                if limit_s is not None:
                    self.limit_kills += 1
                    return ToolResult(tool=name, ok=False, error=ToolFailure(type="limit_exceeded", message=(
                        f"the query ran past its time limit and was stopped after {limit_s:g} s")))
                return _unavailable(name, f"the read worker did not answer within {self._timeout:g} s and was "
                                          "restarted")
            result: Any = worker.conn.recv()
        except (EOFError, OSError) as exc:
            self._finish(ticket, None)
            self._replace(worker)
            if ticket.preempt:  # a read run in the worker itself, stopped to make room: it runs again
                return _Preempted()
            if ticket.killed_for_memory:  # a read run in the worker itself: the budget stopped the worker
                return self._over_budget(name, ticket)
            return _unavailable(name, f"the read worker stopped ({type(exc).__name__}) and was restarted; try again")
        self._finish(ticket, worker)
        if not isinstance(result, ToolResult):
            return _unavailable(name, "the read worker sent something that is not a result")
        if ticket.preempt and result.error is not None and result.error.type == "limit_exceeded":
            return _Preempted()
        if ticket.killed_for_memory and result.error is not None and result.error.type == "limit_exceeded":
            return self._over_budget(name, ticket)
        return result

    def _over_budget(self, name: str, ticket: Ticket) -> ToolResult:
        return ToolResult(tool=name, ok=False, error=ToolFailure(type="limit_exceeded", message=(
            f"the server's memory budget for all reads together ({self.memory_budget_mb:g} MB) ran out and "
            f"this read held the most ({ticket.killed_for_memory:,.0f} MB): narrow it (LIMIT, fewer "
            "patterns) or try again later")))

    def _finish(self, ticket: Ticket, worker: _Worker | None) -> None:
        """The call is over: its worker goes back (or retires, when the pool has more than it needs)."""
        with self._cond:
            self.scheduler.finish(ticket, time.monotonic() if worker is not None else None)
            if worker is not None:
                surplus = len(self._workers) - self.n - self.scheduler.set_aside()
                if surplus > 0 and not self._closed:
                    self._workers.remove(worker)
                    worker.conn.close()  # it exits at EOF; the watchdog reaps it
                    self._retired.append(worker)
                else:
                    self._idle.append(worker)
            self._dispatch()

    def _watchdog(self) -> None:
        """Every tick: reads past their slice move to the heavy lane (a fresh worker replaces each while the
        pool is under `2n + heavy_slots`), the memory budget is checked, retired workers are reaped."""
        tick = max(0.02, min(0.1, self.scheduler.slice_s / 4))
        while not self._closed:
            time.sleep(tick)
            with self._cond:
                if self._closed:
                    break
                stop = [(t, w.process.pid) for t in self.scheduler.outgrow(time.monotonic(), self._read_cpu())
                        if t.preempt and (w := self._worker(t)) is not None]
                heavy_pids = [w.process.pid for t in self.scheduler.running.values()
                              if t.heavy and (w := self._worker(t)) is not None]
                want = self.n - (len(self._workers) - self.scheduler.set_aside())
                room = 2 * self.n + self.heavy_slots - len(self._workers)
                spawn = max(0, min(want, room))
                running = [(t, w) for t in self.scheduler.running.values() if (w := self._worker(t)) is not None]
                now = time.monotonic()
                idle = [w for w in self._idle if now - w.idle_seen >= IDLE_RESAMPLE_S]
                for gone in [w for w in self._retired if not w.process.is_alive()]:
                    gone.process.join(0)
                    self._retired.remove(gone)
            for pid in heavy_pids:  # heavy reads yield the CPU to light ones (they keep every limit)
                for child in read_pids(pid) if pid is not None else []:
                    with contextlib.suppress(OSError):
                        if os.getpriority(os.PRIO_PROCESS, child) < HEAVY_NICE:
                            os.setpriority(os.PRIO_PROCESS, child, HEAVY_NICE)
            for ticket, pid in stop:
                self._stop(ticket, pid)
            for _ in range(spawn):
                fresh = self._spawn()
                with self._cond:
                    self._idle.append(fresh)
                    self._dispatch()
            for w in idle:  # outside the lock; a worker taken meanwhile keeps this size, measured while idle
                if w.process.pid is not None:
                    w.idle_mb, w.idle_seen = anon_mb(w.process.pid), now
            if self.memory_budget_mb is not None and running:
                self._check_budget(running)

    def _stop(self, ticket: Ticket, pid: int | None) -> None:
        """Stop a read marked `preempt`; `call` queues it again in the heavy lane. A forked read: its child is
        killed, its worker's guard sees it die and answers. A catalog read runs in the worker itself
        (`chronokg.serve.reads`) with no child to kill: the worker is killed and replaced (before, such a read
        went on holding its light worker up to its time limit, and cheap reads waited behind it)."""
        if pid is None:
            return
        children = read_pids(pid)
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        if children:
            return
        with self._cond:  # only while that worker still runs this read (it may have answered meanwhile)
            if ticket.worker is not None and self.scheduler.running.get(ticket.worker) is ticket:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def _read_cpu(self) -> dict[int, float]:
        """The CPU seconds each running read used so far, by worker id: its worker's since the read started (a
        catalog read runs there) and its forked children's (a guarded read runs in one)."""
        used: dict[int, float] = {}
        for worker_id, ticket in self.scheduler.running.items():
            worker = self._worker(ticket)
            pid = worker.process.pid if worker is not None else None
            if pid is not None:
                used[worker_id] = cpu_s(pid) - ticket.cpu0 + sum(cpu_s(child) for child in read_pids(pid))
        return used

    def _check_budget(self, running: list[tuple[Ticket, _Worker]]) -> None:
        held = [(t, pid, mb) for t, w in running if w.process.pid is not None
                for pid, mb in read_memory(w.process.pid)]
        for t, w in running:  # a catalog read runs in its worker (chronokg.serve.reads): what the worker grew
            if w.process.pid is not None and (grown := anon_mb(w.process.pid) - w.idle_mb) > 0:
                held.append((t, w.process.pid, grown))
        total = sum(mb for _, _, mb in held)
        self.peak_read_mb = max(self.peak_read_mb, total)
        if self.memory_budget_mb is None or total <= self.memory_budget_mb or not held:
            return
        ticket, pid, mb = max(held, key=lambda h: h[2])
        ticket.killed_for_memory = mb
        self.budget_stops += 1
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # the worker's guard sees its read die and answers limit_exceeded

    def close(self) -> None:
        """Close every worker's pipe (each exits at EOF), then make sure they are gone."""
        with self._cond:
            self._closed = True
        for worker in self._workers:
            worker.conn.close()
        for worker in [*self._workers, *self._retired]:
            worker.process.join(5)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(5)
        self._workers.clear()
        self._retired.clear()


class _Preempted:
    """A read stopped after its first slice to make room: queued again, in the heavy lane."""


def read_pids(worker_pid: int) -> list[int]:
    """The reads a worker runs now in forked children (the guard's sandbox)."""
    try:
        return [int(child) for child in Path(f"/proc/{worker_pid}/task/{worker_pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def read_memory(worker_pid: int) -> list[tuple[int, float]]:
    """(pid, MB) of each read a worker runs in a forked child: what the child allocated since the fork, its
    anonymous memory past its worker's (a fork starts with its parent's resident pages, shared copy-on-write;
    the store it maps counts nothing). Checked against smaps_rollup's private pages: 100.0 vs 101.6 MB for a
    child of a 1M-fact worker that allocated 100 MB."""
    base = anon_mb(worker_pid)
    return [(child, max(0.0, anon_mb(child) - base)) for child in read_pids(worker_pid)]


def cpu_s(pid: int) -> float:
    """The CPU seconds (user + system) a process has used, 0 when it is gone (/proc/PID/stat, in clock ticks: 10 ms
    resolution; a read takes microseconds)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    except (OSError, ValueError, IndexError):
        return 0.0


def anon_mb(pid: int) -> float:
    """The resident memory of a process that is not file-backed (MB; /proc/PID/statm: resident - shared), 0 when it
    is gone. Its growth is what a read run in a worker allocated: copy-on-write pages shared with the parent are
    resident anonymous memory already, before and after. statm costs microseconds; smaps_rollup walks every
    mapping (14-18 ms in a worker of a 1M-fact store), too slow for each read at each watchdog tick."""
    try:
        fields = Path(f"/proc/{pid}/statm").read_text().split()
        return (int(fields[1]) - int(fields[2])) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0



def _unavailable(name: str, message: str) -> ToolResult:
    return ToolResult(tool=name, ok=False, error=ToolFailure(type="unavailable", message=message))
