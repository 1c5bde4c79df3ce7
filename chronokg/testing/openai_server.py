"""A real OpenAI-compatible HTTP server on loopback, standing in for a model in tests and benchmarks.

No model can run on the machines these tests run on, so this server speaks the OpenAI wire format
(`/v1/chat/completions`, `/v1/completions`, `/v1/models`, `/health`; `n` choices, tool calls,
logprobs, JSON-schema response formats, non-streaming) with deterministic answers, counts what it
receives, and fails on request: 429 with Retry-After, 5xx, slow answers, dropped connections,
malformed JSON, 400/401/404.

In a test (background thread)::

    with OpenAIServer() as server:
        client = get_model("openai-compat/m", base_url=server.url)
        server.fail_next(Fault.status(429, retry_after=0.01), times=2)
        server.script = lambda req: Reply(text="Paris")   # or leave the deterministic default

As a separate process (prints its URL, serves until SIGTERM/Ctrl-C)::

    python -m chronokg.testing.openai_server --port 0 [--instant]

A client can also ask for a fault itself with the header `X-Fault: 429:0.5` (status[:retry-after]),
`slow:0.3`, `drop` or `malformed`, or queue faults with `POST /_control/faults`; `GET /_control/stats`
returns the request counts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import threading
import time
from collections import Counter, deque
from dataclasses import asdict, dataclass
from typing import Any, Literal

from aiohttp import web

from chronokg.testing.replies import (
    Reply,
    Script,
    ScriptedRequest,
    apply_limits,
    chat_logprobs,
    completion_logprobs,
    default_reply,
    digest,
)

FaultKind = Literal["status", "slow", "drop", "malformed", "empty", "null"]


@dataclass(frozen=True)
class Fault:
    """One injected failure for one model request."""

    kind: FaultKind
    status: int = 500
    message: str = "injected fault"
    retry_after: float | None = None
    delay_s: float = 0.0

    @classmethod
    def status_code(cls, status: int, *, retry_after: float | None = None, message: str | None = None) -> Fault:
        return cls("status", status=status, retry_after=retry_after, message=message or f"injected {status}")

    @classmethod
    def slow(cls, delay_s: float) -> Fault:
        return cls("slow", delay_s=delay_s)

    @classmethod
    def drop(cls) -> Fault:
        return cls("drop")

    @classmethod
    def malformed(cls) -> Fault:
        return cls("malformed")

    @classmethod
    def empty(cls) -> Fault:
        """HTTP 200 with `choices: []` (seen from servers that drop a request under load)."""
        return cls("empty")

    @classmethod
    def null(cls) -> Fault:
        """HTTP 200 whose one choice has `message.content: null` and no tool calls."""
        return cls("null")

    @classmethod
    def parse(cls, text: str) -> Fault:
        """`429:0.5` (status[:retry-after]), `slow:0.3`, `drop`, `malformed`, `empty` or `null`."""
        head, _, arg = text.strip().partition(":")
        if head in ("empty", "null"):
            return cls.empty() if head == "empty" else cls.null()
        if head == "slow":
            return cls.slow(float(arg or 1))
        if head == "drop":
            return cls.drop()
        if head == "malformed":
            return cls.malformed()
        return cls.status_code(int(head), retry_after=float(arg) if arg else None)


_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 422: "invalid_request_error", 429: "rate_limit_error"}


class OpenAIServer:
    """The loopback server; `start()` runs it in a daemon thread, `serve()` in the current loop.

    `instant=True` answers every model request with one fixed, pre-serialized reply without
    reading the request (for throughput benchmarks); otherwise answers are computed per request.
    `api_key` makes requests without that bearer token fail with 401; `models` (if given) makes
    requests for other model names fail with 404.
    """

    def __init__(self, *, port: int = 0, instant: bool = False, api_key: str | None = None,
                 models: list[str] | None = None, script: Script | None = None,
                 served_model: str | None = None, record: bool = True) -> None:
        self.port = port
        self.instant = instant
        self.api_key = api_key
        self.models = models
        self.script = script
        self.served_model = served_model
        self.record = record and not instant
        self.counts: Counter[str] = Counter()
        self.bodies: list[dict[str, Any]] = []
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._sampled = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._ready = threading.Event()
        self._instant_chat = _instant_body("chat.completion")
        self._instant_text = _instant_body("text_completion")

    # --- control ------------------------------------------------------------------------------

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The OpenAI base URL (with `/v1`)."""
        return f"{self.base}/v1"

    @property
    def model_requests(self) -> int:
        """Chat and completion requests received (faulted ones included)."""
        return self.counts["/v1/chat/completions"] + self.counts["/v1/completions"]

    def fail_next(self, fault: Fault, times: int = 1) -> None:
        """The next `times` model requests fail with `fault`."""
        with self._lock:
            self._faults.extend([fault] * times)

    def reset(self) -> None:
        """Forget counts, recorded bodies and queued faults."""
        with self._lock:
            self.counts.clear()
            self.bodies.clear()
            self._faults.clear()
            self.max_in_flight = 0

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/health", self._health)
        app.router.add_post("/_control/faults", self._control_faults)
        app.router.add_get("/_control/stats", self._control_stats)
        return app

    async def serve(self, sock: socket.socket | None = None) -> None:
        """Start serving in the running loop (returns once listening)."""
        if sock is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", self.port))
        self.port = sock.getsockname()[1]
        self._runner = web.AppRunner(self.app(), access_log=None, handle_signals=False, shutdown_timeout=0.5)
        await self._runner.setup()
        await web.SockSite(self._runner, sock, backlog=1024).start()

    async def shutdown(self) -> None:
        """Stop listening; handlers still running (slow answers) are cancelled."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    def start(self) -> OpenAIServer:
        """Serve from a daemon thread; returns once the port is open."""
        self._thread = threading.Thread(target=self._run_thread, name="openai-loopback", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("loopback OpenAI server did not start")
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        asyncio.run_coroutine_threadsafe(self.shutdown(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        self._loop = self._thread = None

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run_thread(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        loop.run_until_complete(self.serve())
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    # --- handlers -----------------------------------------------------------------------------

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._model_request(request, "chat")

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._model_request(request, "completions")

    async def _model_request(self, request: web.Request, endpoint: str) -> web.StreamResponse:
        self.counts[request.path] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return await self._handle(request, endpoint)
        finally:
            self.in_flight -= 1

    async def _handle(self, request: web.Request, endpoint: str) -> web.StreamResponse:
        fault = self._next_fault(request)
        if fault is not None:
            answer = await self._apply_fault(request, fault)
            if answer is not None:
                return answer
        if self.api_key is not None and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return _error(401, "Incorrect API key provided.")
        if self.instant:
            return web.Response(body=self._instant_chat if endpoint == "chat" else self._instant_text,
                                content_type="application/json")
        try:
            body = await request.json()
        except json.JSONDecodeError:
            return _error(400, "request body is not valid JSON")
        if self.record:
            self.bodies.append(body)
        problem = self._check(body, endpoint)
        if problem is not None:
            return problem
        return web.json_response(self._answer(body, endpoint), headers={"x-request-id": f"req-{digest(body)[:16]}"})

    def _check(self, body: dict[str, Any], endpoint: str) -> web.Response | None:
        model = body.get("model")
        if not model:
            return _error(400, "you must provide a model parameter")
        if self.models is not None and model not in self.models:
            return _error(404, f"The model `{model}` does not exist or you do not have access to it.")
        if body.get("stream"):
            return _error(400, "stream=true is not supported by the loopback server")
        if endpoint == "chat" and not body.get("messages"):
            return _error(400, "messages must be a non-empty list")
        if endpoint == "completions" and "prompt" not in body:
            return _error(400, "prompt is required")
        n = body.get("n") or 1
        if not isinstance(n, int) or n < 1 or n > 128:
            return _error(400, f"n must be an integer between 1 and 128, got {n!r}")
        return None

    def _answer(self, body: dict[str, Any], endpoint: str) -> dict[str, Any]:
        n = body.get("n") or 1
        temperature = body.get("temperature")
        # Sampling without a seed gives fresh samples on every request, like a real server.
        with self._lock:
            self._sampled += 1
            salt = "" if body.get("seed") is not None or not temperature else str(self._sampled)
        choices = [self._choice(body, endpoint, i, salt) for i in range(n)]
        prompt_tokens = len(json.dumps(body.get("messages") or body.get("prompt") or "").split())
        completion_tokens = sum(c.pop("_tokens") for c in choices)
        return {
            "id": f"cmpl-{digest(body, salt)[:20]}",
            "object": "chat.completion" if endpoint == "chat" else "text_completion",
            "created": int(time.time()),
            "model": self.served_model or body["model"],
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }

    def _choice(self, body: dict[str, Any], endpoint: str, index: int, salt: str) -> dict[str, Any]:
        scripted = ScriptedRequest(endpoint, body, index)
        reply = self.script(scripted) if self.script is not None else default_reply(scripted, salt)
        if isinstance(reply, str):
            reply = Reply(text=reply)
        key = digest(body.get("messages"), body.get("prompt"), index, salt)
        if reply.tool_calls:
            calls = [{"id": f"call_{digest(key, j)[:12]}", "type": "function",
                      "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                     for j, c in enumerate(reply.tool_calls)]
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "tool_calls": calls}
            return {"index": index, "message": message, "logprobs": None,
                    "finish_reason": reply.finish_reason or "tool_calls", "_tokens": len(calls) * 8}
        text, finish = apply_limits(reply.text, body)
        tokens = len(text.split())
        if endpoint == "chat":
            top = int(body.get("top_logprobs") or 0)
            logprobs = chat_logprobs(text, key, top) if body.get("logprobs") else None
            return {"index": index, "message": {"role": "assistant", "content": text}, "logprobs": logprobs,
                    "finish_reason": reply.finish_reason or finish, "_tokens": tokens}
        asked = body.get("logprobs")
        logprobs = completion_logprobs(text, key, int(asked)) if asked is not None else None
        return {"index": index, "text": text, "logprobs": logprobs, "finish_reason": reply.finish_reason or finish,
                "_tokens": tokens}

    def _next_fault(self, request: web.Request) -> Fault | None:
        header = request.headers.get("X-Fault")
        if header:
            return Fault.parse(header)
        with self._lock:
            return self._faults.popleft() if self._faults else None

    async def _apply_fault(self, request: web.Request, fault: Fault) -> web.StreamResponse | None:
        if fault.kind == "slow":
            await asyncio.sleep(fault.delay_s)
            return None
        if fault.kind == "status":
            headers = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
            return _error(fault.status, fault.message, headers)
        if fault.kind == "malformed":
            return web.Response(body=b'{"id": "cmpl-broken", "choices": [', content_type="application/json")
        if fault.kind in ("empty", "null"):
            choices = [] if fault.kind == "empty" else [
                {"index": 0, "message": {"role": "assistant", "content": None}, "finish_reason": "stop"}]
            return web.json_response({"id": f"cmpl-{fault.kind}", "object": "chat.completion", "created": 0,
                                      "model": "loopback-model", "choices": choices,
                                      "usage": {"prompt_tokens": 1, "completion_tokens": 0, "total_tokens": 1}})
        await request.read()
        if request.transport is not None:
            request.transport.abort()  # the client sees the connection close with no response
        return web.Response(status=500)

    async def _models(self, request: web.Request) -> web.Response:
        self.counts[request.path] += 1
        names = self.models or [self.served_model or "loopback-model"]
        return web.json_response({"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "chronokg-loopback"} for name in names]})

    async def _health(self, request: web.Request) -> web.Response:
        self.counts[request.path] += 1
        return web.Response(text="ok")

    async def _control_faults(self, request: web.Request) -> web.Response:
        body = await request.json()
        for item in body:
            self.fail_next(Fault(**item))
        return web.json_response({"queued": len(self._faults)})

    async def _control_stats(self, request: web.Request) -> web.Response:
        return web.json_response({"counts": dict(self.counts), "model_requests": self.model_requests,
                                  "queued_faults": [asdict(f) for f in self._faults]})


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    kind = _ERROR_TYPES.get(status, "server_error")
    body = {"error": {"message": message, "type": kind, "param": None, "code": kind}}
    return web.json_response(body, status=status, headers=headers)


def _instant_body(kind: str) -> bytes:
    choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": "stop"}
    if kind == "chat.completion":
        choice["message"] = {"role": "assistant", "content": "ok"}
    else:
        choice["text"] = "ok"
    return json.dumps({"id": "cmpl-instant", "object": kind, "created": 0, "model": "loopback-model",
                       "choices": [choice],
                       "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode()


def main(argv: list[str] | None = None) -> None:
    """Serve in this process and print the base URL (with `/v1`) on the first line of stdout."""
    parser = argparse.ArgumentParser(prog="python -m chronokg.testing.openai_server", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--instant", action="store_true", help="one fixed reply, request bodies not read")
    parser.add_argument("--api-key", default=None, help="require this bearer token")
    parser.add_argument("--served-model", default=None, help="the model name reported in replies")
    args = parser.parse_args(argv)
    server = OpenAIServer(port=args.port, instant=args.instant, api_key=args.api_key,
                          served_model=args.served_model, record=False)

    async def run() -> None:
        await server.serve()
        print(server.url, flush=True)
        try:
            await asyncio.Event().wait()
        finally:
            await server.shutdown()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())


if __name__ == "__main__":
    main()
