"""The pydantic models at the client boundary: what a caller asks for and what comes back.

Backend-neutral on purpose: the OpenAI wire format is mapped to and from these in
`openai_compat.py`, so callers (benchmarks, the runner, RAG) never see a provider's types.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Role = Literal["system", "developer", "user", "assistant", "tool"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolCall(_Frozen):
    """A function call the model asked for; `arguments` is the JSON text the model wrote."""

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> Any:
        """The arguments decoded (raises `json.JSONDecodeError` if the model wrote invalid JSON)."""
        return json.loads(self.arguments or "{}")


class ChatMessage(_Frozen):
    """One chat turn; `content` is text or a list of OpenAI content parts (e.g. images)."""

    role: Role
    content: str | list[dict[str, Any]] | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None


class ToolSpec(_Frozen):
    """A function the model may call; `parameters` is its JSON schema."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ResponseFormat(_Frozen):
    """Plain text, any JSON object, or JSON valid for `json_schema` (structured output)."""

    type: Literal["text", "json_object", "json_schema"] = "json_schema"
    name: str = "response"
    json_schema: dict[str, Any] | None = None
    strict: bool = True


class GenerateConfig(_Frozen):
    """How to sample. Every field but `timeout` is part of the cache key.

    `extra_body` passes server-specific parameters (vLLM's `top_k`, `repetition_penalty`, ...).
    `timeout` is seconds per HTTP attempt (default: the `CHRONOKG_MODEL_TIMEOUT_S` setting).
    """

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    stop: list[str] | None = None
    seed: int | None = None
    n: int = Field(default=1, ge=1, le=128)
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    response_format: ResponseFormat | None = None
    tools: list[ToolSpec] | None = None
    tool_choice: Literal["auto", "none", "required"] | str | None = None
    extra_body: dict[str, Any] | None = None
    timeout: float | None = Field(default=None, gt=0)

    @property
    def sampled(self) -> bool:
        """Whether repeated requests may give different answers (then samples are cached by index)."""
        return self.n > 1 or (self.temperature is not None and self.temperature > 0)


class ModelRequest(_Frozen):
    """Chat `messages`, or a raw `prompt` for a completions endpoint, plus the generation config.

    `epoch` names a repeat of the same request: epoch 1 caches (and resumes) separately from epoch 0,
    so an evaluation that samples each question k times gets k distinct, resumable answers.
    """

    messages: list[ChatMessage] | None = None
    prompt: str | None = None
    config: GenerateConfig = Field(default_factory=GenerateConfig)
    epoch: int = Field(default=0, ge=0)
    metadata: dict[str, Any] | None = Field(
        default=None, description="Never sent and not part of the cache key: context for in-process clients "
                                  "(the evaluation runner's reference baselines read the question id here)")

    @model_validator(mode="after")
    def _one_input(self) -> ModelRequest:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("give either messages (chat) or prompt (completions), not both or neither")
        if self.messages is not None and not self.messages:
            raise ValueError("messages must not be empty")
        return self

    @classmethod
    def chat(cls, user: str, *, system: str | None = None, **config: Any) -> ModelRequest:
        """One user message (and an optional system message); keyword arguments form the config."""
        messages = ([ChatMessage(role="system", content=system)] if system else [])
        messages.append(ChatMessage(role="user", content=user))
        return cls(messages=messages, config=GenerateConfig(**config))

    @classmethod
    def completion(cls, prompt: str, **config: Any) -> ModelRequest:
        """A raw prompt for the completions endpoint."""
        return cls(prompt=prompt, config=GenerateConfig(**config))

    def with_config(self, **changes: Any) -> ModelRequest:
        """A copy with some config fields changed (validated)."""
        merged = {**self.config.model_dump(exclude_unset=True), **changes}
        return self.model_copy(update={"config": GenerateConfig(**merged)})


class TopLogprob(_Frozen):
    token: str
    logprob: float


class TokenLogprob(_Frozen):
    """One generated token's log probability and the most likely alternatives at that position."""

    token: str
    logprob: float
    top: list[TopLogprob] = Field(default_factory=list)


class Choice(_Frozen):
    """One sample: its text, why it stopped, the tool calls it made and (if asked) its logprobs."""

    index: int
    text: str = ""
    finish_reason: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    logprobs: list[TokenLogprob] | None = None


class Usage(_Frozen):
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                     completion_tokens=self.completion_tokens + other.completion_tokens)


class Completion(_Frozen):
    """The `n` choices of one request, with usage and where they came from.

    `model` is the name the server reported (it may differ from the spec's), `latency_s` the
    round trip of the successful attempt (0 for a cache hit), `retries` the failed attempts
    before it, `cached` whether every choice came from the response cache.
    """

    spec: str
    choices: list[Choice]
    usage: Usage = Field(default_factory=Usage)
    model: str | None = None
    request_id: str | None = None
    latency_s: float = 0.0
    retries: int = 0
    cached: bool = False

    @property
    def text(self) -> str:
        """The first choice's text."""
        return self.choices[0].text if self.choices else ""
