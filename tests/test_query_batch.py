"""`chronokg query batch FILE.jsonl`: many named queries with one store open, checked whole before it runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.errors import InputError
from chronokg.queries.batch import read_batch
from tests.demo_stores import DemoRun

runner = CliRunner()


def run(store: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["--store", f"kglite://{store}", *args])
    return result.exit_code, result.output


QUESTIONS = [
    {"id": "q1", "query": "timeline", "params": {"subject": "Q1"}},
    {"query": "changed-between", "params": {"from": "2000-01-01", "to": "2024-01-01"}},
    {"id": 3, "query": "as-of", "params": {"date": "2010-06-01", "subject": "Q1"}},
]


def test_batch_answers_every_line_as_query_run_does(tmp_path: Path, demo_command_copy: DemoRun) -> None:
    store = demo_command_copy.store
    subject = json.loads(run(store, "query", "changed-between", "--from", "2000", "--to", "2024", "-f", "json")[1])
    assert subject, "the demo store has changes to ask about"
    questions = [dict(q) for q in QUESTIONS]
    for q in questions:
        if "subject" in q["params"]:
            q["params"] = {**q["params"], "subject": subject[0]["subject"]}
    file = tmp_path / "questions.jsonl"
    file.write_text("\n".join(json.dumps(q) for q in questions) + "\n\n")
    code, out = run(store, "query", "batch", str(file))
    assert code == 0, out
    answers = [json.loads(line) for line in out.splitlines()]
    assert [a["id"] for a in answers] == ["q1", 2, 3]  # a line without an id is named by its line number
    for q, a in zip(questions, answers, strict=True):
        code, single = run(store, "query", "run", q["query"], "--params", json.dumps(q["params"]))
        assert code == 0, single
        assert a["query"] == q["query"] and a["rows"] == json.loads(single)
    assert answers[0]["rows"], "the timeline of a changed subject is not empty"


def test_a_bad_line_names_file_and_line_and_nothing_runs(tmp_path: Path) -> None:
    file = tmp_path / "questions.jsonl"
    file.write_text(json.dumps(QUESTIONS[0]) + "\n" + json.dumps({"query": "as-of", "params": {"date": "never"}}))
    store = tmp_path / "never-made.kgl"
    code, out = run(store, "query", "batch", str(file))
    out = " ".join(out.split())  # rich wraps the message
    assert code != 0 and "questions.jsonl, record line 2" in out and "date" in out
    assert not store.exists()  # checked before the store was opened
    file.write_text('{"query": "no-such-query"}\n')
    code, out = run(store, "query", "batch", str(file))
    assert code != 0 and "line 1" in out and "no-such-query" in out


@pytest.mark.parametrize(("lines", "bad_line", "says"), [
    ([{"id": "a"}, {"id": "a"}], 2, 'id "a" is also the id of line 1: each answer'),
    ([{}, {"id": 1}], 2, "id 1 is also the id of line 1 (its line number: it gives no id)"),
    ([{"id": 2}, {}], 2, "id 2 is also the id of line 1: each answer"),
    ([{"id": {"x": 1}}], 1, 'id must be a string or an integer, got {"x": 1}'),
    ([{"id": 1.5}], 1, "id must be a string or an integer, got 1.5"),
])
def test_ids_name_one_answer_each(tmp_path: Path, lines: list[dict[str, object]], bad_line: int, says: str) -> None:
    file = tmp_path / "questions.jsonl"
    asked = {"query": "timeline", "params": {"subject": "Q1"}}
    file.write_text("".join(json.dumps({**asked, **extra}) + "\n" for extra in lines))
    with pytest.raises(InputError) as refused:
        read_batch(file)
    assert refused.value.record == f"line {bad_line}" and says in refused.value.detail
