"""docs/extending.md followed as a newcomer would: a toy source, query and family (with its profile, metric,
inspect task and docs page) written as an outside package, `chronokg_toy`, declared by entry points one recipe at a
time. Before each recipe is done, every check that docs/extending.md names for it fails saying what is missing;
after, each passes.

Everything happens in a copy of the checkout (its tests/, docs/, README.md and pyproject.toml; chronokg itself
linked, never changed), where the recipes' edits go (a conformance class, the help fixture regenerated, a README
row, the drop test's releases), and each step's checks run as pytest in a subprocess whose sys.path holds the toy
package's metadata: the registries of this process, and the repository, stay untouched. The cross-engine check of a
query starts a Bolt server and is left to tests/test_cross_engine.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # pytest runs of the checks in a subprocess, per step

REPO = Path(__file__).resolve().parents[1]
REGENERATE = [sys.executable, "-m", "tests.cli_help_snapshot"]

SOURCE = '''
"""Toy facts: JSON lines of {"subject", "predicate", "value", "valid_from"}, one release per file."""

import datetime as dt
from pathlib import Path

from chronokg.errors import InputError
from chronokg.graph.batch import GraphBatch
from chronokg.graph.model import Fact
from chronokg.ingest.common import LoadSummary, apply, file_source, read_jsonl
from chronokg.ingest.options import RELEASE_DATE, IngestOptions
from chronokg.ingest.sources import SourceSpec, paths

MAX_TEXT = 10_000
SOURCE = SourceSpec("toy", "toy", "chronokg_toy.source:load", None, ("ingest/toy",), "toy facts (JSON lines)",
                    IngestOptions(help="Toy facts, one JSON object a line (one transaction).",
                                  params=(paths("toy .jsonl files"), RELEASE_DATE)))


def load(store, paths: list[Path], release_date: dt.date | None = None, progress=None) -> LoadSummary:
    batch = GraphBatch()
    records = 0
    for path in paths:
        src = file_source(path, "toy", release_date)
        batch.source(src)
        for n, row in read_jsonl(path, MAX_TEXT):
            batch.at(path, n)
            missing = [k for k in ("subject", "predicate", "value", "valid_from") if not isinstance(row.get(k), str)]
            if missing:
                raise InputError(path, f"line {n}", f"no text field {missing[0]!r}")
            batch.fact(Fact(subject=row["subject"], predicate=row["predicate"], value=row["value"],
                            valid_from=dt.date.fromisoformat(row["valid_from"]), known_from=src.release_date,
                            source_id=src.id, source_kind="toy"))
            records += 1
    return apply(store, batch, "toy", list(paths), records, progress)
'''

QUERIES = '''
"""Facts per subject of one predicate."""

from pydantic import BaseModel, Field

from chronokg.queries.spec import QueryParams, QuerySpec, register


class Params(QueryParams):
    predicate: str = Field(description="A predicate")


class Row(BaseModel):
    subject: str
    facts: int


def build(p: Params):
    return ("MATCH (f:Fact {predicate: $predicate}) RETURN f.subject_id AS subject, count(f) AS facts "
            "ORDER BY subject", {"predicate": p.predicate})


register(QuerySpec("toy-subjects", "Facts of one predicate per subject.", Params, Row, build,
                   tags=frozenset({"cli"})))
'''

FAMILY = '''
"""One question per fact (the first twenty by id): what is SUBJECT's PREDICATE?"""

from chronokg.bench.family import Family, FamilyOptions
from chronokg.bench.question import AnswerKey, Question


def generate(ctx, options):
    rows = ctx.store.run("MATCH (f:Fact) WHERE f.value IS NOT NULL RETURN f.id AS id, f.subject_id AS subject, "
                         "f.predicate AS predicate, f.value AS value ORDER BY id LIMIT 20", {})
    for row in rows:
        yield Question(id=f"toy-{row['id']}", family="toy", variant="value",
                       input=f"What is {row['subject']}'s {row['predicate']}?", target=str(row["value"]),
                       answer_key=AnswerKey(query="toy-subjects", params={"predicate": row["predicate"]},
                                            evidence=[], evidence_hash="-", answer=str(row["value"])),
                       snapshot=ctx.snapshot, facts=[row["id"]])


