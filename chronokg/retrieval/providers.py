"""`PROVIDERS`: every search provider by name, each a factory `(settings, **options) -> SearchProvider`.

Entries are lazy (`"module:attr"`), so listing providers imports neither httpx nor faiss.
The tool server makes one `search` tool per provider from this registry.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from chronokg.registry import Registry
from chronokg.retrieval.types import RetrievalResult, SearchProvider, check_query
from chronokg.settings import Settings

ProviderFactory = Callable[..., SearchProvider]

PROVIDERS: Registry[ProviderFactory] = Registry("search provider", group="search_providers")
PROVIDERS.register("passages", "chronokg.retrieval.providers:PassagesProvider")
PROVIDERS.register("brave", "chronokg.retrieval.web.providers:BraveSearch")
PROVIDERS.register("google", "chronokg.retrieval.web.providers:GoogleSearch")
PROVIDERS.register("wikipedia", "chronokg.retrieval.web.providers:WikipediaSearch")
PROVIDERS.register("searxng", "chronokg.retrieval.web.providers:SearxngSearch")


def get_provider(name: str, settings: Settings | None = None, **options: Any) -> SearchProvider:
    """The provider `name` (see `PROVIDERS`), made with `settings` and its own options."""
    return PROVIDERS.get(name)(settings, **options)


class PassagesProvider:
    """The store's passage index as a provider: `as_of` = only passages valid that day; None = atemporal
    (today's passages, the ConflictMedQA protocol)."""

    name = "passages"
    supports_as_of = True

    def __init__(self, settings: Settings | None = None, *, retriever: Any = None) -> None:
        from chronokg.retrieval.rag import Retriever, default_retriever

        self.retriever: Retriever = retriever or default_retriever(settings)

    async def search(self, query: str, *, k: int = 10, as_of: dt.date | None = None) -> list[RetrievalResult]:
        q = check_query(self.name, query, k)
        return self.retriever.retrieve(q, as_of, k)

    async def aclose(self) -> None:
        return None
