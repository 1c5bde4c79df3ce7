"""The local query process `chronokg query` calls reuse (chronokg.cli.query_client, chronokg.cli.query_daemon):
answers byte for byte those of an in-process run, fresh after the store changes, private and bounded, and gone
without a trace when stopped, killed, idle, or when its store goes."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.cli import query_client
from chronokg.cli.app import app
from chronokg.graph.kglite_store import KgliteStore
from tests.helpers import REPO
from tests.test_loop import split_tempomed

pytestmark = pytest.mark.slow  # query processes started and killed


LOOK = {"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"}  # a fixed terminal look, unless a test sets its own
IDLE = "CHRONOKG_QUERY_DAEMON_IDLE_S"
HEAVY = ("pydantic", "pydantic_settings", "typer", "rich", "kglite", "numpy", "click")


def cli(env: dict[str, str], *args: str, cwd: Path = REPO) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-m", "chronokg.cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, stdin=subprocess.DEVNULL, timeout=120)
    return done.returncode, done.stdout, done.stderr


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited (its parent, the CLI process, is gone)


def live_process(store: Path, timeout: float = 60.0) -> dict[str, Any]:
    """The status of the query process answering for `store`, once its socket answers."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [p for p in query_client.processes("status") if p["store"] == str(store)]
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"no query process for {store} after {timeout} s")