FAMILY = Family(name="toy", help="One question per fact.", options=FamilyOptions, generate=generate, needs=NEEDS)
'''

PROFILE = '''
from chronokg.eval.profile import Profile

PROFILE = Profile()
'''

METRICS = '''
from chronokg.metrics.spec import COUNTED, MetricSpec, count_by, prediction_match, register


def finish(rows):
    n = sum(int(r["n"]) for r in rows)
    correct = sum(int(r["correct"] or 0) for r in rows)
    return (correct / n if n else None), {}, {"n": n}


register(MetricSpec("toy.accuracy", "toy", "Share of toy answers that are right.", True,
                    lambda samples: count_by(samples, (), lambda s: True), finish,
                    lambda run, model: (f"{prediction_match()} AND p.family = 'toy' RETURN {COUNTED}",
                                        {"run": run, "model": model}), kind="accuracy"))
'''

TASKS = '''
def toy(questions, protocol="seed", samples=1):
    from chronokg.integrations.inspect_tasks import family_task

    return family_task("toy", questions, protocol, samples)
'''

CONFORMANCE = '''

class TestToy(LoaderConformance):
    source = "toy"

    def good(self, tmp_path: Path) -> list[Path]:
        path = tmp_path / "toy.jsonl"
        path.write_text('{"subject": "ada", "predicate": "city", "value": "Paris", "valid_from": "2020-01-01"}\\n')
        return [path]

    def bad(self, tmp_path: Path) -> list[Path]:
        path = tmp_path / "bad.jsonl"
        path.write_text('{"subject": "ada", "predicate": "city", "value": "Rome", "valid_from": "2021-01-01"}\\n'
                        '{"subject": "ada", "predicate": "city"}\\n')
        return [path]

    def oversized(self, tmp_path: Path, text: str) -> list[Path]:
        path = tmp_path / "over.jsonl"
        path.write_text('{"subject": "ada", "predicate": "city", "value": "%s", "valid_from": "2020-01-01"}\\n' % text)
        return [path]
'''

FAMILY_COMPLETE = '''
from pathlib import Path

from chronokg.testing.family_completeness import FamilyCompleteness


class TestToyComplete(FamilyCompleteness):
    family = "toy"
    docs_root = Path({docs!r})
    inspect_task = "chronokg_toy.tasks:toy"
