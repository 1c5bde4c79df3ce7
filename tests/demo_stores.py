"""Demo stores built once per test run and copied per test: the `chronokg demo` command and the demo corpus
loads are the suite's most repeated set-up, so each is done once (one build shared by every xdist worker,
under a file lock beside the workers' temporary folders) and a test gets its own copy to write to."""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class DemoRun:
    """What `chronokg demo` printed, and the folder holding its store (`demo.kgl`) and `demo-loop/`."""

    folder: Path
    output: str

    @property
    def store(self) -> Path:
        return self.folder / "demo.kgl"

    @property
    def uri(self) -> str:
        return f"kglite://{self.store}"


def shared_root(factory: pytest.TempPathFactory) -> Path:
    """The folder every xdist worker of this run sees (the parent of the workers' own base folders)."""
    base = factory.getbasetemp()
    return base.parent if base.name.startswith("popen-gw") else base


@contextmanager
def locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """`build(folder)` run once for the whole test run, whichever worker comes first; the others wait for it."""
    folder = shared_root(factory) / "demo-stores" / name
    with locked(folder.with_name(name + ".lock")):
        if not (folder / ".built").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            build(folder)
            (folder / ".built").touch()
    return folder


def copy_store(folder: Path, to: Path) -> Path:
    """A copy of a built folder (the store's files, not its locks) for one test to change."""
    shutil.copytree(folder, to, ignore=shutil.ignore_patterns("*.lock", "*.lock-owner", ".built"))
    return to


def run_demo_command(folder: Path) -> None:
    from typer.testing import CliRunner

    from chronokg.cli.app import app

    done = CliRunner().invoke(app, ["--store", f"kglite://{folder / 'demo.kgl'}", "demo"])
    (folder / "output.txt").write_text(done.output, encoding="utf-8")
    if done.exit_code != 0:
        raise AssertionError(f"chronokg demo exited {done.exit_code}:\n{done.output[-3000:]}")


def load_corpus_and_sources(folder: Path) -> None:
    from chronokg.demo.corpus import load_demo
    from chronokg.demo.sources import load_sources
    from chronokg.graph.kglite_store import KgliteStore

    with KgliteStore(folder / "demo.kgl") as store:
        load_demo(store)
        load_sources(store)


@pytest.fixture(scope="session")
def demo_command(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """`chronokg demo` run once for the whole test run: read its output and its store, never write to them
    (`demo_command_copy` gives a test a store of its own)."""
    folder = built_once(tmp_path_factory, "demo-command", run_demo_command)
    return DemoRun(folder, (folder / "output.txt").read_text(encoding="utf-8"))


@pytest.fixture
def demo_command_copy(demo_command: DemoRun, tmp_path: Path) -> DemoRun:
    """This test's own copy of the store `chronokg demo` left (its output as printed)."""
    return DemoRun(copy_store(demo_command.folder, tmp_path / "demo"), demo_command.output)


@pytest.fixture(scope="session")
def demo_built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo corpus and the demo's slices of every source, loaded once: `demo.kgl` in the returned folder."""
    return built_once(tmp_path_factory, "demo-corpus", load_corpus_and_sources) / "demo.kgl"


@pytest.fixture
def demo_store(demo_built: Path, tmp_path: Path) -> Path:
    """This test's own copy of the demo corpus and sources store (`demo_built`)."""
    return copy_store(demo_built.parent, tmp_path / "demo") / demo_built.name
