"""The contract every network `ModelClient` backend passes, as a pytest mixin (haystack style).

No model can run on the machines these tests run on, so a real OpenAI-compatible HTTP server on
loopback (`chronokg.testing.openai_server`) stands in for it: the client under test speaks real
HTTP to it, and the server counts what arrives and fails on request.

Subclass it in a test module and name the spec (any provider registered in `CLIENTS` that can be
pointed at a base URL); override `make_client` if the backend needs other options::

    class TestMyBackend(ModelClientConformance):
        spec = "my-provider/loopback-model"

Every test runs its own event loop (`asyncio.run`), so no async pytest plugin is needed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from chronokg.models import (
    ChatMessage,
    Completion,
    GenerateConfig,
    ModelClient,
    ModelRequest,
    ModelRequestError,
    ResponseFormat,
    RetriesExhausted,
    RetryPolicy,
    ToolSpec,
    get_model,
)
from chronokg.settings import Settings
from chronokg.testing.openai_server import Fault, OpenAIServer

T = TypeVar("T")
WEATHER = ToolSpec(name="get_weather", description="Weather in a city.", parameters={
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city", "days"]})
ANSWER_SCHEMA = {"type": "object", "properties": {
    "answer": {"type": "string"}, "year": {"type": "integer"}, "sure": {"type": "boolean"},
    "sources": {"type": "array", "items": {"type": "string"}}}, "required": ["answer", "year", "sure", "sources"]}


def run(coro_fn: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await coro_fn()
    return asyncio.run(main())


class ModelClientConformance:
    """What every backend must do; see the module docstring for how to use it."""

    spec: str = "openai-compat/loopback-model"
    max_retries: int = 3

    # --- what a subclass may override ---------------------------------------------------------

    def make_client(self, server: OpenAIServer, *, cache: Path | bool = False, timeout_s: float = 5.0,
                    max_retries: int | None = None) -> ModelClient:
        retry = RetryPolicy(max_retries=self.max_retries if max_retries is None else max_retries,
                            initial_delay_s=0.005, max_delay_s=0.05)
        return get_model(self.spec, base_url=server.url, cache=cache, retry=retry, timeout_s=timeout_s)

    def process_options(self, server: OpenAIServer) -> tuple[dict[str, Any], dict[str, str]]:
        """`get_model` options and extra environment variables for a client in another process."""
        return {"base_url": server.url}, {}

    # --- fixtures -----------------------------------------------------------------------------

    @pytest.fixture(scope="class")
    @classmethod
    def _server(cls) -> Iterator[OpenAIServer]:
        with OpenAIServer() as server:
            yield server

    @pytest.fixture
    def server(self, _server: OpenAIServer) -> Iterator[OpenAIServer]:
        _server.reset()
        _server.script = None
        yield _server
        _server.reset()

    def generate(self, server: OpenAIServer, request: ModelRequest, **options: Any) -> Completion:
        async def go() -> Completion:
            client = self.make_client(server, **options)
            try:
                return await client.generate(request)
            finally:
                await client.aclose()
        return run(go)

    # --- replies ------------------------------------------------------------------------------

    def test_chat_reply_with_metadata(self, server: OpenAIServer) -> None:
        server.script = lambda req: f"Paris, said to {req.last_user_text}"
        c = self.generate(server, ModelRequest.chat("Capital of France?", system="Be brief."))
        assert c.text == "Paris, said to Capital of France?"
        assert c.choices[0].finish_reason == "stop"
        assert c.model == self.spec.split("/", 1)[1]
        assert c.request_id and c.usage.prompt_tokens > 0 and c.usage.completion_tokens == 6
        assert (c.cached, c.retries, c.spec) == (False, 0, self.spec)
        body = server.bodies[-1]
        assert [m["role"] for m in body["messages"]] == ["system", "user"]

    def test_generation_config_reaches_the_server(self, server: OpenAIServer) -> None:
        server.script = lambda req: "one two three four five"
        c = self.generate(server, ModelRequest.chat("q", temperature=0.3, top_p=0.9, seed=7, max_tokens=3,
                                                    extra_body={"top_k": 5}))
        body = server.bodies[-1]
        assert (body["temperature"], body["top_p"], body["seed"], body["top_k"]) == (0.3, 0.9, 7, 5)
        assert (c.text, c.choices[0].finish_reason) == ("one two three", "length")
        c = self.generate(server, ModelRequest.chat("q", stop=["four"]))
        assert c.text == "one two three "

    def test_n_samples_in_one_request(self, server: OpenAIServer) -> None:
        c = self.generate(server, ModelRequest.chat("Name a colour.", n=3, temperature=1.0))
        assert [ch.index for ch in c.choices] == [0, 1, 2]
        assert len({ch.text for ch in c.choices}) == 3
        assert server.model_requests == 1 and server.bodies[-1]["n"] == 3

    def test_completions_endpoint(self, server: OpenAIServer) -> None:
        c = self.generate(server, ModelRequest.completion("Once upon a time", n=2, logprobs=True, top_logprobs=2))
        assert server.counts["/v1/completions"] == 1 and server.bodies[-1]["prompt"] == "Once upon a time"
        assert len(c.choices) == 2 and c.choices[0].text.endswith("Once upon a time")
        lps = c.choices[0].logprobs
        assert lps is not None and " ".join(t.token for t in lps) == c.choices[0].text
        assert all(len(t.top) == 2 for t in lps)

    def test_tool_calls_round_trip(self, server: OpenAIServer) -> None:
        c = self.generate(server, ModelRequest.chat("Weather in Oslo?", tools=[WEATHER], tool_choice="get_weather"))
        choice = c.choices[0]
        assert choice.finish_reason == "tool_calls" and len(choice.tool_calls) == 1
        call = choice.tool_calls[0]
        args = call.parsed_arguments()
        assert call.name == "get_weather" and isinstance(args["city"], str) and isinstance(args["days"], int)
        sent = server.bodies[-1]
        assert sent["tools"][0]["function"]["name"] == "get_weather"
        assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
        follow_up = ModelRequest(messages=[
            ChatMessage(role="user", content="Weather in Oslo?"),
            ChatMessage(role="assistant", tool_calls=[call]),
            ChatMessage(role="tool", tool_call_id=call.id, content="sunny"),
        ], config=GenerateConfig(tools=[WEATHER]))
        answer = self.generate(server, follow_up)
        assert answer.choices[0].tool_calls == [] and answer.text
        messages = server.bodies[-1]["messages"]
        assert messages[1]["tool_calls"][0]["function"]["name"] == "get_weather"
        assert messages[2] == {"role": "tool", "tool_call_id": call.id, "content": "sunny"}

    def test_json_schema_response_format(self, server: OpenAIServer) -> None:
        fmt = ResponseFormat(name="answer", json_schema=ANSWER_SCHEMA)
        c = self.generate(server, ModelRequest.chat("When?", response_format=fmt))
        value = json.loads(c.text)
        assert set(value) == {"answer", "year", "sure", "sources"}
        assert isinstance(value["year"], int) and isinstance(value["sure"], bool)
        assert server.bodies[-1]["response_format"]["json_schema"]["schema"] == ANSWER_SCHEMA

    def test_chat_logprobs(self, server: OpenAIServer) -> None:
        c = self.generate(server, ModelRequest.chat("Say yes.", logprobs=True, top_logprobs=3))
        lps = c.choices[0].logprobs
        assert lps is not None and " ".join(t.token for t in lps) == c.text
        assert all(t.logprob <= 0 and len(t.top) == 3 and t.top[0].token == t.token for t in lps)
        plain = self.generate(server, ModelRequest.chat("Say yes."))
        assert plain.choices[0].logprobs is None

    # --- retries ------------------------------------------------------------------------------

    def test_retries_429_honouring_retry_after(self, server: OpenAIServer, caplog: pytest.LogCaptureFixture) -> None:
        server.fail_next(Fault.status_code(429, retry_after=0.05), times=2)
        with caplog.at_level(logging.WARNING, logger="chronokg.models"):
            c = self.generate(server, ModelRequest.chat("hi"))
        assert c.retries == 2 and server.model_requests == 3
        waits = [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
        assert len(waits) == 2 and all("waiting 0.050 s (Retry-After)" in w and "429" in w for w in waits)

    @pytest.mark.parametrize("fault", [Fault.status_code(500), Fault.status_code(503), Fault.drop(),
                                       Fault.malformed()], ids=["500", "503", "dropped", "malformed"])
    def test_retries_transient_failures(self, server: OpenAIServer, fault: Fault) -> None:
        server.fail_next(fault, times=2)
        c = self.generate(server, ModelRequest.chat("hi"))
        assert c.retries == 2 and server.model_requests == 3 and c.text

    def test_retries_timeouts(self, server: OpenAIServer) -> None:
        server.fail_next(Fault.slow(2.0))
        c = self.generate(server, ModelRequest.chat("hi"), timeout_s=0.3)
        assert c.retries == 1 and server.model_requests == 2

    def test_gives_up_after_max_retries(self, server: OpenAIServer) -> None:
        server.fail_next(Fault.status_code(500, message="overloaded"), times=10)
        with pytest.raises(RetriesExhausted) as info:
            self.generate(server, ModelRequest.chat("hi"), max_retries=2)
        assert info.value.attempts == 3 and server.model_requests == 3 and "overloaded" in str(info.value)

    @pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
    def test_fails_fast_on_requests_that_cannot_succeed(self, server: OpenAIServer, status: int) -> None:
        server.fail_next(Fault.status_code(status, message=f"server says no ({status})"), times=5)
        with pytest.raises(ModelRequestError) as info:
            self.generate(server, ModelRequest.chat("hi"))
        assert info.value.status == status and f"server says no ({status})" in str(info.value)
        assert server.model_requests == 1

    # --- cache --------------------------------------------------------------------------------

    def test_cache_hit_sends_nothing(self, server: OpenAIServer, tmp_path: Path) -> None:
        path = tmp_path / "cache.sqlite"
        request = ModelRequest.chat("What year is it?", temperature=0.0)
        first = self.generate(server, request, cache=path)
        second = self.generate(server, request, cache=path)
        assert server.model_requests == 1
        assert (first.cached, second.cached) == (False, True)
        assert second.choices == first.choices and second.model == first.model
        other = self.generate(server, request.with_config(max_tokens=50), cache=path)
        assert not other.cached and server.model_requests == 2

    def test_cache_per_sample_index(self, server: OpenAIServer, tmp_path: Path) -> None:
        path = tmp_path / "cache.sqlite"
        three = self.generate(server, ModelRequest.chat("Pick a number.", n=3, temperature=1.0), cache=path)
        five = self.generate(server, ModelRequest.chat("Pick a number.", n=5, temperature=1.0), cache=path)
        assert server.model_requests == 2 and server.bodies[-1]["n"] == 2
        assert [c.text for c in five.choices[:3]] == [c.text for c in three.choices]
        assert len({c.text for c in five.choices}) == 5 and [c.index for c in five.choices] == [0, 1, 2, 3, 4]
        again = self.generate(server, ModelRequest.chat("Pick a number.", n=5, temperature=1.0), cache=path)
        assert again.cached and again.choices == five.choices and server.model_requests == 2
        epoch = self.generate(server, ModelRequest.chat("Pick a number.", temperature=1.0).model_copy(
            update={"epoch": 1}), cache=path)
        assert not epoch.cached and epoch.text not in {c.text for c in five.choices}

    def test_cache_safe_under_two_processes(self, server: OpenAIServer, tmp_path: Path) -> None:
        path = tmp_path / "shared.sqlite"
        options, env = self.process_options(server)
        script = textwrap.dedent(f"""
            import asyncio, json, sys
            from chronokg.models import ModelRequest, RetryPolicy, get_model
            async def main():
                client = get_model({self.spec!r}, cache={str(path)!r}, retry=RetryPolicy(initial_delay_s=0.01),
                                   **{options!r})
                out = await asyncio.gather(*[client.generate(ModelRequest.chat(f"question {{i}}", n=2,
                                                                              temperature=1.0))
                                             for i in range(40)])
                await client.aclose()
                print(json.dumps([[c.text for c in o.choices] for o in out]))
            asyncio.run(main())
        """)
        procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=Settings().subprocess_env(**env)) for _ in range(2)]
        outputs = [p.communicate(timeout=60) for p in procs]
        assert all(p.returncode == 0 for p in procs), [err for _, err in outputs]
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            assert db.execute("SELECT COUNT(*) FROM responses").fetchone() == (80,)
        sent = server.model_requests
        assert 40 <= sent <= 80  # each question asked by one process or both, never more
        resumed = [self.generate(server, ModelRequest.chat(f"question {i}", n=2, temperature=1.0), cache=path)
                   for i in range(40)]
        assert server.model_requests == sent and all(c.cached for c in resumed)
        first_process = json.loads(outputs[0][0])
        texts = [[c.text for c in r.choices] for r in resumed]
        matches = sum(t == f for t, f in zip(texts, first_process, strict=True))
        assert matches >= 40 - (sent - 40)  # where both asked, the first writer's samples are the ones kept

