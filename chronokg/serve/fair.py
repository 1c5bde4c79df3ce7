"""Which waiting call a free read worker takes next: fair by caller, with a lane for heavy reads.

First come, first served let five callers sending heavy Cypher hold every worker while
forty-five cheap callers waited behind them (cheap p99 of 20 s). Here:

* each caller (HTTP: the client id header, else its connection, under its token; MCP: the
  session) has its own queue, and free workers go round the callers in turn, so a caller
  with many queued reads never pushes another caller's read back more than one turn.
  Callers that send no id are told apart by connection, not by address: local agents all
  come from 127.0.0.1, and one heavy agent marked the shared address heavy for every other;
* a read that has worked for its first time slice (`slice_s` of CPU, counted by the pool from
  /proc; the wall clock only where no CPU time is known) leaves the light lane for the heavy
  lane, and its caller counts as heavy for a while (`heavy_for_s`);
* a read past its slice by the clock that has not worked it (it waits for a core, as every read
  does on a busy machine) goes into overtime: a fresh worker takes its place in the light lane
  (at most `n` reads in overtime), its caller is not marked, and it keeps running, while its
  caller's next reads wait for it; if it then works its slice, it moves to the heavy lane like
  any other. Heavy callers' reads together hold at most `heavy_slots` workers, so cheap callers
  always find one. CPU, not elapsed time: on a busy machine a cheap read waits for a core, and
  counting that wait marked cheap callers heavy (their next reads then queued behind the heavy
  lane for tens of seconds);
* a read that outgrows its slice while the heavy lane is full (a caller not yet known as heavy)
  is stopped and queued again in the heavy lane: it loses one slice of work, once, and the light
  lane never holds more than a slice of anybody's heavy read;
* a caller whose last read finished within its slice is known light (for `heavy_for_s`): its next
  read, one at a time, goes ahead of callers not known yet. On a machine short of cores a slice of
  CPU takes seconds of wall time, and a cheap caller that took its turn after every new heavy
  caller's first slice waited for all of them (measured: benchmarks/bench_serve_cheap_wait.py).

`Scheduler` is only the bookkeeping (no processes, no clock of its own): `WorkerPool`
(`chronokg.serve.workers`) holds the lock and the workers. `CALLER` is how the servers
tell the pool who is calling (a context variable: it follows a request into its thread).
"""

from __future__ import annotations

import collections
import itertools
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Literal

Scheduling = Literal["fair", "fifo"]
CALLER: ContextVar[str] = ContextVar("chronokg_caller", default="local")
MAX_CALLERS = 10_000  # callers remembered as light
CLIENT_HEADER = b"x-chronokg-client"  # an HTTP client's own id (several agents behind one address or token)


@dataclass(eq=False)
class Ticket:
    """One call waiting for, then holding, a worker."""

    caller: str
    seq: int
    worker: int | None = None  # the worker's index once dispatched
    started: float = 0.0
    cpu0: float = 0.0  # the CPU seconds its worker had used when it started (set by the pool)
    heavy: bool = False  # counted in the heavy lane (a heavy caller's read, or one that outgrew its slice)
    outgrew: bool = False
    worked: bool = False  # outgrew its slice by the CPU it used (not only by the time it took): its caller is heavy
    overtime: bool = False  # past its slice by the clock, not by its work: out of the light lane, nobody marked
    pinned: bool = False  # queued again after it was stopped: a heavy-lane read, whatever its caller's mark says
    preempt: bool = False  # outgrew its slice with the heavy lane full: the pool stops it and queues it again
    killed_for_memory: float = 0.0  # MB the read held when the memory budget stopped it


