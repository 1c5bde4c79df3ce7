"""The demo's loop section: the research loop run as a researcher types it, on two releases of a small
self-authored file (chronokg.demo.loop), in its own store beside the demo store.

Each step's command is printed as it can be pasted into a shell opened in the loop's folder (after the two
set-up lines printed first): paths relative to that folder, lines within 80 columns, a long command broken
with ` \\` continuation lines. The steps themselves run in process with the same arguments, made absolute.
"""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

from rich.console import Console

from chronokg.cli.render import heading, say
from chronokg.store_uri import embedded_file

WIDTH = 78  # a printed command line's longest, its continuation mark included
STORE = "loop.kgl"  # the loop's store, in its folder
Arg = str | Path  # a Path is relative to the loop's folder: printed so, run absolute


class Step:
    """One command of the loop and what it shows."""

    def __init__(self, what: str, *args: Arg) -> None:
        self.what = what
        self.args = list(args)

    def printed(self) -> list[str]:
        return ["chronokg", *(a.as_posix() if isinstance(a, Path) else a for a in self.args)]

    def run_args(self, folder: Path) -> list[str]:
        return [str(folder / a) if isinstance(a, Path) else a for a in self.args]


def pasteable(words: list[str], width: int = WIDTH) -> list[str]:
    """`words` as shell lines within `width` columns: each line but the last ends with ` \\`, continuation lines
    are indented four spaces; a word longer than a line (a deep folder) goes in double quotes, cut into lines that
    each end with a backslash and start at column 0, which a shell joins back inside the quotes."""
    lines: list[str] = []
    line = ""
    for raw in words:
        word = shlex.quote(raw)
        if len(word) + 6 > width:
            if line:
                lines.append(line + " \\")
            *cut, line = _quoted_lines(raw, width)
            lines.extend(cut)
            continue
        indent = "    " if lines else ""
        candidate = f"{line} {word}" if line else indent + word
        if line and len(candidate) + 2 > width:
            lines.append(line + " \\")
            line = "    " + word
        else:
            line = candidate
    lines.append(line)
    return lines


def _quoted_lines(word: str, width: int) -> list[str]:
    """`word` double-quoted, as lines of at most `width - 2` columns joined by backslash-newline (removed by the
    shell inside double quotes); an escape (`\\$`) is never cut in two."""
    units = ['"', *(f"\\{c}" if c in '$`"\\' else c for c in word), '"']
    out, line = [], ""
    for unit in units:
        if len(line) + len(unit) > width - 3:
            out.append(line + "\\")
            line = ""
        line += unit
    out.append(line)
    return out


def loop_steps(run_a: str = "runs/RUN-1", run_b: str = "runs/RUN-2") -> list[Step]:
    """The loop's steps (`run_a`, `run_b`: the folders of the first and second `eval run`, known once run)."""
    models = ["-m", "baseline/oracle", "-m", "baseline/frozen:2018"]
    return [
        Step("load the first release", "ingest", "tempomed", Path("release-1.jsonl"), "--release-date",
             "2024-01-01"),
        Step("generate questions from it", "generate", "tempomed", "--out", Path("q1.jsonl")),
        Step("evaluate two baselines", "eval", "run", Path("q1.jsonl"), *models, "--log-dir", Path("runs")),
        Step("load the newer release", "ingest", "tempomed", Path("release-2.jsonl"), "--release-date",
             "2025-06-01"),
        Step("generate only what is new or changed", "generate", "tempomed", "--since", Path("q1.jsonl"), "--out",
             Path("q2.jsonl")),
        Step("verify the old questions against the newer release", "bench", "verify", Path("q1.jsonl")),
        Step("evaluate the new questions", "eval", "run", Path("q2.jsonl"), *models, "--log-dir", Path("runs")),
        Step("list the releases", "releases", "list"),
        Step("compare the two baselines on the new questions: what a model frozen at 2018 misses", "eval",
             "compare", Path(run_b), Path(run_b), "--model-a", "baseline/oracle", "--model-b",
             "baseline/frozen:2018", "--iterations", "50"),
        Step("re-score the first run against the newer release, asking no model", "eval", "rescore", Path(run_a),
             "--out", Path("rescored")),
        Step("the new questions' run against the gold of each year", "query", "accuracy-by-valid-year", "--run",
             Path(run_b).name, "--first", "2020", "--last", "2026"),
    ]


def run_loop(console: Console, folder: Path, command: Any) -> None:
    """Run every step in process through `command` (the CLI's own, passed in: this module never imports the
    app that imports it)."""
    from chronokg.demo.loop import write_releases

    if folder.exists():
        shutil.rmtree(folder)
    write_releases(folder)
    store = ["--store", str(embedded_file(folder / STORE))]
    heading(console, "the research loop: two releases, generate, evaluate, load the newer, --since, verify, "
                     "compare, re-score")
    say(console, ("Each step's command as typed in a shell opened in the loop's folder, after these two lines:",
                  "dim"))
    for line in (*pasteable(["cd", str(folder)]), f"export CHRONOKG_STORE=kglite://$PWD/{STORE}"):
        say(console, line)
    steps = loop_steps()
    for n in range(1, len(steps) + 1):
        runs = sorted((folder / "runs").glob("run-*"), key=lambda p: p.stat().st_mtime)
        names = [f"runs/{r.name}" for r in runs] + ["runs/RUN-1", "runs/RUN-2"]
        step = loop_steps(names[0], names[1])[n - 1]
        say(console, "\n", (f"step {n}", "bold"), f": {step.what}")
        for line in pasteable(step.printed()):
            say(console, line)
        try:
            command.main([*store, *step.run_args(folder)], prog_name="chronokg", standalone_mode=False)
        except SystemExit as exc:  # a step that exits non-zero ends the demo's loop with its code
            if exc.code:
                raise
        if step.args[:2] == ["eval", "rescore"]:
            say(console, ("TempoMed's releases add change pairs and never rewrite a decision's recommendation, so "
                          "the first run's verdicts stand; the demo corpus's later release (above) flipped some.",
                          "dim"))
