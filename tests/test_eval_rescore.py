"""`eval rescore` on two releases of real TempoMed-Bench records: a run's stored answers scored again against the
store as it is now, and as the releases known on a day between the two said it, without asking any model (the
model's server fails every request while re-scoring)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench.question import read_jsonl
from chronokg.bench.verify import verify_questions
from chronokg.cli.app import app
from chronokg.eval.log import latest, read_info
from chronokg.graph.kglite_store import KgliteStore
from chronokg.testing.openai_server import Fault, OpenAIServer
from tests.helpers import two_release_tempomed

BETWEEN = "2024-06-01"  # after the first release (2024-01-01), before the second (2025-06-01)
HOSTILE = "[x] [/x] </script> /*DATA*/ \"q\" 'a'"
cli = CliRunner()


def invoke(store: Path, *args: str) -> Any:
    return cli.invoke(app, ["--store", f"kglite://{store}", *args])


@pytest.fixture(scope="module")
def world(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Records 0-5 released on 2024-01-01, records 6-11 on 2025-06-01; questions generated after both; one run of
    a model behind a loopback server, whose server then fails every request."""
    tmp = tmp_path_factory.mktemp("rescore")
    records, store, qfile, questions = two_release_tempomed(shared_data, tmp)
    second = {str(r["PMID_current"]) for r in records[6:]} - {str(r["PMID_current"]) for r in records[:6]}
    server = OpenAIServer().start()
    ran = invoke(store, "eval", "run", str(qfile), "-m", "openai-compat/tiny", "-m", "baseline/oracle",
                 "--base-url", server.url, "--protocol", "chronokg", "--no-cache", "--log-dir", str(tmp / "runs"))
    assert ran.exit_code == 0, ran.output
    asked = server.model_requests
    assert asked == len(questions)
    server.fail_next(Fault.status_code(500), times=1_000_000)
    yield {"store": store, "tmp": tmp, "run": next((tmp / "runs").iterdir()), "questions": questions,
           "second": second, "server": server, "asked": asked}
    server.stop()


def rescore(world: Any, *extra: str) -> dict[str, Any]:
    got = invoke(world["store"], "eval", "rescore", str(world["run"]), "--out", str(world["tmp"] / "rescored"),
                 "-f", "json", *extra)
    assert got.exit_code == 0, got.output
    assert world["server"].model_requests == world["asked"]  # no request reached the (failing) server
    return dict(json.loads(got.output))


def test_rescoring_now_flips_nothing_where_no_answer_changed(world: Any) -> None:
    with KgliteStore(world["store"], read_only=True) as s:
        assert verify_questions(s, world["questions"]).answers_changed == 0
    result = rescore(world)
    assert result["flips"] == [] and result["targets_changed"] == 0 and result["no_answer"] == 0
    old = {u: r for u, r in latest(world["run"] / "samples.jsonl").items()}
    folder = Path(result["folder"])
    new = latest(folder / "samples.jsonl")
    assert set(new) == set(old) and result["samples"] == sum(r.ok for r in old.values())
    assert all(new[u].correct == old[u].correct and new[u].answer == old[u].answer for u in old)
    info = read_info(folder)
    assert info.rescored_from == read_info(world["run"]).run_id and info.known_at is None
    assert info.run_id == folder.name == result["run_id"] and info.status == "rescored"
    assert [q.id for q in read_jsonl(Path(info.questions[0]["path"]))] == [q.id for q in world["questions"]]


def test_as_known_between_the_releases_the_second_release_s_items_have_no_answer(world: Any) -> None:
    result = rescore(world, "--known-at", BETWEEN)
    by_id = {q.id: q for q in world["questions"]}
    later = {q.id for q in world["questions"] if str(q.metadata["PMID_current"]) in world["second"]}
    assert later and later != set(by_id)
    old = latest(world["run"] / "samples.jsonl")
    expected = {(qid, model, n) for (qid, model, n), r in old.items() if r.ok and qid in later}
    assert {(f["question_id"], f["model"], f["sample"]) for f in result["not_scorable"]} == expected
    assert all(f["new_correct"] is None and f["new_target"] is None for f in result["not_scorable"])
    assert result["flips"] == []  # no verdict went from right to wrong or back: the later items lost theirs
    assert result["no_answer"] == len(later) and result["known_at"] == BETWEEN
    new = latest(Path(result["folder"]) / "samples.jsonl")
    assert all(new[u].correct == r.correct for u, r in old.items() if u[0] not in later)  # the first release's
    for name in ("flips", "not_scorable"):
        assert json.loads((Path(result["folder"]) / f"{name}.json").read_text(encoding="utf-8")) == result[name]


