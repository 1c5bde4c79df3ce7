"""A real third-party Bolt server for tests: ArcadeDB (`arcadedb-embedded`, bundled JRE) on loopback.

No Neo4j distribution installs on the project machines; ArcadeDB does (pip, no Java install) and speaks
Bolt, reporting itself `Neo4j/5.26.0 compatible`. It runs in a child process (its JVM never enters the
test process), from its own temporary working directory (it writes `log/` into the working directory), on
free loopback ports, and is stopped by `stop()` / leaving `bolt_server()`. Needs `arcadedb-embedded`
(the `dev` extra).

    with bolt_server(tmp_dir) as server:
        store = Neo4jStore(server.uri, server.user, server.password, server.database)

`python -m chronokg.testing.bolt_server DIR BOLT_PORT HTTP_PORT PASSWORD` is the child; it stops on SIGTERM.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

USER = "root"
DATABASE = "neo4j"
PASSWORD = "chronokg-test-pw"  # a throwaway server on loopback


@dataclass(frozen=True)
class BoltTarget:
    """Where a test reaches a Bolt server: the ArcadeDB started here, or your Neo4j (CHRONOKG_NEO4J_URI)."""

    uri: str
    user: str
    password: str
    database: str
    name: str

    def env(self) -> dict[str, str]:
        """The CHRONOKG_NEO4J_* variables a `chronokg --store URI ...` run needs."""
        return {"CHRONOKG_NEO4J_USER": self.user, "CHRONOKG_NEO4J_PASSWORD": self.password,
                "CHRONOKG_NEO4J_DATABASE": self.database}


class BoltServerError(RuntimeError):
    """The server did not start (its log's last lines say why)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class BoltServer:
    """A running ArcadeDB child process and how to reach it."""

    uri: str
    user: str
    password: str
    database: str
    workdir: Path
    process: subprocess.Popen[bytes]
    startup_s: float

    def target(self) -> BoltTarget:
        return BoltTarget(self.uri, self.user, self.password, self.database, "ArcadeDB (arcadedb-embedded)")

    @property
    def log(self) -> Path:
        return self.workdir / "server.log"

    def stop(self, timeout: float = 60) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the test process dies, however it dies (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def start(workdir: Path, timeout: float = 300) -> BoltServer:
    """Start ArcadeDB with Bolt on free loopback ports under `workdir`; wait until a driver can log in."""
    import logging

    import neo4j

    logging.getLogger("neo4j").addHandler(logging.NullHandler())  # its retries while the server starts
    workdir.mkdir(parents=True, exist_ok=True)
    bolt, http = free_port(), free_port()
    begin = time.monotonic()
    with (workdir / "server.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "chronokg.testing.bolt_server", str(workdir / "root"), str(bolt), str(http),
             PASSWORD],
            cwd=workdir, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )
    server = BoltServer(f"bolt://127.0.0.1:{bolt}", USER, PASSWORD, DATABASE, workdir, process, 0.0)
    last: Exception | None = None
    while time.monotonic() - begin < timeout:
        if process.poll() is not None:
            raise BoltServerError(f"ArcadeDB exited with code {process.returncode}:\n{_tail(server.log)}")
        try:
            with neo4j.GraphDatabase.driver(server.uri, auth=(USER, PASSWORD)) as driver:
                driver.verify_connectivity()
                driver.execute_query("RETURN 1", database_=DATABASE)
            server.startup_s = time.monotonic() - begin
            return server
        except Exception as exc:  # not listening yet, or the default database is still being created
            last = exc
            time.sleep(0.5)
    server.stop()
    raise BoltServerError(f"ArcadeDB did not answer on {server.uri} within {timeout:g} s ({last}):\n"
                          f"{_tail(server.log)}")


@contextlib.contextmanager
def bolt_server(workdir: Path, timeout: float = 300) -> Iterator[BoltServer]:
    server = start(workdir, timeout)
    try:
        yield server
    finally:
        server.stop()


def main(argv: list[str]) -> None:
    """The child: run the server until SIGTERM."""
    root, bolt, http, password = argv
    import arcadedb_embedded

    server = arcadedb_embedded.create_server(root_path=root, root_password=password, config={
        "host": "127.0.0.1", "server_plugins": "Bolt:com.arcadedb.bolt.BoltProtocolPlugin",
        "bolt_port": int(bolt), "http_port": int(http), "server_defaultDatabases": f"{DATABASE}[{USER}]",
    })
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server.start()
    print("chronokg: ArcadeDB ready", flush=True)
    while not stop.wait(0.5):
        pass
    server.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
