"""`chronokg export lm-eval` run by the real lm-evaluation-harness (`python -m lm_eval`, generate_until through its
`local-chat-completions` model) against chronokg's loopback OpenAI-compatible server; its `--log_samples` output
scored back with `eval score` gives lm-eval's own accuracy, sample for sample."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronokg.bench.question import Question, write_jsonl
from chronokg.cli.app import app
from chronokg.eval.profile import profile_for
from chronokg.metrics.runs import metrics, run_samples, score_outputs
from chronokg.testing.openai_server import OpenAIServer
from chronokg.testing.replies import Reply, ScriptedRequest
from tests.integration_questions import every_family

pytestmark = pytest.mark.slow  # lm-evaluation-harness


if not os.environ.get("CI"):
    pytest.importorskip("lm_eval", reason="the integrations extra (lm-eval) is not installed")


@pytest.mark.parametrize("protocol", ["seed", "chronokg"])
def test_lm_eval_runs_the_exported_task_and_eval_score_reads_its_samples(shared_data: Path, tmp_path: Path,
                                                                         protocol: str) -> None:
    qs = [q for q in every_family(shared_data)[("tempomed", protocol)] if q.variant.startswith("mcq")][:24]
    path = tmp_path / "questions.jsonl"
    write_jsonl(path, qs)
    by_prompt = {q.input: q for q in qs}
    seen: list[dict[str, object]] = []

    def script(request: ScriptedRequest) -> Reply:
        q: Question = by_prompt[request.last_user_text]
        seen.append(request.body)
        wrong = next(c.label for c in q.choices if c.label != q.target)
        label = q.target if int(hashlib.sha256(q.id.encode()).hexdigest(), 16) % 2 else wrong
        return Reply(text=profile_for(q.family).render(q, label))

    tasks = tmp_path / "tasks"
    done = CliRunner().invoke(app, ["export", "lm-eval", str(path), "--out", str(tasks), "--protocol", protocol])
    assert done.exit_code == 0, done.output
    assert (tasks / "chronokg_tempomed" / "chronokg_tempomed.yaml").is_file()
    out = tmp_path / "lm-out"
    env = dict(os.environ, HF_HOME=str(tmp_path / "hf"), HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    with OpenAIServer(script=script) as server:
        ran = subprocess.run(
            [sys.executable, "-m", "lm_eval", "--include_path", str(tasks), "--tasks", "chronokg_tempomed",
             "--model", "local-chat-completions", "--apply_chat_template",
             "--model_args", f"base_url={server.url}/chat/completions,model=scripted,num_concurrent=1",
             "--log_samples", "--output_path", str(out)],
            capture_output=True, text=True, env=env, timeout=600)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert len(seen) == len(qs)
    for body in seen:  # the exact system message and sampling settings of the seed
        messages = body["messages"]
        assert isinstance(messages, list) and messages[0] == {"role": "system", "content": qs[0].system}
        assert body.get("temperature") == 0.0 and body.get("max_tokens") == 4096
    (samples_file,) = out.rglob("samples_chronokg_tempomed_*.jsonl")
    (results_file,) = out.rglob("results_*.json")
    acc = json.loads(results_file.read_text())["results"]["chronokg_tempomed"]["acc,chronokg_extract"]
    lm_rows = [json.loads(line) for line in samples_file.read_text().splitlines() if line.strip()]
    folder = score_outputs(path, samples_file, "scripted", protocol, tmp_path / "runs")
    _, records = run_samples(folder)
    assert {r.question_id: float(bool(r.correct)) for r in records} == {row["doc"]["id"]: row["acc"]
                                                                       for row in lm_rows}
    assert 0.2 < acc < 0.8
    (value,) = [m.value for m in metrics(records) if m.metric == "tempomed.accuracy"]
    assert value == pytest.approx(acc)


def _answer_three_ways(q: Question) -> str:
    """The gold option, the outdated version, or another wrong option, by the question's id (so the split has
    right, stale and plainly wrong answers on both sides)."""
    pick = int(hashlib.sha256(q.id.encode()).hexdigest(), 16) % 3
    outdated = next((c.label for c in q.choices if c.role == "outdated"), None)
    other = next(c.label for c in q.choices if c.label != q.target and c.role != "outdated")
    return q.target if pick == 0 else (outdated or other) if pick == 1 else other


def _gold_valid_from(q: Question) -> str | None:
    """The valid-from of the recommendation the gold option states, read from the answer key's evidence."""
    text = next(c.text for c in q.choices if c.label == q.target)
    return next((str(r["valid_from"]) for r in q.answer_key.evidence
                 if r.get("kind") == "recommendation" and r.get("text") == text), None)


