"""What every search returns, and the one protocol every search provider implements.

A `RetrievalResult` is the same whether it came from the passage index (with a validity
interval), from the graph, or from a web search engine (with a URL and, where the engine
says so, a publication date), so the tool server, the web pipeline and the evaluation
runner's RAG arm handle one shape.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from chronokg.errors import ChronoKGError


class ProviderError(ChronoKGError):
    """A search provider could not answer: missing key, refused request, exhausted retries, bad reply."""


class RetrievalResult(BaseModel):
    """One hit: its text, score and rank, where it came from, and when it was valid (if known)."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(description="Stable id: a passage id, a fact id, or the URL of a web result")
    text: str
    score: float | None = Field(default=None, description="Similarity (cosine for passages) or None")
    rank: int = Field(ge=1, description="1 = best")
    provider: str
    kind: str = Field(default="web", description="fact, recommendation, chunk, web, wikipedia, ...")
    title: str | None = None
    url: str | None = None
    source: str | None = Field(default=None, description="The source release or guideline a passage came from")
    valid_from: dt.date | None = None
    valid_to: dt.date | None = None
    published: str | None = Field(default=None, description="A web result's date as the engine reports it")
    metadata: dict[str, Any] = Field(default_factory=dict)

    def valid_at(self, day: dt.date) -> bool:
        """The catalog's rule: `[valid_from, valid_to)`, open ends unbounded."""
        return (self.valid_from is None or self.valid_from <= day) and (self.valid_to is None or self.valid_to > day)


@runtime_checkable
class SearchProvider(Protocol):
    """A named search: `await search(query, k=..., as_of=...)` -> at most k results, best first.

    Providers that cannot restrict results to a date (web engines) say so with
    `supports_as_of = False` and raise `ProviderError` when given one, rather than
    silently returning results from any time.
    """

    name: str
    supports_as_of: bool

    async def search(self, query: str, *, k: int = 10, as_of: dt.date | None = None) -> list[RetrievalResult]: ...

    async def aclose(self) -> None: ...


def check_query(provider: str, query: str, k: int) -> str:
    """The stripped query; an empty one or a k below 1 is an error naming the provider."""
    text = query.strip()
    if not text:
        raise ProviderError(f"{provider}: empty query")
    if k < 1:
        raise ProviderError(f"{provider}: k must be at least 1 (got {k})")
    return text
