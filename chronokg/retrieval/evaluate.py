"""Retrieval metrics on generated questions: recall@k of the target version's passage, stale-passage rate.

A question's *target* passages are the facts its answer key says are in force on its date (the
`in_force` rows of `decision-at`, the `current` rows of other keys): for a TempoMed historical
item, the prior guideline's recommendation. recall@k = share of questions with a target among
the top k; stale-passage rate = share of all hits that are not valid on the question's date.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from chronokg.bench.question import Question
from chronokg.retrieval.rag import Retriever, Scope, query_text
from chronokg.retrieval.types import RetrievalResult

Arm = Literal["time-aware", "atemporal", "today"]  # atemporal: every version (the runner's); today: valid today


def target_facts(question: Question) -> set[str]:
    """Fact ids the question's answer key marks as in force (or current) on its date."""
    out: set[str] = set()
    for row in question.answer_key.evidence:
        if row.get("in_force") is True or row.get("current") is True:
            fid = row.get("fact_id") or row.get("id")
            if isinstance(fid, str):
                out.add(fid)
    return out


def recall_hit(results: Sequence[RetrievalResult], targets: set[str]) -> bool:
    return any(r.metadata.get("fact_id", r.id) in targets for r in results)


def stale_count(results: Sequence[RetrievalResult], day: dt.date) -> int:
    return sum(not r.valid_at(day) for r in results)


class QuestionHits(BaseModel):
    id: str
    day: dt.date
    targets: list[str]
    hits: list[str]
    found: bool
    stale: int


class RetrievalReport(BaseModel):
    """One retrieval arm over a question set."""

    mode: str
    k: int
    questions: int
    without_target: int = Field(description="Questions whose key names no fact in force (left out)")
    recall_at_k: float
    stale_rate: float
    hits: int
    per_question: list[QuestionHits] = Field(default_factory=list)

    def row(self) -> dict[str, Any]:
        return {"mode": self.mode, "k": self.k, "questions": self.questions, f"recall@{self.k}": self.recall_at_k,
                "stale-passage rate": self.stale_rate, "hits": self.hits}


def evaluate(retriever: Retriever, questions: Iterable[Question], mode: Arm, k: int = 2,
             today: dt.date | None = None) -> RetrievalReport:
    """Run one arm: `time-aware` (as of each question's date), `atemporal` (similarity alone over every version,
    as the runner's `--rag atemporal`) or `today` (only the passages valid today)."""
    items = [q for q in questions]
    kept = [(q, target_facts(q)) for q in items]
    usable = [(q, t) for q, t in kept if t and q.target_date is not None]
    days = [q.target_date for q, _ in usable]
    as_of: list[dt.date | None] = list(days) if mode == "time-aware" else [None] * len(usable)
    scope: Scope = "all" if mode == "atemporal" else "current"
    if today is not None:
        retriever.today = today
    results = retriever.retrieve_many([query_text(q) for q, _ in usable], as_of, k, scope=scope)
    per: list[QuestionHits] = []
    for (q, targets), day, hits in zip(usable, days, results, strict=True):
        assert day is not None
        per.append(QuestionHits(id=q.id, day=day, targets=sorted(targets), hits=[h.id for h in hits],
                                found=recall_hit(hits, targets), stale=stale_count(hits, day)))
    total_hits = sum(len(h.hits) for h in per)
    return RetrievalReport(
        mode=mode, k=k, questions=len(per), without_target=len(items) - len(usable),
        recall_at_k=sum(h.found for h in per) / len(per) if per else 0.0,
        stale_rate=sum(h.stale for h in per) / total_hits if total_hits else 0.0, hits=total_hits, per_question=per)

