"""A benchmark's own aging detector: re-run every answer key and list the questions whose evidence changed."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

from chronokg.bench.family import FAMILIES
from chronokg.bench.question import Question
from chronokg.graph.store import GraphStore
from chronokg.queries.spec import all_queries, evidence_hash


class Changed(BaseModel):
    id: str
    family: str
    variant: str
    query: str
    params: dict[str, Any]
    old_answer: str | None = None
    new_answer: str | None = None
    old_target: str
    new_target: str | None = None
    old_hash: str
    new_hash: str
    old_evidence: list[dict[str, Any]] = Field(default_factory=list, description="What the key returned when the "
                                                                                 "question was generated")
    new_evidence: list[dict[str, Any]] = Field(default_factory=list, description="What it returns now")


class VerifyReport(BaseModel):
    checked: int
    keys: int = Field(description="Distinct answer keys re-run")
    changed: list[Changed] = Field(default_factory=list)


def verify_questions(store: GraphStore, questions: Iterable[Question]) -> VerifyReport:
    """Re-run each distinct (query, parameters) once; compare evidence hashes with those at generation."""
    queries = all_queries()
    cache: dict[tuple[str, str], list[dict[str, Any]]] = {}
    report = VerifyReport(checked=0, keys=0)
    for q in questions:
        report.checked += 1
        key = q.answer_key
        memo = (key.query, repr(sorted(key.params.items())))
        if memo not in cache:
            rows = queries.get(key.query).run(store, key.params)
            cache[memo] = [r.model_dump(mode="json") for r in rows]
        evidence = cache[memo]
        new_hash = evidence_hash(evidence)
        if new_hash == key.evidence_hash:
            continue
        family = FAMILIES.get(q.family) if q.family in FAMILIES else None
        new_target = family.answer(q, evidence) if family is not None and family.answer is not None else None
        new_answer = _answer_text(q, new_target)
        report.changed.append(Changed(
            id=q.id, family=q.family, variant=q.variant, query=key.query, params=key.params, old_answer=key.answer,
            new_answer=new_answer, old_target=q.target, new_target=new_target, old_hash=key.evidence_hash,
            new_hash=new_hash, old_evidence=key.evidence, new_evidence=evidence))
    report.keys = len(cache)
    return report


def _answer_text(q: Question, target: str | None) -> str | None:
    for choice in q.choices:
        if choice.label == target:
            return choice.text
    return target
