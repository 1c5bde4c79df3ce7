"""What `eval rescore`, `changed-verdicts` and `accuracy-by-valid-year` count, and what they refuse, on real
TempoMed-Bench records released in two parts: a flip is right <-> wrong only, every count printed names what it
counts, a re-scored run says which store it was scored against, and a run, a day or a folder that cannot be
re-scored is refused in one line with nothing written."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench.question import read_jsonl
from chronokg.cli.app import app
from chronokg.eval.log import RunInfo, latest, read_info
from chronokg.eval.runner import file_hash
from chronokg.graph.kglite_store import KgliteStore
from tests.helpers import two_release_tempomed

BETWEEN = "2024-06-01"  # after the first release (2024-01-01), before the second (2025-06-01)
cli = CliRunner()


def invoke(store: Path, *args: str) -> Any:
    return cli.invoke(app, ["--store", f"kglite://{store}", *args])


@pytest.fixture(scope="module")
def world(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Records 0-5 released on 2024-01-01, records 6-11 on 2025-06-01; questions generated after both; one run of
    the oracle and a model frozen in 2018 (reference baselines: no server)."""
    tmp = tmp_path_factory.mktemp("rescore-counts")
    _, store, qfile, questions = two_release_tempomed(shared_data, tmp)
    ran = invoke(store, "eval", "run", str(qfile), "-m", "baseline/oracle", "-m", "baseline/frozen:2018",
                 "--protocol", "chronokg", "--log-dir", str(tmp / "runs"))
    assert ran.exit_code == 0, ran.output
    return {"store": store, "tmp": tmp, "run": next((tmp / "runs").iterdir()), "questions": questions}


def rescore_json(world: dict[str, Any], out: Path, *extra: str, store: Path | None = None) -> dict[str, Any]:
    got = invoke(store or world["store"], "eval", "rescore", str(world["run"]), "--out", str(out), "-f", "json",
                 *extra)
    assert got.exit_code == 0, got.output
    return dict(json.loads(got.output))


def one_line_refusal(got: Any) -> str:
    said = got.output.strip()
    assert got.exit_code != 0 and "Traceback" not in said, said
    assert len(said.splitlines()) <= 2, said  # one line, folded at most once at the test's width
    return " ".join(said.split())


def test_a_flip_is_right_and_wrong_only_and_not_scorable_is_counted_apart(world: dict[str, Any], tmp_path: Path
                                                                         ) -> None:
    result = rescore_json(world, tmp_path, "--known-at", BETWEEN)
    assert result["not_scorable"], "the second release's items have no answer as known between the releases"
    assert all(f["old_correct"] in (True, False) and f["new_correct"] in (True, False) for f in result["flips"])
    assert all(f["new_correct"] is None for f in result["not_scorable"])
    got = invoke(world["store"], "eval", "rescore", str(world["run"]), "--out", str(tmp_path), "--known-at",
                 BETWEEN)
    said = " ".join(got.output.split())
    assert f"{len(result['flips']):,} verdicts flipped" in said
    assert f"{len(result['not_scorable']):,} samples not scorable now" in said
    assert "verdicts flipped (" not in said or "not scorable now)" not in said  # not one of the flips


def test_the_flip_table_is_bounded_and_the_output_ends_with_its_counts(world: dict[str, Any], tmp_path: Path
                                                                      ) -> None:
    result = rescore_json(world, tmp_path, "--known-at", BETWEEN)
    changed = len(result["flips"]) + len(result["not_scorable"])
    assert changed > 5
    got = invoke(world["store"], "eval", "rescore", str(world["run"]), "--out", str(tmp_path), "--known-at",
                 BETWEEN, "--show", "5")
    assert got.exit_code == 0, got.output
    lines = [line for line in got.output.splitlines() if line.strip()]
    shown = sum(1 for q in {f["question_id"] for f in result["flips"] + result["not_scorable"]}
                for line in lines if line.startswith(q[:12]))
    assert 0 < shown <= 5
    tail = " ".join(" ".join(lines[-4:]).split())
    assert f"showing 5 of {changed:,} changed verdicts" in " ".join(got.output.split())
    folder = Path(result["folder"])
    assert f"{folder / 'flips.json'},{folder / 'not_scorable.json'}" in "".join(got.output.split())
    assert f"{result['samples']:,} samples re-scored" in tail and f"{len(result['flips']):,} verdicts flipped" in tail


def test_changed_verdicts_ends_with_its_count(world: dict[str, Any]) -> None:
    run = read_info(world["run"]).run_id
    got = invoke(world["store"], "query", "changed-verdicts", "--run", run, "--a", BETWEEN, "--b",
                 dt.date.today().isoformat())
    assert got.exit_code == 0, got.output
    as_json = invoke(world["store"], "query", "changed-verdicts", "--run", run, "--a", BETWEEN, "--b",
                     dt.date.today().isoformat(), "-f", "json")
    rows = json.loads(as_json.output)
    assert rows
    assert " ".join(got.output.split()).endswith(f"{len(rows):,} samples whose verdict changed")


