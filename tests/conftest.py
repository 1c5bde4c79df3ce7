"""Shared fixtures: stores on the embedded engine, and the real data beside the checkout."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chronokg.graph.kglite_store import KgliteStore
from chronokg.testing.bolt_server import BoltTarget
from tests.demo_stores import demo_built, demo_command, demo_command_copy, demo_store  # noqa: F401 (fixtures)

# No test leaves a local query process behind (chronokg.cli.query_daemon): `chronokg query ...` runs in-process
# unless a test turns the process on (tests/test_query_daemon.py, which stops its processes in teardown).
os.environ["CHRONOKG_QUERY_DAEMON_IDLE_S"] = "0"
# Compiled test modules (assertions rewritten) and chronokg modules are cached even where the machine sets
# PYTHONDONTWRITEBYTECODE: without the cache every xdist worker and every `chronokg` subprocess compiles them
# again (about 4 s of CPU a worker for the test modules alone).
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """`../shared/data` beside the checkout: fails loudly under CI if missing, skips elsewhere."""
    if not SHARED_DATA.is_dir():
        message = f"real sample data not found at {SHARED_DATA} (expected ../shared/data beside the checkout)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return SHARED_DATA


@pytest.fixture(scope="session")
def bolt_target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BoltTarget]:
    """A real Bolt server for the whole session: your Neo4j when CHRONOKG_NEO4J_URI is set (its database is
    wiped by the tests that use it), else ArcadeDB started on free loopback ports from a temporary folder
    and stopped at the end. Under CI a server that cannot start fails the tests; elsewhere they skip."""
    from chronokg.settings import Settings

    settings = Settings()
    if settings.neo4j_uri:
        yield BoltTarget(settings.neo4j_uri, settings.neo4j_user, settings.neo4j_password.get_secret_value(),
                         settings.neo4j_database, f"the server at {settings.neo4j_uri}")
        return
    try:
        from chronokg.testing.bolt_server import start

        server = start(tmp_path_factory.mktemp("arcadedb"))
    except Exception as exc:  # arcadedb-embedded missing, or the server did not come up
        message = f"no Bolt server for the Neo4j tests: ArcadeDB did not start ({exc})"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    try:
        yield server.target()
    finally:
        server.stop()


@pytest.fixture
def store() -> Iterator[KgliteStore]:
    """A fresh in-memory embedded store."""
    with KgliteStore(":memory:") as s:
        yield s


@pytest.fixture
def file_store(tmp_path: Path) -> Iterator[KgliteStore]:
    """A fresh embedded store in a file (write-ahead log, reopenable)."""
    with KgliteStore(tmp_path / "store.kgl") as s:
        yield s


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The tool-server tests' store (`tests.serve_helpers.build_store`) and its digest, built once per module."""
    from tests.serve_helpers import build_store

    path = tmp_path_factory.mktemp("served") / "store.kgl"
    return path, build_store(path)


@pytest.fixture
def served_store(served: tuple[Path, str]) -> Iterator[KgliteStore]:
    """The served store opened read-only, as a server's workers open it."""
    with KgliteStore(served[0], read_only=True) as s:
        yield s


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--all", action="store_true", default=False,
                     help="run the slow tier too (JVM, browser, proxies, harnesses, torch, docs and kill tests)")


# Fixtures that start a JVM (the Bolt server) or a browser, or run the research loop on the real TempoMed sample
# (tests/test_loop.py): every test using one is in the slow tier.
SLOW_FIXTURES = {"bolt_target", "browser", "loop"}


def named_files(config: pytest.Config) -> set[Path]:
    """The test files named on the command line (a file, or a test id in it); folders name none."""
    files = set()
    for arg in config.args:
        path = Path(config.invocation_params.dir, arg.split("::")[0]).resolve()
        if path.is_file():
            files.add(path)
    return files


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The default run is the fast tier. Tests marked `slow` (and the `docs_run` ones, which are slow too) run
    with `--all`, when `-m` names `slow` or `docs_run`, or when their file or id is named on the command line."""
    for item in items:
        uses = set(getattr(item, "fixturenames", ()))
        if item.get_closest_marker("slow") is None and (item.get_closest_marker("docs_run") or uses & SLOW_FIXTURES):
            item.add_marker(pytest.mark.slow)
    markexpr = config.getoption("markexpr") or ""
    if config.getoption("--all") or "slow" in markexpr or "docs_run" in markexpr:
        # The docs runs (a minute or two each) first: started last, one would keep a worker busy after the
        # others are done. The order is the same in every xdist worker, as xdist requires.
        items.sort(key=lambda item: item.get_closest_marker("docs_run") is None)
        return
    named = named_files(config)
    slow = [item for item in items if item.get_closest_marker("slow") is not None and item.path not in named]
    if slow:
        config.hook.pytest_deselected(items=slow)
        dropped = set(map(id, slow))
        items[:] = [item for item in items if id(item) not in dropped]


def pytest_report_header(config: pytest.Config) -> str:
    from chronokg.settings import Settings

    uri = Settings().neo4j_uri
    if uri:
        return f"chronokg: the Neo4j tests run against the server at {uri} (CHRONOKG_NEO4J_URI)"
    return "chronokg: the Neo4j tests run against ArcadeDB started on loopback (set CHRONOKG_NEO4J_URI for yours)"


@pytest.fixture
def http_folder(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real HTTP server on loopback serving a temporary folder: stands in for the public internet in tests."""
    from tests.helpers import serve_folder

    root = tmp_path / "served"
    root.mkdir()
    with serve_folder(root) as base:
        yield base, root


def _no_traceback(where: str, *texts: object) -> None:
    for text in texts:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        if isinstance(text, str) and "Traceback" in text:
            pytest.fail(f"{where} printed a Python traceback:\n{text[-3000:]}")


@pytest.fixture(autouse=True)
def cli_output_has_no_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails any test whose `chronokg` invocation (CliRunner or a captured subprocess) shows a traceback,
    or whose CliRunner invocation ended in an exception the CLI did not turn into an error line."""
    import subprocess

    from typer.testing import CliRunner

    invoke = CliRunner.invoke

    def checked_invoke(self: CliRunner, *args: Any, **kwargs: Any) -> Any:
        result = invoke(self, *args, **kwargs)
        command = " ".join(map(str, (args[1:2] or [kwargs.get("args")])[0] or []))
        try:
            stderr = result.stderr
        except ValueError:
            stderr = ""
        _no_traceback(f"chronokg {command}", result.output, stderr)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            import traceback

            shown = "".join(traceback.format_exception(result.exception))
            pytest.fail(f"chronokg {command} raised {type(result.exception).__name__} (the CLI must print one "
                        f"error line instead):\n{shown[-3000:]}")
        return result

    monkeypatch.setattr(CliRunner, "invoke", checked_invoke)

    run = subprocess.run

    def checked_run(*args: Any, **kwargs: Any) -> Any:
        done = run(*args, **kwargs)
        argv = args[0] if args else kwargs.get("args")
        words = [str(a) for a in argv] if isinstance(argv, (list, tuple)) else str(argv).split()
        if "chronokg.cli" in words or any(Path(w).name == "chronokg" for w in words):  # the CLI, not a script
            _no_traceback(" ".join(words), done.stdout, done.stderr)
        return done

    monkeypatch.setattr(subprocess, "run", checked_run)
