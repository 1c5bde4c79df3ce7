"""`eval score --cutoff MODEL=DATE`: outputs made elsewhere (a real inspect_ai log here, lm-eval's samples file in
tests/test_integrations_lm_eval.py) come back as a run with the cutoff split filled, as `eval run --cutoff` does:
the declared cutoff in run.json, part of the run id, and the pre/post block recounted from the items' gold dates
and inspect's own per-sample scores."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench.question import Question, write_jsonl
from chronokg.cli.app import app
from chronokg.cli.common import fresh_consoles
from chronokg.eval.log import read_info
from chronokg.eval.profile import profile_for
from chronokg.metrics.runs import metrics, run_samples
from tests.integration_questions import every_family

pytestmark = pytest.mark.slow  # inspect_ai's harness

if not os.environ.get("CI"):
    pytest.importorskip("inspect_ai", reason="the integrations extra (inspect_ai) is not installed")

CUTOFF = "2020-06-01"
MODEL = "mockllm/model"


def _gold_from(q: Question) -> str | None:
    text = next(c.text for c in q.choices if c.label == q.target)
    return next((str(r["valid_from"]) for r in q.answer_key.evidence
                 if r.get("kind") == "recommendation" and r.get("text") == text), None)


def _score(*args: str) -> Any:
    fresh_consoles()
    try:
        return CliRunner().invoke(app, ["eval", "score", *args])
    finally:
        fresh_consoles()


@pytest.fixture(scope="module")
def inspect_log(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The shipped `chronokg/tempomed` task run by inspect with a model right on about half the items."""
    import importlib.util

    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ChatMessage, ModelOutput, get_model

    tmp = tmp_path_factory.mktemp("score-cutoff")
    qs = [q for q in every_family(shared_data)[("tempomed", "chronokg")] if q.variant.startswith("mcq")][:60]
    path = tmp / "questions.jsonl"
    write_jsonl(path, qs)
    by_prompt = {q.input: q for q in qs}

    def output(messages: list[ChatMessage], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        q = by_prompt[messages[-1].text]
        wrong = next(c.label for c in q.choices if c.label != q.target)
        label = q.target if int(hashlib.sha256(q.id.encode()).hexdigest(), 16) % 2 else wrong
        return ModelOutput.from_content("mockllm", profile_for(q.family).render(q, label))

    spec = importlib.util.find_spec("litellm")  # tiktoken's o200k_base as litellm ships it (no network here)
    assert spec is not None and spec.origin is not None
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"))
        (log,) = inspect_eval("chronokg/tempomed", model=get_model(MODEL, custom_outputs=output), display="none",
                              log_dir=str(tmp / "logs"), task_args={"questions": str(path), "protocol": "chronokg"},
                              max_connections=32)
    assert log.status == "success", log.error
    right = {str(s.id): bool(s.scores["chronokg_scorer"].value) for s in log.samples}
    return {"questions": qs, "path": path, "log": Path(log.location), "right": right, "tmp": tmp}


def test_an_inspect_log_scored_with_a_cutoff_has_its_split(inspect_log: dict[str, Any]) -> None:
    qs, right, tmp = inspect_log["questions"], inspect_log["right"], inspect_log["tmp"]
    done = _score(str(inspect_log["path"]), str(inspect_log["log"]), "--model", MODEL, "--protocol", "chronokg",
                  "--cutoff", f"{MODEL}={CUTOFF}", "--log-dir", str(tmp / "runs"))
    assert done.exit_code == 0, done.output
    assert "tempomed.cutoff" in done.output and "declared (--cutoff)" in done.output
    (folder,) = (tmp / "runs").iterdir()
    info, samples = run_samples(folder)
    assert info.cutoffs[MODEL] == {"date": CUTOFF, "estimated": False, "source": "declared (--cutoff)"}
    (block,) = [m for m in metrics(samples, info=info) if m.metric == "tempomed.cutoff"]
    sides: dict[str, list[bool]] = {"pre": [], "post": []}
    for q in qs:  # the split recounted from the gold dates and inspect's own verdicts
        gold = _gold_from(q)
        if gold:
            sides["pre" if gold <= CUTOFF else "post"].append(right[q.id])
    assert sides["pre"] and sides["post"]
    for side, verdicts in sides.items():
        assert block.groups[side]["n"] == len(verdicts)
        assert block.groups[side]["accuracy"] == pytest.approx(sum(verdicts) / len(verdicts))

    again = _score(str(inspect_log["path"]), str(inspect_log["log"]), "--model", MODEL, "--protocol", "chronokg",
                   "--cutoff", f"{MODEL}={CUTOFF}", "--log-dir", str(tmp / "runs"))
    assert again.exit_code == 0 and [p.name for p in (tmp / "runs").iterdir()] == [folder.name]  # the same run
    later = _score(str(inspect_log["path"]), str(inspect_log["log"]), "--model", MODEL, "--protocol", "chronokg",
                   "--cutoff", f"{MODEL}=2024", "--log-dir", str(tmp / "runs"))
    assert later.exit_code == 0 and len(list((tmp / "runs").iterdir())) == 2  # another cutoff: another run
    plain = _score(str(inspect_log["path"]), str(inspect_log["log"]), "--model", MODEL, "--protocol", "chronokg",
                   "--log-dir", str(tmp / "plain"))
    (unsplit,) = (tmp / "plain").iterdir()
    assert plain.exit_code == 0 and read_info(unsplit).cutoffs[MODEL]["source"] != "declared (--cutoff)"


@pytest.mark.parametrize(("given", "says"), [
    ("2020", "write MODEL=DATE"), (f"{MODEL}=soon", "not a date"), ("other/model=2020", "no model 'other/model'")])
def test_a_bad_cutoff_is_one_error_and_writes_nothing(inspect_log: dict[str, Any], given: str, says: str) -> None:
    out = inspect_log["tmp"] / f"bad-{hashlib.sha256(given.encode()).hexdigest()[:8]}"
    done = _score(str(inspect_log["path"]), str(inspect_log["log"]), "--model", MODEL, "--cutoff", given,
                  "--log-dir", str(out))
    assert done.exit_code == 2 and says in done.output and "Traceback" not in done.output, done.output
    assert not out.exists()
