"""The "When Benchmarks Age" web pipeline: an up-to-date answer for an open question, every step logged.

Two paths, tried in order (the seed's `websearch.py`: Brave first, then Google):

1. **Wikipedia path** (`brave_search.py`): search the question, fetch up to 5 pages (skipping
   code and forum hosts), and for each Wikipedia page ask the model, chunk by chunk (30,000
   characters), to answer from the chunk alone or say "Not found"; the first answer found wins.
2. **Chain of action** (`ReAct_google.py`): decompose the question into sub-questions; per
   sub-question search (3 results), fetch the pages, extract facts, and ask a sufficiency
   judge; when it says No, search again with its revised question (at most 2 revisions per
   sub-question); finally answer from all the evidence.

Every LLM call uses the seed's prompt (verbatim, `retrieval/prompts/benchage_web/`) at
temperature 0 through a `chronokg.models` client; searches go through any `SearchProvider`.
`protocol="seed"` keeps the seed's quirks (Q-W3: a revision replaces the sub-question's facts;
Q-W4: a sub-goal line without ": " fails the path; Q-W5: the last Wikipedia page's text is
used; Q-W7: "Not found" is written when nothing answers); `protocol="chronokg"` fixes them.
Each question's record (answer, URLs, and every step with its prompt and reply) is appended to
a JSONL log as soon as it is done, keyed by a content hash of the question, so a run resumes.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from chronokg.errors import ChronoKGError
from chronokg.models import ChatMessage, GenerateConfig, ModelClient, ModelRequest
from chronokg.retrieval.types import ProviderError, RetrievalResult, SearchProvider
from chronokg.retrieval.web import prompts
from chronokg.retrieval.web.http import Http, html_text

Protocol = Literal["seed", "chronokg"]
BLOCKED = ("github.com", "huggingface.co", "huggingface.com", "news.ycombinator.com")  # brave_search.py:248-256
NOT_FOUND = "Not found"


class Step(BaseModel):
    """One logged step: what went in, what came out, and for LLM steps the exact messages."""

    kind: str  # path | plan | search | fetch | extract | judge | answer | wiki_chunk
    subgoal: str | None = None
    input: Any = None
    output: Any = None
    messages: list[dict[str, str]] | None = None
    model: str | None = None
    usage: dict[str, int] | None = None
    seconds: float = 0.0
    error: str | None = None


class WebAnswer(BaseModel):
    """One question's result, in the seed's `websearch.jsonl` shape plus the full step log."""

    id: str
    question: str
    status: str = Field(description="The path that answered (its provider's name), or unanswered")
    search_answer: str
    urls: list[tuple[str, str | None]] = Field(default_factory=list)
    protocol: str
    retrieved: dt.date
    steps: list[Step] = Field(default_factory=list)

    def seed_record(self) -> dict[str, Any]:
        """`{id, question, status, search_answer, urls}` as the seed's evaluator reads it (websearch.py:198-202)."""
        return {"id": self.id, "question": self.question, "status": self.status,
                "search_answer": self.search_answer, "urls": [list(u) for u in self.urls]}


def question_id(question: str) -> str:
    """A stable id (the seed's `hash()` differs between processes, Q-W6)."""
    return "web-" + hashlib.sha256(question.encode("utf-8")).hexdigest()[:16]


class _PathFailed(Exception):
    """A path found nothing or broke; the next path is tried."""


