"""`eval compare`: every row's n is the number of questions behind its value, recounted here from the questions
themselves (their target, year, kind and gold valid-from), not the number of questions the two runs share; its
title shows a model name's control bytes as text; its progress goes to stderr."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench.question import Question, write_jsonl
from chronokg.cli.app import app
from chronokg.cli.common import fresh_consoles
from chronokg.eval.profile import profile_for
from chronokg.metrics.runs import score_outputs
from tests.integration_questions import every_family

pytestmark = pytest.mark.slow  # two runs scored and compared over real TempoMed items (several seconds)

CUT_A, CUT_B = "2019-01-01", "2021-01-01"


def _answers(qs: list[Question], salt: str, path: Path) -> Path:
    """Each question answered right or wrong by a hash of its id and `salt`."""
    with path.open("w", encoding="utf-8") as fh:
        for q in qs:
            h = int(hashlib.sha256((q.id + salt).encode()).hexdigest(), 16)
            labels = [c.label for c in q.choices]
            label = q.target if h % 2 else labels[(h // 2) % len(labels)]
            fh.write(json.dumps({"id": q.id, "output": profile_for(q.family).render(q, label)}) + "\n")
    return path


@pytest.fixture(scope="module")
def runs(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("compare")
    every = every_family(shared_data)[("tempomed", "chronokg")]
    qs = [q for q in every if q.variant.startswith(("mcq", "probe"))]
    path = tmp / "questions.jsonl"
    write_jsonl(path, qs)
    a = score_outputs(path, _answers(qs, "a", tmp / "a.jsonl"), "m", "chronokg", tmp / "runs", {"m": CUT_A})
    b = score_outputs(path, _answers(qs, "b", tmp / "b.jsonl"), "m", "chronokg", tmp / "runs", {"m": CUT_B})
    return {"questions": qs, "a": a, "b": b}


def _gold_from(q: Question) -> str | None:
    text = next(c.text for c in q.choices if c.label == q.target)
    return next((str(r["valid_from"]) for r in q.answer_key.evidence
                 if r.get("kind") == "recommendation" and r.get("text") == text), None)


def _recount(metric: str, qs: list[Question], cut: str) -> int:
    """The questions behind `metric`'s value, from the questions alone (one rule per row the comparison prints)."""
    mcq = [q for q in qs if q.variant.startswith("mcq")]
    target = {t: [q for q in mcq if q.metadata["target"] == t] for t in ("up_to_date", "historical")}
    name, _, group = metric.removesuffix("]").partition("[")
    if name == "accuracy":
        return len(qs)
    if name in ("tempomed.accuracy", "tempomed.historical_ratio") and not group:
        return len(mcq)
    if name in ("tempomed.accuracy", "tempomed.accuracy_bootstrap") and group in target:
        return len(target[group])
    if (name == "tempomed.accuracy" and group == "probe") or name == "tempomed.consistency":
        return len(qs) - len(mcq)
    if name == "tempomed.table1":
        return len(target["up_to_date"])
    if name == "tempomed.accuracy_by_year":
        years = [int(q.metadata["year_current"]) for q in target["up_to_date"]]
        return sum(y <= 2010 for y in years) if group == "Pre-2010" else years.count(int(group))
    if name == "tempomed.table3":
        scope = {"original_current_guideline": "up_to_date", "counterpart_prior_guideline": "historical"}
        _, scope_name, split = group.split(" · ")
        return len(target[scope[scope_name]]) if split in ("all", "without_counterpart") else 0
    if name == "tempomed.cutoff":
        pre = sum(1 for q in mcq if (g := _gold_from(q)) and g <= cut)
        return pre if group.startswith("pre") else sum(1 for q in mcq if _gold_from(q)) - pre
    raise AssertionError(f"no recount for the row {metric}")


def _compare(runs: dict[str, Any], *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chronokg.cli", "eval", "compare", str(runs["a"]), str(runs["b"]),
                           "--iterations", "3", *extra], capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "COLUMNS": "200"})


