"""Reference baselines give the signatures the TempoMed metrics predict; pure and Cypher metrics agree.

Questions are generated from the real TempoMed-Bench sample under `--protocol chronokg` (the seed's
quirks would make even the oracle miss the 6 same-year items and mislabel transitions; see
docs/benchmarks/tempomed.md), then answered by the baselines through the real runner.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from chronokg.bench import snapshot
from chronokg.bench.family import generate
from chronokg.bench.question import Question, write_jsonl
from chronokg.eval import runner
from chronokg.eval.graph import write_predictions
from chronokg.eval.log import SampleRecord, latest
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import tempomed
from chronokg.metrics.spec import for_family
from chronokg.metrics.tempomed import (
    ACCURACY,
    ACCURACY_BY_YEAR,
    CONSISTENCY,
    HIST_RATIO,
    OPTION_GROUPS,
    TABLE1,
    THREE_WAY,
    buckets,
)

pytestmark = pytest.mark.slow  # whole evaluation runs and their plots


BASELINES = ["baseline/oracle", "baseline/latest-only", "baseline/frozen:2018", "baseline/random:3"]


@pytest.fixture(scope="module")
def evaluated(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("eval")
    path = tmp / "store.kgl"
    with KgliteStore(path, durable="off") as store:
        tempomed.load(store, [shared_data / "tempomed-bench"])
    with KgliteStore(path, read_only=True) as store:
        snap = snapshot.current(store)
        # Every MCQ (all years), and the year-sweep probes of the first 80 change pairs.
        questions = generate("tempomed", store, snap, {"protocol": "chronokg"})[0]
        questions += generate("tempomed", store, snap, {"protocol": "chronokg", "mcq": False, "probes": True,
                                                        "limit": 80})[0]
        qfile = tmp / "questions.jsonl"
        write_jsonl(qfile, questions)
        options = runner.RunOptions(protocol="chronokg", cache=False, concurrency=16)
        folder, info = runner.prepare(tmp / "runs", [qfile], [runner.ModelEntry(spec=b) for b in BASELINES],
                                      options)
        info, _ = runner.run(folder, info, runner.load_questions([qfile], None), store)
    samples = list(latest(folder / "samples.jsonl").values())
    with KgliteStore(path) as store:
        write_predictions(store, info, questions, samples)
    return {"path": path, "questions": questions, "samples": samples, "run": info.run_id, "info": info}


def metric(evaluated: dict[str, Any], spec: Any, model: str) -> Any:
    return spec.compute(evaluated["samples"], model)


def test_every_sample_answered(evaluated: dict[str, Any]) -> None:
    assert evaluated["info"].status == "complete"
    assert len(evaluated["samples"]) == len(evaluated["questions"]) * len(BASELINES)


def test_oracle_is_right_everywhere_and_every_transition_is_correct(evaluated: dict[str, Any]) -> None:
    acc = metric(evaluated, ACCURACY, "baseline/oracle")
    assert acc.value == 1.0 and acc.groups["probe"]["accuracy"] == 1.0
    consistency = metric(evaluated, CONSISTENCY, "baseline/oracle")
    assert consistency.details["rule"].startswith("chronokg")
    assert consistency.groups["correct_transition"]["count"] == consistency.details["differences"] > 60
    assert metric(evaluated, THREE_WAY, "baseline/oracle").groups["up_to_date"]["share_correct"] == 1.0


def test_latest_only_knows_only_the_present(evaluated: dict[str, Any]) -> None:
    acc = metric(evaluated, ACCURACY, "baseline/latest-only")
    assert acc.groups["up_to_date"]["accuracy"] == 1.0 and acc.groups["historical"]["accuracy"] == 0.0
    assert metric(evaluated, HIST_RATIO, "baseline/latest-only").value == 0.0
    consistency = metric(evaluated, CONSISTENCY, "baseline/latest-only")
    assert consistency.groups["only_know_latest"]["count"] == consistency.details["differences"]
    groups = metric(evaluated, OPTION_GROUPS, "baseline/latest-only").groups
    assert groups["historical"]["current_guideline"] == 1.0  # picks the up-to-date option for historical targets


def test_frozen_at_2018_is_stale_exactly_where_the_answer_changed_after_2018(evaluated: dict[str, Any]) -> None:
    model = "baseline/frozen:2018"
    by_id = {q.id: q for q in evaluated["questions"]}
    for s in evaluated["samples"]:
        if s.model != model or s.fields.get("kind") != "mcq" or s.fields.get("target") != "up_to_date":
            continue
        q = by_id[s.question_id]
        changed_after = q.metadata["year_current"] > 2018 >= q.metadata["year_previous"]
        assert (s.fields["status"] == "stale") == changed_after, q.id
        if q.metadata["year_current"] <= 2018:
            assert s.fields["status"] == "correct"
    estimate = metric(evaluated, ACCURACY_BY_YEAR, model).details["cutoff_estimate"]
    assert estimate is not None and abs(estimate - 2018) <= 1
    assert metric(evaluated, ACCURACY_BY_YEAR, "baseline/oracle").details["cutoff_estimate"] is None


def test_random_is_chance_within_its_interval(evaluated: dict[str, Any]) -> None:
    from chronokg.metrics.tempomed import ACCURACY_CI

    result = metric(evaluated, ACCURACY_CI, "baseline/random:3")
    for target in ("up_to_date", "historical"):
        lo, hi = result.groups[target]["bootstrap95"]
        assert lo <= 1 / 5 <= hi, (target, lo, hi)


def test_pure_and_cypher_metrics_agree(evaluated: dict[str, Any]) -> None:
    with KgliteStore(evaluated["path"], read_only=True) as store:
        for spec in for_family(["tempomed"]):
            if spec.cypher is None:
                continue
            for model in BASELINES:
                pure = spec.compute(evaluated["samples"], model)
                graph = spec.from_graph(store, evaluated["run"], model)
                assert pure.model_dump() == graph.model_dump(), (spec.name, model)


# --- hand-computed cases --------------------------------------------------------------------------------


def rec(correct: bool, **fields: Any) -> SampleRecord:
    return SampleRecord(question_id=str(id(fields)) + str(len(fields)), model="m", family="tempomed",
                        correct=correct, fields=fields)


def test_metrics_by_hand() -> None:
    samples = [
        rec(True, kind="mcq", target="up_to_date", group="current_guideline", year_current=2009, record=1),
        rec(False, kind="mcq", target="up_to_date", group="prior_guideline", year_current=2010, record=2),
        rec(False, kind="mcq", target="up_to_date", group="invalid", year_current=2015, record=3),
        rec(True, kind="mcq", target="up_to_date", group="current_guideline", year_current=2015, record=4),
        rec(True, kind="mcq", target="historical", group="prior_guideline", year_current=2015, record=4),
        rec(False, kind="mcq", target="historical", group="unknown", year_current=2015, record=3),
    ]
    acc = ACCURACY.compute(samples, "m")
    assert acc.value == pytest.approx(3 / 6) and acc.groups["up_to_date"]["accuracy"] == pytest.approx(2 / 4)
    table = TABLE1.compute(samples, "m").groups
    # 4 up-to-date items: 2 current, 1 prior, 1 invalid -> accuracy 2/4, over valid answers 2/3
    assert table["accuracy"] == pytest.approx(0.5) and table["accuracy_valid"] == pytest.approx(2 / 3)
    assert table["share_invalid"] == pytest.approx(0.25)
    assert HIST_RATIO.compute(samples, "m").value == pytest.approx((1 / 2) / (2 / 4))
    rows = [{"year_current": 2009, "n": 1, "correct": 1}, {"year_current": 2010, "n": 1, "correct": 0},
            {"year_current": 2015, "n": 2, "correct": 1}]
    bs = buckets(rows)
    assert [b["label"] for b in bs] == ["Pre-2010", "2015"]  # 2010 goes into the Pre bucket, as in the seed
    assert bs[0]["accuracy"] == 0.5 and bs[0]["x"] == pytest.approx(2009.5)


def test_seed_extraction_quirks_reach_the_score() -> None:
    from chronokg.eval.profiles.tempomed import PROFILE

    q = Question.model_validate({
        "id": "q", "family": "tempomed", "variant": "probe/prior", "input": "x", "target": "C",
        "target_date": dt.date(2000, 1, 1), "snapshot": "s",
        "answer_key": {"query": "decision-at", "params": {}, "evidence": [], "evidence_hash": "h"},
        "choices": [{"label": "A", "text": "Yes"}, {"label": "B", "text": "No"}, {"label": "C",
                                                                                 "text": "I do not know"}]})
    seed = PROFILE.extract(q, "##Answer: C\n##Explanation: a guideline", "seed")
    fixed = PROFILE.extract(q, "##Answer: C\n##Explanation: a guideline", "chronokg")
    assert (seed, fixed) == ("A", "C")  # the seed scores this abstention as Yes