'''

ENTRY_POINTS = {
    "source": '[chronokg.sources]\ntoy = chronokg_toy.source:SOURCE\n',
    "query": '[chronokg.queries]\nchronokg_toy = chronokg_toy.queries\n',
    "family": '[chronokg.families]\ntoy = chronokg_toy.family:FAMILY\n',
    "profile": '[chronokg.profiles]\ntoy = chronokg_toy.profile:PROFILE\n',
    "metrics": '[chronokg.metrics]\nchronokg_toy = chronokg_toy.metrics\n',
}


class Walk:
    """The copy of the checkout, the toy package, and the checks run there."""

    def __init__(self, tmp: Path) -> None:
        self.root, self.site = tmp / "checkout", tmp / "site"
        for name in ("tests", "docs"):
            shutil.copytree(REPO / name, self.root / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        for name in ("README.md", "pyproject.toml", "DEVELOPERS.md"):
            shutil.copy(REPO / name, self.root / name)
        (self.root / "chronokg").symlink_to(REPO / "chronokg")
        (tmp / "shared").symlink_to(REPO.parent / "shared")  # ../shared/data beside the copy, as beside the checkout
        self.package = self.site / "chronokg_toy"
        self.package.mkdir(parents=True)
        (self.package / "__init__.py").write_text("")
        self.data = self.site / "data"
        self.data.mkdir()
        for year, city in (("2020", "Paris"), ("2021", "Rome")):
            (self.data / f"toy-{year}.jsonl").write_text(
                f'{{"subject": "ada", "predicate": "city", "value": "{city}", "valid_from": "{year}-01-01"}}\n')
        self.dist = self.site / "chronokg_toy-0.1.0.dist-info"
        self.dist.mkdir()
        (self.dist / "METADATA").write_text("Metadata-Version: 2.1\nName: chronokg-toy\nVersion: 0.1.0\n")
        self.declared: list[str] = []
        self.declare()

    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONPATH": str(self.site)}

    def module(self, name: str, text: str) -> None:
        (self.package / f"{name}.py").write_text(textwrap.dedent(text).lstrip())

    def declare(self, *kinds: str) -> None:
        """Entry points, as pip writes them from the package's pyproject.toml."""
        self.declared += kinds
        (self.dist / "entry_points.txt").write_text("\n".join(ENTRY_POINTS[k] for k in self.declared))

    def edit(self, relative: str, after: str, text: str) -> None:
        """Insert `text` into the copy's file after the first line starting with `after` (at the end: '')."""
        path = self.root / relative
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        at = len(lines) if not after else next(i for i, line in enumerate(lines, 1) if line.startswith(after))
        path.write_text("".join(lines[:at]) + text + "".join(lines[at:]), encoding="utf-8")

    def regenerate_help(self) -> None:
        done = subprocess.run(REGENERATE, cwd=self.root, env=self.env(), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr[-3000:]

    def checks(self, *ids: str) -> dict[str, str | None]:
        """Each test the ids select: None where it passed, else its failure message."""
        report = self.root / "report.xml"
        done = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-p", "no:cacheprovider", "-q",
                               f"--junitxml={report}", *ids], cwd=self.root, env=self.env(),
                              capture_output=True, text=True)
        assert report.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
        out: dict[str, str | None] = {}
        for case in ET.parse(report).getroot().iter("testcase"):
            bad = case.find("failure")
            bad = bad if bad is not None else case.find("error")
            skipped = case.find("skipped")
            out[case.get("name", "")] = (None if bad is None and skipped is None else
                                         " ".join(((bad if bad is not None else skipped).get("message") or "").split()))
        assert out, done.stdout[-3000:]
        return out


def failed(results: dict[str, str | None], name: str) -> str:
    message = results[name]
    assert message is not None, f"{name} passed, but the step is not done"
    return message


def passed(results: dict[str, str | None], *names: str) -> None:
    for name in names or tuple(results):
        assert results[name] is None, f"{name}: {results[name]}"


SOURCE_CHECKS = ("tests/test_loader_conformance.py::test_every_source_with_a_loader_runs_the_conformance_suite",
                 "tests/test_loader_limits.py::test_every_loader_declares_its_limit_and_the_readme_states_it",
                 "tests/test_ingest_options.py",
                 "tests/test_cli_help.py::test_the_same_commands_and_groups_as_before",
                 "tests/test_drop_exact.py::test_dropping_any_release_equals_loading_the_others[toy]")
HELP = "tests/test_cli_help.py::test_the_same_commands_and_groups_as_before"
FAMILY_CHECKS = ("tests/test_toy_family.py",
                 "tests/test_demo_families.py::test_generate_works_for_every_family_on_the_demo_store",
                 "tests/test_demo_families.py::test_a_family_without_its_sources_says_which_loader_fills_them",
                 "tests/test_metric_counts_fast.py::test_every_family_generates_questions_from_the_demo_corpus[toy]",
                 "tests/test_probes_cli.py::test_generate_help_fits_a_screen_at_80_columns[toy]", HELP)


def test_the_recipes_of_docs_extending_walked_with_a_toy_package(tmp_path: Path) -> None:
    walk = Walk(tmp_path)
    regenerate = "python -m tests.cli_help_snapshot"

    # A source, steps 1-3: the loader and its SourceSpec, declared.
    walk.module("source", SOURCE)
    walk.declare("source")
    results = walk.checks(*SOURCE_CHECKS)
    assert "sources without a conformance class: ['toy']" in failed(
        results, "test_every_source_with_a_loader_runs_the_conformance_suite")
    assert "README 'Input limits' must give toy: 10,000" in failed(
        results, "test_every_loader_declares_its_limit_and_the_readme_states_it")
    message = failed(results, "test_the_same_commands_and_groups_as_before")
    assert "no help text in tests/fixtures/cli_help.json for chronokg ingest toy" in message and regenerate in message
    message = failed(results, "test_dropping_any_release_equals_loading_the_others[toy]")
    assert re.search(r"add two or more of its releases to case\(\) at tests/test_drop_exact.py:\d+", message)
    passed(results, "test_every_file_source_declares_its_ingest_command",
           "test_every_value_reaches_a_loader_keyword[toy]", "test_the_built_command_has_the_declared_parameters[toy]")

    # Steps 4-6: the conformance class, the README's limit, the help fixture, the releases to drop.
    walk.edit("tests/test_loader_conformance.py", "", CONFORMANCE)
    walk.edit("README.md", "| cxr |", "| toy | 10,000 | a toy value |\n")
    walk.regenerate_help()
    releases = ", ".join(f'{{"paths": [Path("{walk.data}/toy-{y}.jsonl")], "release_date": _d("{y}-06-01")}}'
                         for y in ("2020", "2021"))
    walk.edit("tests/test_drop_exact.py", '    """Source `name`\'s releases',
              f'    if name == "toy":\n        return Case(name, ({releases}))\n')
    passed(walk.checks(*SOURCE_CHECKS, "tests/test_loader_conformance.py::TestToy"))

    # A query: registered in a declared module; tagged `cli`, it is a new command.
    walk.module("queries", QUERIES)
    walk.declare("query")
    assert "for chronokg query toy-subjects" in failed(walk.checks(HELP), "test_the_same_commands_and_groups_as_before")
    walk.regenerate_help()
    passed(walk.checks(HELP, "tests/test_drop_exact.py::test_dropping_any_release_equals_loading_the_others[toy]"))

    # A family, step 1 alone: the Family declared, with nothing it `needs` said, and a check of its completeness.
    walk.module("family", "NEEDS = ''\n" + textwrap.dedent(FAMILY))
    walk.declare("family")
    (walk.root / "tests" / "test_toy_family.py").write_text(FAMILY_COMPLETE.format(docs=str(walk.site / "docs")))
    results = walk.checks(*FAMILY_CHECKS)
    message = failed(results, "test_family_is_complete")
    for gap in ("no evaluation profile for 'toy'", "no metric of family 'toy'", "no inspect_ai task chronokg_toy",
                "no docs page"):
        assert gap in message, message
    assert "family 'toy' names no `chronokg ingest <source>` of SOURCES in its `needs`" in failed(
        results, "test_a_family_without_its_sources_says_which_loader_fills_them")
    assert "no evaluation profile for family 'toy'" in failed(
        results, "test_every_family_generates_questions_from_the_demo_corpus[toy]")
    assert "for chronokg generate toy" in failed(results, "test_the_same_commands_and_groups_as_before")
    passed(results, "test_generate_works_for_every_family_on_the_demo_store",
           "test_generate_help_fits_a_screen_at_80_columns[toy]")

    # Steps 2-5: the profile, a metric, the inspect task, the docs page; `needs` names its loader.
    walk.module("family", "NEEDS = 'toy facts: `chronokg ingest toy FILE`'\n" + textwrap.dedent(FAMILY))
    walk.module("profile", PROFILE)
    walk.module("metrics", METRICS)
    walk.module("tasks", TASKS)
    (walk.site / "docs" / "benchmarks").mkdir(parents=True)
    (walk.site / "docs" / "benchmarks" / "toy.md").write_text("# toy\n\nOne question per fact; `toy.accuracy`.\n")
    walk.declare("profile", "metrics")
    walk.regenerate_help()
    passed(walk.checks(*FAMILY_CHECKS, "tests/test_metric_counts_fast.py::"
                                       "test_pure_and_cypher_forms_of_every_metric_agree[toy.accuracy]"))
