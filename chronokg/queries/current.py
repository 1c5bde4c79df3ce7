"""`latest`: the up-to-date value of a subject's predicates, even where nothing is valid today.

`as-of` with today's date answers "what is true now", but a series observed at points
(population, a yearly figure) is valid only for its own period, so as-of today often
finds nothing. `latest` returns, per predicate, the facts valid on the day (known now);
where none is, the most recent version (largest `valid_from`), marked `current = false`.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import Field

from chronokg.queries.catalog import FACT_RETURN, known_clause, predicate_clause
from chronokg.queries.rows import FactRow
from chronokg.queries.spec import QueryParams, QuerySpec, register


class LatestParams(QueryParams):
    subject: str = Field(description="Subject id")
    predicate: str | None = Field(default=None, description="Only this predicate")
    date: dt.date | None = Field(default=None, description="The day that counts as now (default: today)")


class LatestRow(FactRow):
    current: bool = Field(description="Valid on the day; false: the most recent version, no longer (or not yet) "
                                      "valid")


def _latest(p: LatestParams) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {"subject": p.subject}
    where = ["f.subject_id = $subject", known_clause("f", None)]
    if p.predicate is not None:
        where.append(predicate_clause("f", "$predicate", anchored=True))
        params["predicate"] = p.predicate
    cypher = "MATCH (f:Fact)\nWHERE " + "\n  AND ".join(where) + "\nWITH f" + FACT_RETURN + ", false AS current"
    cypher += "\nORDER BY predicate, valid_from, id"
    return cypher, params


def _valid(row: FactRow, day: dt.date) -> bool:
    return (row.valid_from is None or row.valid_from <= day) and (row.valid_to is None or row.valid_to > day)


def _pick(rows: list[LatestRow], p: LatestParams) -> list[LatestRow]:
    day = p.date or dt.date.today()
    by_predicate: dict[str, list[LatestRow]] = {}
    for row in rows:
        by_predicate.setdefault(row.predicate, []).append(row)
    out: list[LatestRow] = []
    for versions in by_predicate.values():
        now = [r for r in versions if _valid(r, day)]
        if now:
            out.extend(r.model_copy(update={"current": True}) for r in now)
            continue
        started = [r for r in versions if r.valid_from is None or r.valid_from <= day]
        if not started:
            continue  # nothing of it had begun on the day: no answer rather than a future one
        newest = max((r.valid_from or dt.date.min) for r in started)
        out.extend(r.model_copy(update={"current": False}) for r in started
                   if (r.valid_from or dt.date.min) == newest)
    return out


LATEST = register(QuerySpec(
    "latest", "The facts of SUBJECT valid today (or on DATE), and where none is, each predicate's newest version.",
    LatestParams, LatestRow, _latest, post=_pick, tags=frozenset({"cli", "tool"}),
    columns=("predicate", "object", "object_caption", "value", "valid_from", "valid_to", "current"),
))
