"""Generated questions as `Question` nodes, linked to the facts they test and what they were built from."""

from __future__ import annotations

import json
from collections.abc import Iterable

from chronokg.bench.question import Question
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch
from chronokg.graph.store import GraphStore
from chronokg.graph.writer import WriteReport, write_batch
from chronokg.progress import Progress


def _ref(text: str) -> tuple[str, str]:
    """`Label:id` -> (label, id)."""
    label, _, node_id = text.partition(":")
    return label, node_id


def store_questions(store: GraphStore, questions: Iterable[Question], progress: Progress | None = None
                    ) -> WriteReport:
    """Write the questions in one transaction; the same questions again change nothing."""
    batch = GraphBatch()
    for q in questions:
        batch.node(
            schema.QUESTION, q.id, family=q.family, variant=q.variant, input=q.input, system=q.system,
            choices=[c.text for c in q.choices] or None, choice_labels=[c.label for c in q.choices] or None,
            target=q.target, target_date=q.target_date, key_query=q.answer_key.query,
            key_params=json.dumps(q.answer_key.params, sort_keys=True, ensure_ascii=False),
            evidence_hash=q.answer_key.evidence_hash, answer=q.answer_key.answer, snapshot=q.snapshot,
            generator=json.dumps(q.generator, sort_keys=True), metadata=json.dumps(q.metadata, sort_keys=True,
                                                                                     default=str),
        )
        batch.node(schema.SNAPSHOT, q.snapshot)  # known by id even when the snapshot was not recorded
        # One edge per snapshot the question was generated at, with that snapshot's evidence: regenerating after
        # a new release adds an edge beside the old one (the same snapshot again is a no-op).
        batch.edge(schema.GENERATED_AT, schema.QUESTION, q.id, schema.SNAPSHOT, q.snapshot,
                   evidence_hash=q.answer_key.evidence_hash, answer=q.answer_key.answer)
        for fact in q.facts:
            batch.edge(schema.TESTS, schema.QUESTION, q.id, schema.FACT, fact)
        for ref in q.derived_from:
            label, node_id = _ref(ref)
            batch.edge(schema.DERIVED_FROM, schema.QUESTION, q.id, label, node_id)
    return write_batch(store, batch, progress=progress)
