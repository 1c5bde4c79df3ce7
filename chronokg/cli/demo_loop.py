"""The demo's loop section: the research loop run as a researcher types it, on two releases of a small
self-authored file (chronokg.demo.loop), in its own store beside the demo store."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from rich.console import Console

from chronokg.cli.render import heading, say
from chronokg.store_uri import embedded_file


def loop_steps(folder: Path) -> list[list[str]]:
    """The loop's command lines (without the `--store` option every one gets)."""
    q1, q2 = str(folder / "q1.jsonl"), str(folder / "q2.jsonl")
    models = ["-m", "baseline/oracle", "-m", "baseline/frozen:2018"]
    return [
        ["ingest", "tempomed", str(folder / "release-1.jsonl"), "--release-date", "2024-01-01"],
        ["generate", "tempomed", "--out", q1],
        ["eval", "run", q1, *models, "--log-dir", str(folder / "runs")],
        ["ingest", "tempomed", str(folder / "release-2.jsonl"), "--release-date", "2025-06-01"],
        ["generate", "tempomed", "--since", q1, "--out", q2],
        ["bench", "verify", q1],
        ["eval", "run", q2, *models, "--log-dir", str(folder / "runs")],
        ["eval", "run", q1, *models, "--log-dir", str(folder / "runs-again")],
        ["releases", "list"],
    ]


def run_loop(console: Console, folder: Path, command: Any) -> None:
    """Run every step in process through `command` (the CLI's own, passed in: this module never imports the
    app that imports it); the last step compares the frozen model's two runs of the old questions."""
    from chronokg.demo.loop import write_releases

    if folder.exists():
        shutil.rmtree(folder)
    write_releases(folder)
    store = ["--store", str(embedded_file(folder / "loop.kgl"))]
    heading(console, "the research loop: two releases, generate, evaluate, load the newer, --since, verify, "
                     "compare, re-score")
    steps = loop_steps(folder)
    for n, args in enumerate([*steps, ["eval", "compare"], ["eval", "rescore"], ["query"]], start=1):
        runs = sorted((folder / "runs").glob("run-*"), key=lambda p: p.stat().st_mtime)
        if args == ["eval", "compare"]:  # the old questions, answered on the first release and on the newer one
            args = ["eval", "compare", str(runs[0]), str(next((folder / "runs-again").glob("run-*"))), "--model-a",
                    "baseline/frozen:2018", "--iterations", "50"]
        elif args == ["eval", "rescore"]:  # the first run's answers scored against the newer release: no model asked
            args = ["eval", "rescore", str(runs[0]), "--out", str(folder / "rescored")]
        elif args == ["query"]:  # the newer questions' run, against the gold of each year
            args = ["query", "accuracy-by-valid-year", "--run", runs[-1].name, "--first", "2020", "--last", "2026"]
        say(console, "\n", (f"step {n}", "bold"), f" $ chronokg {' '.join(args)}")
        try:
            command.main([*store, *args], prog_name="chronokg", standalone_mode=False)
        except SystemExit as exc:  # a step that exits non-zero ends the demo's loop with its code
            if exc.code:
                raise
