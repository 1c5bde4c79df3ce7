"""`chronokg eval export --format inspect`: chronokg runs, original and re-scored, as inspect_ai logs that inspect's
own `read_eval_log` reads, `inspect view` shows in Chromium and `inspect score` re-scores, with the real package.

The store and the frozen model: tests/inspect_world.py. Run 1 answers release 1's questions; after release 2,
run 2 answers the questions of both releases and is re-scored as known between the releases (pair D's items then
have no answer: not scorable).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench import snapshot
from chronokg.cli.app import app
from chronokg.eval.log import latest, read_info
from chronokg.eval.rescore import rescore
from chronokg.graph.kglite_store import KgliteStore
from chronokg.metrics.runs import metrics, run_samples, score_outputs
from tests import inspect_world as w
from tests.report_helpers import chromium

inspect_ai = pytest.importorskip("inspect_ai", reason="the integrations extra (inspect_ai) is not installed") \
    if not os.environ.get("CI") else __import__("inspect_ai")

from inspect_ai.log import read_eval_log  # noqa: E402

pytestmark = pytest.mark.slow  # inspect's CLI, its view server and a browser
ROOT = Path(__file__).resolve().parents[1]
INSPECT = Path(sys.executable).with_name("inspect")
cli = CliRunner()


def answered(tmp: Path, questions: Path, name: str) -> Path:
    """A chronokg run of the frozen model's answers to `questions` (`eval score`'s path: run.json records the
    model's cutoff, its spec's own date)."""
    outputs = tmp / f"{name}.jsonl"
    qs = w.read(questions)
    outputs.write_text("".join(json.dumps({"id": q.id, "output": w.frozen_output(q)}) + "\n" for q in qs),
                       encoding="utf-8")
    return score_outputs(questions, outputs, w.MODEL, "chronokg", tmp / "runs")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("inspect-export")
    first, second = w.write_releases(tmp)
    store = tmp / "store.kgl"
    w.load(store, first, w.RELEASES[0])
    w.questions_now(store, tmp / "q1.jsonl")
    run1 = answered(tmp, tmp / "q1.jsonl", "o1")
    w.load(store, second, w.RELEASES[1])
    w.questions_now(store, tmp / "q2.jsonl")
    run2 = answered(tmp, tmp / "q2.jsonl", "o2")
    with KgliteStore(store, read_only=True) as s:
        result = rescore(run2, tmp / "rescored", s, snapshot.current(s), dt.date.fromisoformat(w.BETWEEN))
    logs = tmp / "logs"
    for run in (run1, Path(result.folder)):
        got = cli.invoke(app, ["eval", "export", "--format", "inspect", str(run), "--out", str(logs)])
        assert got.exit_code == 0 and "wrote the inspect log" in " ".join(got.output.split()), got.output
    by_run = {read_eval_log(str(p), header_only=True).eval.run_id: p for p in logs.glob("*.eval")}
    return {"tmp": tmp, "store": store, "run1": run1, "rescored": Path(result.folder), "result": result,
            "logs": logs, "by_run": by_run}


def scores(log: Any) -> dict[tuple[str, int], float | None]:
    out: dict[tuple[str, int], float | None] = {}
    for s in log.samples:
        value = s.scores["chronokg_scorer"].value
        out[(str(s.id), s.epoch - 1)] = None if math.isnan(value) else value
    return out


def test_an_exported_run_reads_back_with_chronokg_s_scores_and_metrics(world: dict[str, Any]) -> None:
    """Every sample, its score and the run's metrics (accuracy and the cutoff split of the run's recorded
    cutoff) as chronokg counts them; the sample's dates and stored outcome in its metadata."""
    info, samples = run_samples(world["run1"])
    log = read_eval_log(str(world["by_run"][info.run_id]))
    assert log.status == "success" and log.eval.model == w.MODEL and log.eval.task == "chronokg/tempomed"
    assert scores(log) == {(r.question_id, r.sample): r.score for r in samples}
    values = {v.metric: v for v in metrics(samples, info=info)}
    got = {name: m.value for name, m in log.results.scores[0].metrics.items()}
    assert got["accuracy"] == pytest.approx(values["tempomed.accuracy"].value)
    block = values["tempomed.cutoff"].groups
    assert block["cutoff"] == w.CUTOFF.isoformat()
    assert (got["pre_cutoff_accuracy"], got["post_cutoff_accuracy"]) == (block["pre"]["accuracy"],
                                                                          block["post"]["accuracy"])
    assert (got["pre_cutoff_n"], got["post_cutoff_n"], got["stale_n"]) == (block["pre"]["n"], block["post"]["n"],
                                                                          block["post"]["stale"]) == (15, 3, 3)
    for s in log.samples:
        assert s.metadata["gold_valid_from"] and s.metadata["question_date"]
        assert s.metadata["chronokg"]["answer"] == s.scores["chronokg_scorer"].answer


