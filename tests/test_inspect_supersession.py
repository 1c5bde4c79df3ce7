"""A later guideline superseding an earlier one, re-scored in inspect_ai and in chronokg alike: the demo corpus's
TempoMed questions (MCQs and year-sweep probes) answered in `inspect eval chronokg/tempomed` by a model that
answers what release 1 held true; then the corpus's later release loaded (the 2020 AHA guidelines supersede the
2010 pediatric defibrillation dose, the demo's own load), and the log re-scored by `inspect score LOG --scorer
chronokg/chronokg_scorer -S store=URI` and the same answers by `chronokg eval score` + `eval rescore`.

The probes asking about a year from 2020 on flip right -> wrong; the MCQs do not, since TempoMed's answer keys are
keyed by their change pair and its fixed dates, which a newer guideline leaves as they were.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench.question import read_jsonl
from chronokg.cli.app import app
from chronokg.demo.corpus import load_later_release, read_corpus, read_later
from chronokg.eval.profile import profile_for
from chronokg.graph.kglite_store import KgliteStore
from tests.demo_stores import copy_store
from tests.test_inspect_split import verdicts

inspect_ai = pytest.importorskip("inspect_ai", reason="the integrations extra (inspect_ai) is not installed") \
    if not os.environ.get("CI") else __import__("inspect_ai")

from inspect_ai import eval as inspect_eval  # noqa: E402
from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.model import ChatMessage, ModelOutput, get_model  # noqa: E402
from inspect_ai.solver._task_state import sample_state  # noqa: E402  (inspect's running sample; not re-exported)

pytestmark = pytest.mark.slow  # inspect_ai's harness and its CLI
ROOT = Path(__file__).resolve().parents[1]
INSPECT = Path(sys.executable).with_name("inspect")
MODEL = "inspect/release-1-oracle"


def cli(*args: str) -> str:
    got = CliRunner().invoke(app, list(args))
    assert got.exit_code == 0, got.output
    return got.output


@pytest.fixture(scope="module")
def world(demo_built: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A copy of the demo corpus store; its TempoMed questions with probes (`generate tempomed --probes`) answered
    in inspect by the release-1 oracle (each question's target as generated); then the later release loaded."""
    import importlib.util

    tmp = tmp_path_factory.mktemp("inspect-supersession")
    store = copy_store(demo_built.parent, tmp / "demo") / demo_built.name
    uri = f"kglite://{store}"
    path = tmp / "questions.jsonl"
    cli("--store", uri, "generate", "tempomed", "--protocol", "chronokg", "--probes", "--probe-years", "2000,2024",
        "-o", str(path))
    qs = {q.id: q for q in read_jsonl(path) if q.family == "tempomed"}

    def output(messages: list[ChatMessage], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        state = sample_state()
        assert state is not None
        q = qs[str(state.sample_id)]
        return ModelOutput.from_content("mockllm", profile_for(q.family).render(q, q.target))

    spec = importlib.util.find_spec("litellm")  # tiktoken's o200k_base, shipped by litellm (no network here)
    assert spec is not None and spec.origin is not None
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(Path(spec.origin).parent / "litellm_core_utils" / "tokenizers"))
        (log,) = inspect_eval("chronokg/tempomed", model=get_model("mockllm/model", custom_outputs=output),
                              display="none", log_dir=str(tmp / "logs"),
                              task_args={"questions": str(path), "protocol": "chronokg"})
    assert log.status == "success", log.error
    cli("--store", uri, "eval", "score", str(path), log.location, "--model", MODEL, "--protocol", "chronokg",
        "--log-dir", str(tmp / "runs"))
    (run,) = (tmp / "runs").glob("run-*")
    with KgliteStore(store) as s:
        load_later_release(s)
    return {"tmp": tmp, "uri": uri, "questions": qs, "log": log, "run": run}


def superseding_year() -> int:
    """The year of the later release's guideline that supersedes a recommendation."""
    later = read_later()
    years = {g.id: g.year for g in later.guidelines}
    (year,) = {years[v.guideline] for v in later.versions}
    return year


