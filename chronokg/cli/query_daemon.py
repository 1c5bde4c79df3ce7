"""The local query process `chronokg query` calls reuse (started by chronokg.cli.query_client).

`python -m chronokg.cli.query_daemon SOCKET STORE FINGERPRINT`: keeps the embedded store at STORE open
read-only (the same quick open a one-shot query makes) with the query app imported, and answers one
caller at a time on SOCKET (a 0700 folder of the user's; the peer must be the same user). Each request
runs the caller's argv through the very app `chronokg` runs, in the caller's cwd and environment, with
the caller's stdin/stdout/stderr in place of its own /dev/null, so the bytes, the width, the colour and
the exit code are the in-process ones; reads are bounded by the same guard and limits. It answers only
catalog queries (and `query run`) on its own store with the caller's settings (FINGERPRINT); anything
else is refused and the caller runs it in-process. Before each request it compares the store's files
(inode, size, mtime) with what it opened and reopens on a change. It exits after
CHRONOKG_QUERY_DAEMON_IDLE_S seconds without a call, when its store or its socket disappears, on
SIGTERM or `chronokg query daemon stop`, removing its socket.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from chronokg import environ
from chronokg.cli.query_client import NOT_FORWARDED, PROTOCOL, forwardable
from chronokg.store_uri import embedded_file

if TYPE_CHECKING:
    from chronokg.graph.store import GraphStore

POLL_S = 1.0  # how often an idle process looks at its store, its socket and the clock
READ_S = 5.0  # how long a connected caller may take to send its request


class Stop(BaseException):
    """SIGTERM or a stop request: leave the loop, remove the socket (not an Exception: no handler eats it)."""


def _files(store: str) -> tuple[tuple[int, int, int] | None, ...]:
    """(inode, size, mtime ns) of the store, its write-ahead log and its interval sidecar, None if absent."""
    from chronokg.graph.interval_index import fingerprint, sidecar

    return tuple(fingerprint(p) for p in (store, store + "-wal", sidecar(store)))


class Daemon:
    """One store, one socket, one caller at a time."""

    process = "query"  # what it answers (chronokg.cli.search_daemon's sibling: "search")

    def __init__(self, socket_path: str, store: str, fingerprint: str, idle_s: float) -> None:
        self.socket_path = socket_path
        self.store_path = store
        self.fingerprint = fingerprint
        self.idle_s = idle_s
        self.started = time.time()
        self.requests = 0
        self.last = time.monotonic()
        self.store: GraphStore | None = None
        self.pending: GraphStore | None = None  # the indexed open, ready to take the quick one's place
        self.generation = 0
        self.lock = threading.Lock()
        self.indexed = False  # whether the indexed open answers (or is ready to, at the next caller)
        self.indexing = False  # whether the indexed open is under way (not for a store over the size setting)
        self.command: Any = None  # the click command every caller's argv runs through, built once
        self.opened: tuple[tuple[int, int, int] | None, ...] = ()
        self.queries: set[str] = set()
        self.sock_id: tuple[int, int] | None = None

    # --- the store ---------------------------------------------------------------------------------
    def open(self) -> None:
        """(Re)open the store: first the quick open a one-shot query makes (tens of milliseconds), then, on a
        thread, the indexed open a long-lived reader wants (seconds; swapped in between two callers). The
        files are stamped before each open, so a change during one shows at the next request."""
        from chronokg.graph.open import open_store
        from chronokg.settings import Settings

        self.close_store()
        self.generation += 1
        self.indexed = False
        settings = Settings()
        self.opened = _files(self.store_path)
        self._hold(open_store(embedded_file(self.store_path), settings, read_only=True, quick_open=True))
        size = self.opened[0][1] if self.opened[0] is not None else 0
        self.indexing = size <= settings.query_daemon_indexed_max_mb * 2**20
        if not self.indexing:
            return  # a store this large stays mapped: the indexed open would hold it all in memory
        threading.Thread(target=self._indexed, args=(self.generation, self.opened, settings), daemon=True,
                         name="chronokg-indexed-open").start()

    def _indexed(self, generation: int, stamp: tuple[tuple[int, int, int] | None, ...], settings: Any) -> None:
        """The indexed open, its interval sidecar loaded, handed to the main thread (`_swap`)."""
        from chronokg.graph.open import open_store

        try:
            store = open_store(embedded_file(self.store_path), settings, read_only=True)
            store.intervals()
        except Exception:
            self.indexing = False
            return  # the quick store keeps answering
        with self.lock:
            if generation != self.generation or _files(self.store_path) != stamp:
                store.close()
                return
            self.pending = store
            self.indexing = False

    def _swap(self) -> None:
        """The indexed store in place of the quick one, when it is ready (between two callers)."""
        with self.lock:
            store, self.pending = self.pending, None
        if store is not None:
            old, self.store = self.store, None
            self._hold(store)
            self.indexed = True
            if old is not None:
                old.close()

    def _hold(self, store: GraphStore) -> None:
        from chronokg.cli.early_open import hold

        self.store = store
        hold(self.store_path, store)

    def close_store(self) -> None:
        from chronokg.cli.early_open import hold

        hold(None, None)
        with self.lock:
            stores, self.store, self.pending = [self.store, self.pending], None, None
            self.generation += 1
        for store in stores:
            if store is not None:
                store.close()

    def fresh(self) -> bool:
        """The store as it is on disk now (reopened if it changed); False when it is gone or will not open."""
        now = _files(self.store_path)
        if now[0] is None:
            return False
        if now != self.opened:
            try:
                self.open()
            except Exception:
                return False
        self._swap()
        return True

    # --- the socket --------------------------------------------------------------------------------
    def bind(self) -> socket.socket | None:
        """The listening socket, or None when another live process already answers there. It listens under a
        temporary name first and is then linked in under its own, so a caller never meets a socket that is
        there but not yet listening (which it would take for a killed process's and remove)."""
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        temporary = os.path.join(os.path.dirname(self.socket_path), f"t{os.getpid()}.sock")  # no longer
        try:
            server.bind(temporary)
            os.chmod(temporary, 0o600)
            server.listen(16)
            for _ in range(2):
                try:
                    os.link(temporary, self.socket_path)
                    break
                except FileExistsError:
                    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    try:
                        probe.connect(self.socket_path)
                        server.close()
                        return None  # a twin started first
                    except OSError:
                        with contextlib.suppress(OSError):
                            os.unlink(self.socket_path)  # stale: its process was killed
                    finally:
                        probe.close()
            else:
                server.close()
                return None
        except OSError:
            server.close()
            return None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        st = os.stat(self.socket_path)
        self.sock_id = (st.st_dev, st.st_ino)
        server.settimeout(POLL_S)
        return server

    def ours(self) -> bool:
        """Whether the socket file is still the one this process bound."""
        try:
            st = os.stat(self.socket_path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino) == self.sock_id

    def unlink(self) -> None:
        if self.ours():
            with contextlib.suppress(OSError):
                os.unlink(self.socket_path)

    def serve(self, server: socket.socket) -> None:
        self.last = time.monotonic()
        try:
            with server:
                while True:
                    if self.idle_s and time.monotonic() - self.last > self.idle_s:
                        return
                    if not self.ours() or not os.path.exists(self.store_path):
                        return
                    self._swap()  # the indexed store as soon as it is ready: the quick one's memory goes
                    try:
                        conn, _ = server.accept()
                    except TimeoutError:
                        continue
                    with conn:
                        self.answer(conn)
        finally:
            self.unlink()
            self.close_store()

    # --- one caller --------------------------------------------------------------------------------
    def answer(self, conn: socket.socket) -> None:
        fds: list[int] = []
        try:
            conn.settimeout(READ_S)
            _, uid, _ = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                                struct.calcsize("3i")))
            if uid != os.getuid():
                return
            kind, fds, _, _ = socket.recv_fds(conn, 1, 3)
            request = _request(conn.makefile("rb"))
            if kind == b"C" and request is not None:
                self.control(conn, request)
            elif kind == b"Q" and request is not None and len(fds) == 3:
                self.query(conn, request, fds)
            else:
                _send(conn, {"accepted": False, "reason": "a request it cannot read"})
        except (OSError, ValueError):
            return
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def control(self, conn: socket.socket, request: dict[str, Any]) -> None:
        status = {"pid": os.getpid(), "kind": self.process, "store": self.store_path, "socket": self.socket_path,
                  "started": self.started, "requests": self.requests, "idle_s": self.idle_s,
                  "indexed": self.indexed or self.pending is not None, "indexing": self.indexing,
                  "idle_for_s": round(time.monotonic() - self.last, 1)}
        if request.get("op") == "status":
            _send(conn, status)
        elif request.get("op") == "stop":
            _send(conn, {**status, "stopped": True})
            raise Stop
        else:
            _send(conn, {"error": f"unknown op {request.get('op')!r}"})

    def refusal(self, request: dict[str, Any]) -> str | None:
        """Why this process will not answer `request` (then the caller runs it in-process), or None."""
        argv, env, cwd = request.get("argv"), request.get("env"), request.get("cwd")
        if request.get("protocol") != PROTOCOL or request.get("fingerprint") != self.fingerprint:
            return "other settings"
        if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv) and isinstance(env, dict)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
                and isinstance(cwd, str) and isinstance(request.get("prog"), str)):
            return "a request it cannot read"
        why = self.not_mine(argv)
        if why is not None:
            return why
        try:
            os.chdir(cwd)
            with environ.swapped(env):
                if environ.fingerprint() != self.fingerprint or forwardable(argv) != self.store_path:
                    return "another store"
        except OSError:
            return "no such cwd"
        finally:
            os.chdir("/")
        if not self.fresh():
            raise Stop  # the store is gone or will not open: the caller answers, and the next one starts anew
        return None

    def not_mine(self, argv: Sequence[str]) -> str | None:
        """Why `argv` is not a command this process answers (a catalog query or `query run`), or None."""
        from chronokg.cli.argv import subcommand_word

        sub = subcommand_word(argv)
        if sub is None or sub in NOT_FORWARDED or (sub != "run" and sub not in self.queries):
            return "not a catalog query"
        return None

    def query(self, conn: socket.socket, request: dict[str, Any], fds: list[int]) -> None:
        try:
            why = self.refusal(request)
        except Stop:
            _send(conn, {"accepted": False, "reason": "the store changed"})
            raise
        if why is not None:
            _send(conn, {"accepted": False, "reason": why})
            return
        _send(conn, {"accepted": True})
        self.requests += 1
        try:
            code = _run_as_caller(self.command, request["argv"], request["prog"], request["cwd"], request["env"],
                                  fds)
        finally:
            for fd in fds:  # the caller's streams: closed before the answer, so its pipe readers see the end
                os.close(fd)
            fds.clear()
            self.last = time.monotonic()  # idle counts from the last query answered (status calls do not count)
        _send(conn, {"code": code})


