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
