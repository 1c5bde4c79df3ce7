"""`chronokg export lm-eval` run by the real lm-evaluation-harness (`python -m lm_eval`, generate_until through its
`local-chat-completions` model) against chronokg's loopback OpenAI-compatible server; its `--log_samples` output
scored back with `eval score` gives lm-eval's own accuracy, sample for sample."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
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


def _answer_by_hash(q: Question) -> str:
    """The gold option or a wrong one, by the question's id."""
    wrong = next(c.label for c in q.choices if c.label != q.target)
    return q.target if int(hashlib.sha256(q.id.encode()).hexdigest(), 16) % 2 else wrong


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


@dataclass
class Exported:
    """One `export lm-eval` of a question set, and what lm-eval and the scripted model saw of it."""
    qs: list[Question]
    path: Path
    tasks: Path
    cutoff: str | None = None
    seen: list[dict[str, object]] = field(default_factory=list)
    samples: Path | None = None
    results: dict[str, object] = field(default_factory=dict)


def _unused(pool: list[Question], used: set[str], n: int) -> list[Question]:
    """The first `n` questions of `pool` whose prompt no other set sends (the scripted model answers by prompt)."""
    out = [q for q in pool if q.input not in used][:n]
    used.update(q.input for q in out)
    return out


@pytest.fixture(scope="module")
def lm_eval_run(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Exported]:
    """Three exports (seed, chronokg, chronokg with a cutoff) evaluated by ONE `python -m lm_eval` process: each
    export's task is renamed `chronokg_tempomed_<set>` so the three run side by side (lm-eval's start-up is
    most of a run's time); the scripted model answers each set by its own rule."""
    root = tmp_path_factory.mktemp("lm-eval")
    family = every_family(shared_data)
    mcq = {p: [q for q in family[("tempomed", p)] if q.variant.startswith("mcq")] for p in ("seed", "chronokg")}
    probes = [q for q in family[("tempomed", "chronokg")] if q.variant.startswith("probe")]
    used: set[str] = set()
    sets = {"seed": _unused(mcq["seed"], used, 24), "chronokg": _unused(mcq["chronokg"], used, 24)}
    sets["cutoff"] = _unused(mcq["chronokg"], used, 30) + _unused(probes, used, 4)
    runs: dict[str, Exported] = {}
    rule: dict[str, tuple[str, Question]] = {}
    for name, qs in sets.items():
        path = root / f"{name}.jsonl"
        write_jsonl(path, qs)
        run = runs[name] = Exported(qs, path, root / "tasks" / name)
        args = ["export", "lm-eval", str(path), "--out", str(run.tasks), "--protocol", "seed" if name == "seed"
                else "chronokg"]
        if name == "cutoff":
            dates = sorted(d for q in qs if (d := _gold_valid_from(q)))
            run.cutoff = dates[len(dates) // 2]  # a cutoff with items on both sides
            args += ["--cutoff", run.cutoff]
        done = CliRunner().invoke(app, args)
        assert done.exit_code == 0, done.output
        task_file = run.tasks / "chronokg_tempomed" / "chronokg_tempomed.yaml"
        assert task_file.is_file()
        text = task_file.read_text(encoding="utf-8")
        assert text.startswith("task: chronokg_tempomed\n")
        task_file.write_text(text.replace("task: chronokg_tempomed\n", f"task: chronokg_tempomed_{name}\n", 1),
                             encoding="utf-8")
        rule.update({q.input: (name, q) for q in qs})

    def script(request: ScriptedRequest) -> Reply:
        name, q = rule[request.last_user_text]
        runs[name].seen.append(request.body)
        label = (_answer_by_hash(q) if name != "cutoff" else _answer_three_ways(q) if q.choices else "NO")
        return Reply(text=profile_for(q.family).render(q, label))

    out = root / "lm-out"
    env = dict(os.environ, HF_HOME=str(root / "hf"), HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")
    with OpenAIServer(script=script) as server:
        ran = subprocess.run(
            [sys.executable, "-m", "lm_eval", "--include_path", str(root / "tasks"), "--tasks",
             ",".join(f"chronokg_tempomed_{name}" for name in runs),
             "--model", "local-chat-completions", "--apply_chat_template",
             "--model_args", f"base_url={server.url}/chat/completions,model=scripted,num_concurrent=1",
             "--log_samples", "--output_path", str(out)],
            capture_output=True, text=True, env=env, timeout=600)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    (results_file,) = out.rglob("results_*.json")
    results = json.loads(results_file.read_text())["results"]
    for name, run in runs.items():
        (run.samples,) = out.rglob(f"samples_chronokg_tempomed_{name}_*.jsonl")
        run.results = results[f"chronokg_tempomed_{name}"]
    return runs


@pytest.mark.parametrize("protocol", ["seed", "chronokg"])
def test_lm_eval_runs_the_exported_task_and_eval_score_reads_its_samples(lm_eval_run: dict[str, Exported],
                                                                         tmp_path: Path, protocol: str) -> None:
    run = lm_eval_run[protocol]
    qs, path, seen = run.qs, run.path, run.seen
    assert run.samples is not None
    assert len(seen) == len(qs)
    for body in seen:  # the exact system message and sampling settings of the seed
        messages = body["messages"]
        assert isinstance(messages, list) and messages[0] == {"role": "system", "content": qs[0].system}
        assert body.get("temperature") == 0.0 and body.get("max_tokens") == 4096
    acc = run.results["acc,chronokg_extract"]
    assert isinstance(acc, float)
    lm_rows = [json.loads(line) for line in run.samples.read_text().splitlines() if line.strip()]
    folder = score_outputs(path, run.samples, "scripted", protocol, tmp_path / "runs")
    _, records = run_samples(folder)
    assert {r.question_id: float(bool(r.correct)) for r in records} == {row["doc"]["id"]: row["acc"]
                                                                       for row in lm_rows}
    assert 0.2 < acc < 0.8
    (value,) = [m.value for m in metrics(records) if m.metric == "tempomed.accuracy"]
    assert value == pytest.approx(acc)


def test_exported_cutoff_metrics_equal_chronokg_split_of_the_same_answers(lm_eval_run: dict[str, Exported],
                                                                          tmp_path: Path) -> None:
    """`export lm-eval --cutoff D`: lm-eval itself reports acc_pre_cutoff, acc_post_cutoff, the items on each side
    and the stale count, each equal to chronokg's `tempomed.cutoff` block of the run `eval score --cutoff` makes
    from lm-eval's own samples file; every doc carries the item's dates."""
    run = lm_eval_run["cutoff"]
    qs, path, cutoff, samples_file = run.qs, run.path, run.cutoff, run.samples
    assert cutoff is not None and samples_file is not None
    lm = {k.split(",")[0]: v for k, v in run.results.items() if k.endswith(",chronokg_extract")}
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
