"""`chronokg query NAME` opens its store on a thread while it starts (chronokg.cli.early_open): the answers and
the errors are those of the whole app, the command uses the early store, and an unused one is closed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronokg.cli import app_for, early_open
from chronokg.cli.app import app
from chronokg.cli.argv import command_word, store_option, subcommand_word
from tests.helpers import REPO

ENV = {"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"}


@pytest.fixture(scope="module")
def store(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    uri = f"kglite://{tmp_path_factory.mktemp('early') / 'cli.kgl'}"
    result = CliRunner().invoke(app, ["--store", uri, "ingest", "tempomed", str(shared_data / "tempomed-bench")])
    assert result.exit_code == 0, result.output
    return uri


def process(*args: str, whole: bool = False) -> tuple[int, str, str]:
    """`chronokg ARGS` as a process: through `main()`, or (`whole`) the whole app as it ran before the fast path."""
    launch = ["-c", "from chronokg.cli.app import app; app()"] if whole else ["-m", "chronokg.cli"]
    done = subprocess.run([sys.executable, *launch, *args], capture_output=True, text=True,
                          env={**os.environ, **ENV}, cwd=REPO)
    return done.returncode, done.stdout, done.stderr


def test_argv_words() -> None:
    args = ["--store", "kglite:///a.kgl", "--store=kglite:///b.kgl", "query", "as-of", "--store", "x"]
    assert command_word(args) == "query" and subcommand_word(args) == "as-of"
    assert store_option(args) == "kglite:///b.kgl"  # the last one before the command word, as click keeps
    assert command_word(["--help", "query"]) is None and command_word(["--store"]) is None
    assert subcommand_word(["query", "--help"]) is None and subcommand_word(["query"]) is None
    assert store_option(["query", "as-of"]) is None


@pytest.mark.parametrize("args", [
    ["query", "as-of", "--subject", "26103502", "--predicate", "superseded_by", "--date", "2024", "-f", "json"],
    ["query", "recommended-on", "--date", "2016-06-01", "--guideline", "36739483"],
    ["query", "run", "trajectory", "--params", '{"guideline": "26103502"}'],
])
@pytest.mark.slow
def test_a_query_process_answers_as_the_whole_app(store: str, args: list[str]) -> None:
    code, out, err = process("--store", store, *args)
    assert (code, out, err) == process("--store", store, *args, whole=True) and code == 0 and out.strip()


@pytest.mark.parametrize("args", [
    ["--store", "kglite:///no/such/dir/x.kgl", "query", "as-of", "--date", "2024"],  # the early open fails
    ["query", "as-of", "--date", "June"],  # a bad flag: the early store is never taken
    ["--store", "neo4j+x://h", "query", "as-of", "--date", "2024"],  # not an embedded store: not opened early
])
def test_errors_are_those_of_the_whole_app(store: str, args: list[str]) -> None:
    if "--store" not in args:
        args = ["--store", store, *args]
    code, out, err = process(*args)
    whole = CliRunner().invoke(app, args, env=ENV)
    assert code == whole.exit_code == 2 and out == ""
    assert err.splitlines()[-1].startswith("error: ") and err.splitlines()[-1] in whole.output


def test_the_command_uses_the_early_store_and_an_unused_one_is_closed(store: str) -> None:
    args = ["--store", store, "query", "as-of", "--subject", "26103502", "--date", "2024", "-f", "json"]
    early = early_open.start(args)
    assert early is not None
    try:
        result = CliRunner().invoke(app_for(args), args)
        assert result.exit_code == 0 and json.loads(result.stdout)
        assert early.uri is None and early._store is None  # taken by the command, which closed it
    finally:
        early_open.finish()
    bad = ["--store", store, "query", "as-of", "--date", "June"]
    early = early_open.start(bad)
    assert early is not None
    try:
        assert CliRunner().invoke(app_for(bad), bad).exit_code == 2
        early._thread.join()
        unused = early._store
        assert unused is not None and early.uri == store
    finally:
        early_open.finish()
    assert early._store is None
    assert unused._g is None  # type: ignore[attr-defined]  # closed: the reader let its graph go
    for no_early in (["query", "list"], ["query", "cypher", "RETURN 1"], ["query", "as-of", "--help"], ["stats"]):
        assert early_open.start(["--store", store, *no_early]) is None
    assert early_open.start(["--store", "neo4j://h:7687", "query", "as-of", "--date", "2024"]) is None


@pytest.mark.parametrize(("words", "cword", "expected"), [
    ("chronokg query as", 2, "as-of"),
    ("chronokg --store x query two-hop --su", 5, "--subject"),
    ("chronokg ing", 1, "ingest"),
])
def test_shell_completion_still_completes_query_commands(words: str, cword: int, expected: str) -> None:
    """Completion runs with no arguments (its words come in the environment), so it takes the whole app."""
    script = Path(sys.executable).with_name("chronokg")
    assert script.exists(), f"no chronokg console script at {script}: pip install -e ."
    env = {**os.environ, "_CHRONOKG_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    done = subprocess.run([str(script)], capture_output=True, text=True, env=env, cwd=REPO)
    assert done.returncode == 0 and expected in done.stdout.split(), done.stdout + done.stderr
