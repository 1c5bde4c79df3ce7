"""The product speaks of itself only: code, tests, docs and benchmark scripts say what a thing does and why,
never which tracker entry, numbered step or item of a work list asked for it. A reader outside the project
cannot follow such a reference, and it says nothing the sentence around it should not say itself.

Scanned: the project's own words (Python, Markdown, TOML, the explorer's page assets, the CI script) under
chronokg/, tests/ (fixture READMEs, not fixture data), docs/, benchmarks/*.py and benchmarks/README.md, README.md,
DEVELOPERS.md and pyproject.toml. Prompt templates and fixture data are stored text, quoted from elsewhere, and
are not scanned.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SUFFIXES = {".py", ".md", ".toml", ".js", ".html", ".css"}

# A numbered tracker entry or a step of one ("Issue 9's", "issues 6", "issue #12", "stop 25", "stop-24 path",
# `stop24_rows`, `_STOP24`), a numbered item of a work list (but not "item 3 of 7", a count), a "must-show", or "the
# issue's" target. "issued in 2015", "the issue year", "Issue date" and "xtdb#4886" are other senses: none
# has a number right after the word.
TRACKER = re.compile(
    r"(?<![a-z])issues?[ \t]*#?[ \t]*\d+"
    r"|(?<![a-z])stop(?:[ \t]+|[-_]?)\d+"
    r"|\bitems?[ \t]+\d+\b(?![ \t]+of\b)"
    r"|\bmust-shows?\b"
    r"|\bthe issue's\b",
    re.IGNORECASE,
)


def _scanned() -> Iterator[Path]:
    for top in ("chronokg", "tests", "docs"):
        for path in sorted((REPO / top).rglob("*")):
            rel = path.relative_to(REPO)
            if not path.is_file() or path.suffix not in SUFFIXES or "__pycache__" in rel.parts:
                continue
            if rel.parts[:2] == ("tests", "fixtures") and path.name != "README.md":
                continue  # fixture data: texts quoted from elsewhere
            if path.name == Path(__file__).name:
                continue  # this file spells out the patterns it looks for
            yield path
    yield from sorted((REPO / "benchmarks").glob("*.py"))
    for name in ("benchmarks/README.md", "README.md", "DEVELOPERS.md", "pyproject.toml", ".ci/run"):
        if (REPO / name).is_file():
            yield REPO / name


def _hits(text: str) -> list[tuple[int, str]]:
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if TRACKER.search(line)]


def test_the_scan_covers_the_project() -> None:
    paths = {p.relative_to(REPO).as_posix() for p in _scanned()}
    for expected in ("chronokg/cli/__init__.py", "tests/test_layers.py", "docs/retrieval.md", "README.md",
                     "DEVELOPERS.md", "benchmarks/bench_store.py", "benchmarks/README.md",
                     "chronokg/serve/explorer/assets/app.js"):
        assert expected in paths, expected
    assert not any(p.startswith("tests/fixtures/") and not p.endswith("README.md") for p in paths)


@pytest.mark.parametrize("line", [
    "a query in half a second (issue 20 item 4)",
    "Issue 9's target: the runner keeps 90 %",
    "see issues 6 and 8",
    "fixed in issue #12",
    "(benchmarks/README.md, Issue 20, stop 25)",
    'label = "stop-24 path"',
    "def stop24_rows(ix):",
    "_STOP_25 = {}",
    "Part 3 (item 5: the model stays warm)",
    "# --- the must-show ---",
    "FIRST_VIEW_MS = 1000  # the issue's targets",
])
def test_a_tracker_reference_is_found(line: str) -> None:
    assert _hits(f"first line\n{line}\n") == [(2, line)]


@pytest.mark.parametrize("line", [
    "According to the X guideline issued in 2019, which is best?",
    "valid from the issue year of its guideline",
    "Issue date: 2021-03-04",
    "a known engine bug (xtdb#4886)",
    "item 3 of 7 written",
    "the run stops when the budget is spent",
    "an engine whose plan can be checked must show the write",
    "ISSUED_BY: Final = \"ISSUED_BY\"",
    "the paper's §3.2 Eqs. 1-4",
])
def test_other_senses_are_not_flagged(line: str) -> None:
    assert _hits(line) == []


def test_no_file_names_a_tracker_entry() -> None:
    found = [f"{path.relative_to(REPO)}:{n}: {line}"
             for path in _scanned() for n, line in _hits(path.read_text(encoding="utf-8"))]
    assert not found, ("say what and why instead of which tracker entry asked for it:\n" + "\n".join(found))
