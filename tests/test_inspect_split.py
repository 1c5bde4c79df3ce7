"""The split inside inspect_ai, with the real package: the shipped TempoMed task's samples carry each item's dates,
`-T cutoff=DATE` puts chronokg's pre/post-cutoff split and stale count among the log's metrics, and `inspect score
LOG` after a newer release re-scores against the store, flipping exactly what `chronokg eval rescore` flips.

The store and the frozen model: tests/inspect_world.py.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench.question import Question
from chronokg.cli.app import app
from chronokg.eval.cutoff import Cutoff
from chronokg.metrics import cutoff as split
from chronokg.metrics.runs import run_samples, score_outputs
from tests import inspect_world as w

inspect_ai = pytest.importorskip("inspect_ai", reason="the integrations extra (inspect_ai) is not installed") \
    if not os.environ.get("CI") else __import__("inspect_ai")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.model import ChatMessage, ModelOutput, get_model  # noqa: E402
from inspect_ai.solver._task_state import sample_state  # noqa: E402  (inspect's running sample; not re-exported)

pytestmark = pytest.mark.slow  # inspect_ai's harness and its CLI
ROOT = Path(__file__).resolve().parents[1]
INSPECT = Path(sys.executable).with_name("inspect")


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Release 1 loaded, its questions answered by the frozen model in inspect (`-T cutoff`, `-T store`); then
    release 2 loaded and the log re-scored by `inspect score`, and the same answers by `eval rescore`."""
    import importlib.util

    tmp = tmp_path_factory.mktemp("inspect-split")
    first, second = w.write_releases(tmp)
    store = tmp / "store.kgl"
    w.load(store, first, w.RELEASES[0])
    path = tmp / "questions.jsonl"
    qs = {q.id: q for q in w.questions_now(store, path)}

    def output(messages: list[ChatMessage], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        state = sample_state()
        assert state is not None
        return ModelOutput.from_content("mockllm", w.frozen_output(qs[str(state.sample_id)]))

    spec = importlib.util.find_spec("litellm")  # tiktoken's o200k_base, shipped by litellm (no network here)
    assert spec is not None and spec.origin is not None
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"))
        (log,) = inspect_eval("chronokg/tempomed", model=get_model("mockllm/model", custom_outputs=output),
                              display="none", log_dir=str(tmp / "logs"),
                              task_args={"questions": str(path), "protocol": "chronokg",
                                         "cutoff": w.CUTOFF.isoformat(), "store": f"kglite://{store}"})
    assert log.status == "success", log.error
    run = score_outputs(path, Path(log.location), w.MODEL, "chronokg", tmp / "runs")  # the same answers, a run
    w.load(store, second, w.RELEASES[1])
    return {"tmp": tmp, "store": store, "questions": qs, "path": path, "log": log, "run": run}


def inspect_score(world: dict[str, Any], out: Path, *args: str, **env: str) -> Any:
    got = subprocess.run([str(INSPECT), "score", world["log"].location, "--output-file", str(out), "--action",
                          "overwrite", "--display", "none", *args], capture_output=True, text=True, timeout=300,
                         cwd=world["tmp"], env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    assert got.returncode == 0, got.stderr[-3000:]
    return read_eval_log(str(out))


def eval_rescore(world: dict[str, Any], out: Path, *args: str) -> dict[str, Any]:
    got = CliRunner().invoke(app, ["--store", f"kglite://{world['store']}", "eval", "rescore", str(world["run"]),
                                   "--out", str(out), "-f", "json", *args])
    assert got.exit_code == 0, got.output
    return dict(json.loads(got.output))


def verdicts(log: Any) -> dict[tuple[str, int], bool | None]:
    """Each sample's verdict in an inspect log: right, wrong, or None (unscored)."""
    out: dict[tuple[str, int], bool | None] = {}
    for s in log.samples:
        value = s.scores["chronokg_scorer"].value
        out[(str(s.id), s.epoch - 1)] = None if math.isnan(value) else value == 1.0
    return out


def gold(q: Question) -> dict[str, Any]:
    text = next(c.text for c in q.choices if c.label == q.target)
    return next(r for r in q.answer_key.evidence if r.get("kind") == "recommendation" and r.get("text") == text)


def test_every_sample_carries_the_item_s_dates(world: dict[str, Any]) -> None:
    """The question's date, the gold recommendation's valid time and the release its evidence was known from."""
    samples = world["log"].samples
    assert len(samples) == len(world["questions"]) == 18
    for s in samples:
        q = world["questions"][str(s.id)]
        row = gold(q)
        assert s.metadata["question_date"] == q.target_date.isoformat()
        assert s.metadata["gold_valid_from"] == str(row["valid_from"])[:10]
        assert s.metadata["gold_valid_to"] == (str(row["valid_to"])[:10] if row["valid_to"] else None)
        assert s.metadata["evidence_known_from"] == w.RELEASES[0].isoformat()
        assert {s.metadata["family"], s.metadata["variant"]} == {"tempomed", q.variant}
    current = [s for s in samples if "up_to_date" in s.metadata["variant"]]
    assert current and all(s.metadata["gold_valid_to"] is None for s in current)
    assert all(s.metadata["gold_valid_to"] for s in samples if s not in current)


def test_cutoff_puts_the_split_and_the_stale_count_among_the_log_s_metrics(world: dict[str, Any]) -> None:
    """Pair A's 2019 recommendation is after the 2018 cutoff: the frozen model answers its 2012 one there, wrong
    and stale; every pre-cutoff item is right. The same numbers as chronokg's own split of the same answers."""
    log = read_eval_log(world["log"].location)
    (score,) = log.results.scores
    got = {name: m.value for name, m in score.metrics.items()}
    post = sum(1 for q in world["questions"].values() if q.target_date > w.CUTOFF)
    assert post == 3
    assert got["pre_cutoff_accuracy"] == 1.0 and got["post_cutoff_accuracy"] == 0.0
    assert (got["pre_cutoff_n"], got["post_cutoff_n"], got["stale_n"], got["undated_n"]) == (15, post, post, 0)
    _, samples = run_samples(world["run"])
    block, details = split.finish(split.count(samples, w.CUTOFF), Cutoff(date=w.CUTOFF, estimated=False, source="t"))
    assert (block["pre"]["accuracy"], block["post"]["accuracy"], block["post"]["stale"]) == (1.0, 0.0, post)
    assert block["pre"]["n"] == got["pre_cutoff_n"] and details["undated"] == got["undated_n"]
    sides = {str(s.id): s.scores["chronokg_scorer"].metadata["cutoff_side"] for s in log.samples}
    assert sides == {qid: "post" if q.target_date > w.CUTOFF else "pre" for qid, q in world["questions"].items()}


def test_inspect_score_after_a_newer_release_flips_what_eval_rescore_flips(world: dict[str, Any]) -> None:
    """Release 2 restates pair B: its 2018 item's key now gives the other option, so the frozen model's right
    answers there become wrong, in `inspect score --scorer chronokg/chronokg_scorer -S store=URI` (the questions
    file and protocol read from each sample's stored outcome) and in `eval rescore` alike; every other verdict
    stays."""
    before = verdicts(world["log"])
    after = verdicts(inspect_score(world, world["tmp"] / "rescored.eval", "--scorer", "chronokg/chronokg_scorer",
                                   "-S", f"store=kglite://{world['store']}"))
    flipped = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    result = eval_rescore(world, world["tmp"] / "rescored-runs")
    expected = {(f["question_id"], f["sample"]): (f["old_correct"], f["new_correct"]) for f in result["flips"]}
    assert flipped == expected
    assert len(flipped) == 3 and set(flipped.values()) == {(True, False)}
    assert {w.pair_of(world["questions"][qid]) for qid, _ in flipped} == {w.RESTATED}


def test_inspect_score_as_known_on_a_past_day_from_the_default_store(world: dict[str, Any]) -> None:
    """`--scorer chronokg/chronokg_scorer -S known_at=DAY` with no store argument reads the settings' store
    (CHRONOKG_STORE): as known between the releases, release 2 is not there and nothing flips, as in `eval
    rescore --known-at`; the known-at day is on every score."""
    log = inspect_score(world, world["tmp"] / "past.eval", "--scorer", "chronokg/chronokg_scorer",
                        "-S", f"questions={world['path']}", "-S", f"known_at={w.BETWEEN}",
                        CHRONOKG_STORE=f"kglite://{world['store']}")
    assert verdicts(log) == verdicts(world["log"])
    assert eval_rescore(world, world["tmp"] / "past-runs", "--known-at", w.BETWEEN)["flips"] == []
    assert {s.scores["chronokg_scorer"].metadata["known_at"] for s in log.samples} == {f"as known at {w.BETWEEN}"}


def test_a_bad_cutoff_is_one_clear_error(world: dict[str, Any]) -> None:
    from chronokg.errors import ChronoKGError
    from chronokg.integrations.inspect_tasks import tempomed

    with pytest.raises(ChronoKGError, match="cutoff='2018-13-01'"):
        tempomed(str(world["path"]), cutoff="2018-13-01")
    with pytest.raises(ChronoKGError, match="no such store file"):
        tempomed(str(world["path"]), store=f"kglite://{world['tmp'] / 'none.kgl'}")
    assert dt.date.fromisoformat(w.BETWEEN) < w.RELEASES[1]
