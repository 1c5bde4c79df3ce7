"""The contract every `SearchProvider` passes, as a pytest mixin (haystack style).

Subclass it and give a `provider` fixture (and, for a web engine, point it at
`chronokg.testing.search_server.SearchServer`, which stands in for the web on loopback)::

    class TestMyEngine(SearchProviderConformance):
        query = "words some documents contain"
        missing_query = "zzzz qqqq"

        @pytest.fixture
        def provider(self, server) -> Iterator[SearchProvider]:
            yield MyEngine(endpoint=server.url + "/my-api")

Every test runs its own event loop (`asyncio.run`), so no async pytest plugin is needed.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from chronokg.retrieval.types import ProviderError, RetrievalResult, SearchProvider

T = TypeVar("T")


def run(fn: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await fn()
    return asyncio.run(main())


class SearchProviderConformance:
    query: str = "guideline recommendation"
    missing_query: str = "zzzqqq xxyyzz"
    as_of: dt.date = dt.date(2016, 6, 1)

    def search(self, provider: SearchProvider, query: str, k: int = 10,
               as_of: dt.date | None = None) -> list[RetrievalResult]:
        async def go() -> list[RetrievalResult]:
            try:
                return await provider.search(query, k=k, as_of=as_of)
            finally:
                await provider.aclose()
        return run(go)

    def test_is_a_search_provider(self, provider: Any) -> None:
        assert isinstance(provider, SearchProvider)
        assert provider.name and isinstance(provider.supports_as_of, bool)

    def test_results_are_ranked_and_at_most_k(self, provider: SearchProvider) -> None:
        results = self.search(provider, self.query, k=2)
        assert 1 <= len(results) <= 2
        assert [r.rank for r in results] == list(range(1, len(results) + 1))
        assert all(r.provider == provider.name and r.text.strip() and r.id for r in results)
        assert len({r.id for r in results}) == len(results)
        scores = [r.score for r in results if r.score is not None]
        assert scores == sorted(scores, reverse=True)

    def test_more_k_gives_a_longer_prefix(self, provider: SearchProvider) -> None:
        one = self.search(provider, self.query, k=1)
        three = self.search(provider, self.query, k=3)
        assert len(one) == 1 and len(three) >= len(one)
        assert three[0].id == one[0].id

    def test_nothing_found_is_an_empty_list(self, provider: SearchProvider) -> None:
        """A keyword engine finds nothing for unknown words; a vector index ranks everything, so it is asked
        about a day before anything it holds was valid."""
        if provider.supports_as_of:
            assert self.search(provider, self.query, k=5, as_of=dt.date(1000, 1, 1)) == []
        else:
            assert self.search(provider, self.missing_query, k=5) == []

    @pytest.mark.parametrize(("query", "k"), [("", 3), ("   ", 3), ("anything", 0)])
    def test_bad_queries_are_errors(self, provider: SearchProvider, query: str, k: int) -> None:
        with pytest.raises(ProviderError):
            self.search(provider, query, k=k)

    def test_as_of_is_honoured_or_refused(self, provider: SearchProvider) -> None:
        if provider.supports_as_of:
            results = self.search(provider, self.query, k=5, as_of=self.as_of)
            assert all(r.valid_at(self.as_of) for r in results)
        else:
            with pytest.raises(ProviderError, match="cannot restrict"):
                self.search(provider, self.query, k=5, as_of=self.as_of)
