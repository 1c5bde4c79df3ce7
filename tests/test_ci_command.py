"""CI runs README command 2 word for word: install, then both test tiers with ruff and mypy (strict) beside them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.helpers import REPO

CHECKS = ("ruff check chronokg tests benchmarks", "/mypy", "-m pytest --all")


def test_readme_says_how_to_run_the_fast_tier_alone() -> None:
    block = re.search(r"```bash skip-test: setup:.*?\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert block and ".venv/bin/python -m pytest\n" in block.group(1) + "\n"


def readme_command_2() -> str:
    block = re.search(r"```bash skip-test: setup:.*?\n(.*?)```", (REPO / "README.md").read_text(), re.S)
    assert block, "README.md has no set-up block"
    lines = [line for line in block.group(1).splitlines() if line and not line.startswith("#")]
    assert len(lines) == 2, lines
    return lines[1]


def ci_command() -> str:
    lines = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    return lines[-1]


def test_ci_runs_readme_command_2_word_for_word() -> None:
    assert ci_command() == readme_command_2()


def test_command_2_installs_first_then_lints_types_and_runs_both_tiers() -> None:
    browser, rest = readme_command_2().split(")) && ", 1)
    assert browser.startswith("(test -x /usr/bin/chromium") and "apt-get install -y -q chromium" in browser
    steps = rest.split(" && ")
    assert steps[:3] == ["python3 -m venv .venv",
                         ".venv/bin/pip install -q --no-compile torch==2.13.0",  # first: the CPU build
                         ".venv/bin/pip install --no-compile -e '.[dev,rag,integrations]'"]  # not -q: it shows progress
    (checks,) = steps[3:]
    assert checks.startswith("( ") and checks.endswith(" )"), checks  # a subshell: pasted, its variables stay in it
    jobs = checks[2:-2].split("; ")
    # ruff and mypy start in the background, each into its own log, before the tests
    assert jobs[:2] == [".venv/bin/ruff check chronokg tests benchmarks > .venv/ruff.log 2>&1 & ruff=$!",
                        ".venv/bin/mypy > .venv/mypy.log 2>&1 & mypy=$!"]
    assert ".venv/bin/python -m pytest --all || tests=$?" in jobs
    # after the tests: both waited for, both logs shown, and the command fails if any of the three failed
    assert jobs[jobs.index(".venv/bin/python -m pytest --all || tests=$?"):] == [
        ".venv/bin/python -m pytest --all || tests=$?", "lint=0", "wait $ruff || lint=1", "wait $mypy || lint=1",
        "tail -n +1 .venv/ruff.log .venv/mypy.log", "[ $tests$lint = 00 ]"]


def test_command_2_fails_when_any_check_fails(tmp_path: Path) -> None:
    """The checks part of command 2, run under CI's `set -euo pipefail` with stand-ins for ruff, mypy and pytest:
    it exits 0 only when all three pass, and shows both logs whichever failed."""
    checks = readme_command_2().split(" && ")[-1]
    bin_ = tmp_path / ".venv" / "bin"
    bin_.mkdir(parents=True)
    for failing in (None, "ruff", "mypy", "python"):
        for tool in ("ruff", "mypy", "python"):
            (bin_ / tool).write_text(f"#!/bin/sh\necho {tool} ran\nexit {int(tool == failing)}\n")
            (bin_ / tool).chmod(0o755)
        done = subprocess.run(["bash", "-c", f"set -euo pipefail\n{checks}\necho after"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == (0 if failing is None else 1), (failing, done.stdout, done.stderr)
        assert "ruff ran" in done.stdout and "mypy ran" in done.stdout and "python ran" in done.stdout, failing
        assert ("after" in done.stdout) == (failing is None), failing


def test_ci_stops_at_the_first_failing_step() -> None:
    text = (REPO / ".ci" / "run").read_text()
    assert "set -euo pipefail" in text
    assert all(check in ci_command() for check in CHECKS)


def test_benchmarks_readme_stays_under_its_limit() -> None:
    """benchmarks/README.md holds each benchmark's current result, kept short enough to read."""
    size = len((REPO / "benchmarks" / "README.md").read_bytes())  # bytes: at least its characters
    assert size <= 40_000, f"benchmarks/README.md is {size:,} bytes (limit 40,000)"
