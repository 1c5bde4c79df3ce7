"""CI runs README command 2 word for word: install, ruff, mypy (strict), then both test tiers."""

from __future__ import annotations

import re

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
    assert steps[3:] == [".venv/bin/ruff check chronokg tests benchmarks", ".venv/bin/mypy",
                         ".venv/bin/python -m pytest --all"]


def test_ci_stops_at_the_first_failing_step() -> None:
    text = (REPO / ".ci" / "run").read_text()
    assert "set -euo pipefail" in text
    assert all(check in ci_command() for check in CHECKS)


def test_benchmarks_readme_stays_under_its_limit() -> None:
    """benchmarks/README.md holds each benchmark's current result, kept short enough to read."""
    size = len((REPO / "benchmarks" / "README.md").read_bytes())  # bytes: at least its characters
    assert size <= 40_000, f"benchmarks/README.md is {size:,} bytes (limit 40,000)"
