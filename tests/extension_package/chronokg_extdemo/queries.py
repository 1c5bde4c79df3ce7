"""A query: how many facts each predicate holds (registered when chronokg reads `chronokg.queries`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from chronokg.queries.spec import QueryParams, QuerySpec, register


class NoParams(QueryParams):
    pass


class PredicateCount(BaseModel):
    predicate: str
    facts: int


def _build(_: NoParams) -> tuple[str, dict[str, Any]]:
    return ("MATCH (f:Fact) RETURN f.predicate AS predicate, count(f) AS facts ORDER BY predicate", {})


PREDICATE_COUNTS = register(QuerySpec("extdemo-predicate-counts", "Facts per predicate.", NoParams, PredicateCount,
                                      _build, tags=frozenset({"cli"})))
