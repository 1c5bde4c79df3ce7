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
wait for a free worker; a slow read blocks one worker, not the server.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from pydantic import BaseModel

from chronokg.serve.tools import ToolFailure, ToolResult

Runner = Callable[[str, BaseModel], ToolResult]


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection


def _serve(conn: Connection, run: Runner, inherited: list[Connection]) -> None:  # pragma: no cover - in a worker
    """A worker's loop: one call at a time until the parent closes its end."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the server; it closes the workers
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
    """`n` forked single-threaded workers running `run(tool, args)`; `call` blocks until one is free."""

    def __init__(self, run: Runner, n: int, *, call_timeout_s: float, fork_lock: threading.Lock) -> None:
        if n < 1:
            raise ValueError("a worker pool needs at least one worker")
        self._run = run
        self._ctx = multiprocessing.get_context("fork")
        self._timeout = call_timeout_s
        self._fork_lock = fork_lock
        self._workers: list[_Worker] = []
        self._idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        self._closed = False
        self.restarts = 0
        for _ in range(n):
            self._idle.put(self._spawn())

    @property
    def size(self) -> int:
        return len(self._workers)

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
        worker = _Worker(process, parent)
        self._workers.append(worker)
        return worker

    def _replace(self, worker: _Worker) -> None:
        with contextlib.suppress(ProcessLookupError, AttributeError):
            worker.process.kill()
        worker.process.join(5)
        worker.conn.close()
        self._workers.remove(worker)
        self.restarts += 1
        if not self._closed:
            self._idle.put(self._spawn())

    def call(self, name: str, args: BaseModel) -> ToolResult:
        """Run `name(args)` in the next free worker. A worker that dies or hangs is replaced."""
        worker = self._idle.get()
        try:
            worker.conn.send((name, args))
            if not worker.conn.poll(self._timeout):
                self._replace(worker)
                return _unavailable(name, f"the read worker did not answer within {self._timeout:g} s and was "
                                          "restarted")
            result: Any = worker.conn.recv()
        except (EOFError, OSError) as exc:
            self._replace(worker)
            return _unavailable(name, f"the read worker stopped ({type(exc).__name__}) and was restarted; try again")
        self._idle.put(worker)
        if not isinstance(result, ToolResult):
            return _unavailable(name, "the read worker sent something that is not a result")
        return result

    def close(self) -> None:
        """Close every worker's pipe (each exits at EOF), then make sure they are gone."""
        self._closed = True
        for worker in self._workers:
            worker.conn.close()
        for worker in self._workers:
            worker.process.join(5)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join(5)
        self._workers.clear()


def _unavailable(name: str, message: str) -> ToolResult:
    return ToolResult(tool=name, ok=False, error=ToolFailure(type="unavailable", message=message))
