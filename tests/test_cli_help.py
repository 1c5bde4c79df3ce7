"""Every command's and group's `--help` is what it was before `chronokg query ...` got its own fast app.

The fixture (tests/fixtures/cli_help.json) was written by tests/cli_help_snapshot.py from the app before
the change; here each path runs through `chronokg.cli.app_for`, the function `main()` uses to pick the app
(the query group alone for `query ...`, the whole app otherwise), and a few as real processes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.cli import app_for
from tests.cli_help_snapshot import ENV, FIXTURE, command_paths, process_help_texts

BEFORE: dict[str, dict[str, dict[str, Any]]] = json.loads(FIXTURE.read_text(encoding="utf-8"))
REGENERATE = "PYTHONPATH=$PWD python -m tests.cli_help_snapshot"


def test_the_same_commands_and_groups_as_before() -> None:
    """The app's commands are the fixture's, in its order: a command added (a new source's `ingest <name>`, a new
    query's `query <name>`) or removed is named, with the command that writes the fixture again."""
    now = [" ".join(p) for p in command_paths()]
    added = [f"chronokg {p}" for p in now if p not in BEFORE["in_process"]]
    gone = [f"chronokg {p}" for p in BEFORE["in_process"] if p not in now]
    assert not added, (f"no help text in {FIXTURE.relative_to(FIXTURE.parents[2])} for {', '.join(added)}: "
                       f"regenerate it with `{REGENERATE}` and commit it")
    assert not gone, (f"{FIXTURE.relative_to(FIXTURE.parents[2])} holds the help of {', '.join(gone)}, which the "
                      f"app no longer has: regenerate it with `{REGENERATE}` and commit it")
    assert now == list(BEFORE["in_process"]), f"the commands are listed in another order: `{REGENERATE}`"


@pytest.mark.parametrize("path", list(BEFORE["in_process"]))
def test_help_is_byte_identical(path: str) -> None:
    args = [*path.split(), "--help"]
    result = CliRunner().invoke(app_for(args), args, prog_name="chronokg", env=ENV)
    assert {"exit_code": result.exit_code, "output": result.output} == BEFORE["in_process"][path], (
        f"`chronokg {path} --help` changed; if on purpose, regenerate the fixture with `{REGENERATE}`")


@pytest.mark.slow
def test_help_of_real_processes_is_byte_identical() -> None:
    assert process_help_texts() == BEFORE["process"]


def test_query_commands_take_the_query_app_and_the_rest_the_whole_app() -> None:
    from chronokg.cli.app import app

    for args in (["query", "as-of"], ["--store", "kglite:///x.kgl", "query"], ["--store=x", "query", "list"]):
        assert app_for(args) is not app, args
    for args in ([], ["--help"], ["--store", "query"], ["stats"], ["--show-completion"], ["ingest", "query"]):
        assert app_for(args) is app, args


def test_eval_commands_print_their_help_in_the_layout_of_query_and_ingest_commands() -> None:
    """Every command under `eval` (its `runs` group's too) prints rich's boxed help, as `query NAME` and
    `ingest SOURCE` do, its help texts whole (`[default: …]` is text, not markup); the groups' own help stays
    plain, as those groups' does."""
    def shown(*path: str) -> str:
        args = [*path, "--help"]
        result = CliRunner().invoke(app_for(args), args, prog_name="chronokg", env=ENV)
        assert result.exit_code == 0, result.output
        return result.output

    for path in (["query", "as-of"], ["ingest", "tempomed"]):
        assert "╭─ Options" in shown(*path), path
    commands = [p for p in command_paths() if p[:1] == ("eval",) and p not in (("eval",), ("eval", "runs"))]
    assert len(commands) >= 9
    for path in commands:
        assert "╭─ Options" in shown(*path), path
    def flat(text: str) -> str:
        return " ".join(text.replace("│", " ").split())

    assert "[default: as known now]" in flat(shown("eval", "rescore"))
    assert "[default: as --model-a]" in flat(shown("eval", "compare"))
    for group in (("eval",), ("eval", "runs"), ("query",), ("ingest",)):
        assert "╭─" not in shown(*group) and "Commands:" in shown(*group), group
