"""Run one read in a forked child that is killed when its time is up.

The embedded engine checks its deadline between operations, not inside every
expression: `reduce(s = '', x IN range(1, 2000000) | s + 'aaaaaaaaaa')` ran for
minutes past a 2 s deadline. A forked child shares the loaded graph copy-on-write
(no reload, milliseconds to start), has its memory capped, and is killed when the
wall clock runs out; whatever it did dies with it (it exits without running any
handler, so it can never save a store). Only the result comes back, pickled,
through a pipe whose size is bounded too.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import resource
import select
import signal
import time
from collections.abc import Callable
from typing import Any

from chronokg.errors import QueryLimitExceeded, QueryRefused, StoreError

CHUNK = 1 << 20


class ChildError(Exception):
    """Raised inside the child to send a typed refusal back: kind is 'refused', 'limit' or 'error'."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def _data_mb() -> float:
    """The process's current data segment (VmData), which RLIMIT_DATA bounds."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _child(fn: Callable[[], Any], write_fd: int, memory_mb: int | None) -> None:
    try:
        if memory_mb is not None:
            cap = int((_data_mb() + memory_mb) * 1024 * 1024)
            resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))
        payload: tuple[Any, ...] = ("ok", fn())
    except ChildError as exc:
        payload = (exc.kind, str(exc))
    except MemoryError:
        payload = ("limit", f"the query ran out of its memory limit ({memory_mb} MB)")
    except BaseException as exc:  # anything else: report it, never raise in a forked child
        payload = ("error", f"{type(exc).__name__}: {exc}")
    try:
        data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        data = pickle.dumps(("error", f"the result cannot be sent back: {exc}"))
    view = memoryview(data)
    while view:
        try:
            n = os.write(write_fd, view)
        except OSError:
            break  # the parent stopped reading (too large, or out of time)
        view = view[n:]
    os._exit(0)


def run_forked(fn: Callable[[], Any], *, timeout_s: float, max_bytes: int, memory_mb: int | None = None) -> Any:
    """`fn()` in a forked child: its value, or QueryLimitExceeded / QueryRefused / StoreError."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(read_fd)
        _child(fn, write_fd, memory_mb)
    os.close(write_fd)
    chunks: list[bytes] = []
    size = 0
    deadline = time.monotonic() + timeout_s
    problem: Exception | None = None
    poller = select.poll()
    poller.register(read_fd, select.POLLIN | select.POLLHUP)
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                problem = QueryLimitExceeded(f"the query ran past its time limit of {timeout_s:g} s and was stopped")
                break
            if not poller.poll(left * 1000):
                continue
            chunk = os.read(read_fd, CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > max_bytes + 4096:
                problem = QueryLimitExceeded(f"the result is larger than {max_bytes / 1e6:g} MB: add LIMIT or "
                                             "return fewer properties")
                break
    finally:
        os.close(read_fd)
        if problem is not None:
            _kill(pid)
        _, status = os.waitpid(pid, 0)
    if problem is not None:
        raise problem
    if not chunks:
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        why = f"signal {signal.Signals(sig).name}" if sig else f"exit status {os.WEXITSTATUS(status)}"
        raise QueryLimitExceeded(f"the query process died ({why}): most likely it needed more than its memory "
                                 f"limit of {memory_mb} MB")
    kind, value = pickle.loads(b"".join(chunks))
    if kind == "ok":
        return value
    if kind == "refused":
        raise QueryRefused(value)
    if kind == "limit":
        raise QueryLimitExceeded(value)
    raise StoreError(value)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def can_fork() -> bool:
    return hasattr(os, "fork")
