"""OpenAI and OpenAI-compatible servers over their HTTP wire format (httpx2, async).

`openai/<model>` talks to the OpenAI API (or `CHRONOKG_OPENAI_BASE_URL`) with the key from the
settings; `openai-compat/<model>` talks to any server that speaks the same wire format (vLLM,
SGLang, llama.cpp, Ollama, LM Studio, TGI, Together, OpenRouter, ...) at its base URL. A request is
one JSON POST with a bearer key, sent with httpx2 (the maintained httpx fork the `openai` SDK is
built on; plain httpx's connection pool costs ~2 ms of CPU a request at 64 in flight). The SDK
itself would add ~0.7 s of CPU and ~50 MB to every process that imports it, and ~0.3 ms of CPU to
every request, for typed models this client never reads. `retry.py` retries, counts and logs.
Response bodies are parsed by the small wire models below, so a server that adds or omits fields
still works.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx2
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chronokg.models.client_errors import ModelConfigError, ModelRequestError, TransientModelError, key_refused
from chronokg.models.managed import ManagedClient
from chronokg.models.retry import parse_retry_after
from chronokg.models.spec import ClientOptions, checked_url
from chronokg.models.types import (
    Choice,
    Completion,
    GenerateConfig,
    ModelRequest,
    TokenLogprob,
    ToolCall,
    TopLogprob,
    Usage,
)

OPENAI_BASE_URL = "https://api.openai.com/v1"
# 408 and 409 are worth another try (timeouts, conflicts); other 4xx cannot succeed as sent.
_RETRY_STATUSES = frozenset({408, 409, 429})
NO_KEY = "no-key-given"


class OpenAICompatClient(ManagedClient):
    """A `ModelClient` for one model behind an OpenAI-compatible `/v1` endpoint."""

    def __init__(self, options: ClientOptions, *, newest_params: bool = False) -> None:
        super().__init__(options)
        self._newest_params = newest_params  # OpenAI's own API: max_completion_tokens
        self._client: httpx2.AsyncClient | None = None

    def _on_new_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        slots = max(self.options.limits.concurrency, 16)
        key = self.options.api_key.get_secret_value() if self.options.api_key else NO_KEY
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json",
                   "Accept": "application/json", **(self.options.headers or {})}
        self._client = httpx2.AsyncClient(
            base_url=self.options.base_url or "", headers=headers, timeout=self.options.timeout_s,
            follow_redirects=True,  # as the SDK did: a server moved behind a proxy (http -> https, /v1 -> /v1/)
            limits=httpx2.Limits(max_connections=slots, max_keepalive_connections=slots),
        )

    async def aclose(self) -> None:
        client, self._client = self._client, None
        loop, self._loop = self._loop, None
        if client is not None and loop is asyncio.get_running_loop():
            await client.aclose()

    async def _send(self, request: ModelRequest, n: int) -> Completion:
        assert self._client is not None
        config = request.config
        timeout = config.timeout or self.options.timeout_s
        chat = request.messages is not None
        body = self._chat_params(request, n) if chat else self._completion_params(request, n)
        started = time.perf_counter()
        try:
            raw = await self._client.post("chat/completions" if chat else "completions",
                                          content=json.dumps(body).encode(), timeout=timeout)
            content = raw.content
        except httpx2.TimeoutException as exc:
            raise TransientModelError(f"no answer within {timeout:g} s") from exc
        except httpx2.TransportError as exc:
            raise TransientModelError(f"connection failed: {type(exc).__name__}: {exc}") from exc
        if raw.status_code >= 300:
            raise self._status_error(raw)
        latency = time.perf_counter() - started
        try:
            wire = (_ChatBody if chat else _TextBody).model_validate_json(content)
        except ValidationError as exc:
            raise TransientModelError(f"malformed response body ({len(content)} bytes): "
                                      f"{exc.errors()[0]['msg']}") from exc
        empty = wire.empty_reason()
        if empty is not None:  # an answer nobody wrote: retried, then a failed sample (never cached, never scored)
            raise TransientModelError(f"empty answer from the server: {empty}")
        return Completion(spec=self.spec, choices=wire.choices_out(), usage=wire.usage_out(), model=wire.model,
                          request_id=raw.headers.get("x-request-id") or wire.id, latency_s=latency)

    def _status_error(self, response: httpx2.Response) -> Exception:
        status = response.status_code
        message = " ".join(_server_message(response).split())  # one line: an HTML error page has many
        key = self.options.api_key.get_secret_value() if self.options.api_key else ""
        if len(key) >= 8:  # a server or proxy that echoes the key it refused: kept out of logs and records
            message = message.replace(key, "***")
        if status in _RETRY_STATUSES or status >= 500:
            return TransientModelError(f"HTTP {status}: {message}", status=status,
                                       retry_after=parse_retry_after(response.headers))
        if key_refused(status, message):
            message = f"{message} (the server refused the API key: {self._key_source()})"
        return ModelRequestError(self.spec, status, message)

    def _key_source(self) -> str:
        """Where the key this client sent came from, or that none was set: what a user checks first."""
        source = self.options.api_key_source
        if self.options.api_key is None or source is None:
            return ("no API key was set: name its variable with --api-key-env, or api_key_env in the models file "
                    f"({self.options.settings.models_file})")
        return f"chronokg read it from {source}; check that it holds a key this server accepts"

    def _common(self, config: GenerateConfig, n: int) -> dict[str, Any]:
        params: dict[str, Any] = {"model": self.options.model}
        for name in ("temperature", "top_p", "stop", "seed"):
            value = getattr(config, name)
            if value is not None:
                params[name] = value
        if n != 1:
            params["n"] = n
        if config.extra_body:
            params.update(config.extra_body)
        return params

    def _chat_params(self, request: ModelRequest, n: int) -> dict[str, Any]:
        config = request.config
        params = self._common(config, n)
        params["messages"] = [_message_out(m.model_dump(exclude_none=True)) for m in request.messages or []]
        if config.max_tokens is not None:
            params["max_completion_tokens" if self._newest_params else "max_tokens"] = config.max_tokens
        if config.logprobs:
            params["logprobs"] = True
            if config.top_logprobs is not None:
                params["top_logprobs"] = config.top_logprobs
        if config.tools:
            params["tools"] = [{"type": "function", "function": t.model_dump()} for t in config.tools]
        if config.tool_choice is not None:
            choice = config.tool_choice
            params["tool_choice"] = choice if choice in ("auto", "none", "required") else {
                "type": "function", "function": {"name": choice}}
        fmt = config.response_format
        if fmt is not None:
            params["response_format"] = {"type": fmt.type} if fmt.type != "json_schema" else {
                "type": "json_schema",
                "json_schema": {"name": fmt.name, "schema": fmt.json_schema or {}, "strict": fmt.strict}}
        return params

    def _completion_params(self, request: ModelRequest, n: int) -> dict[str, Any]:
        config = request.config
        if config.tools or config.response_format is not None:
            raise ModelConfigError(f"{self.spec}: tools and response formats need chat messages, not a raw prompt")
        params = self._common(config, n)
        params["prompt"] = request.prompt
        if config.max_tokens is not None:
            params["max_tokens"] = config.max_tokens
        if config.logprobs:
            params["logprobs"] = config.top_logprobs or 0
        return params


def _message_out(message: dict[str, Any]) -> dict[str, Any]:
    calls = message.get("tool_calls")
    if calls:
        message["tool_calls"] = [{"id": c["id"], "type": "function",
                                  "function": {"name": c["name"], "arguments": c["arguments"]}} for c in calls]
    return message


def _server_message(response: httpx2.Response) -> str:
    """The server's own words: the error body's `message` (OpenAI's `{"error": {"message": ...}}`, or a bare
    string), else the start of the body, else the status."""
    try:
        body = json.loads(response.content)
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    text = response.text.strip()
    return text[:500] if text else f"Error code: {response.status_code}"


# --- the wire format (only what we read; everything else is ignored) ------------------------------

class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Function(_Wire):
    name: str
    arguments: str = "{}"


class _ToolCall(_Wire):
    id: str = ""
    function: _Function


class _Top(_Wire):
    token: str
    logprob: float


class _TokenLogprob(_Wire):
    token: str
    logprob: float
    top_logprobs: list[_Top] = Field(default_factory=list)


class _ChatLogprobs(_Wire):
    content: list[_TokenLogprob] | None = None


class _Message(_Wire):
    content: str | None = None
    tool_calls: list[_ToolCall] | None = None


class _ChatChoice(_Wire):
    index: int = 0
    message: _Message
    finish_reason: str | None = None
    logprobs: _ChatLogprobs | None = None

    def out(self) -> Choice:
        lps = None
        if self.logprobs is not None and self.logprobs.content is not None:
            lps = [TokenLogprob(token=t.token, logprob=t.logprob,
                                top=[TopLogprob(token=a.token, logprob=a.logprob) for a in t.top_logprobs])
                   for t in self.logprobs.content]
        calls = [ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments)
                 for c in self.message.tool_calls or []]
        return Choice(index=self.index, text=self.message.content or "", finish_reason=self.finish_reason,
                      tool_calls=calls, logprobs=lps)


class _TextLogprobs(_Wire):
    tokens: list[str] = Field(default_factory=list)
    token_logprobs: list[float | None] = Field(default_factory=list)
    top_logprobs: list[dict[str, float] | None] | None = None


class _TextChoice(_Wire):
    index: int = 0
    text: str = ""
    finish_reason: str | None = None
    logprobs: _TextLogprobs | None = None

    def out(self) -> Choice:
        lps = None
        if self.logprobs is not None:
            tops = self.logprobs.top_logprobs or []
            lps = [TokenLogprob(token=tok, logprob=lp if lp is not None else 0.0,
                                top=[TopLogprob(token=k, logprob=v)
                                     for k, v in ((tops[i] or {}) if i < len(tops) else {}).items()])
                   for i, (tok, lp) in enumerate(zip(self.logprobs.tokens, self.logprobs.token_logprobs,
                                                     strict=False))]
        return Choice(index=self.index, text=self.text, finish_reason=self.finish_reason, logprobs=lps)


class _WireUsage(_Wire):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _Body(_Wire):
    id: str | None = None
    model: str | None = None
    usage: _WireUsage | None = None

    def usage_out(self) -> Usage:
        u = self.usage or _WireUsage()
        return Usage(prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens)


class _ChatBody(_Body):
    choices: list[_ChatChoice]

    def empty_reason(self) -> str | None:
        if not self.choices:
            return "no choices"
        for c in self.choices:
            if c.message.content is None and not c.message.tool_calls:
                return f"choice {c.index}: message.content is null (finish_reason {c.finish_reason!r})"
        return None

    def choices_out(self) -> list[Choice]:
        return [c.out() for c in sorted(self.choices, key=lambda c: c.index)]


class _TextBody(_Body):
    choices: list[_TextChoice]

    def empty_reason(self) -> str | None:
        return None if self.choices else "no choices"

    def choices_out(self) -> list[Choice]:
        return [c.out() for c in sorted(self.choices, key=lambda c: c.index)]


# --- factories registered in CLIENTS -----------------------------------------------------------------

def openai_client(options: ClientOptions) -> OpenAICompatClient:
    """`openai/<model>`: needs a key (`OPENAI_API_KEY` or `CHRONOKG_OPENAI_API_KEY`)."""
    key, source = options.api_key, options.api_key_source
    if key is None:
        key = options.settings.openai_api_key
        chronokg_var = options.settings.env_value("CHRONOKG_OPENAI_API_KEY") is not None
        source = "CHRONOKG_OPENAI_API_KEY" if chronokg_var else "OPENAI_API_KEY"
    if key is None:
        raise ModelConfigError(f"{options.spec} needs an OpenAI API key: set OPENAI_API_KEY "
                               "(or CHRONOKG_OPENAI_API_KEY), or name another variable with --api-key-env")
    url = options.base_url or OPENAI_BASE_URL
    if options.base_url is None and options.settings.openai_base_url:
        url = checked_url(options.settings.openai_base_url, "CHRONOKG_OPENAI_BASE_URL (or OPENAI_BASE_URL)")
    return OpenAICompatClient(options.model_copy(update={"api_key": key, "base_url": url, "api_key_source": source}),
                              newest_params=True)


def compat_client(options: ClientOptions) -> OpenAICompatClient:
    """`openai-compat/<model>`: needs a base URL (argument, --base-url or a models file entry)."""
    if options.base_url is None:
        raise ModelConfigError(f"{options.spec} needs a server: pass --base-url URL (base_url=...) or give it "
                               f"an entry with base_url in the models file ({options.settings.models_file})")
    return OpenAICompatClient(options)