def test_re_running_changes_nothing(world: Any) -> None:
    first = rescore(world, "--known-at", BETWEEN)
    folder = Path(first["folder"])
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    again = rescore(world, "--known-at", BETWEEN)
    assert again["written"] is False and again["run_id"] == first["run_id"]
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert not list(folder.parent.glob("*.part"))


def test_metrics_read_the_rescored_run(world: Any) -> None:
    folder = Path(rescore(world, "--known-at", BETWEEN)["folder"])
    got = invoke(world["store"], "eval", "metrics", str(folder), "-f", "json")
    assert got.exit_code == 0, got.output
    assert "tempomed.accuracy" in got.output


def test_the_table_says_what_was_written_and_prints_stored_text_verbatim(world: Any, tmp_path: Path) -> None:
    got = invoke(world["store"], "eval", "rescore", str(world["run"]), "--out", str(tmp_path), "--known-at", BETWEEN)
    assert got.exit_code == 0, got.output
    folder = next(p for p in tmp_path.iterdir())
    flips = json.loads((folder / "flips.json").read_text(encoding="utf-8"))
    said = " ".join(got.output.split())
    assert f"{len(flips):,} verdicts flipped" in said and "samples not scorable now" in said
    assert f"wrote{folder}" in "".join(said.split())  # a path longer than the line is folded, never cut
    again = invoke(world["store"], "eval", "rescore", str(world["run"]), "--out", str(tmp_path), "--known-at",
                   BETWEEN)
    assert "unchanged" in again.output


