"""Web search providers behind the `SearchProvider` protocol: Brave, Google Programmable Search, Wikipedia, SearxNG.

Each speaks its service's JSON API over httpx, with keys from `Settings` (never read here from
the environment) and the bounded retries of `web.http`. None can restrict hits to a past day
(`supports_as_of = False`): asked to, they refuse instead of returning today's web.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from chronokg.retrieval.types import ProviderError, RetrievalResult, check_query
from chronokg.retrieval.web.http import Http, Sleep, strip_tags
from chronokg.settings import Settings

BRAVE_ENDPOINT = "https://api.search.brave.com/res/v1/web/search"
GOOGLE_ENDPOINT = "https://www.googleapis.com/customsearch/v1"


class WebProvider:
    """Shared parts: the HTTP client, the query check, the refusal of `as_of`, closing."""

    name = "web"
    supports_as_of = False
    max_k = 20

    def __init__(self, settings: Settings | None = None, *, sleep: Sleep | None = None,
                 attempts: int = 3) -> None:
        self.settings = settings or Settings()
        kwargs: dict[str, Any] = {"timeout_s": self.settings.search_timeout_s, "attempts": attempts}
        if sleep is not None:
            kwargs["sleep"] = sleep
        self.http = Http(self.name, **kwargs)

    def _check(self, query: str, k: int, as_of: dt.date | None) -> str:
        if as_of is not None:
            raise ProviderError(f"{self.name}: web search cannot restrict results to {as_of} (use the passage "
                                "index for as-of retrieval)")
        return check_query(self.name, query, k)

    def _results(self, items: list[dict[str, Any]], k: int, kind: str = "web") -> list[RetrievalResult]:
        out: list[RetrievalResult] = []
        for item in items:
            url = item.get("url")
            if not isinstance(url, str) or not url:
                continue
            out.append(RetrievalResult(id=url, url=url, title=item.get("title"), text=item.get("text") or "",
                                       rank=len(out) + 1, provider=self.name, kind=kind,
                                       published=item.get("published"), metadata=item.get("metadata") or {}))
            if len(out) == k:
                break
        return out

    async def aclose(self) -> None:
        await self.http.aclose()


def _need(value: Any, what: str, provider: str) -> str:
    if value is None or (hasattr(value, "get_secret_value") and not value.get_secret_value()):
        raise ProviderError(f"{provider} needs {what}")
    return value.get_secret_value() if hasattr(value, "get_secret_value") else str(value)


class BraveSearch(WebProvider):
    """Brave Web Search API: `GET /res/v1/web/search?q=&count=` with `X-Subscription-Token` (the seed's call)."""

    name = "brave"

    def __init__(self, settings: Settings | None = None, *, endpoint: str = BRAVE_ENDPOINT,
                 sleep: Sleep | None = None) -> None:
        super().__init__(settings, sleep=sleep)
        self.endpoint = endpoint
        self.key = _need(self.settings.brave_api_key, "a key: set BRAVE_API_KEY (or CHRONOKG_BRAVE_API_KEY)",
                         self.name)

    async def search(self, query: str, *, k: int = 10, as_of: dt.date | None = None) -> list[RetrievalResult]:
        q = self._check(query, k, as_of)
        data = await self.http.get_json(self.endpoint, {"q": q, "count": min(k, self.max_k)},
                                        {"Accept": "application/json", "X-Subscription-Token": self.key})
        items = (data.get("web") or {}).get("results") or [] if isinstance(data, dict) else []
        return self._results([{"url": i.get("url"), "title": i.get("title"), "text": strip_tags(i.get("description")
                                                                                              or ""),
                               "published": i.get("page_age") or i.get("age")} for i in items], k)


class GoogleSearch(WebProvider):
    """Google Programmable Search (Custom Search JSON API): `GET /customsearch/v1?key=&cx=&q=&num=` (num <= 10)."""

    name = "google"
    max_k = 10

    def __init__(self, settings: Settings | None = None, *, endpoint: str = GOOGLE_ENDPOINT,
                 sleep: Sleep | None = None) -> None:
        super().__init__(settings, sleep=sleep)
        self.endpoint = endpoint
        self.key = _need(self.settings.google_api_key, "a key: set GOOGLE_API_KEY (or CHRONOKG_GOOGLE_API_KEY)",
                         self.name)
        self.cx = _need(self.settings.google_cse_id, "an engine id: set GOOGLE_CSE_ID (or CHRONOKG_GOOGLE_CSE_ID)",
                        self.name)

    async def search(self, query: str, *, k: int = 10, as_of: dt.date | None = None) -> list[RetrievalResult]:
        q = self._check(query, k, as_of)
        data = await self.http.get_json(self.endpoint, {"key": self.key, "cx": self.cx, "q": q,
                                                        "num": min(k, self.max_k)})
        items = data.get("items") or [] if isinstance(data, dict) else []
        return self._results([{"url": i.get("link"), "title": i.get("title"), "text": i.get("snippet") or "",
                               "published": created_time(i)} for i in items], k)


def created_time(item: dict[str, Any]) -> str | None:
    """The seed's `created_time` (ReAct_google.py:221-229): the first `moddate` or `article:modified_time`."""
    for tag in ((item.get("pagemap") or {}).get("metatags") or []):
        for name in ("moddate", "article:modified_time"):
            if tag.get(name):
                return str(tag[name])
    return None


class WikipediaSearch(WebProvider):
    """The MediaWiki API: `action=query&list=search` for titles and snippets, `prop=extracts` for page text."""

    name = "wikipedia"
    max_k = 50

    def __init__(self, settings: Settings | None = None, *, endpoint: str | None = None,
                 sleep: Sleep | None = None) -> None:
        super().__init__(settings, sleep=sleep)
        self.endpoint = endpoint or self.settings.wikipedia_api_url
        base = self.endpoint.rsplit("/w/api.php", 1)[0] if "/w/api.php" in self.endpoint else \
            self.endpoint.rsplit("/", 1)[0]
        self.page_base = f"{base}/wiki/"

    async def search(self, query: str, *, k: int = 10, as_of: dt.date | None = None) -> list[RetrievalResult]:
        q = self._check(query, k, as_of)
        data = await self.http.get_json(self.endpoint, {"action": "query", "list": "search", "srsearch": q,
                                                        "srlimit": min(k, self.max_k), "format": "json",
                                                        "utf8": 1})
        items = ((data.get("query") or {}).get("search") or []) if isinstance(data, dict) else []
        return self._results([{"url": self.page_base + str(i.get("title", "")).replace(" ", "_"),
                               "title": i.get("title"), "text": strip_tags(i.get("snippet") or ""),
                               "published": i.get("timestamp"), "metadata": {"pageid": i.get("pageid")}}
                              for i in items if i.get("title")], k, kind="wikipedia")

    async def page_text(self, title: str) -> str:
        """A page's plain text (the TextExtracts extension), for the Wikipedia path of the pipeline."""
        data = await self.http.get_json(self.endpoint, {"action": "query", "prop": "extracts", "explaintext": 1,
                                                        "titles": title, "format": "json", "redirects": 1})
        pages = ((data.get("query") or {}).get("pages") or {}) if isinstance(data, dict) else {}
        return "\n".join(str(p.get("extract") or "") for p in pages.values()).strip()


class SearxngSearch(WebProvider):
    """A SearxNG instance: `GET /search?q=&format=json` (the instance must allow the JSON format)."""

    name = "searxng"

    def __init__(self, settings: Settings | None = None, *, base_url: str | None = None,
                 sleep: Sleep | None = None) -> None:
        super().__init__(settings, sleep=sleep)
        url = base_url or self.settings.searxng_url
        self.base_url = _need(url, "an instance: set CHRONOKG_SEARXNG_URL", self.name).rstrip("/")

    async def search(self, query: str, *, k: int = 10, as_of: dt.date | None = None) -> list[RetrievalResult]:
        q = self._check(query, k, as_of)
        data = await self.http.get_json(f"{self.base_url}/search", {"q": q, "format": "json"})
        items = data.get("results") or [] if isinstance(data, dict) else []
        return self._results([{"url": i.get("url"), "title": i.get("title"), "text": i.get("content") or "",
                               "published": i.get("publishedDate"),
                               "metadata": {"engine": i.get("engine")} if i.get("engine") else {}}
                              for i in items], k)
