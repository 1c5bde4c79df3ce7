"""`chronokg query NAME ...` asks a live local query process first (issue 20 item 4: a query in half a second).

The process (chronokg.cli.query_daemon) keeps one embedded store open with the query app imported. This
client imports the standard library alone (no pydantic, typer, rich, kglite, numpy): it finds the process
for the caller's store and settings by a socket name, hands it the caller's stdin/stdout/stderr (so what
is printed, its width and colour are what the caller's terminal gets), its argv, cwd and environment, and
exits with the process's exit code. With no process, a stale one or a refusal, the command runs in-process
as before and then starts the process for the next call, detached (its own session, stdio on /dev/null).
`CHRONOKG_QUERY_DAEMON_IDLE_S=0` turns all of this off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import sys
from collections.abc import Sequence
from typing import Any

from chronokg import environ
from chronokg.cli.argv import command_word, store_option, subcommand_word

# Query subcommands the process never answers: they write, read a file, run the user's Cypher, or manage it.
NOT_FORWARDED = ("list", "batch", "cypher", "daemon")
PROTOCOL = 1
MAX_SOCKET_PATH = 107  # bytes of a Unix socket's path (sun_path holds 108, the last a NUL)


def forwardable(args: Sequence[str]) -> str | None:
    """The absolute path of the embedded store `chronokg ARGS` queries when a query process may answer them
    (a catalog query or `query run` on a plain `kglite://PATH`), else None."""
    sub = subcommand_word(args)
    if command_word(args) != "query" or sub is None or sub in NOT_FORWARDED:
        return None
    if any(a in ("--help", "-h") or a.startswith("--install-completion") or a.startswith("--show-completion")
           for a in args):
        return None
    uri = store_option(args) or environ.store_uri()
    if uri is None:
        uri = "kglite://" + os.path.join(environ.default_data_dir(), "store.kgl")
    if not uri.startswith("kglite://") or "?" in uri:
        return None
    path = uri.removeprefix("kglite://")
    return None if not path or path == ":memory:" else os.path.abspath(path)


def runtime_dir(create: bool = False) -> str | None:
    """The user's 0700 socket folder, or None when it is missing (and not `create`d) or not private."""
    path = environ.runtime_dir()
    if create:
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError:
            return None
    try:
        st = os.lstat(path)
    except OSError:
        return None
    private = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077
    return path if private else None


def socket_path(folder: str, store: str, fingerprint: str) -> str | None:
    """One process per store and caller settings: the socket's name digests both (None when the folder is
    too deep for a socket's name, at most 107 bytes: then no process)."""
    digest = hashlib.sha256(f"{store}\0{fingerprint}".encode()).hexdigest()[:32]
    path = os.path.join(folder, f"q-{digest}.sock")
    return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None


def program_name() -> str:
    """The name click shows in usage lines (click's _detect_program_name, for POSIX): `chronokg`, or
    `python -m chronokg.cli` when run as a module."""
    main = sys.modules.get("__main__")
    path = sys.argv[0] if sys.argv and sys.argv[0] else ""
    package = getattr(main, "__package__", None)
    if not package:
        return os.path.basename(path)
    name = os.path.splitext(os.path.basename(path))[0]
    module = package if name == "__main__" else f"{package}.{name}"
    return f"python -m {module.lstrip('.')}"


def _connect(path: str) -> socket.socket | None:
    """A connection to the process at `path`; a socket nobody listens on (its process killed) is removed."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
        return sock
    except (ConnectionRefusedError, FileNotFoundError) as exc:
        sock.close()
        if isinstance(exc, ConnectionRefusedError):
            with contextlib.suppress(OSError):
                os.unlink(path)
        return None
    except OSError:
        sock.close()
        return None


def _reply(stream: Any) -> dict[str, Any] | None:
    line = stream.readline()
    if not line:
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def forward(args: Sequence[str]) -> int | None:
    """The exit code of `chronokg ARGS` as a live query process answered it, or None when none did (no
    process, a stale socket, a refusal, the query process turned off): then run it in-process."""
    if environ.daemon_idle_s() <= 0:
        return None
    store = forwardable(args)
    folder = runtime_dir() if store is not None else None
    if store is None or folder is None:
        return None
    path = socket_path(folder, store, environ.fingerprint())
    if path is None or not os.path.exists(path):
        return None
    sock = _connect(path)
    if sock is None:
        return None
    request = {"op": "query", "protocol": PROTOCOL, "argv": list(args), "prog": program_name(),
               "cwd": os.getcwd(), "env": environ.snapshot(), "fingerprint": environ.fingerprint()}
    with sock:
        try:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            socket.send_fds(sock, [b"Q"], [0, 1, 2])
            sock.sendall(json.dumps(request).encode() + b"\n")
            replies = sock.makefile("rb")
            first = _reply(replies)
            if first is None or not first.get("accepted"):
                return None  # refused (another store, another query, the store changed): run it here
        except OSError:
            return None
        try:
            last = _reply(replies)
        except OSError:
            last = None
        except KeyboardInterrupt:  # as click reports an interrupted command in-process
            sys.stderr.write("error: aborted\n")
            return 1
    if last is None or not isinstance(last.get("code"), int):
        sys.stderr.write("error: the local query process ended without an answer (chronokg query daemon stop, "
                         "or CHRONOKG_QUERY_DAEMON_IDLE_S=0 to run queries in-process)\n")
        return 1
    code: int = last["code"]
    return code


def start(args: Sequence[str]) -> None:
    """After an in-process run of `chronokg ARGS`: start the query process for its store, detached, when
    the query process is on, the store exists and no process answers for it yet."""
    idle = environ.daemon_idle_s()
    store = forwardable(args) if idle > 0 else None
    if store is None or not os.path.isfile(store):
        return
    folder = runtime_dir(create=True)
    if folder is None:
        return
    fingerprint = environ.fingerprint()
    path = socket_path(folder, store, fingerprint)
    if path is None:
        return
    if os.path.exists(path):
        live = _connect(path)
        if live is not None:
            live.close()
            return
    import subprocess

    with contextlib.suppress(OSError):  # no process this time: the next call runs in-process again
        subprocess.Popen([sys.executable, "-m", "chronokg.cli.query_daemon", path, store, fingerprint],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         cwd="/", start_new_session=True, close_fds=True)


def _ask(path: str, op: str) -> dict[str, Any] | None:
    sock = _connect(path)
    if sock is None:
        return None
    with sock:
        try:
            sock.settimeout(5)
            sock.sendall(b"C" + json.dumps({"op": op, "protocol": PROTOCOL}).encode() + b"\n")
            return _reply(sock.makefile("rb"))
        except OSError:
            return None


def processes(op: str = "status") -> list[dict[str, Any]]:
    """What each of the user's live query processes says to `op` (status, stop); stale sockets removed."""
    folder = runtime_dir()
    if folder is None:
        return []
    found = []
    for name in sorted(os.listdir(folder)):
        if name.startswith("q-") and name.endswith(".sock"):
            answer = _ask(os.path.join(folder, name), op)
            if answer is not None:
                found.append(answer)
    return found
