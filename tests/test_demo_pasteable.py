"""`chronokg demo` read as a person reads it in an 80-column pipe: no line past 80 columns, every step command of
the research loop printed so that it pastes (its ` \\` continuation lines joined, it parses and runs in the loop's
folder, after the two set-up lines printed before it), and the later release of the corpus flipping verdicts from
right to wrong."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.cli.demo_loop import pasteable
from tests.helpers import REPO

pytestmark = pytest.mark.slow  # the whole demo, in a subprocess


def shell_joined(lines: list[str]) -> str:
    """Lines as a shell reads them: a backslash at a line's end and the line break after it removed."""
    return "\n".join(lines).replace("\\\n", "")


@pytest.mark.parametrize("word", ["/tmp/" + "a-long-folder-" * 9 + "end", "/tmp/x y/" + "q" * 90 + '/$HOME"`\\z',
                                  "\\" * 100])
def test_a_word_longer_than_a_line_pastes_back_whole(word: str) -> None:
    lines = pasteable(["cd", word, "--flag"])
    assert all(len(line) <= 80 for line in lines), lines
    said = subprocess.run(["bash", "-c", 'printf "%s\\0" ' + "\n".join(lines)[3:]], capture_output=True,
                          text=True, check=True).stdout
    assert said.split("\0")[:-1] == [word, "--flag"]


def commands(output: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """The set-up lines and each step's (title, command words) as printed."""
    lines = output.splitlines()
    start = lines.index(next(x for x in lines if x.startswith("Each step's command as typed")))
    setup = []
    block = lines[start + 1:start + 9]
    for i, x in enumerate(block):
        if x.startswith(("cd ", "export ")):
            j = i
            while block[j].endswith("\\"):
                j += 1
            setup.append(" ".join(shlex.split(shell_joined(block[i:j + 1]))))
    steps = []
    for i, line in enumerate(lines):
        if re.match(r"step \d+: ", line):
            j = i + 1
            while not lines[j].startswith("chronokg "):  # a long title wraps
                j += 1
            command = [lines[j]]
            while command[-1].endswith("\\"):
                j += 1
                command.append(lines[j])
            steps.append((line, shlex.split(shell_joined(command))))
    return setup, steps


def test_the_demo_reads_at_80_columns_and_its_loop_commands_paste_and_run(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(REPO), "CHRONOKG_QUERY_DAEMON_IDLE_S": "0"}
    done = subprocess.run([sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{tmp_path / 'demo.kgl'}",
                           "demo"], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    too_wide = [line for line in out.splitlines() if len(line) > 80]
    assert too_wide == []
    # one real flip: the later release turns answers that were right into wrong ones
    flat = " ".join(out.split())
    later = flat[flat.index("a later release of the corpus"):]
    said = re.search(r"(\d+) verdicts flipped \((\d+) right to wrong", later)
    assert said is not None and int(said.group(2)) > 0
    # the newer release's load table: what it read or changed, the run's derived labels left out in one line
    second = out[out.index("chronokg ingest tempomed release-2.jsonl"):]
    second = second[:second.index("\nstep ")]
    assert "left out: " in second and not re.search(r"^(Prediction|Question|ANSWERS|Run)\s", second, re.M)
    # the frozen baseline's estimated cutoff, explained with the value the table shows
    table = re.search(r"baseline/frozen:2012 +[\d.]+ +[\d.]+ +[\d.]+ +(\d{4})", out)
    assert table is not None and f"cutoff is estimated at {table.group(1)}" in flat
    # the loop's commands, pasted into a fresh folder holding only the two release files
    setup, steps = commands(out)
    folder = tmp_path / "demo-loop"
    assert setup == [f"cd {folder}", "export CHRONOKG_STORE=kglite://$PWD/loop.kgl"]
    assert len(steps) == 11 and all(words[0] == "chronokg" for _, words in steps)
    from chronokg.demo.loop import write_releases

    again = tmp_path / "pasted"
    write_releases(again)
    monkeypatch.chdir(again)
    runner = CliRunner()
    for title, words in steps:
        result = runner.invoke(app, words[1:], env={"CHRONOKG_STORE": f"kglite://{again / 'loop.kgl'}"})
        assert result.exit_code == 0, f"{title}: {' '.join(words)}\n{result.output[-2000:]}"
    # the same loop: the run folders the printed commands name exist in the pasted folder too
    named = {w for _, words in steps for w in words if w.startswith("runs/")}
    assert named and all((again / w).is_dir() for w in named)
