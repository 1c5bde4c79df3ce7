"""Real HTTP search services on loopback, standing in for the web in tests: no machine these tests run on
reaches the internet.

One `SearchServer` (a thread on 127.0.0.1) speaks the JSON of each API the providers use, over a
small corpus of documents it also serves as HTML pages:

* Brave Web Search: `GET /brave/res/v1/web/search?q=&count=` (header `X-Subscription-Token`);
* Google Programmable Search: `GET /google/customsearch/v1?key=&cx=&q=&num=` (num <= 10);
* the MediaWiki API: `GET /w/api.php?action=query&list=search&srsearch=&srlimit=` and
  `action=query&prop=extracts&explaintext=1&titles=`;
* SearxNG: `GET /searxng/search?q=&format=json` (403 for another format, as an instance without
  the JSON format answers);
* pages: `/pages/<slug>` (web documents) and `/wiki/<Title>` (Wikipedia documents), HTML with a
  script, a style and a table around the text.

Ranking is by query words found in a document's title and text. Wrong keys answer as the real
services do (401 / 400 with their error JSON); `fail_next(status, times)` queues failures for the
API routes; `requests` counts what arrived per route.
"""

from __future__ import annotations

import html
import http.server
import json
import re
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlparse


@dataclass(frozen=True)
class Doc:
    """One document: a web page (`wiki=False`) or a Wikipedia article."""

    slug: str
    title: str
    text: str
    wiki: bool = False
    published: str | None = None


