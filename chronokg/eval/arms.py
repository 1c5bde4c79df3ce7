"""The runner's retrieval arms: what a model gets beside the question.

* `--rag time-aware|atemporal --k N` (the ConflictMedQA protocol): each question's user message is wrapped
  with k passages from the store's passage index, valid on the question's target date (time-aware) or
  ranked by similarity alone over every version (atemporal, as a literature search is: docs/eval.md).
  Passages are retrieved for all questions in one batch before the first request; each sample's log records
  which were given.
* `--agent tools`: the model is offered chronokg's tools (the query tools, guarded Cypher, search) and
  may call them in a bounded loop (`max_steps` model calls, `tool_budget` tool calls) before it answers;
  the tools run in process over the run's store, or over HTTP / MCP (`tools_url`). Every call and a
  bounded copy of its result go into the sample's `steps`, so a report can show what the model looked up.

An arm only changes what is sent; the family's profile still builds, extracts and scores, so every
family and protocol works under every arm.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError
from chronokg.models import ChatMessage, Completion, ModelClient, ModelRequest
from chronokg.models.types import Usage

if TYPE_CHECKING:
    from chronokg.serve.clients import ToolBox

RagMode = Literal["time-aware", "atemporal"]
AgentMode = Literal["tools"]
RESULT_CHARS = 2000  # of each tool result kept in the sample log (the model sees all of it)

_TRACE: contextvars.ContextVar[list[dict[str, Any]] | None] = contextvars.ContextVar("chronokg_agent_trace",
                                                                                      default=None)


# --- RAG --------------------------------------------------------------------------------------------------------

class RagArm:
    """Retrieved context per question, computed once for the run's questions."""

    def __init__(self, mode: RagMode, k: int, retriever: Any) -> None:
        self.mode = mode
        self.k = k
        self.retriever = retriever
        self._given: dict[str, tuple[str, dict[str, Any]]] = {}

    @classmethod
    def open(cls, mode: RagMode, k: int, index: str | None, store_uri: str | None = None) -> RagArm:
        """The retriever over `index`, else over the index beside the run's store (`store_uri`)."""
        try:
            from chronokg.retrieval.rag import shared_retriever

            retriever = shared_retriever(rag_index_folder(index, store_uri))  # one model and index per process
        except ImportError as exc:
            raise _rag_missing(exc) from None
        return cls(mode, k, retriever)

    def prepare(self, questions: Sequence[Question]) -> None:
        """Retrieve for every question not yet prepared (one embedding batch, one search per distinct day)."""
        from chronokg.retrieval.rag import mode_scope, query_text, question_day, wrap

        todo = list({q.id: q for q in questions if q.id not in self._given}.values())
        if not todo:
            return
        hits = self.retriever.retrieve_many([query_text(q) for q in todo],
                                            [question_day(q, self.mode, self.retriever.today) for q in todo], self.k,
                                            scope=mode_scope(self.mode))
        for q, found in zip(todo, hits, strict=True):
            day = question_day(q, self.mode, self.retriever.today)
            step = {"step": "retrieval", "mode": self.mode, "k": self.k, "as_of": day.isoformat() if day else None,
                    "passages": [{"id": r.id, "score": round(float(r.score), 6), "source": r.source,
                                  "valid_from": r.valid_from.isoformat() if r.valid_from else None,
                                  "valid_to": r.valid_to.isoformat() if r.valid_to else None,
                                  "text": r.text} for r in found]}
            self._given[q.id] = (wrap(q.input, found), step)

    def apply(self, question: Question) -> tuple[Question, dict[str, Any]]:
        """The question with its user message wrapped in the retrieved context, and the log step saying what."""
        if question.id not in self._given:
            self.prepare([question])
        text, step = self._given[question.id]
        return question.model_copy(update={"input": text}), step


def rag_index_folder(index: str | None, store_uri: str | None) -> Path:
    """`--rag-index`, else the index beside the run's store (else beside the settings' store)."""
    if index:
        return Path(index)
    try:
        from chronokg.retrieval.rag import index_dir
    except ImportError as exc:
        raise _rag_missing(exc) from None
    return index_dir(None, store_uri)


def _rag_missing(exc: ImportError) -> ChronoKGError:
    return ChronoKGError(f"--rag needs the retrieval extra: pip install 'chronokg[rag]' ({exc})")


# --- agent ------------------------------------------------------------------------------------------------------

