"""Up-to-date facts from the graph: `latest(subject, predicate)` and `current_answer(question)`.

A generated question carries its answer key (a named query and its parameters, as of the
question's date). Its *current* answer is the same query moved to today: the day it asks
about becomes today and "as known on" becomes "as known now". The family then reads its
target from the new evidence, exactly as `chronokg bench verify` does for changed keys.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from chronokg.bench.question import Question
from chronokg.graph.store import GraphStore
from chronokg.queries.current import LatestRow
from chronokg.queries.spec import all_queries, evidence_hash, run_query

# How a query's parameters move to "today", for the keys whose day is not simply called `date`.
# (name -> function(params, today) -> params); every other key: `date` -> today, `known_at` -> now.
NowRule = Callable[[dict[str, Any], dt.date], dict[str, Any]]


def _window_today(params: dict[str, Any], today: dt.date) -> dict[str, Any]:
    """A [from, to) window (ChroKnow's `facts-during`) becomes today alone."""
    return {**params, "from": today.isoformat(), "to": (today + dt.timedelta(days=1)).isoformat()}


NOW_RULES: dict[str, NowRule] = {"facts-during": _window_today}
DAY_PARAMS = ("date", "valid_at", "day")
KNOWN_PARAMS = ("known_at",)


def latest(store: GraphStore, subject: str, predicate: str | None = None,
           today: dt.date | None = None) -> list[LatestRow]:
    """The facts of `subject` (one `predicate`, or all) valid today and known now; where none is valid today,
    each predicate's newest version (`current = False`), so a series observed at points still answers."""
    params: dict[str, Any] = {"subject": subject, "predicate": predicate, "date": today or dt.date.today()}
    return run_query(store, "latest", params)


def params_as_of_today(query: str, params: dict[str, Any], today: dt.date) -> dict[str, Any]:
    """An answer key's parameters moved to `today` (see `NOW_RULES` and the default rule)."""
    rule = NOW_RULES.get(query)
    if rule is not None:
        return rule(dict(params), today)
    out = dict(params)
    for name in DAY_PARAMS:
        if name in out:
            out[name] = today.isoformat()
    for name in KNOWN_PARAMS:
        if name in out:
            out[name] = None
    return out


class CurrentAnswer(BaseModel):
    """A question's answer key re-run as of `today`, beside what it said when the question was made."""

    id: str
    query: str
    params: dict[str, Any]
    today: dt.date
    evidence: list[dict[str, Any]]
    evidence_hash: str
    answer: str | None = Field(default=None, description="The answer text the graph gives today")
    target: str | None = Field(default=None, description="The option (or yes/no) that is right today, if any")
    key_answer: str | None = Field(default=None, description="The answer when the question was generated")
    key_target: str
    changed: bool = Field(description="Today's evidence differs from the key's")


def current_answer(store: GraphStore, question: Question, today: dt.date | None = None) -> CurrentAnswer:
    """Re-run `question`'s answer key as of `today` (default: today) and read its answer."""
    from chronokg.bench.family import FAMILIES

    day = today or dt.date.today()
    key = question.answer_key
    spec = all_queries().get(key.query)
    params = spec.validate(params_as_of_today(key.query, key.params, day)).model_dump(mode="json", by_alias=True)
    evidence = [r.model_dump(mode="json") for r in spec.run(store, params)]
    family = FAMILIES.get(question.family) if question.family in FAMILIES else None
    target = family.answer(question, evidence) if family is not None and family.answer is not None else None
    text = next((c.text for c in question.choices if c.label == target), None) or evidence_text(evidence) or target
    return CurrentAnswer(
        id=question.id, query=key.query, params=params, today=day, evidence=evidence,
        evidence_hash=evidence_hash(evidence), answer=text, target=target, key_answer=key.answer,
        key_target=question.target, changed=evidence_hash(evidence) != key.evidence_hash)


def evidence_text(evidence: list[dict[str, Any]]) -> str | None:
    """A generic reading of evidence rows: the text or value of the row in force (or current)."""
    for flag in ("in_force", "current"):
        for row in evidence:
            if row.get(flag) is True:
                for field in ("text", "value", "object_caption", "object"):
                    if row.get(field) not in (None, ""):
                        return str(row[field])
    return None