def test_exported_cutoff_metrics_equal_chronokg_split_of_the_same_answers(shared_data: Path, tmp_path: Path) -> None:
    """`export lm-eval --cutoff D`: lm-eval itself reports acc_pre_cutoff, acc_post_cutoff, the items on each side
    and the stale count, each equal to chronokg's `tempomed.cutoff` block of the run `eval score --cutoff` makes
    from lm-eval's own samples file; every doc carries the item's dates."""
    qs = [q for q in every_family(shared_data)[("tempomed", "chronokg")] if q.variant.startswith("mcq")][:30]
    qs += [q for q in every_family(shared_data)[("tempomed", "chronokg")] if q.variant.startswith("probe")][:4]
    path = tmp_path / "questions.jsonl"
    write_jsonl(path, qs)
    dates = sorted(d for q in qs if (d := _gold_valid_from(q)))
    cutoff = dates[len(dates) // 2]  # a cutoff with items on both sides
    by_prompt = {q.input: q for q in qs}

    def script(request: ScriptedRequest) -> Reply:
        q = by_prompt[request.last_user_text]
        return Reply(text=profile_for(q.family).render(q, _answer_three_ways(q) if q.choices else "NO"))

    tasks = tmp_path / "tasks"
    done = CliRunner().invoke(app, ["export", "lm-eval", str(path), "--out", str(tasks), "--protocol", "chronokg",
                                    "--cutoff", cutoff])
    assert done.exit_code == 0, done.output
    out = tmp_path / "lm-out"
    env = dict(os.environ, HF_HOME=str(tmp_path / "hf"), HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    with OpenAIServer(script=script) as server:
        ran = subprocess.run(
            [sys.executable, "-m", "lm_eval", "--include_path", str(tasks), "--tasks", "chronokg_tempomed",
             "--model", "local-chat-completions", "--apply_chat_template",
             "--model_args", f"base_url={server.url}/chat/completions,model=scripted,num_concurrent=1",
             "--log_samples", "--output_path", str(out)],
            capture_output=True, text=True, env=env, timeout=600)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    (samples_file,) = out.rglob("samples_chronokg_tempomed_*.jsonl")
    (results_file,) = out.rglob("results_*.json")
    lm = {k.split(",")[0]: v for k, v in json.loads(results_file.read_text())["results"]["chronokg_tempomed"].items()
          if k.endswith(",chronokg_extract")}
    rows = [json.loads(line) for line in samples_file.read_text().splitlines() if line.strip()]
    by_id = {q.id: q for q in qs}
    for row in rows:  # the item's dates in lm-eval's own record of each doc
        q = by_id[row["doc"]["id"]]
        assert str(row["doc"]["question_date"])[:10] == q.target_date.isoformat()  # type: ignore[union-attr]
        gold = _gold_valid_from(q) if q.choices else None
        assert (str(row["doc"]["gold_valid_from"])[:10] if row["doc"]["gold_valid_from"] else None) == gold

    scored = CliRunner().invoke(app, ["eval", "score", str(path), str(samples_file), "--model", "scripted",
                                      "--protocol", "chronokg", "--cutoff", f"scripted={cutoff}",
                                      "--log-dir", str(tmp_path / "runs")])
    assert scored.exit_code == 0, scored.output
    (folder,) = (tmp_path / "runs").iterdir()
    info, records = run_samples(folder)
    (block,) = [m for m in metrics(records, info=info) if m.metric == "tempomed.cutoff"]
    pre, post = block.groups["pre"], block.groups["post"]
    assert block.groups["cutoff"] == cutoff and pre["n"] > 3 and post["n"] > 3 and block.details["stale"] > 0
    assert block.details["undated"] == 4  # the probes: in acc alone
    assert lm["items_pre_cutoff"] == pre["n"] and lm["items_post_cutoff"] == post["n"]
    assert lm["acc_pre_cutoff"] == pytest.approx(pre["accuracy"])
    assert lm["acc_post_cutoff"] == pytest.approx(post["accuracy"])
    assert lm["stale_post_cutoff"] == block.details["stale"] == post["stale"]
    assert lm["acc"] == pytest.approx(sum(bool(r.correct) for r in records) / len(qs))
    assert 0 < pre["accuracy"] < 1 and 0 < post["accuracy"] < 1


def test_the_printed_lm_eval_command_shows_the_folder_s_controls_as_text_and_pastes(shared_data: Path,
                                                                                    tmp_path: Path) -> None:
    """--out holding an escape byte, a bidi override and a space: the `run:` line shows them as codes and quotes
    the folder as one shell word (the escape went raw to the terminal, and the space split the word)."""
    import shlex

    from chronokg.cli.common import fresh_consoles

    qs = [q for q in every_family(shared_data)[("tempomed", "seed")] if q.variant.startswith("mcq")][:3]
    path = tmp_path / "questions.jsonl"
    write_jsonl(path, qs)
    out = tmp_path / "e\x1b[31mred dir\u202e"
    fresh_consoles()
    try:
        done = CliRunner().invoke(app, ["export", "lm-eval", str(path), "--out", str(out)], env={"COLUMNS": "80"})
    finally:
        fresh_consoles()
    assert done.exit_code == 0, done.output
    assert "\x1b" not in done.stdout and "\u202e" not in done.stdout
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("run: ")]
    words = shlex.split(line.removeprefix("run: "))
    assert words[:3] == ["lm_eval", "--include_path", str(out).replace("\x1b", "\\x1b").replace("\u202e", "\\u202e")]


def test_a_file_as_out_is_one_line_saying_so(shared_data: Path, tmp_path: Path) -> None:
    qs = [q for q in every_family(shared_data)[("tempomed", "seed")] if q.variant.startswith("mcq")][:3]
    path = tmp_path / "questions.jsonl"
    write_jsonl(path, qs)
    (tmp_path / "tasks").write_text("mine", encoding="utf-8")
    done = CliRunner().invoke(app, ["export", "lm-eval", str(path), "--out", str(tmp_path / "tasks")])
    assert done.exit_code != 0 and "not a folder" in done.output and len(done.output.strip().splitlines()) == 1
    assert (tmp_path / "tasks").read_text(encoding="utf-8") == "mine"