class ToolAgent:
    """A model client that may call tools before it answers: the bounded loop of the `--agent tools` arm.

    Each model call offers the tools while the budget lasts; tool calls are run and their results sent
    back as `tool` messages. The loop ends when the model answers in text, or after `max_steps` model
    calls (the last one with `tool_choice="none"`, so it must answer). The completion returned is the
    final one with usage, latency and retries summed over the loop.
    """

    def __init__(self, client: ModelClient, tools: ToolBox, *, max_steps: int, tool_budget: int) -> None:
        if max_steps < 1 or tool_budget < 0:
            raise ChronoKGError("the agent needs max_steps >= 1 and tool_budget >= 0")
        self.client = client
        self.tools = tools
        self.max_steps = max_steps
        self.tool_budget = tool_budget
        self._specs: list[Any] | None = None
        self._lock = asyncio.Lock()

    @property
    def spec(self) -> str:
        return self.client.spec

    def __getattr__(self, name: str) -> Any:  # `bind` of the reference baselines, etc.
        return getattr(self.client, name)

    async def _tool_specs(self) -> list[Any]:
        async with self._lock:
            if self._specs is None:
                self._specs = await self.tools.specs()
            return self._specs

    async def generate(self, request: ModelRequest) -> Completion:
        if request.messages is None:
            raise ChronoKGError("the tools arm needs chat requests (this family sends a raw completion prompt)")
        specs = await self._tool_specs()
        trace = _TRACE.get()
        messages = list(request.messages)
        usage, latency, retries, calls = Usage(), 0.0, 0, 0
        for step in range(1, self.max_steps + 1):
            may_call = calls < self.tool_budget and step < self.max_steps
            sent = request.model_copy(update={"messages": messages}).with_config(
                n=1, tools=specs, tool_choice="auto" if may_call else "none")
            completion = await self.client.generate(sent)
            usage, latency, retries = usage + completion.usage, latency + completion.latency_s, \
                retries + completion.retries
            choice = completion.choices[0] if completion.choices else None
            if choice is None or not choice.tool_calls or not may_call:
                if trace is not None:
                    trace.append({"step": "agent_answer", "model_call": step, "tool_calls_made": calls,
                                  "output": completion.text})
                return completion.model_copy(update={"usage": usage, "latency_s": latency, "retries": retries})
            messages.append(ChatMessage(role="assistant", content=choice.text or None, tool_calls=choice.tool_calls))
            for call in choice.tool_calls:
                calls += 1
                started = time.perf_counter()
                if calls > self.tool_budget:
                    content = json.dumps({"error": {"type": "budget", "message": "tool budget spent: answer now"}})
                    ok, rows = False, 0
                else:
                    result = await self.tools.call(call.name, call.arguments)
                    content, ok, rows = result.content(), result.ok, len(result.rows)
                messages.append(ChatMessage(role="tool", tool_call_id=call.id, content=content))
                if trace is not None:
                    trace.append({"step": "tool_call", "model_call": step, "tool": call.name,
                                  "arguments": call.arguments, "ok": ok, "rows": rows,
                                  "elapsed_s": round(time.perf_counter() - started, 4),
                                  "result": content[:RESULT_CHARS],
                                  **({"result_truncated": True} if len(content) > RESULT_CHARS else {})})
        raise AssertionError("unreachable: the last step never offers tools")

    async def aclose(self) -> None:
        await self.client.aclose()


def check_tools_url(url: str | None, store_uri: str | None) -> None:
    """Where the agent's tools would run, or one clear error saying why they can't."""
    if url is None:
        if store_uri is None:
            raise ChronoKGError("--agent tools runs the tools over the run's store: give a store (--store), or a "
                                "tool server with --tools URL")
    elif not url.startswith(("http://", "https://", "mcp+http://", "mcp+https://")):
        raise ChronoKGError(f"--tools {url!r}: give http(s)://HOST:PORT (serve http) or mcp+http(s)://HOST:PORT/mcp "
                            "(serve mcp)")


def open_tools(url: str | None, store: Any, token: str | None) -> ToolBox:
    """The tools an agent calls: in process over `store` (None), `http(s)://…` (`chronokg serve http`) or
    `mcp+http(s)://…` (`chronokg serve mcp --transport http`)."""
    try:
        from chronokg.serve.clients import HttpTools, LocalTools, McpTools
    except ImportError as exc:
        raise ChronoKGError(f"--agent tools needs the tool server's extra: pip install 'chronokg[serve]' "
                            f"({exc})") from None
    check_tools_url(url, store.uri if store is not None else None)
    if url is None:
        from chronokg.graph.guard import ReadLimits
        from chronokg.serve.host import ToolHost
        from chronokg.serve.search import find_search
        from chronokg.settings import Settings

        settings = Settings()
        host = ToolHost(store, limits=ReadLimits.from_settings(settings))
        host.attach_search(*find_search(store, settings))
        return LocalTools(host)
    if url.startswith("mcp+"):
        return McpTools(url.removeprefix("mcp+"), token=token)
    return HttpTools(url, token=token)


# --- the arms of one run ----------------------------------------------------------------------------------------

class Arms:
    """What a run adds to each sample: retrieved context, a tool loop, or both (none: a no-op)."""

    def __init__(self, rag: RagArm | None = None, tools: ToolBox | None = None, *, max_steps: int = 8,
                 tool_budget: int = 12) -> None:
        self.rag = rag
        self.tools = tools
        self.max_steps = max_steps
        self.tool_budget = tool_budget

    async def start(self) -> None:
        enter = getattr(self.tools, "__aenter__", None)
        if enter is not None:
            await enter()

    def prepare(self, questions: Sequence[Question]) -> None:
        if self.rag is not None:
            self.rag.prepare(questions)

    def client(self, client: ModelClient) -> ModelClient:
        if self.tools is None:
            return client
        return ToolAgent(client, self.tools, max_steps=self.max_steps, tool_budget=self.tool_budget)

    def question(self, question: Question) -> tuple[Question, list[dict[str, Any]]]:
        if self.rag is None:
            return question, []
        asked, step = self.rag.apply(question)
        return asked, [step]

    def begin(self) -> tuple[contextvars.Token[list[dict[str, Any]] | None], list[dict[str, Any]]]:
        """A fresh list the tool loop of this sample appends its steps to (empty without the agent arm)."""
        steps: list[dict[str, Any]] = []
        return _TRACE.set(steps), steps

    def end(self, token: contextvars.Token[list[dict[str, Any]] | None]) -> None:
        _TRACE.reset(token)

    async def aclose(self) -> None:
        if self.tools is not None:
            await self.tools.aclose()