def wait_gone(pids: list[int], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if alive(p)], "a query process survived"


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The query process turned on, in a runtime folder of this test's (short: a socket's path holds at most
    107 bytes); every process stopped afterwards and nothing left in the folder."""
    run = Path(tempfile.mkdtemp(prefix="ckq", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    yield {**os.environ, **LOOK, "XDG_RUNTIME_DIR": str(run), IDLE: "60"}
    stop_all(run)


def stop_all(run: Path) -> None:
    """Stop every local process of the runtime folder `run`, remove it, and check nothing was left in it."""
    pids = [p["pid"] for p in query_client.processes("status")]
    query_client.processes("stop")
    wait_gone(pids)
    folder = run / "chronokg"
    leftover = list(folder.iterdir()) if folder.exists() else []
    shutil.rmtree(run)
    assert leftover == []


def off(env: dict[str, str]) -> dict[str, str]:
    return {**env, IDLE: "0"}


@pytest.fixture(scope="module")
def releases(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    r1, r2, _ = split_tempomed(shared_data, tmp_path_factory.mktemp("releases"))
    return r1, r2


@pytest.fixture(scope="module")
def store(releases: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("daemon") / "cli.kgl"
    result = CliRunner().invoke(app, ["--store", f"kglite://{path}", "ingest", "tempomed", str(releases[1])])
    assert result.exit_code == 0, result.output
    return path


CASES = [
    ["query", "as-of", "--subject", "26103502", "--predicate", "superseded_by", "--date", "2024", "-f", "json"],
    ["query", "recommended-on", "--date", "2016-06-01", "--guideline", "36739483"],  # a table and its follow-ups
    ["query", "timeline", "--subject", "26103502"],
    ["query", "run", "trajectory", "--params", '{"guideline": "26103502"}'],
    ["query", "as-of", "--date", "June"],  # a bad date: usage lines and one error line, exit 2
    ["query", "run", "no-such-query"],  # a chronokg error, exit 2
    ["query", "no-such-query"],  # refused by the process: run in-process
]


def test_forwarded_answers_are_those_of_an_in_process_run(store: Path, env: dict[str, str]) -> None:
    uri = f"kglite://{store}"
    first = cli(env, "--store", uri, *CASES[0])  # in-process; starts the process
    assert first == cli(off(env), "--store", uri, *CASES[0]) and first[0] == 0
    before = live_process(store)["requests"]
    for case in CASES:
        expected = cli(off(env), "--store", uri, *case)
        assert cli(env, "--store", uri, *case) == expected, case
        if "no-such-query" in case:
            assert expected[0] == 2 and expected[2].splitlines()[-1].startswith("error: ")
    # a relative --store (resolved against the caller's cwd), and CHRONOKG_STORE, reach the same process
    relative = cli(env, "--store", f"kglite://{store.name}", *CASES[1], cwd=store.parent)
    assert relative == cli(off(env), "--store", f"kglite://{store.name}", *CASES[1], cwd=store.parent)
    from_env = cli({**env, "CHRONOKG_STORE": uri}, *CASES[0])
    assert from_env == cli({**off(env), "CHRONOKG_STORE": uri}, *CASES[0])
    status = live_process(store)
    assert status["requests"] - before == len(CASES) - 1 + 2  # every case but the refused one, then two more
    # a missing store is never forwarded (the in-process error) and starts no process
    missing = ["--store", f"kglite://{store.parent / 'none.kgl'}", *CASES[0]]
    assert cli(env, *missing) == cli(off(env), *missing)
    assert [p["store"] for p in query_client.processes("status")] == [str(store)]


def _in_terminal(env: dict[str, str], args: list[str], columns: int) -> tuple[int, bytes]:
    """`chronokg ARGS` with stdout on a terminal `columns` wide: (exit code, what the terminal got)."""
    main, replica = pty.openpty()
    fcntl.ioctl(replica, termios.TIOCSWINSZ, struct.pack("HHHH", 30, columns, 0, 0))
    child = subprocess.Popen([sys.executable, "-m", "chronokg.cli", *args], stdout=replica,
                             stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env, cwd=REPO)
    os.close(replica)
    out = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # EIO: the terminal's last writer closed it
            break
        if not chunk:
            break
        out += chunk
    os.close(main)
    return child.wait(timeout=120), out


def test_the_callers_terminal_decides_width_and_colour(store: Path, env: dict[str, str]) -> None:
    look = {k: v for k, v in env.items() if k not in LOOK} | {"TERM": "xterm-256color"}
    args = ["--store", f"kglite://{store}", *CASES[1]]
    expected = _in_terminal(off(look), args, 73)
    assert expected[0] == 0 and b"\x1b[" in expected[1]  # colour on a terminal
    _in_terminal(look, args, 73)  # starts the process
    live_process(store)
    assert _in_terminal(look, args, 73) == expected
    assert _in_terminal(look, args, 120) == _in_terminal(off(look), args, 120) != expected  # another width
    plain = {**look, "NO_COLOR": "1"}
    assert _in_terminal(plain, args, 73) == _in_terminal(off(plain), args, 73)


def test_answers_stay_fresh_when_the_store_changes(releases: tuple[Path, Path], tmp_path: Path,
                                                  env: dict[str, str]) -> None:
    store = tmp_path / "fresh.kgl"
    uri = f"kglite://{store}"
    runner = CliRunner()
    assert runner.invoke(app, ["--store", uri, "ingest", "tempomed", str(releases[0]),
                               "--release-date", "2024-01-01"]).exit_code == 0
    ask = ["--store", uri, "query", "changed-between", "--from", "2019-06-01", "--to", "2026-01-01", "-f", "json"]
    one = cli(env, *ask)
    pid = live_process(store)["pid"]
    assert cli(env, *ask) == one and one[0] == 0
    loaded = runner.invoke(app, ["--store", uri, "ingest", "tempomed", str(releases[1]),
                                 "--release-date", "2025-06-01"])
    assert loaded.exit_code == 0, loaded.output
    two = cli(env, *ask)
    assert two == cli(off(env), *ask) and two != one  # the newer release's answer, not the held one's
    with KgliteStore(store, read_only=True) as reader:
        newest = reader.run("MATCH (s:Source) RETURN s.id AS id ORDER BY s.release_date DESC LIMIT 1")[0]["id"]
    assert runner.invoke(app, ["--store", uri, "releases", "drop", newest]).exit_code == 0
    assert cli(env, *ask) == cli(off(env), *ask) == one
    assert live_process(store)["pid"] == pid  # the same process, reopened


def _raw(path: str, payload: bytes, fds: list[int] | None = None) -> list[dict[str, Any]]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(path)
        if fds is not None:
            socket.send_fds(sock, [payload[:1]], fds)
            payload = payload[1:]
        sock.sendall(payload)
        return [json.loads(line) for line in sock.makefile("rb")]


def test_private_refuses_what_is_not_a_catalog_query_and_survives_garbage(store: Path,
                                                                          env: dict[str, str]) -> None:
    uri = f"kglite://{store}"
    cli(env, "--store", uri, *CASES[0])
    status = live_process(store)
    path = status["socket"]
    assert os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700 and os.stat(path).st_mode & 0o777 == 0o600
    assert _raw(path, b"garbage\n") == [{"accepted": False, "reason": "a request it cannot read"}]
    assert _raw(path, b"C{not json\n") == [{"accepted": False, "reason": "a request it cannot read"}]
    request = {"op": "query", "protocol": 1, "prog": "chronokg", "cwd": str(REPO), "env": dict(env),
               "fingerprint": "x"}
    with open(os.devnull, "w") as null:
        fds = [null.fileno()] * 3
        for argv, why in [(["--store", uri, "ingest", "tempomed", "x"], "other settings")]:
            got = _raw(path, b"Q" + json.dumps({**request, "argv": argv}).encode() + b"\n", fds)
            assert got[0]["accepted"] is False and got[0]["reason"] == why
    # with the right fingerprint: anything but a catalog query on its own store is refused
    from chronokg.environ import fingerprint

    with pytest.MonkeyPatch.context() as mp:
        for key in [k for k in os.environ if k.startswith("CHRONOKG_")]:
            mp.delenv(key)
        for key, value in env.items():
            if key.startswith("CHRONOKG_"):
                mp.setenv(key, value)
        print_ = fingerprint()
    with open(os.devnull, "w") as null:
        fds = [null.fileno()] * 3
        for argv, why in [(["--store", uri, "query", "cypher", "MATCH (n) DETACH DELETE n"], "not a catalog query"),
                          (["--store", uri, "query", "batch", "/etc/passwd"], "not a catalog query"),
                          (["--store", uri, "ingest", "tempomed", "x"], "not a catalog query"),
                          (["--store", f"kglite://{store}.other", *CASES[0]], "another store")]:
            got = _raw(path, b"Q" + json.dumps({**request, "fingerprint": print_, "argv": argv}).encode() + b"\n",
                       fds)
            assert got == [{"accepted": False, "reason": why}], argv
    assert cli(env, "--store", uri, *CASES[0]) == cli(off(env), "--store", uri, *CASES[0])  # still answering
    assert live_process(store)["pid"] == status["pid"]


def test_two_callers_at_once_and_an_import_free_client(store: Path, env: dict[str, str]) -> None:
    uri = f"kglite://{store}"
    cli(env, "--store", uri, *CASES[2])
    before = live_process(store)["requests"]
    expected = cli(off(env), "--store", uri, *CASES[2])
    both = [subprocess.Popen([sys.executable, "-m", "chronokg.cli", "--store", uri, *CASES[2]], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=REPO)
            for _ in range(2)]
    for child in both:
        out, err = child.communicate(timeout=120)
        assert (child.returncode, out, err) == expected
    probe = ("import json, sys\nsys.argv = ['chronokg', *sys.argv[1:]]\nfrom chronokg.cli import main\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "sys.stderr.write(json.dumps(sorted(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", probe, "--store", uri, *CASES[0]], capture_output=True, text=True,
                          env=env, cwd=REPO, stdin=subprocess.DEVNULL, timeout=120)
    loaded = set(json.loads(done.stderr))
    assert done.stdout == cli(off(env), "--store", uri, *CASES[0])[1]
    assert "chronokg.cli.query_client" in loaded and not [m for m in HEAVY if m in loaded]
    assert live_process(store)["requests"] == before + 3  # all three forwarded


def test_stale_socket_sigterm_idle_and_a_vanished_store_leave_nothing(store: Path, tmp_path: Path,
                                                                     env: dict[str, str]) -> None:
    uri = f"kglite://{store}"
    expected = cli(off(env), "--store", uri, *CASES[0])
    cli(env, "--store", uri, *CASES[0])
    status = live_process(store)
    os.kill(status["pid"], signal.SIGKILL)  # its socket stays behind
    wait_gone([status["pid"]])
    assert os.path.exists(status["socket"])
    assert cli(env, "--store", uri, *CASES[0]) == expected  # silently in-process; the stale socket removed
    again = live_process(store)  # and a new process started
    assert again["pid"] != status["pid"]
    os.kill(again["pid"], signal.SIGTERM)
    wait_gone([again["pid"]])
    assert not os.path.exists(again["socket"])
    # idle: a process that waits 3 s for a caller exits by itself, removing its socket
    quick = {**env, IDLE: "3"}
    cli(quick, "--store", uri, *CASES[0])
    short = live_process(store)
    wait_gone([short["pid"]])
    assert not os.path.exists(short["socket"])
    # its store removed: the process exits
    copy = tmp_path / "gone.kgl"
    copy.write_bytes(store.read_bytes())
    cli(env, "--store", f"kglite://{copy}", *CASES[0])
    doomed = live_process(copy)
    for f in copy.parent.glob("gone.kgl*"):
        f.unlink()
    wait_gone([doomed["pid"]])
    assert not os.path.exists(doomed["socket"])


def test_daemon_commands_and_the_setting_that_turns_it_off(store: Path, env: dict[str, str]) -> None:
    uri = f"kglite://{store}"
    assert cli(off(env), "--store", uri, *CASES[0])[0] == 0
    assert query_client.processes("status") == []  # 0: never started
    cli(env, "--store", uri, *CASES[0])
    pid = live_process(store)["pid"]
    code, out, _ = cli(env, "query", "daemon", "status", "-f", "json")
    assert code == 0 and [p["pid"] for p in json.loads(out)] == [pid]
    # other settings (a read limit): not that process's caller; its own process answers as in-process would
    limited = {**env, "CHRONOKG_READ_MAX_ROWS": "2"}
    assert cli(limited, "--store", uri, *CASES[2]) == cli(off(limited), "--store", uri, *CASES[2])
    deadline = time.monotonic() + 60
    while len(pids := [p["pid"] for p in query_client.processes("status")]) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(pids) == 2 and pid in pids
    assert cli(env, "query", "daemon", "stop")[1] == "stopped 2 query processes\n"
    wait_gone(pids)
    # a store over the size setting stays on the quick mapped open: the same answers
    mapped = {**env, "CHRONOKG_QUERY_DAEMON_INDEXED_MAX_MB": "0"}
    cli(mapped, "--store", uri, *CASES[1])
    status = live_process(store)
    time.sleep(1)
    assert cli(mapped, "--store", uri, *CASES[1]) == cli(off(mapped), "--store", uri, *CASES[1])
    assert [(p["indexed"], p["indexing"]) for p in query_client.processes("status")] == [(False, False)]
    assert live_process(store)["requests"] == status["requests"] + 1
    query_client.processes("stop")
    wait_gone([status["pid"]])
    assert cli(env, "query", "daemon", "status", "-f", "json")[1].strip() == "[]"


def test_the_demo_step_shows_the_later_runs_answered_by_the_query_process(
        env: dict[str, str], store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`chronokg demo`'s last step: who answered each run is the process's own count, and the answers agree."""
    from chronokg.cli.demo_query import query_process_runs

    monkeypatch.setenv(IDLE, "60")
    runs = query_process_runs(f"kglite://{store}", subject="26103502")
    assert [r.answered_by for r in runs] == ["in-process", "the local query process", "the local query process"]
    assert all(r.same_answer for r in runs)
    assert live_process(store)["requests"] == 2


def test_the_demo_step_says_when_the_query_process_is_off(store: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console

    from chronokg.cli.demo_query import show_query_process

    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    monkeypatch.setenv(IDLE, "0")
    console = Console(record=True, width=120)
    show_query_process(console, f"kglite://{store}")
    assert "The local query process is off" in console.export_text()
    assert query_client.processes("status") == [] and not (tmp_path / "chronokg").exists()