def _request(stream: Any) -> dict[str, Any] | None:
    line = stream.readline(1 << 24)
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _send(conn: socket.socket, message: dict[str, Any]) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _run_as_caller(command: Any, argv: Sequence[str], prog: str, cwd: str, env: dict[str, str],
                   fds: list[int]) -> int:
    """`chronokg ARGV` as the caller would have run it (`command`: the app `chronokg query ...` builds,
    chronokg.cli.app_for): its streams on fds 0-2, its cwd and environment."""
    from chronokg.cli.common import fresh_consoles

    saved = [os.dup(fd) for fd in (0, 1, 2)]
    code = 1
    try:
        for fd, theirs in zip((0, 1, 2), fds, strict=True):
            os.dup2(theirs, fd)
        for stream in (sys.stdout, sys.stderr):
            stream.reconfigure(line_buffering=stream.isatty())  # type: ignore[union-attr]
        os.chdir(cwd)
        fresh_consoles()
        with environ.swapped(env):
            try:
                command.main(args=list(argv), prog_name=prog)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except Exception as exc:  # an in-process run would have shown a traceback: one line instead
                sys.stderr.write(f"error: {type(exc).__name__}: {exc}\n")
                code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        fresh_consoles()
        for fd, mine in zip((0, 1, 2), saved, strict=True):
            os.dup2(mine, fd)
            os.close(mine)
        os.chdir("/")
    return code


