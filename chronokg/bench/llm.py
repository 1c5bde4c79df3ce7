"""The few LLM calls benchmark generation makes (question writing, difference extraction, verification,
time-sensitivity votes).

They go through a model client (`chronokg.models`), are cached there, and ask for JSON
that is checked against a schema here, so a malformed reply is one clear error; a seed that
parses replies its own way (BenchAge's detector) gets the plain texts from `ask_texts`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from chronokg.errors import ModelError
from chronokg.models import ChatMessage, GenerateConfig, ModelClient, ModelRequest, ResponseFormat, get_model


def open_model(spec: str, base_url: str | None = None, api_key_env: str | None = None) -> ModelClient:
    """The model client for `spec` (see `chronokg.models.get_model`); `api_key_env` names its key's variable."""
    return get_model(spec, base_url=base_url, api_key_env=api_key_env)


def parse_json(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON object from a reply: the whole text, else a fenced ```json block, else the outermost braces."""
    candidates = [text]
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    if fenced:
        candidates.append(fenced.group(1))
    braces = re.search(r"\{.*\}", text, re.S)
    if braces:
        candidates.append(braces.group(0))
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            missing = [k for k in schema.get("required", []) if k not in value]
            if missing:
                raise ModelError(f"the model's JSON lacks {', '.join(missing)}: {text[:200]!r}")
            return value
    raise ModelError(f"the model did not answer with JSON: {text[:200]!r}")


def _request(messages: list[dict[str, str]], **config: Any) -> ModelRequest:
    return ModelRequest(messages=[ChatMessage.model_validate(m) for m in messages],
                        config=GenerateConfig(**{k: v for k, v in config.items() if v is not None}))


async def ask_texts(model: ModelClient, messages: list[dict[str, str]], temperature: float, n: int = 1,
                    max_tokens: int | None = None, top_p: float | None = None) -> list[str]:
    """`n` sampled replies to `messages`, as plain text: for seeds that parse the reply themselves (no
    response format is asked for, and no max_tokens unless given, as such seeds send them)."""
    completion = await model.generate(_request(messages, temperature=temperature, n=n, max_tokens=max_tokens,
                                               top_p=top_p))
    return [choice.text or "" for choice in completion.choices]


async def ask_json(model: ModelClient, messages: list[dict[str, str]], schema: dict[str, Any],
                   temperature: float = 0.0, top_p: float | None = None, max_tokens: int | None = None
                   ) -> dict[str, Any]:
    """Send `messages`, asking for a JSON object of `schema` (structured output where the server supports it;
    the reply is parsed leniently either way)."""
    fmt = ResponseFormat(type="json_schema", name="answer", json_schema=schema, strict=False)
    completion = await model.generate(_request(messages, temperature=temperature, top_p=top_p,
                                               max_tokens=max_tokens, response_format=fmt))
    return parse_json(completion.text, schema)
