"""A benchmark's own aging detector: re-run every answer key and list the questions whose evidence changed,
saying for each whether its answer changed too (a new release often adds evidence, a later version say, that
leaves the answer where it was: that is not an aged question)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field, computed_field

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
    answer_changed: bool = Field(description="The target or its answer text differs from the question's")
    evidence_changed: bool = Field(description="The key's evidence rows differ from those at generation")
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
    changed: list[Changed] = Field(default_factory=list, description="Every question whose evidence changed")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def answers_changed(self) -> int:
        """Questions whose answer is no longer the one they hold."""
        return sum(c.answer_changed for c in self.changed)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def evidence_changed(self) -> int:
        """Questions whose evidence changed (their answer may not have)."""
        return sum(c.evidence_changed for c in self.changed)

    def summary(self) -> str:
        """One line: answers changed, and questions whose evidence changed under an unchanged answer."""
        return (f"{self.checked:,} questions, {self.keys:,} answer keys re-run: {self.answers_changed:,} answers "
                f"changed, {self.evidence_changed - self.answers_changed:,} evidence only (same answer)")


def verify_questions(store: GraphStore, questions: Iterable[Question]) -> VerifyReport:
    """Re-run each distinct (query, parameters) once; compare evidence hashes with those at generation, and the
    answer the new evidence gives (the family's own reading) with the question's target."""
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
        old_answer, new_answer = _answer_text(q, q.target), _answer_text(q, new_target)
        report.changed.append(Changed(
            id=q.id, family=q.family, variant=q.variant, query=key.query, params=key.params,
            answer_changed=new_target != q.target or new_answer != old_answer, evidence_changed=True,
            old_answer=old_answer, new_answer=new_answer, old_target=q.target, new_target=new_target,
            old_hash=key.evidence_hash, new_hash=new_hash, old_evidence=key.evidence, new_evidence=evidence))
    report.keys = len(cache)
    return report


def _answer_text(q: Question, target: str | None) -> str | None:
    """The option's text for a choice label; an open question's target is its own text."""
    for choice in q.choices:
        if choice.label == target:
            return choice.text
    return target