def test_known_at_before_the_first_release_is_refused(world: dict[str, Any], tmp_path: Path) -> None:
    got = invoke(world["store"], "eval", "rescore", str(world["run"]), "--out", str(tmp_path / "o"), "--known-at",
                 "2000-01-01")
    said = one_line_refusal(got)
    assert "2024-01-01" in said and "first release" in said
    assert not (tmp_path / "o").exists()


def test_an_empty_samples_file_is_refused(world: dict[str, Any], tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "run.json").write_bytes((world["run"] / "run.json").read_bytes())
    (empty / "samples.jsonl").write_text("", encoding="utf-8")
    got = invoke(world["store"], "eval", "rescore", str(empty), "--out", str(tmp_path / "o"))
    said = one_line_refusal(got)
    assert "samples.jsonl" in said and "no answers" in said
    assert not (tmp_path / "o").exists()


def test_out_at_or_inside_the_run_folder_is_refused(world: dict[str, Any]) -> None:
    before = sorted(p.name for p in world["run"].iterdir())
    for out in (world["run"], world["run"] / "rescored"):
        said = one_line_refusal(invoke(world["store"], "eval", "rescore", str(world["run"]), "--out", str(out)))
        assert "--out" in said and "inside the run" in said
    assert sorted(p.name for p in world["run"].iterdir()) == before


def test_run_json_names_the_store_scored_against_and_where_it_came_from(world: dict[str, Any], tmp_path: Path
                                                                       ) -> None:
    other = tmp_path / "copy.kgl"
    shutil.copytree(world["store"], other) if world["store"].is_dir() else shutil.copy(world["store"], other)
    result = rescore_json(world, tmp_path / "out", "--known-at", BETWEEN, store=other)
    info = read_info(Path(result["folder"]))
    old = read_info(world["run"])
    assert info.store is not None and str(other) in info.store and str(world["store"]) not in info.store
    assert info.rescored_from == old.run_id and info.rescored_from_path == str(world["run"].resolve())
    assert info.known_at == BETWEEN
    assert info.flips == {"right_to_wrong": sum(1 for f in result["flips"] if f["old_correct"]),
                          "wrong_to_right": sum(1 for f in result["flips"] if not f["old_correct"]),
                          "not_scorable": len(result["not_scorable"]), "scorable_now": 0,
                          "targets_changed": result["targets_changed"], "no_answer": result["no_answer"]}
    raw = json.loads((Path(result["folder"]) / "run.json").read_text(encoding="utf-8"))
    assert {"rescored_from", "rescored_from_path", "known_at", "flips", "store"} <= set(raw)