def test_a_rescored_run_says_its_origin_known_at_and_flips_and_keeps_its_unscorable_samples(
        world: dict[str, Any]) -> None:
    info = read_info(world["rescored"])
    log = read_eval_log(str(world["by_run"][info.run_id]))
    meta = log.eval.metadata or {}
    assert meta["rescored_from"] == info.rescored_from and meta["known_at"] == w.BETWEEN
    flips = json.loads((world["rescored"] / "flips.json").read_text(encoding="utf-8"))
    assert meta["flips"] == flips and flips
    records = latest(world["rescored"] / "samples.jsonl")
    assert len(log.samples) == len(records)
    unscored = {(str(s.id), s.epoch - 1): s.scores["chronokg_scorer"] for s in log.samples
                if math.isnan(s.scores["chronokg_scorer"].value)}
    expected = {(u[0], u[2]) for u, r in records.items() if not r.ok}
    assert set(unscored) == expected and len(unscored) == world["result"].no_answer > 0
    assert all(s.reason == "not scorable" and "not scorable" in (s.explanation or "") for s in unscored.values())
    assert all(s.error is None for s in log.samples)
    assert log.results.scores[0].unscored_samples == len(unscored)
    assert scores(log) == {(r.question_id, r.sample): r.score if r.ok else None for r in records.values()}


def test_inspect_score_of_an_exported_log_flips_what_eval_rescore_flips(world: dict[str, Any]) -> None:
    """Run 1's log, exported, re-scored by inspect against the store now (release 2 loaded): the verdicts that
    change are `eval rescore`'s flips (right to wrong on pair B's 2018 item). The log names chronokg's model, which
    inspect cannot instantiate; chronokg's scorer asks no model, so any stands in (`--model mockllm/model`)."""
    info = read_info(world["run1"])
    out = world["tmp"] / "inspect-rescored.eval"
    got = subprocess.run([str(INSPECT), "score", str(world["by_run"][info.run_id]), "--scorer",
                          "chronokg/chronokg_scorer", "-S", f"store=kglite://{world['store']}", "--model",
                          "mockllm/model", "--output-file", str(out), "--action", "overwrite", "--display", "none"],
                         capture_output=True, text=True,
                         timeout=300, cwd=world["tmp"], env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert got.returncode == 0, got.stderr[-3000:]
    before = scores(read_eval_log(str(world["by_run"][info.run_id])))
    after = scores(read_eval_log(str(out)))
    flipped = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    with KgliteStore(world["store"], read_only=True) as s:
        result = rescore(world["run1"], world["tmp"] / "rescored-now", s, snapshot.current(s))
    assert flipped == {(f.question_id, f.sample): (float(bool(f.old_correct)), float(bool(f.new_correct)))
                       for f in result.flips}
    assert len(flipped) == 3 and set(flipped.values()) == {(1.0, 0.0)}


def test_a_failed_sample_is_there_with_its_error(world: dict[str, Any], tmp_path: Path) -> None:
    """A sample whose request failed (its last line in samples.jsonl has an error) is in the log, unscored by
    any metric, with the error; the others keep their scores."""
    import shutil

    run = tmp_path / world["run1"].name
    shutil.copytree(world["run1"], run)
    first = next(iter(latest(run / "samples.jsonl").values()))
    with (run / "samples.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(first.model_copy(update={"error": "HTTP 500 from the model server", "answer": None,
                                          "correct": None, "score": None}).model_dump_json() + "\n")
    got = cli.invoke(app, ["eval", "export", "--format", "inspect", str(run), "--out", str(tmp_path / "logs")])
    assert got.exit_code == 0, got.output
    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    failed = [s for s in log.samples if s.error is not None]
    assert [(str(s.id), s.error.message) for s in failed] == [(first.question_id, "HTTP 500 from the model server")]
    assert failed[0].scores is None and log.results.completed_samples == len(log.samples) - 1
    assert log.results.scores[0].scored_samples == len(log.samples) - 1


