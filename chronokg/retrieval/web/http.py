"""HTTP for web search providers and page fetches: httpx, bounded retries, plain text from HTML.

Retries: 429, 5xx, timeouts and dropped connections, up to `attempts` tries with doubling
waits (a `Retry-After` in seconds replaces the wait; the seed's Brave path retries three
times with 2 s sleeps). Other 4xx fail at once with the server's message.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import html.parser
import re
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from chronokg.retrieval.types import ProviderError

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
USER_AGENT = "Mozilla/5.0"  # what the seed's page fetches send (ReAct_google.py:77)
Sleep = Callable[[float], Awaitable[None]]


class Http:
    """One httpx client with the retry rule above; `sleep` is replaceable so tests do not wait."""

    def __init__(self, name: str, timeout_s: float = 10.0, attempts: int = 3, backoff_s: float = 2.0,
                 sleep: Sleep = asyncio.sleep, headers: dict[str, str] | None = None) -> None:
        self.name = name
        self.attempts = attempts
        self.backoff_s = backoff_s
        self.sleep = sleep
        self.timeout_s = timeout_s
        self.headers = {"User-Agent": USER_AGENT, **(headers or {})}
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.requests = 0
        self.retries = 0

    @property
    def client(self) -> httpx.AsyncClient:
        """The client of the running event loop (made on first use; a closed one or another loop's is replaced)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client.is_closed or self._loop is not loop:
            self._client = httpx.AsyncClient(timeout=self.timeout_s, follow_redirects=True, headers=self.headers)
            self._loop = loop
        return self._client

    async def get(self, url: str, params: dict[str, Any] | None = None,
                  headers: dict[str, str] | None = None) -> httpx.Response:
        last = ""
        for attempt in range(1, self.attempts + 1):
            wait = self.backoff_s * 2 ** (attempt - 1)
            try:
                self.requests += 1
                response = await self.client.get(url, params=params, headers=headers)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                last = f"{type(exc).__name__}: {exc}".strip()
            else:
                if response.status_code < 400:
                    return response
                last = f"HTTP {response.status_code}: {response.text[:200]}"
                if response.status_code not in RETRY_STATUS:
                    raise ProviderError(f"{self.name}: {url} refused the request ({last})")
                after = response.headers.get("Retry-After")
                if after:
                    with contextlib.suppress(ValueError):
                        wait = max(wait, float(after))
            if attempt < self.attempts:
                self.retries += 1
                await self.sleep(wait)
        raise ProviderError(f"{self.name}: {url} failed after {self.attempts} attempts ({last})")

    async def get_json(self, url: str, params: dict[str, Any] | None = None,
                       headers: dict[str, str] | None = None) -> Any:
        response = await self.get(url, params, headers)
        try:
            return response.json()
        except ValueError:
            raise ProviderError(f"{self.name}: {url} did not answer with JSON: {response.text[:200]!r}") from None

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.aclose()


class _Text(html.parser.HTMLParser):
    SKIP = frozenset({"script", "style", "noscript", "head", "title", "template"})

    def __init__(self, drop_tables: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.skip = set(self.SKIP) | ({"table"} if drop_tables else set())
        self.depth = 0
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.skip:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self.skip and self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if not self.depth and data.strip():
            self.parts.append(data.strip())


def html_text(html_source: str, separator: str = "\n", drop_tables: bool = False) -> str:
    """The visible text of a page, stripped pieces joined by `separator` (BeautifulSoup's
    `get_text(separator, strip=True)` after removing scripts and styles, as the seed does)."""
    parser = _Text(drop_tables)
    parser.feed(html_source)
    parser.close()
    return separator.join(parser.parts)


def strip_tags(text: str) -> str:
    """A search snippet without its markup (Wikipedia's `<span class="searchmatch">`)."""
    return html.unescape(re.sub(r"<[^>]+>", "", text)).strip()