def inspect_score(world: dict[str, Any], name: str, *args: str) -> Any:
    """`inspect score LOG --scorer chronokg/chronokg_scorer -S store=URI ARGS`, inspect's own CLI."""
    out = world["tmp"] / f"{name}.eval"
    got = subprocess.run([str(INSPECT), "score", world["log"].location, "--output-file", str(out), "--action",
                          "overwrite", "--display", "none", "--scorer", "chronokg/chronokg_scorer",
                          "-S", f"store={world['uri']}", *args], capture_output=True, text=True, timeout=300,
                         cwd=world["tmp"], env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert got.returncode == 0, got.stderr[-3000:]
    return read_eval_log(str(out))


def eval_rescore(world: dict[str, Any], name: str, *args: str) -> dict[str, Any]:
    return dict(json.loads(cli("--store", world["uri"], "eval", "rescore", str(world["run"]), "--out",
                               str(world["tmp"] / name), "-f", "json", *args)))


@pytest.fixture(scope="module")
def rescored(world: dict[str, Any]) -> dict[str, Any]:
    """`inspect score` of the log and `eval rescore` of the same answers, both against the store now."""
    result = eval_rescore(world, "rescored-runs")
    return {"inspect": inspect_score(world, "rescored"), "result": result, "folder": Path(result["folder"])}


def test_inspect_score_flips_what_eval_rescore_flips_when_a_later_guideline_supersedes(
        world: dict[str, Any], rescored: dict[str, Any]) -> None:
    """Every answer was right as release 1 knew it; after the later release the probes asking about a year from
    the superseding guideline's on are wrong, identically in inspect and in chronokg; no MCQ flips."""
    before = verdicts(world["log"])
    assert set(before.values()) == {True}
    after = verdicts(rescored["inspect"])
    flipped = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    expected = {(f["question_id"], f["sample"]): (f["old_correct"], f["new_correct"])
                for f in rescored["result"]["flips"]}
    assert flipped == expected
    assert flipped and set(flipped.values()) == {(True, False)}
    year = superseding_year()
    for qid, _ in flipped:
        q = world["questions"][qid]
        assert q.variant.startswith("probe/"), q.variant
        assert int(q.metadata["question_target_year"]) >= year, (qid, q.metadata["question_target_year"])
    probes_after = [q for q in world["questions"].values()
                    if q.variant == "probe/current" and int(q.metadata["question_target_year"]) >= year
                    and q.answer_key.params.get("decision") == read_later().versions[0].decision]
    assert {qid for qid, _ in flipped} == {q.id for q in probes_after}


def test_the_exported_rescored_run_shows_the_same_flips(world: dict[str, Any], rescored: dict[str, Any]) -> None:
    """`eval export --format inspect` of the re-scored run: its flips in the log's metadata and its samples'
    verdicts are those `inspect score` gave."""
    logs = world["tmp"] / "export"
    cli("eval", "export", "--format", "inspect", str(rescored["folder"]), "--out", str(logs))
    (file,) = logs.glob("*.eval")
    log = read_eval_log(str(file))
    meta = log.eval.metadata or {}
    assert meta["rescored_from"] and meta["known_at"] == "now"
    got = {(f["question_id"], f["sample"]): (f["old_correct"], f["new_correct"]) for f in meta["flips"]}
    assert got == {(f["question_id"], f["sample"]): (f["old_correct"], f["new_correct"])
                   for f in rescored["result"]["flips"]}
    assert verdicts(log) == verdicts(rescored["inspect"])


def test_as_known_before_the_later_release_nothing_flips(world: dict[str, Any]) -> None:
    """`-S known_at=DAY` between the corpus's two releases: the superseding guideline is not known yet, the
    superseded recommendation still held in force, so no verdict flips, in inspect or in `eval rescore
    --known-at`; the known-at day is on every score."""
    first, later = read_corpus().source.release_date, read_later().source.release_date
    assert first < later
    between = (first + (later - first) / 2).isoformat()
    log = inspect_score(world, "between", "-S", f"known_at={between}")
    assert verdicts(log) == verdicts(world["log"])
    assert eval_rescore(world, "between-runs", "--known-at", between)["flips"] == []
    assert {s.scores["chronokg_scorer"].metadata["known_at"] for s in log.samples} == {f"as known at {between}"}