def test_exporting_again_writes_the_same_files_and_bad_input_is_one_line(world: dict[str, Any],
                                                                         tmp_path: Path) -> None:
    names = sorted(p.name for p in world["logs"].iterdir())
    got = cli.invoke(app, ["eval", "export", "--format", "inspect", str(world["run1"]), "--out", str(world["logs"])])
    assert got.exit_code == 0 and sorted(p.name for p in world["logs"].iterdir()) == names
    for args in (["eval", "export", "--format", "inspect", str(tmp_path / "no-run"), "--out", str(tmp_path / "o")],
                 ["eval", "export", "--format", "parquet", str(world["run1"]), "--out", str(tmp_path / "o")]):
        got = cli.invoke(app, args)
        assert got.exit_code != 0 and "Traceback" not in got.output and len(got.output.strip().splitlines()) <= 2
        assert not (tmp_path / "o").exists() and not (tmp_path / "o.part").exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_inspect_view_shows_the_rescored_log_in_chromium(world: dict[str, Any]) -> None:
    """`inspect view` over the export folder, on loopback: the re-scored run's page shows chronokg's task and
    model, the cutoff metrics over the scored samples, an unscorable sample with its note and, under Info, the run
    it was re-scored from and the day."""
    info = read_info(world["rescored"])
    port = free_port()
    server = subprocess.Popen([str(INSPECT), "view", "--log-dir", str(world["logs"]), "--host", "127.0.0.1",
                               "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              cwd=world["tmp"], env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        name = world["by_run"][info.run_id].name
        with chromium() as browser:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/#/tasks/{urllib.parse.quote(name)}", wait_until="networkidle")
            page.get_by_text("PRE_CUTOFF_ACCURACY", exact=False).first.wait_for(timeout=30_000)
            records = latest(world["rescored"] / "samples.jsonl")
            scored = sum(1 for r in records.values() if r.ok)
            body = " ".join(page.inner_text("body").split())
            page.screenshot(path=str(world["tmp"] / "inspect-view-samples.png"))
            assert "chronokg/tempomed" in body and w.MODEL in body and f"{len(records)} Samples" in body
            shown = [("ACCURACY", "0.833"), ("PRE_CUTOFF_ACCURACY", "1.0"), ("POST_CUTOFF_ACCURACY", "0.0"),
                     ("STALE_N", "3.0")]  # each over the scored samples: the unscorable ones are counted apart
            for metric, value in shown:
                pattern = rf"\b{metric} ?\({scored}/{len(records)}\) MEAN {re.escape(value)}\b"
                assert re.search(pattern, body.upper()), metric
            page.get_by_text("Info", exact=True).first.click()
            page.get_by_text("rescored_from", exact=False).first.wait_for(timeout=30_000)
            body = " ".join(page.inner_text("body").split())
            page.screenshot(path=str(world["tmp"] / "inspect-view-info.png"), full_page=True)
            assert info.rescored_from is not None and info.rescored_from in body and w.BETWEEN in body
            page.get_by_text("Samples", exact=True).first.click()
            bad = next(r for r in records.values() if not r.ok)  # an unscorable sample: there, with its note
            page.get_by_text(bad.question_id[:12]).first.click()
            page.get_by_text("Scoring", exact=True).first.click()
            page.get_by_text("not scorable:", exact=False).first.wait_for(timeout=30_000)
            text = " ".join(page.inner_text("body").split())
            page.screenshot(path=str(world["tmp"] / "inspect-view-unscorable.png"))
            assert bad.error is not None and bad.error in text and "NaN" in text
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_two_models_whose_names_make_the_same_file_name_get_a_log_each(world: dict[str, Any],
                                                                        tmp_path: Path) -> None:
    """`gpt/4` and `gpt-4` both read as `gpt-4` in a file name: each model still gets its own log (the second
    overwrote the first, then the move failed on the missing file, leaving one log in --out)."""
    import shutil

    run = tmp_path / world["run1"].name
    shutil.copytree(world["run1"], run)
    info = json.loads((run / "run.json").read_text(encoding="utf-8"))
    (first,) = info["models"]
    info["models"] = [first | {"spec": "gpt/4"}, first | {"spec": "gpt-4"}]
    info["cutoffs"] = {"gpt/4": info["cutoffs"][w.MODEL], "gpt-4": info["cutoffs"][w.MODEL]}
    (run / "run.json").write_text(json.dumps(info), encoding="utf-8")
    lines = (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    renamed = [json.dumps(json.loads(line) | {"model": name}) for name in ("gpt/4", "gpt-4") for line in lines]
    (run / "samples.jsonl").write_text("\n".join(renamed) + "\n", encoding="utf-8")
    got = cli.invoke(app, ["eval", "export", "--format", "inspect", str(run), "--out", str(tmp_path / "logs")])
    assert got.exit_code == 0, got.output
    logs = sorted((tmp_path / "logs").glob("*.eval"))
    headers = [read_eval_log(str(p), header_only=True).eval for p in logs]
    assert sorted(h.model for h in headers) == ["gpt-4", "gpt/4"]
    assert len({h.eval_id for h in headers}) == 2 and not (tmp_path / "logs.part").exists()


def test_the_root_as_out_is_one_line(world: dict[str, Any]) -> None:
    """`--out /`: the folder has no name to build `<name>.part` beside it from (a ValueError traceback)."""
    got = cli.invoke(app, ["eval", "export", "--format", "inspect", str(world["run1"]), "--out", "/"])
    assert got.exit_code != 0 and "Traceback" not in got.output
    assert len(got.output.strip().splitlines()) == 1 and "--out /" in got.output, got.output


def test_exporting_a_run_twice_gives_the_same_logs(world: dict[str, Any], tmp_path: Path) -> None:
    """Every message has an id made from its sample (they were random, so every export read differently); only
    the zip entries' own times, which inspect's writer sets, differ between the files."""
    for out in ("a", "b"):
        got = cli.invoke(app, ["eval", "export", "--format", "inspect", str(world["rescored"]), "--out",
                               str(tmp_path / out)])
        assert got.exit_code == 0, got.output
    (a,), (b,) = (list((tmp_path / out).glob("*.eval")) for out in ("a", "b"))
    assert a.name == b.name
    first, second = read_eval_log(str(a)), read_eval_log(str(b))
    assert first.model_dump_json() == second.model_dump_json()
    ids = [m.id for s in first.samples for m in s.messages]
    assert len(set(ids)) == len(ids) and all(ids)


def test_a_question_file_not_there_or_changed_since_the_run_is_one_line_naming_the_run(
        world: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run.json keeps a question file's path as given (relative to where the run was made) and its digest:
    exported from another folder, the error names the run and says why; a file changed since is refused (its
    questions were read as they are now, beside answers to the questions as they were)."""
    import shutil

    run = tmp_path / "made-here" / world["run1"].name
    shutil.copytree(world["run1"], run)
    shutil.copy(world["tmp"] / "q1.jsonl", tmp_path / "made-here" / "q1.jsonl")
    info = json.loads((run / "run.json").read_text(encoding="utf-8"))
    info["questions"][0]["path"] = "q1.jsonl"
    (run / "run.json").write_text(json.dumps(info), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    got = cli.invoke(app, ["eval", "export", "--format", "inspect", str(run), "--out", "logs"])
    assert got.exit_code != 0 and len(got.output.strip().splitlines()) == 1, got.output
    assert info["run_id"] in got.output and "q1.jsonl" in got.output and "made" in got.output, got.output
    monkeypatch.chdir(tmp_path / "made-here")
    lines = Path("q1.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["target"] = next(c for c in "ABCDEFGHIJ" if c != first["target"])
    Path("q1.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    got = cli.invoke(app, ["eval", "export", "--format", "inspect", str(run), "--out", "logs"])
    assert got.exit_code != 0 and "changed" in got.output and len(got.output.strip().splitlines()) == 1, got.output
    assert not Path("logs").exists()


def test_a_folder_of_other_files_where_the_logs_are_built_is_left_as_it_is(world: dict[str, Any],
                                                                             tmp_path: Path) -> None:
    """The logs are built in `<out>.part`: a folder of that name holding anything but logs is not the leftover
    of a killed export, so it is named and kept (it was removed); a killed export's logs there are cleared."""
    mine = tmp_path / "logs.part"
    mine.mkdir()
    args = ["eval", "export", "--format", "inspect", str(world["run1"]), "--out", str(tmp_path / "logs")]
    (mine / "notes.txt").write_text("my notes", encoding="utf-8")
    got = cli.invoke(app, args)
    assert got.exit_code != 0 and "logs.part" in got.output and len(got.output.strip().splitlines()) == 1
    assert (mine / "notes.txt").read_text(encoding="utf-8") == "my notes" and not (tmp_path / "logs").exists()
    (mine / "notes.txt").unlink()
    (mine / "half.eval").write_bytes(b"PK")
    got = cli.invoke(app, args)
    assert got.exit_code == 0 and not mine.exists() and len(list((tmp_path / "logs").glob("*.eval"))) == 1


def test_a_file_as_out_is_one_line_saying_so(world: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "logs").write_text("mine", encoding="utf-8")
    got = cli.invoke(app, ["eval", "export", "--format", "inspect", str(world["run1"]), "--out",
                           str(tmp_path / "logs")])
    assert got.exit_code != 0 and "not a folder" in got.output and len(got.output.strip().splitlines()) == 1
    assert (tmp_path / "logs").read_text(encoding="utf-8") == "mine" and not (tmp_path / "logs.part").exists()
