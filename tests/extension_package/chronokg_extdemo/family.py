"""A family: one question per fact, "what was SUBJECT's PREDICATE?", answered by the fact's value."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from chronokg.bench.family import Context, Family, FamilyOptions
from chronokg.bench.question import AnswerKey, Question


class ExtdemoOptions(FamilyOptions):
    pass


def generate(ctx: Context, options: Any) -> Iterator[Question]:
    rows = ctx.store.run("MATCH (f:Fact) RETURN f.id AS id, f.subject AS subject, f.predicate AS predicate, "
                         "f.value AS value ORDER BY id", {})
    for row in rows:
        yield Question(id=f"extdemo-{row['id']}", family="extdemo", variant="value",
                       input=f"What was {row['subject']}'s {row['predicate']}?", target=str(row["value"]),
                       answer_key=AnswerKey(query="extdemo-predicate-counts", params={}, evidence=[], evidence_hash="-",
                                            answer=str(row["value"])),
                       snapshot=ctx.snapshot, facts=[row["id"]])


FAMILY = Family(name="extdemo", help="One question per fact.", options=ExtdemoOptions, generate=generate)
