"""`chronokg query NAME ...` asks a live local query process first, so that a query answers in half a second.

The process (chronokg.cli.query_daemon) keeps one embedded store open with the query app imported. This
client imports the standard library alone (no pydantic, typer, rich, kglite, numpy): it finds the process
for the caller's store and settings by a socket name, hands it the caller's stdin/stdout/stderr (so what
is printed, its width and colour are what the caller's terminal gets), its argv, cwd and environment, and
exits with the process's exit code. With no process, a stale one or a refusal, the command runs in-process
as before and then starts the process for the next call, detached (its own session, stdio on /dev/null).
`retrieve search` over the passage index has a sibling process (chronokg.cli.search_daemon, `r-` sockets) that
holds the encoder warm; a first search starts it and lets it answer (`first_search`), so the encoder loads once.
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
from chronokg.errors import StoreError
from chronokg.store_uri import StoreURI, default_store

# Query subcommands the process never answers: they write, read a file, run the user's Cypher, or manage it.
NOT_FORWARDED = ("list", "batch", "cypher", "daemon")
PROTOCOL = 1
MAX_SOCKET_PATH = 107  # bytes of a Unix socket's path (sun_path holds 108, the last a NUL)
PREFIXES = {"query": "q-", "search": "r-"}  # socket names per kind of process
MODULES = {"query": "chronokg.cli.query_daemon", "search": "chronokg.cli.search_daemon"}
BIND_WAIT_S = 5.0  # how long a first search waits for the process it started to listen


def kind(args: Sequence[str]) -> str | None:
    """Which local process may answer `chronokg ARGS`: `query` (a catalog query or `query run`), `search`
    (`retrieve search` over the passage index: the process holds the encoder warm), else None."""
    sub = subcommand_word(args)
    word = command_word(args)
    if word == "query" and sub is not None and sub not in NOT_FORWARDED:
        return "query"
    if word == "retrieve" and sub == "search" and _provider(args) in (None, "passages"):
        return "search"
    return None


def _provider(args: Sequence[str]) -> str | None:
    """The last `--provider` value in `args` (a web engine's search is never forwarded), or None."""
    found: str | None = None
    for i, arg in enumerate(args):
        if arg == "--provider":
            found = args[i + 1] if i + 1 < len(args) else ""
        elif arg.startswith("--provider="):
            found = arg.removeprefix("--provider=")
    return found


def forwardable(args: Sequence[str]) -> str | None:
    """The absolute path of the embedded store `chronokg ARGS` reads when a local process may answer them (a
    catalog query, `query run` or a passage search, on a plain `kglite://PATH`), else None."""
    if kind(args) is None:
        return None
    if any(a in ("--help", "-h") or a.startswith("--install-completion") or a.startswith("--show-completion")
           for a in args):
        return None
    given = store_option(args) or environ.store_uri()
    try:
        uri = default_store() if given is None else StoreURI.parse(given)
    except StoreError:
        return None  # the command itself says what is wrong with it
    return uri.plain_file


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


def socket_path(folder: str, store: str, fingerprint: str, process: str = "query") -> str | None:
    """One process of each kind per store and caller settings: the socket's name digests both (None when the
    folder is too deep for a socket's name, at most 107 bytes: then no process). `q-` answers queries, `r-`
    passage searches (a search process never opens the graph engine: kglite, torch and faiss do not all fit
    in one process, docs/retrieval.md)."""
    digest = hashlib.sha256(f"{store}\0{fingerprint}".encode()).hexdigest()[:32]
    path = os.path.join(folder, f"{PREFIXES[process]}{digest}.sock")
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
    path = socket_path(folder, store, environ.fingerprint(), kind(args) or "query")
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


def start(args: Sequence[str]) -> str | None:
    """After an in-process run of `chronokg ARGS` (a search: before it): start the local process for its store,
    detached, when the local processes are on, the store exists and no process answers for it yet; the socket
    path it will listen on, or None when none was started."""
    idle = environ.daemon_idle_s()
    store = forwardable(args) if idle > 0 else None
    if store is None or not os.path.isfile(store):
        return None
    folder = runtime_dir(create=True)
    if folder is None:
        return None
    fingerprint = environ.fingerprint()
    process = kind(args) or "query"
    path = socket_path(folder, store, fingerprint, process)
    if path is None:
        return None
    if os.path.exists(path):
        live = _connect(path)
        if live is not None:
            live.close()
            return None
    import subprocess

    try:  # no process this time: the next call runs in-process again
        subprocess.Popen([sys.executable, "-m", MODULES[process], path, store, fingerprint],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         cwd="/", start_new_session=True, close_fds=True)
    except OSError:
        return None
    return path


def first_search(args: Sequence[str], wait_s: float = BIND_WAIT_S) -> int | None:
    """`retrieve search` with no live search process: start one and let it answer this call too, so the encoder
    loads once, in the process that keeps it (a search run in-process and then again in a new process would
    load it twice, and the second call would wait for the second load). The exit code, or None when no process
    could start or answer in time: then it runs in-process."""
    if kind(args) != "search":
        return None
    path = start(args)
    if path is None:
        return None
    import time

    deadline = time.monotonic() + wait_s
    while not os.path.exists(path):  # the process binds before it imports anything heavy
        if time.monotonic() > deadline:
            return None
        time.sleep(0.02)
    return forward(args)


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
    """What each of the user's live local processes (query and search) says to `op` (status, stop); stale
    sockets removed."""
    folder = runtime_dir()
    if folder is None:
        return []
    found = []
    for name in sorted(os.listdir(folder)):
        if name.startswith(tuple(PREFIXES.values())) and name.endswith(".sock"):
            answer = _ask(os.path.join(folder, name), op)
            if answer is not None:
                found.append(answer)
    return found