def test_bad_input_is_one_line_and_writes_nothing(world: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    for args in (["eval", "rescore", str(tmp_path / "no-such-run"), "--out", str(out)],
                 ["eval", "rescore", str(world["run"]), "--out", str(out), "--known-at", "2024-13-01"]):
        got = invoke(world["store"], *args)
        assert got.exit_code != 0 and "Traceback" not in got.output
        assert not out.exists()


def test_a_flip_s_text_is_data(world: Any, tmp_path: Path) -> None:
    """An answer text holding markup prints as written in the flip table."""
    from rich.console import Console

    from chronokg.cli.render import Format, emit
    from chronokg.eval.rescore import Flip

    console = Console(width=80, record=True, force_terminal=False)
    emit(console, [Flip(question_id="q", model=HOSTILE, sample=0, family="tempomed", variant="v", answer="A",
                        old_correct=True, new_correct=False, old_target="A", new_target="B",
                        old_answer=HOSTILE, new_answer="x" * 10_000)], Format.table, title="verdicts that flipped")
    text = console.export_text()
    assert text.count("[x] [/x] </script> /*DATA*/") == 2 and text.count("x" * 70) >= 1


def test_changed_verdicts_between_the_releases_are_the_answers_right_now_that_had_no_gold_then(world: Any) -> None:
    from chronokg.queries.spec import all_queries

    flips = rescore(world, "--known-at", BETWEEN)["not_scorable"]
    with KgliteStore(world["store"], read_only=True) as s:
        rows = all_queries().get("changed-verdicts").run(s, {"run": read_info(world["run"]).run_id, "a": BETWEEN,
                                                             "b": dt.date.today().isoformat()})
    expected = {(f["question_id"], f["model"], f["sample"]) for f in flips if f["old_correct"]}
    assert expected and {(r.question_id, r.model, r.sample) for r in rows} == expected
    assert all(not r.correct_a and r.correct_b and r.gold_a == [] and r.gold_b for r in rows)


def test_accuracy_by_valid_year_equals_the_answer_keys_gold_of_each_year(world: Any) -> None:
    """Counted again from each question's own `decision-at` evidence: the recommendations valid on 1 January, for
    the questions about the present (their gold option is the up-to-date one)."""
    from chronokg.queries.spec import all_queries

    run = read_info(world["run"])
    with KgliteStore(world["store"], read_only=True) as s:
        rows = all_queries().get("accuracy-by-valid-year").run(s, {"run": run.run_id, "first": 2010, "last": 2026})
    by_id = {q.id: q for q in world["questions"]}
    expected: dict[tuple[str, int], list[int]] = {}
    for (qid, model, _), r in latest(world["run"] / "samples.jsonl").items():
        q = by_id[qid]
        if not any(c.label == q.target and c.role == "up_to_date" for c in q.choices):
            continue
        chosen = next((c.text for c in q.choices if c.label == r.answer), None)
        for year in range(2010, 2027):
            day = dt.date(year, 1, 1)
            gold = {e["text"] for e in q.answer_key.evidence if e["kind"] == "recommendation"
                    and (e["valid_from"] is None or e["valid_from"] <= day.isoformat())
                    and (e["valid_to"] is None or e["valid_to"] > day.isoformat())}
            if gold:
                cell = expected.setdefault((model, year), [0, 0])
                cell[0] += 1
                cell[1] += chosen in gold
    assert {(r.model, r.year): [r.n, r.correct] for r in rows} == expected
    assert len({r.year for r in rows}) > 3
    assert all(r.accuracy == r.correct / r.n for r in rows)


def test_a_sample_with_no_answer_now_is_counted_neither_right_nor_wrong(world: Any) -> None:
    folder = Path(rescore(world, "--known-at", BETWEEN)["folder"])
    records = latest(folder / "samples.jsonl")
    unscorable = [r for r in records.values() if not r.ok]
    assert unscorable and all(r.error and "not scorable" in r.error and r.correct is None for r in unscorable)
    info = read_info(folder)
    ok = [r for r in records.values() if r.ok]
    assert info.totals["samples"] == len(ok) and info.totals["correct"] == sum(1 for r in ok if r.correct)
    got = invoke(world["store"], "eval", "metrics", str(folder), "-m", "baseline/oracle", "-f", "json")
    values = {v["metric"]: v for v in json.loads(got.output)}
    assert values["tempomed.accuracy"]["value"] == 1.0  # the oracle's answers that can be scored are all right
    assert values["tempomed.accuracy"]["details"]["n_mcq"] == sum(1 for r in ok if r.model == "baseline/oracle")


def test_what_is_re_scored_is_part_of_the_id_and_a_run_without_answers_is_refused(world: Any, tmp_path: Path
                                                                                ) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "run.json").write_bytes((world["run"] / "run.json").read_bytes())
    got = invoke(world["store"], "eval", "rescore", str(bare), "--out", str(tmp_path / "out"))
    assert got.exit_code == 2 and "no samples.jsonl" in got.output and not (tmp_path / "out").exists()
    fewer = tmp_path / "fewer"
    fewer.mkdir()
    (fewer / "run.json").write_bytes((world["run"] / "run.json").read_bytes())
    lines = (world["run"] / "samples.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (fewer / "samples.jsonl").write_text("".join(lines[:3]), encoding="utf-8")
    a = rescore(world)
    got = invoke(world["store"], "eval", "rescore", str(fewer), "--out", str(Path(a["folder"]).parent), "-f", "json")
    b = json.loads(got.output)
    assert b["run_id"] != a["run_id"] and b["written"] and b["samples"] == 3


def test_a_bad_run_json_and_another_store_are_one_line(world: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    info = json.loads((world["run"] / "run.json").read_text(encoding="utf-8"))
    info["options"]["samples"] = "many"
    (bad / "run.json").write_text(json.dumps(info), encoding="utf-8")
    (bad / "samples.jsonl").write_bytes((world["run"] / "samples.jsonl").read_bytes())
    got = invoke(world["store"], "eval", "rescore", str(bad), "--out", str(tmp_path / "o1"))
    assert got.exit_code == 2 and "options.samples" in got.output and "Traceback" not in got.output
    with KgliteStore(tmp_path / "empty.kgl") as s:
        s.run("RETURN 1")
    got = invoke(tmp_path / "empty.kgl", "eval", "rescore", str(world["run"]), "--out", str(tmp_path / "o2"))
    assert got.exit_code != 0 and "holds none of the run's evidence" in " ".join(got.output.split())
    assert not (tmp_path / "o2").exists() or not any((tmp_path / "o2").iterdir())


def test_a_relative_out_gives_a_folder_readable_from_anywhere(world: Any, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    got = invoke(world["store"], "eval", "rescore", str(world["run"]), "--out", "rel", "-f", "json")
    folder = Path(json.loads(got.output)["folder"])
    assert folder.is_absolute() and Path(read_info(folder).questions[0]["path"]).is_absolute()
    monkeypatch.chdir("/")
    assert invoke(world["store"], "eval", "metrics", str(folder)).exit_code == 0
