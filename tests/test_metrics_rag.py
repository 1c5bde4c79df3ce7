"""TempoMed Table 3 (`--rag`): the sample fields from the retrieval step, and the metric by hand, both forms."""

from __future__ import annotations

from typing import Any

import pytest

from chronokg.bench import snapshot
from chronokg.bench.family import generate
from chronokg.bench.question import Question
from chronokg.demo.corpus import load_demo
from chronokg.eval.graph import write_predictions
from chronokg.eval.log import RunInfo, SampleRecord
from chronokg.eval.profile import profile_for
from chronokg.graph.kglite_store import KgliteStore
from chronokg.metrics.tempomed import TABLE3


@pytest.fixture(scope="module")
def demo() -> KgliteStore:
    store = KgliteStore(":memory:")
    load_demo(store)
    return store


@pytest.fixture(scope="module")
def items(demo: KgliteStore) -> list[Question]:
    questions = generate("tempomed", demo, snapshot.current(demo), {"protocol": "chronokg"})[0]
    return [q for q in questions if q.variant.startswith("mcq")]


def step(*fact_ids: str) -> dict[str, Any]:
    return {"step": "retrieval", "mode": "time-aware", "k": 2,
            "passages": [{"id": f, "score": 0.5, "text": "..."} for f in fact_ids]}


def sample(q: Question, original: str, given: list[dict[str, Any]]) -> SampleRecord:
    profile = profile_for("tempomed")
    answer = (q.metadata["original_to_display_option"] or {}).get(original, "ZZ")
    correct, score, fields = profile.score(q, answer, "chronokg")
    fields = {**fields, **profile.context_fields(q, given)}
    return SampleRecord(question_id=q.id, model="m", family="tempomed", variant=q.variant, answer=answer,
                        correct=correct, score=score, fields=fields)


def test_table3_by_hand_in_both_forms(demo: KgliteStore, items: list[Question]) -> None:
    up = [q for q in items if q.metadata["target"] == "up_to_date"][:4]
    hist = [q for q in items if q.metadata["target"] == "historical"][:2]
    # Up-to-date items: (chosen original option, passages given): the counterpart is the prior version (facts[1]).
    plan = [(up[0], "A", [step(up[0].facts[0], up[0].facts[1])]),  # right, counterpart retrieved
            (up[1], "B", [step(up[1].facts[1])]),                    # outdated, counterpart retrieved
            (up[2], "A", [step(up[2].facts[0])]),                    # right, no counterpart
            (up[3], "C", [step()]),                                  # a distractor ("irrelevant"), nothing found
            (hist[0], "B", [step(hist[0].facts[0])]),                # historical right; counterpart = current
            (hist[1], "E", [step(hist[1].facts[1])])]                # abstains; own version only
    records = [sample(q, o, g) for q, o, g in plan]
    assert records[0].fields["counterpart_passage"] is True and records[0].fields["target_passage"] is True
    assert records[4].fields["counterpart_passage"] is True and records[5].fields["counterpart_passage"] is False
    pure = TABLE3.compute(records, "m")
    info = RunInfo(run_id="run-rag", models=[{"spec": "m"}], questions=[], protocol="chronokg", samples=1)
    write_predictions(demo, info, [q for q, _, _ in plan], records)
    assert TABLE3.from_graph(demo, "run-rag", "m").model_dump() == pure.model_dump()
    cell = pure.groups
    current = "time-aware · original_current_guideline"
    assert cell[f"{current} · all"] == {"accuracy": 0.5, "n": 4, "correct": 2}
    assert cell[f"{current} · all · shares"] == {"current_guideline": 0.5, "prior_guideline": 0.25,
                                                 "irrelevant": 0.25, "unknown": 0.0, "invalid": 0.0}
    assert cell[f"{current} · with_counterpart"] == {"accuracy": 0.5, "n": 2, "correct": 1}
    assert cell[f"{current} · without_counterpart"] == {"accuracy": 0.5, "n": 2, "correct": 1}
    prior = "time-aware · counterpart_prior_guideline"
    assert cell[f"{prior} · all"]["accuracy"] == 0.5 and cell[f"{prior} · all · shares"]["unknown"] == 0.5
    assert cell[f"{prior} · with_counterpart"]["accuracy"] == 1.0
    assert cell[f"{prior} · without_counterpart"]["accuracy"] == 0.0

def test_table3_without_rag_and_empty_splits(items: list[Question]) -> None:
    q = next(q for q in items if q.metadata["target"] == "up_to_date")
    records = [sample(q, "A", [])]  # no --rag: no retrieval step, the "none" arm, every item without counterpart
    assert "rag" not in records[0].fields
    groups = TABLE3.compute(records, "m").groups
    assert groups["none · original_current_guideline · all"]["accuracy"] == 1.0
    assert "none · original_current_guideline · with_counterpart" not in groups
    assert TABLE3.compute([], "m").groups == {}