def bound(argv: Sequence[str], cls: type[Daemon], module: str) -> tuple[Daemon, socket.socket] | None:
    """A local process's start, whatever it answers: its arguments, SIGTERM/SIGINT as `Stop`, and its socket
    bound (None when another live process already answers there)."""
    if len(argv) != 3:
        sys.exit(f"usage: python -m {module} SOCKET STORE FINGERPRINT")
    socket_path, store, fingerprint = argv

    def stop(signum: int, frame: object) -> None:
        raise Stop

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # a caller gone mid-answer is its own business
    daemon = cls(socket_path, store, fingerprint, environ.daemon_idle_s())
    server = daemon.bind()  # first, so the callers meanwhile wait for this process instead of starting twins
    return None if server is None else (daemon, server)


def main(argv: Sequence[str]) -> None:
    started = bound(argv, Daemon, "chronokg.cli.query_daemon")
    if started is None:
        return
    daemon, server = started
    try:
        import typer

        from chronokg.cli import app_for
        from chronokg.cli.queries import provider

        daemon.queries = set(provider())
        daemon.command = typer.main.get_command(app_for(["query", "run"]))
        daemon.open()
        daemon.serve(server)
    except Stop:
        daemon.unlink()
        daemon.close_store()
    except Exception:
        daemon.unlink()
        daemon.close_store()
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
