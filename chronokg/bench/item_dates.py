"""An item's dates, as another harness filters or splits on them: the date the question asks about, when the gold
answer's fact is valid (valid-from, valid-to) and since when the store knows the evidence (known-from).

All read from the question's answer key: the gold row is the evidence row that states the key's answer (its
`text`, `value` or `object_caption`), preferring one in force on the question's date. Where the key's query
returns no known time (TempoMed's `decision-at`), `known` (fact id -> known-from, read from a store) fills it in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from chronokg.bench.question import Question

KEYS = ("target_date", "gold_valid_from", "gold_valid_to", "evidence_known_from")
_TEXT = ("text", "value", "object_caption")


def gold_row(question: Question) -> dict[str, Any] | None:
    """The evidence row stating the answer key's answer (in force first), or None."""
    answer = question.answer_key.answer
    if answer is None:
        return None
    rows = [r for r in question.answer_key.evidence if any(r.get(k) == answer for k in _TEXT)]
    rows.sort(key=lambda r: r.get("in_force") is not True)
    return rows[0] if rows else None


def gold_fact_ids(questions: Iterable[Question]) -> list[str]:
    """The fact ids of the gold rows that carry no known time of their own (to be read from a store)."""
    out = set()
    for q in questions:
        row = gold_row(q)
        if row is not None and row.get("known_from") is None and row.get("fact_id"):
            out.add(str(row["fact_id"]))
    return sorted(out)


def item_dates(question: Question, known: Mapping[str, Any] | None = None) -> dict[str, str | None]:
    """{target_date, gold_valid_from, gold_valid_to, evidence_known_from} as ISO dates (None: not known).
    evidence_known_from is the gold row's known-from, else the latest known-from among the evidence rows."""
    row = gold_row(question) or {}
    known_from = row.get("known_from") or (known or {}).get(str(row.get("fact_id") or ""))
    if known_from is None:
        stamps = [str(r["known_from"]) for r in question.answer_key.evidence if r.get("known_from")]
        known_from = max(stamps) if stamps else None
    return {"target_date": question.target_date.isoformat() if question.target_date else None,
            "gold_valid_from": _iso(row.get("valid_from")), "gold_valid_to": _iso(row.get("valid_to")),
            "evidence_known_from": _iso(known_from)}


def _iso(value: Any) -> str | None:
    return str(value)[:10] if value else None