def test_two_identical_rescores_at_once_leave_one_whole_folder(world: dict[str, Any], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The second command runs while the first is writing its files (inside its first write): both succeed, and
    the folder left holds one consistent run."""
    from chronokg.eval import rescore as module

    real = module.write_jsonl
    calls: list[Any] = []

    def racing(path: Path, questions: Any) -> None:
        if not calls:
            calls.append(None)  # the racing command itself writes without racing again
            calls[0] = rescore_json(world, tmp_path, "--known-at", BETWEEN)
        real(path, questions)

    monkeypatch.setattr(module, "write_jsonl", racing)
    first = rescore_json(world, tmp_path, "--known-at", BETWEEN)
    (inner,) = calls
    assert inner["written"] and not first["written"] and inner["folder"] == first["folder"]
    folder = Path(first["folder"])
    info = read_info(folder)
    assert info.questions[0]["sha256"] == file_hash(folder / "questions.jsonl")
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]  # no temporary folder left beside it
    assert latest(folder / "samples.jsonl")


def test_a_temporary_folder_of_a_killed_rescore_is_removed(world: dict[str, Any], tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    first = rescore_json(world, tmp_path / "a", "--known-at", BETWEEN)
    name = Path(first["folder"]).name
    left = tmp_path / "b" / f".{name}.{done.stdout.strip()}.0123abcd.part"  # its process has exited
    left.mkdir(parents=True)
    (left / "questions.jsonl").write_text("torn", encoding="utf-8")
    again = rescore_json(world, tmp_path / "b", "--known-at", BETWEEN)
    assert again["written"] and not left.exists()
    assert [p.name for p in (tmp_path / "b").iterdir()] == [name]


def test_an_unknown_run_id_is_one_line_for_the_run_queries(world: dict[str, Any]) -> None:
    for args in (["query", "changed-verdicts", "--run", "run-000000000000", "--a", BETWEEN, "--b", "2026-01-01"],
                 ["query", "accuracy-by-valid-year", "--run", "run-000000000000"]):
        said = one_line_refusal(invoke(world["store"], *args))
        assert "run-000000000000" in said and "eval runs list" in said


def test_accuracy_by_valid_year_counts_the_questions_about_the_present(world: dict[str, Any]) -> None:
    """The oracle answers what is recommended now: right in every year since its answers' versions took force,
    counted over the up-to-date items only (a historical item asks about its own date, not about year Y)."""
    from chronokg.queries.spec import all_queries

    run = read_info(world["run"]).run_id
    with KgliteStore(world["store"], read_only=True) as s:
        rows = all_queries().get("accuracy-by-valid-year").run(s, {"run": run, "first": 2000, "last": 2026})
    present = [q for q in world["questions"] if q.metadata.get("target") == "up_to_date"]
    assert present and len(present) < len(world["questions"])
    oracle = {r.year: r for r in rows if r.model == "baseline/oracle"}
    assert oracle[2026].n == len(present) and oracle[2026].accuracy == 1.0
    expected = {}
    for year in range(2000, 2027):
        day = dt.date(year, 1, 1).isoformat()
        n = correct = 0
        for q in present:
            gold = {e["text"] for e in q.answer_key.evidence if e["kind"] == "recommendation"
                    and (e["valid_from"] is None or e["valid_from"] <= day)
                    and (e["valid_to"] is None or e["valid_to"] > day)}
            if gold:
                n += 1
                correct += next(c.text for c in q.choices if c.label == q.target) in gold
        if n:
            expected[year] = (n, correct)
    assert {y: (r.n, r.correct) for y, r in oracle.items()} == expected
    assert any(r.accuracy is not None and r.accuracy < 1.0 for r in oracle.values())  # before the current versions
    got = invoke(world["store"], "query", "accuracy-by-valid-year", "--run", run)
    assert f"{len(rows):,} model-year rows, over the answers to questions about the present only" in \
        " ".join(got.output.split())


def test_a_prediction_takes_the_cutoff_of_its_latest_write(world: dict[str, Any], tmp_path: Path) -> None:
    from chronokg.eval.graph import write_predictions

    info = read_info(world["run"])
    store = tmp_path / "s.kgl"
    shutil.copytree(world["store"], store) if world["store"].is_dir() else shutil.copy(world["store"], store)
    questions = list(read_jsonl(Path(info.questions[0]["path"])))
    records = list(latest(world["run"] / "samples.jsonl").values())
    model = "baseline/frozen:2018"
    for when, estimated in ((dt.date(2018, 12, 31), False), (dt.date(2020, 6, 30), True)):
        again = RunInfo.model_validate({**info.model_dump(), "cutoffs": {
            model: {"date": when.isoformat(), "estimated": estimated, "source": "test"}}})
        with KgliteStore(store) as s:
            write_predictions(s, again, questions, records)
    with KgliteStore(store, read_only=True) as s:
        got = s.run("MATCH (p:Prediction {run_id: $run, model: $model}) RETURN DISTINCT p.cutoff AS cutoff, "
                    "p.cutoff_estimated AS estimated", {"run": info.run_id, "model": model})
    assert [(str(r["cutoff"])[:10], r["estimated"]) for r in got] == [("2020-06-30", True)]


@pytest.mark.slow
def test_rescoring_the_full_release_on_its_own_store_changes_nothing(shared_data: Path, tmp_path: Path) -> None:
    """Every TempoMed record of the sample, seed protocol (its items whose released key differs from the graph's
    reading included): on the store the run was made on, as `bench verify` says, nothing changed."""
    store = tmp_path / "store.kgl"
    source = next((shared_data / "tempomed-bench").glob("*.jsonl"))
    qfile = tmp_path / "q.jsonl"
    for args in (["ingest", "tempomed", str(source), "--release-date", "2024-01-01"],
                 ["generate", "tempomed", "--out", str(qfile), "--no-write"],
                 ["eval", "run", str(qfile), "-m", "baseline/oracle", "--log-dir", str(tmp_path / "runs")]):
        got = invoke(store, *args)
        assert got.exit_code == 0, got.output
    questions = list(read_jsonl(qfile))
    assert any("key_differs_from_graph" in q.metadata.get("quirks", []) for q in questions)
    verified = invoke(store, "bench", "verify", str(qfile))
    assert "0 answers changed, 0 evidence only" in " ".join(verified.output.split())
    result = rescore_json({"store": store, "run": next((tmp_path / "runs").iterdir())}, tmp_path / "out")
    assert result["questions"] == len(questions)
    assert (result["targets_changed"], result["no_answer"], result["flips"], result["not_scorable"]) == (0, 0, [], [])
