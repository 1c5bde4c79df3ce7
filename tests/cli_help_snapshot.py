"""The `--help` text of every `chronokg` command and group, walked from the app itself.

`tests/fixtures/cli_help.json` holds these texts as they were before the CLI's fast path for
`chronokg query ...`; tests/test_cli_help.py checks that every text, and the list
of commands, is still the same. Regenerate the fixture (when a help text changes on purpose) with

    .venv/bin/python -m tests.cli_help_snapshot
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).parent / "fixtures" / "cli_help.json"
ENV = {"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"}
# Also run as real processes (`python -m chronokg.cli PATH --help`): the paths `main()` may route its own way.
PROCESS_PATHS = ["", "query", "query as-of", "query timeline", "query two-hop", "query cypher", "query run",
                 "ingest", "eval run"]


def command_paths() -> list[tuple[str, ...]]:
    """Every command and group path under `chronokg` (the root is `()`), lazy groups included."""
    import typer

    from chronokg.cli.app import app

    root = typer.main.get_command(app)
    paths: list[tuple[str, ...]] = []

    def walk(command: Any, path: tuple[str, ...], ctx: Any) -> None:
        paths.append(path)
        if not hasattr(command, "list_commands"):
            return
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not getattr(sub, "hidden", False):
                walk(sub, (*path, name), ctx)

    with root.make_context("chronokg", [], resilient_parsing=True) as ctx:
        walk(root, (), ctx)
    return paths


def help_texts() -> dict[str, dict[str, Any]]:
    """`chronokg PATH --help` for every path: its exit code and output, keyed by the path."""
    from typer.testing import CliRunner

    from chronokg.cli.app import app

    runner = CliRunner()
    out: dict[str, dict[str, Any]] = {}
    for path in command_paths():
        result = runner.invoke(app, [*path, "--help"], prog_name="chronokg", env=ENV)
        out[" ".join(path)] = {"exit_code": result.exit_code, "output": result.output}
    return out


def process_help_texts() -> dict[str, dict[str, Any]]:
    """`python -m chronokg.cli PATH --help` as a fresh process, for each of PROCESS_PATHS."""
    import os
    import subprocess
    import sys

    out: dict[str, dict[str, Any]] = {}
    for path in PROCESS_PATHS:
        done = subprocess.run([sys.executable, "-m", "chronokg.cli", *path.split(), "--help"], capture_output=True,
                              text=True, env={**os.environ, **ENV}, cwd=FIXTURE.parents[2])
        out[path] = {"exit_code": done.returncode, "output": done.stdout + done.stderr}
    return out


if __name__ == "__main__":
    texts = {"in_process": help_texts(), "process": process_help_texts()}
    tmp = FIXTURE.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(texts, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(FIXTURE)
    print(f"{len(texts['in_process'])} + {len(texts['process'])} help texts -> {FIXTURE}")