@dataclass
class SearchServer:
    """The loopback search services; `with SearchServer(docs) as s:` starts it, `s.url` is its base URL."""

    docs: Sequence[Doc]
    brave_key: str = "brave-test-key"
    google_key: str = "google-test-key"
    google_cx: str = "test-cx"
    requests: Counter[str] = field(default_factory=Counter)
    params: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    _faults: list[tuple[int, float | None]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def fail_next(self, status: int, times: int = 1, retry_after: float | None = None) -> None:
        with self._lock:
            self._faults.extend([(status, retry_after)] * times)

    def page_url(self, doc: Doc) -> str:
        return f"{self.url}/wiki/{quote(doc.title.replace(' ', '_'))}" if doc.wiki else f"{self.url}/pages/{doc.slug}"

    def rank(self, query: str, wiki: bool | None = None) -> list[Doc]:
        words = {w for w in re.findall(r"[a-z0-9]+", query.lower()) if len(w) > 2}
        scored = []
        for n, doc in enumerate(self.docs):
            if wiki is not None and doc.wiki != wiki:
                continue
            hay = set(re.findall(r"[a-z0-9]+", f"{doc.title} {doc.text}".lower()))
            score = len(words & hay)
            if score:
                scored.append((-score, n, doc))
        return [d for _, _, d in sorted(scored, key=lambda t: (t[0], t[1]))]

    def snippet(self, doc: Doc, query: str, mark: bool = False) -> str:
        text = doc.text[:160]
        if mark:
            for w in sorted({w for w in re.findall(r"[A-Za-z0-9]+", query) if len(w) > 2}, key=len, reverse=True):
                text = re.sub(rf"\b({re.escape(w)})\b", r'<span class="searchmatch">\1</span>', text, flags=re.I)
        return text

    def page(self, doc: Doc) -> str:
        body = "".join(f"<p>{html.escape(p)}</p>" for p in doc.text.split("\n\n"))
        return (f"<html><head><title>{html.escape(doc.title)}</title><style>p {{color: red}}</style>"
                f"<script>var tracking = 'not page text';</script></head><body><h1>{html.escape(doc.title)}</h1>"
                f"<table><tr><td>Infobox cell</td></tr></table>{body}<noscript>enable js</noscript></body></html>")

    # --- routes -----------------------------------------------------------------------------------------

    def handle(self, path: str, q: dict[str, str], headers: Any) -> tuple[int, str, str, dict[str, str]]:
        """(status, content type, body, extra headers) for one GET."""
        if path.startswith(("/pages/", "/wiki/")):
            self.requests["page"] += 1
            for doc in self.docs:
                if (doc.wiki and path == f"/wiki/{quote(doc.title.replace(' ', '_'))}") or \
                        (not doc.wiki and path == f"/pages/{doc.slug}"):
                    extra = {"Last-Modified": doc.published} if doc.published else {}
                    return 200, "text/html; charset=utf-8", self.page(doc), extra
            return 404, "text/html", "<html><body>no such page</body></html>", {}
        route = {"/brave/res/v1/web/search": "brave", "/google/customsearch/v1": "google", "/w/api.php": "wikipedia",
                 "/searxng/search": "searxng"}.get(path)
        if route is None:
            return 404, "application/json", json.dumps({"error": "not found"}), {}
        self.requests[route] += 1
        self.params.append((route, q))
        with self._lock:
            fault = self._faults.pop(0) if self._faults else None
        if fault is not None:
            status, after = fault
            return status, "application/json", json.dumps({"error": f"injected {status}"}), (
                {"Retry-After": str(after)} if after is not None else {})
        answer: tuple[int, str, str, dict[str, str]] = getattr(self, f"_{route}")(q, headers)
        return answer

    def _brave(self, q: dict[str, str], headers: Any) -> tuple[int, str, str, dict[str, str]]:
        if headers.get("X-Subscription-Token") != self.brave_key:
            body = {"type": "ErrorResponse", "error": {"status": 401, "code": "SUBSCRIPTION_TOKEN_INVALID",
                                                       "detail": "The provided subscription token is invalid."}}
            return 401, "application/json", json.dumps(body), {}
        count = int(q.get("count", "20"))
        docs = self.rank(q.get("q", ""))[:count]
        results = [{"type": "search_result", "title": d.title, "url": self.page_url(d),
                    "description": self.snippet(d, q.get("q", ""), mark=True), "page_age": d.published}
                   for d in docs]
        answer = {"type": "search", "query": {"original": q.get("q", "")},
                  "web": {"type": "search", "results": results}}
        return 200, "application/json", json.dumps(answer), {}

    def _google(self, q: dict[str, str], headers: Any) -> tuple[int, str, str, dict[str, str]]:
        if q.get("key") != self.google_key:
            refusal = {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                                 "status": "INVALID_ARGUMENT"}}
            return 400, "application/json", json.dumps(refusal), {}
        num = int(q.get("num", "10"))
        if num > 10 or q.get("cx") != self.google_cx:
            return 400, "application/json", json.dumps({"error": {"code": 400, "message": "Invalid Value"}}), {}
        docs = self.rank(q.get("q", ""))[:num]
        items = [{"kind": "customsearch#result", "title": d.title, "link": self.page_url(d),
                  "snippet": self.snippet(d, q.get("q", "")),
                  "pagemap": {"metatags": [{"article:modified_time": d.published}] if d.published else []}}
                 for d in docs]
        body: dict[str, Any] = {"kind": "customsearch#search"}
        if items:
            body["items"] = items  # the real API leaves `items` out when nothing matches
        return 200, "application/json", json.dumps(body), {}

    def _wikipedia(self, q: dict[str, str], headers: Any) -> tuple[int, str, str, dict[str, str]]:
        if q.get("action") != "query" or q.get("format") != "json":
            return 400, "application/json", json.dumps({"error": {"code": "badvalue"}}), {}
        wiki = [d for d in self.docs if d.wiki]
        if q.get("list") == "search":
            docs = self.rank(q.get("srsearch", ""), wiki=True)[:int(q.get("srlimit", "10"))]
            hits = [{"ns": 0, "title": d.title, "pageid": 1000 + wiki.index(d), "size": len(d.text),
                     "wordcount": len(d.text.split()), "snippet": self.snippet(d, q.get("srsearch", ""), mark=True),
                     "timestamp": d.published or "2025-01-01T00:00:00Z"} for d in docs]
            listing = {"batchcomplete": "", "query": {"searchinfo": {"totalhits": len(hits)}, "search": hits}}
            return 200, "application/json", json.dumps(listing), {}
        if q.get("prop") == "extracts":
            titles = q.get("titles", "").split("|")
            pages: dict[str, Any] = {}
            for n, title in enumerate(titles):
                found = next((d for d in wiki if d.title == title.replace("_", " ")), None)
                if found is None:
                    pages[str(-1 - n)] = {"ns": 0, "title": title, "missing": ""}
                else:
                    pid = 1000 + wiki.index(found)
                    pages[str(pid)] = {"pageid": pid, "ns": 0, "title": found.title, "extract": found.text}
            return 200, "application/json", json.dumps({"batchcomplete": "", "query": {"pages": pages}}), {}
        return 400, "application/json", json.dumps({"error": {"code": "badvalue"}}), {}

    def _searxng(self, q: dict[str, str], headers: Any) -> tuple[int, str, str, dict[str, str]]:
        if q.get("format") != "json":
            return 403, "text/html", "<html><body>403 Forbidden</body></html>", {}
        docs = self.rank(q.get("q", ""))
        results = [{"url": self.page_url(d), "title": d.title, "content": self.snippet(d, q.get("q", "")),
                    "engine": "loopback", "publishedDate": d.published} for d in docs]
        answer = {"query": q.get("q", ""), "number_of_results": len(results), "results": results}
        return 200, "application/json", json.dumps(answer), {}

    # --- lifecycle ----------------------------------------------------------------------------------------

    def __enter__(self) -> SearchServer:
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parsed = urlparse(self.path)
                q = {k: v[-1] for k, v in parse_qs(parsed.query, keep_blank_values=True).items()}
                status, ctype, body, extra = server.handle(unquote(parsed.path) if parsed.path.startswith(
                    "/w/") else parsed.path, q, self.headers)
                data = body.encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for k, v in extra.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)


@contextmanager
def search_server(docs: Sequence[Doc]) -> Iterator[SearchServer]:
    with SearchServer(docs) as server:
        yield server