@dataclass
class Scheduler:
    """Per-caller queues and lane counts; every method is called under the pool's lock."""

    heavy_slots: int
    slice_s: float
    heavy_for_s: float = 30.0
    mode: Scheduling = "fair"
    _queues: dict[str, collections.deque[Ticket]] = field(default_factory=dict)  # in turn order
    _heavy_until: dict[str, float] = field(default_factory=dict)
    _light_until: dict[str, float] = field(default_factory=dict)  # callers whose last read was short
    _seq: itertools.count[int] = field(default_factory=itertools.count)
    running: dict[int, Ticket] = field(default_factory=dict)  # worker index -> its call
    heavy_running: int = 0
    overtime_running: int = 0
    overtime_slots: int = 1  # reads in overtime at once (the pool sets it to its `n`)
    outgrown: int = 0  # reads that outgrew their first slice (a counter for tests and the health page)
    order: collections.deque[tuple[str, int]] = field(default_factory=lambda: collections.deque(maxlen=1000))

    preempted: int = 0

    def submit(self, caller: str, pinned: bool = False) -> Ticket:
        ticket = Ticket(caller, next(self._seq), pinned=pinned)
        self._queues.setdefault(caller, collections.deque()).append(ticket)
        return ticket

    def withdraw(self, ticket: Ticket) -> None:
        """Forget a call that never got a worker (its caller gave up)."""
        queue = self._queues.get(ticket.caller)
        if queue is not None and ticket in queue:
            queue.remove(ticket)
            if not queue:
                del self._queues[ticket.caller]

    def waiting(self) -> int:
        return sum(len(q) for q in self._queues.values())

    def is_heavy(self, caller: str, now: float) -> bool:
        until = self._heavy_until.get(caller)
        if until is not None and until <= now:
            del self._heavy_until[caller]
            return False
        return until is not None

    def pick(self, now: float) -> Ticket | None:
        """The call a free worker takes now, removed from its queue (None: nothing may start)."""
        if self.mode == "fifo":
            ticket = min((q[0] for q in self._queues.values()), key=lambda t: t.seq, default=None)
        else:
            busy = {t.caller for t in self.running.values()}
            suspect = {t.caller for t in self.running.values() if t.overtime}  # their next reads wait for it
            ticket = next((q[0] for c, q in self._queues.items() if c not in busy and not q[0].pinned
                           and self.is_light(c, now) and not self.is_heavy(c, now)), None)
            ticket = ticket or next((q[0] for c, q in self._queues.items() if c not in suspect and (
                not (q[0].pinned or self.is_heavy(c, now)) or self.heavy_running < self.heavy_slots)), None)
        if ticket is None:
            return None
        queue = self._queues.pop(ticket.caller)  # re-inserted last: the caller's next read waits its turn
        queue.popleft()
        if queue:
            self._queues[ticket.caller] = queue
        if self.mode == "fair" and (ticket.pinned or self.is_heavy(ticket.caller, now)):
            ticket.heavy = True
            self.heavy_running += 1
        self.order.append((ticket.caller, ticket.seq))
        return ticket

    def start(self, ticket: Ticket, worker: int, now: float) -> None:
        ticket.worker, ticket.started = worker, now
        self.running[worker] = ticket

    def is_light(self, caller: str, now: float) -> bool:
        until = self._light_until.get(caller)
        if until is not None and until <= now:
            del self._light_until[caller]
            return False
        return until is not None

    def finish(self, ticket: Ticket, now: float | None = None) -> None:
        """The read is over; given `now`, a read that stayed within its slice marks its caller light."""
        if now is not None and self.mode == "fair":
            if ticket.worked or ticket.preempt or ticket.pinned:
                self._light_until.pop(ticket.caller, None)
            else:
                if len(self._light_until) >= MAX_CALLERS and ticket.caller not in self._light_until:
                    self._light_until.clear()  # forgetting only ever makes a caller unknown again
                self._light_until[ticket.caller] = now + self.heavy_for_s
        if ticket.worker is not None:
            self.running.pop(ticket.worker, None)
        if ticket.heavy:
            self.heavy_running -= 1
            ticket.heavy = False
        if ticket.overtime:
            self.overtime_running -= 1
            ticket.overtime = False

    def outgrow(self, now: float, cpu: Mapping[int, float] | None = None) -> list[Ticket]:
        """Move reads that worked past their first slice to the heavy lane, or mark them `preempt` where it is
        full; the ones that outgrew their slice now. `cpu`: the CPU seconds each running read used, by worker
        (a read missing there is measured by the wall clock)."""
        if self.mode != "fair":
            return []
        moved = []
        for worker, ticket in self.running.items():
            elapsed = now - ticket.started
            used = elapsed if cpu is None or worker not in cpu else cpu[worker]
            if not ticket.worked and used > self.slice_s:  # it works long: its caller is heavy
                ticket.worked = True
                self._heavy_until[ticket.caller] = now + self.heavy_for_s
                self._light_until.pop(ticket.caller, None)
            if ticket.worked and not (ticket.heavy or ticket.preempt):
                if ticket.overtime:
                    self.overtime_running -= 1
                    ticket.overtime = False
                if self.heavy_running >= self.heavy_slots:
                    ticket.preempt = True
                    self.preempted += 1
                else:
                    ticket.heavy = True
                    self.heavy_running += 1
            elif not (ticket.worked or ticket.overtime or ticket.heavy) and elapsed > self.slice_s \
                    and self.overtime_running < self.overtime_slots:
                ticket.overtime = True
                self.overtime_running += 1
            else:
                continue
            if not ticket.outgrew:
                self.outgrown += 1
                ticket.outgrew = True
            moved.append(ticket)
        for ticket in self.running.values():  # a heavy caller's mark lasts while any of its reads runs long
            if ticket.worked and not ticket.preempt:
                self._heavy_until[ticket.caller] = now + self.heavy_for_s
        for caller in self._queues:  # ... and while it waits its turn in the heavy lane (several heavy callers
            if self.is_heavy(caller, now):  # share a slot: a mark run out in the queue sent its read to the light lane)
                self._heavy_until[caller] = now + self.heavy_for_s
        return moved

    def light_running(self) -> int:
        return sum(not (t.heavy or t.overtime) for t in self.running.values())

    def set_aside(self) -> int:
        """Reads that hold a worker outside the light lane (heavy or in overtime): the pool forks as many more."""
        return self.heavy_running + self.overtime_running