class WebPipeline:
    """The pipeline for one model client and the search providers of its two paths."""

    def __init__(self, model: ModelClient, *, chain_search: SearchProvider | None = None,
                 wiki_search: SearchProvider | None = None, judge: ModelClient | None = None,
                 protocol: Protocol = "seed", results_per_query: int = 3, max_revisions: int = 2,
                 max_pages: int = 5, wiki_results: int = 10, chunk_chars: int = 30_000, page_chars: int = 5_000,
                 fetch_timeout_s: float = 5.0, http: Http | None = None) -> None:
        if chain_search is None and wiki_search is None:
            raise ChronoKGError("the web pipeline needs a search provider (chain_search and/or wiki_search)")
        self.model = model
        self.judge = judge or model  # the seed judges with the same client (Q-W2)
        self.chain_search = chain_search
        self.wiki_search = wiki_search
        self.protocol = protocol
        self.results_per_query = results_per_query
        self.max_revisions = max_revisions
        self.max_pages = max_pages
        self.wiki_results = wiki_results
        self.chunk_chars = chunk_chars
        self.page_chars = page_chars
        self.http = http or Http("fetch", timeout_s=fetch_timeout_s, attempts=1)

    # --- one question ----------------------------------------------------------------------------------

    async def answer(self, question: str, qid: str | None = None, today: dt.date | None = None) -> WebAnswer:
        result = WebAnswer(id=qid or question_id(question), question=question, status="unanswered",
                           search_answer="", protocol=self.protocol, retrieved=today or dt.date.today())
        steps = result.steps  # appended to as the steps happen (pydantic copied any list given to it)
        wiki_not_found = False
        for provider, path in ((self.wiki_search, self._wiki_path), (self.chain_search, self._chain)):
            if provider is None:
                continue
            try:
                text, urls = await path(question, steps)
                result.status, result.search_answer, result.urls = provider.name, text, urls
                return result
            except _PathFailed as exc:
                steps.append(Step(kind="path", input=provider.name, error=str(exc)))
                wiki_not_found = wiki_not_found or provider is self.wiki_search
        if self.protocol == "seed" and wiki_not_found:
            result.search_answer = NOT_FOUND  # Q-W7: the seed writes the last payload's "Not found"
        return result

    async def _ask(self, client: ModelClient, kind: str, messages: list[dict[str, str]], steps: list[Step],
                   subgoal: str | None = None, max_tokens: int | None = None) -> str:
        config = GenerateConfig(temperature=0.0, max_tokens=max_tokens)
        request = ModelRequest(messages=[ChatMessage.model_validate(m) for m in messages], config=config)
        started = time.perf_counter()
        try:
            completion = await client.generate(request)
        except ChronoKGError as exc:
            steps.append(Step(kind=kind, subgoal=subgoal, messages=messages, model=client.spec, error=str(exc),
                              seconds=time.perf_counter() - started))
            raise _PathFailed(f"{kind}: {exc}") from exc
        text = completion.text or ""
        usage = completion.usage.model_dump() if completion.usage is not None else None
        steps.append(Step(kind=kind, subgoal=subgoal, messages=messages, output=text, model=completion.model,
                          usage=usage, seconds=time.perf_counter() - started))
        return text

    async def _search(self, provider: SearchProvider, query: str, k: int, steps: list[Step],
                      subgoal: str | None = None) -> list[RetrievalResult]:
        started = time.perf_counter()
        try:
            hits = await provider.search(query, k=k)
        except ProviderError as exc:
            steps.append(Step(kind="search", subgoal=subgoal, input={"provider": provider.name, "query": query},
                              error=str(exc), seconds=time.perf_counter() - started))
            raise _PathFailed(str(exc)) from exc
        steps.append(Step(kind="search", subgoal=subgoal, input={"provider": provider.name, "query": query, "k": k},
                          output=[{"url": h.url, "title": h.title, "snippet": h.text} for h in hits],
                          seconds=time.perf_counter() - started))
        return hits

    async def _fetch(self, url: str, steps: list[Step], separator: str, drop_tables: bool,
                     subgoal: str | None = None) -> tuple[str, str | None]:
        """A page's text ("" when it cannot be fetched, as the seed does) and its Last-Modified header."""
        started = time.perf_counter()
        try:
            response = await self.http.get(url)
            text = html_text(response.text, separator, drop_tables)
            modified = response.headers.get("Last-Modified")
            steps.append(Step(kind="fetch", subgoal=subgoal, input=url, output={"chars": len(text),
                                                                              "last_modified": modified},
                              seconds=time.perf_counter() - started))
            return text, modified
        except ProviderError as exc:
            steps.append(Step(kind="fetch", subgoal=subgoal, input=url, error=str(exc),
                              seconds=time.perf_counter() - started))
            return "", None

    # --- the Wikipedia path ------------------------------------------------------------------------------

    async def _wiki_path(self, question: str, steps: list[Step]) -> tuple[str, list[tuple[str, str | None]]]:
        assert self.wiki_search is not None
        hits = await self._search(self.wiki_search, question, self.wiki_results, steps)
        pages: list[tuple[str, str]] = []
        fetched = 0
        for hit in hits:
            url = hit.url or ""
            if any(host in url for host in BLOCKED):
                continue
            if fetched >= self.max_pages:
                break
            text, _ = await self._fetch(url, steps, " ", drop_tables=True)
            fetched += 1
            if hit.kind == "wikipedia" or "wikipedia.org" in url:
                pages.append((url, text))
        if not pages:
            raise _PathFailed("no Wikipedia page among the results")
        # Q-W5 (seed): the last page's text reported under the first page's URL; chronokg: each page in rank order.
        order = [(pages[0][0], pages[-1][1])] if self.protocol == "seed" else pages
        for url, text in order:
            pieces = [text[i:i + self.chunk_chars] for i in range(0, len(text), self.chunk_chars)] or [""]
            for n, chunk in enumerate(pieces, 1):
                reply = await self._ask(self.model, "wiki_chunk",
                                        prompts.wiki_chunk_messages(question, chunk, n, len(pieces)), steps,
                                        max_tokens=512)
                if reply.strip() and not reply.strip().lower().startswith("not found"):
                    return reply.strip(), [(url, None)]
        raise _PathFailed(NOT_FOUND)

    # --- the chain of action -------------------------------------------------------------------------------

    def subgoals(self, reply: str, question: str) -> list[str]:
        """The seed's parsing: lines starting with "-", the text after the first ": " (Q-W4 under seed: a line
        without one fails the path; chronokg keeps the line and falls back to the question itself)."""
        out = []
        for line in reply.splitlines():
            line = line.strip()
            if not line.startswith("-"):
                continue
            if ": " in line:
                out.append(line.split(": ", 1)[1].strip())
            elif self.protocol == "seed":
                raise _PathFailed(f"sub-goal line without ': ' (the seed's IndexError): {line!r}")
            else:
                out.append(line.lstrip("- ").strip())
        out = [s for s in out if s]
        if not out and self.protocol == "chronokg":
            out = [question]
        return out

    @staticmethod
    def revised(reply: str) -> str | None:
        """The text after `REVISED QUESTION:` on the first line starting with it (any case), or None."""
        for line in reply.splitlines():
            if line.strip().lower().startswith("revised question:"):
                return line.strip()[len("revised question:"):].strip() or None
        return None

    async def _gather(self, query: str, seen: set[str], steps: list[Step], subgoal: str
                      ) -> tuple[list[dict[str, Any]], list[str]]:
        assert self.chain_search is not None
        hits = await self._search(self.chain_search, query, self.results_per_query, steps, subgoal)
        evidence, texts = [], []
        for hit in hits:
            url = hit.url or hit.id
            if url in seen:
                continue
            seen.add(url)
            text, _ = await self._fetch(url, steps, "\n", drop_tables=False, subgoal=subgoal)
            texts.append(text[:self.page_chars])
            evidence.append({"title": hit.title or "", "snippet": hit.text, "link": (url, hit.published or "")})
        return evidence, texts

    async def _chain(self, question: str, steps: list[Step]) -> tuple[str, list[tuple[str, str | None]]]:
        plan = await self._ask(self.model, "plan", prompts.plan_messages(question), steps)
        goals = self.subgoals(plan, question)
        seen: set[str] = set()
        evidences: list[list[dict[str, Any]]] = []
        facts: list[str] = []
        checks: list[dict[str, str]] = []
        for goal in goals:
            found, texts = await self._gather(goal, seen, steps, goal)
            f = await self._ask(self.model, "extract", prompts.extract_messages(texts), steps, goal)
            evidences.append(found)
            facts.append(f)
            checks.append({"facts": f, "snippet_text": "\n".join(e["snippet"] for e in found)})
            asked = {goal}
            tries = 0
            verdict = await self._judge(goal, checks, steps)
            while verdict is not None and tries < self.max_revisions:
                query = self.revised(verdict)
                if query is None or query in asked:
                    break
                asked.add(query)
                tries += 1
                found, texts = await self._gather(query, seen, steps, goal)
                f = await self._ask(self.model, "extract", prompts.extract_messages(texts), steps, goal)
                evidences[-1].extend(found)
                facts[-1] = f if self.protocol == "seed" else f"{facts[-1]}\n{f}"  # Q-W3
                checks.append({"facts": f, "snippet_text": "\n".join(e["snippet"] for e in found)})
                verdict = await self._judge(goal, checks, steps)
        evidence_str = "".join(
            prompts.evidence_block(n, goal, [(e["title"], e["snippet"]) for e in ev], f)
            for n, (goal, ev, f) in enumerate(zip(goals, evidences, facts, strict=True), 1))
        text = await self._ask(self.model, "answer", prompts.answer_messages(question, evidence_str), steps)
        urls = [(e["link"][0], e["link"][1] or None) for ev in evidences for e in ev]
        return text.strip(), urls

    async def _judge(self, goal: str, checks: list[dict[str, str]], steps: list[Step]) -> str | None:
        """None when sufficient (the reply starts with "yes"), else the reply (it may hold a revised question)."""
        messages = prompts.sufficiency_messages(goal, [c["facts"] for c in checks],
                                                [c["snippet_text"] for c in checks])
        reply = await self._ask(self.judge, "judge", messages, steps, goal)
        return None if reply.strip().lower().startswith("yes") else reply

    # --- many questions, logged -----------------------------------------------------------------------------

    async def run(self, questions: Iterable[tuple[str | None, str]], log: Path, concurrency: int = 4,
                  today: dt.date | None = None) -> list[WebAnswer]:
        """Answer `(id, question)` pairs (id None: a content hash), appending each record to `log` when done;
        ids already in the log are skipped (resume)."""
        done = logged_ids(log)
        todo = [(qid or question_id(q), q) for qid, q in questions]
        todo = [(qid, q) for qid, q in dict(todo).items() if qid not in done]
        gate = asyncio.Semaphore(concurrency)
        lock = asyncio.Lock()
        log.parent.mkdir(parents=True, exist_ok=True)
        out: list[WebAnswer] = []

        async def one(qid: str, q: str) -> None:
            async with gate:
                answer = await self.answer(q, qid, today)
            async with lock:
                with log.open("a", encoding="utf-8") as fh:
                    fh.write(answer.model_dump_json() + "\n")
                out.append(answer)

        await asyncio.gather(*(one(qid, q) for qid, q in todo))
        return out

    async def aclose(self) -> None:
        await self.http.aclose()


def logged_ids(log: Path) -> set[str]:
    """Ids of the questions a log already holds (a torn last line is ignored: that question runs again)."""
    if not log.exists():
        return set()
    ids = set()
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            ids.add(json.loads(line)["id"])
        except (ValueError, KeyError, TypeError):
            continue
    return ids


def read_log(log: Path) -> list[WebAnswer]:
    return [WebAnswer.model_validate_json(line) for line in log.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def seed_records(answers: Sequence[WebAnswer]) -> list[dict[str, Any]]:
    return [a.seed_record() for a in answers]
