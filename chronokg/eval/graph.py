"""Predictions into the graph: a `Run` node, and a `Prediction` per sample linked to its question, its run
and the fact its chosen option states, with its model's knowledge cutoff as the run recorded it and whether its
question asks about the present (`present`). Writing the same run again (a resumed run) changes nothing but the
cutoffs, which take the latest run's (a cutoff declared or estimated again)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from chronokg.bench.graph import store_questions
from chronokg.bench.question import Question
from chronokg.eval.cutoff import Cutoff
from chronokg.eval.log import RunInfo, SampleRecord
from chronokg.eval.profile import profile_for
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch
from chronokg.graph.merge import DEFAULT_POLICY
from chronokg.graph.model import stable_id
from chronokg.graph.store import GraphStore
from chronokg.graph.writer import WriteReport, write_batch

RESERVED = {"title", "name", "label", "type", "id"}  # kglite fills the first four itself
# A prediction's answer stays the first one written (its run folder keeps later ones); the cutoff is the run's
# record of its model, which a later write of the same run may correct.
POLICY = DEFAULT_POLICY.with_latest(schema.PREDICTION, "cutoff", "cutoff_estimated")


def asks_present(question: Question) -> bool:
    """Whether the question asks what holds now: its gold option is the up-to-date one (a historical item asks
    about its own date, a probe about a given year). `accuracy-by-valid-year` scores only these against the gold
    of each year."""
    return any(c.label == question.target and c.role == "up_to_date" for c in question.choices)


def prediction_id(run_id: str, record: SampleRecord) -> str:
    return stable_id(run_id, record.question_id, record.model, record.sample, prefix="p-")


def _cutoff_of(cutoff: Cutoff | None) -> dict[str, Any]:
    """The model's cutoff as the run recorded it (`run-cutoffs` splits the predictions at it)."""
    if cutoff is None or cutoff.date is None:
        return {}
    return {"cutoff": cutoff.date, "cutoff_estimated": cutoff.estimated}


def write_predictions(store: GraphStore, info: RunInfo, questions: Sequence[Question],
                      records: Iterable[SampleRecord]) -> WriteReport:
    """One transaction: the questions (idempotent), the run, and one prediction per successful sample."""
    by_id = {q.id: q for q in questions}
    stored = {r["id"] for r in store.run("UNWIND $ids AS id MATCH (q:Question {id: id}) RETURN q.id AS id",
                                         {"ids": list(by_id)})}
    # Questions are content-addressed: one already stored is this very question, no need to compare it again.
    store_questions(store, [q for q in questions if q.id not in stored])
    batch = GraphBatch(POLICY)
    batch.node(schema.RUN, info.run_id, models=[m["spec"] for m in info.models], protocol=info.protocol,
               samples=info.samples, started=info.started, snapshot=info.snapshot, chronokg=info.chronokg)
    cutoffs = {spec: Cutoff.model_validate(c) for spec, c in info.cutoffs.items()}
    for r in records:
        if not r.ok:
            continue
        question = by_id.get(r.question_id)
        if question is None:
            continue
        pid = prediction_id(info.run_id, r)
        fields: dict[str, Any] = {k: v for k, v in r.fields.items() if k not in RESERVED and v is not None
                                  and not isinstance(v, dict | list)}
        batch.node(schema.PREDICTION, pid, run_id=info.run_id, model=r.model, question_id=r.question_id,
                   sample=r.sample, family=r.family, variant=r.variant, answer=r.answer, correct=r.correct,
                   score=r.score, output=r.output, target=question.target, target_date=question.target_date,
                   steps=json.dumps(r.steps) if r.steps else None, present=asks_present(question),
                   **_cutoff_of(cutoffs.get(r.model)),
                   **{f"f_{k}": v for k, v in fields.items()})
        batch.edge(schema.ANSWERS, schema.PREDICTION, pid, schema.QUESTION, r.question_id)
        batch.edge(schema.IN_RUN, schema.PREDICTION, pid, schema.RUN, info.run_id)
        fact = profile_for(question.family).chosen_fact(question, r.answer)
        if fact is not None:
            batch.edge(schema.CHOSE, schema.PREDICTION, pid, schema.FACT, fact)
    return write_batch(store, batch)