def test_every_row_counts_the_questions_behind_its_value(runs: dict[str, Any]) -> None:
    done = _compare(runs, "--format", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    qs = runs["questions"]
    assert len(rows) > 20 and {r["metric"] for r in rows} >= {"tempomed.accuracy_by_year[2019]",
                                                           "tempomed.cutoff[post]"}
    for row in rows:  # a side whose value is empty (—) has no question behind it
        for side, cut in (("a", CUT_A), ("b", CUT_B)):
            expected = _recount(row["metric"], qs, cut) if row[f"value_{side}"] is not None else 0
            assert row[f"n_{side}"] == expected, (side, row)
        assert row["n"] == (row["n_a"] if row["n_a"] == row["n_b"] else None), row
    by = {r["metric"]: r for r in rows}
    assert by["accuracy"]["n"] == len(qs) > by["tempomed.accuracy_by_year[2019]"]["n"] > 0
    assert by["tempomed.cutoff[pre]"]["n_a"] < by["tempomed.cutoff[pre]"]["n_b"]  # each side at its own cutoff
    assert by["tempomed.cutoff[pre n]"]["value_a"] == by["tempomed.cutoff[pre n]"]["n_a"]

    table = _compare(runs)
    assert table.returncode == 0, table.stderr
    printed = {line.split()[1]: line.split()[2:4] for line in table.stdout.splitlines()
               if line.startswith("tempomed ") and len(line.split()) > 4}
    single = [r for r in rows if " " not in r["metric"]]  # names without spaces: one word of the line
    assert len(single) > 20
    for row in single:  # the table prints the same counts, beside its row's name
        assert printed[row["metric"]] == [str(row["n_a"]), str(row["n_b"])], row["metric"]
    assert "questions behind each value" in table.stdout
    assert "comparing" in table.stderr and "comparing" not in table.stdout  # progress on stderr only


def test_a_model_name_with_an_escape_byte_prints_as_text_in_a_pipe(runs: dict[str, Any], tmp_path: Path) -> None:
    hostile = "evil\x1b[31mred"
    qs = runs["questions"][:20]
    path = tmp_path / "q.jsonl"
    write_jsonl(path, qs)
    folder = score_outputs(path, _answers(qs, "a", tmp_path / "a.jsonl"), hostile, "chronokg", tmp_path / "runs")
    fresh_consoles()
    try:
        result = CliRunner().invoke(app, ["eval", "compare", str(folder), str(folder), "--iterations", "0"],
                                    env={"COLUMNS": "120"})
    finally:
        fresh_consoles()
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "evil\\x1b[31mred" in result.stdout


def test_a_value_no_single_question_gives_counts_every_question_the_metric_counts(
        shared_data: Path, tmp_path: Path) -> None:
    """ConflictMedQA's ECDA_all (the mean of ECDA_adh and ECDA_rej) and IKCR (over pairs) are values no single
    question gives: behind each are all the family's answered questions (they counted 0)."""
    qs = every_family(shared_data)[("conflictmedqa", "chronokg")]
    path = tmp_path / "questions.jsonl"
    write_jsonl(path, qs)
    a = score_outputs(path, _answers(qs, "a", tmp_path / "a.jsonl"), "m", "chronokg", tmp_path / "runs")
    b = score_outputs(path, _answers(qs, "b", tmp_path / "b.jsonl"), "n", "chronokg", tmp_path / "runs")
    done = subprocess.run([sys.executable, "-m", "chronokg.cli", "eval", "compare", str(a), str(b), "--iterations",
                           "0", "--format", "json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    by = {r["metric"]: r for r in json.loads(done.stdout)}
    adh, rej = by["conflictmedqa.ecda_adh"], by["conflictmedqa.ecda_rej"]
    assert adh["n"] and rej["n"] and adh["n"] + rej["n"] == len(qs)
    for name in ("conflictmedqa.ecda_all", "conflictmedqa.ikcr"):
        assert by[name]["value_a"] is not None and (by[name]["n_a"], by[name]["n_b"]) == (len(qs), len(qs)), name
