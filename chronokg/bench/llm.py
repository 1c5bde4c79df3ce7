"""The few LLM calls benchmark generation makes (question writing, difference extraction, verification,
time-sensitivity votes).

They go through a model client (`chronokg.models`), are cached there, and ask for JSON
that is checked against a schema here, so a malformed reply is one clear error; a seed that
parses replies its own way (BenchAge's detector) gets the plain texts from `ask_texts`.
"""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

from chronokg.errors import ModelError


def open_model(spec: str, base_url: str | None = None) -> Any:
    """The model client for `spec` (see `chronokg.models.get_model`)."""
    models = importlib.import_module("chronokg.models")
    return models.get_model(spec, base_url=base_url)


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


async def ask_texts(model: Any, messages: list[dict[str, str]], temperature: float, n: int = 1,
                    max_tokens: int | None = None) -> list[str]:
    """`n` sampled replies to `messages`, as plain text: for seeds that parse the reply themselves (no
    response format is asked for, and no max_tokens unless given, as such seeds send them)."""
    types = importlib.import_module("chronokg.models")
    settings: dict[str, Any] = {"temperature": temperature, "n": n}
    if max_tokens is not None:
        settings["max_tokens"] = max_tokens
    request = types.ModelRequest(messages=messages, config=types.GenerateConfig(**settings))
    completion = await model.generate(request)
    return [choice.text or "" for choice in completion.choices]


async def ask_json(model: Any, messages: list[dict[str, str]], schema: dict[str, Any],
                   temperature: float = 0.0) -> dict[str, Any]:
    """Send `messages`, asking for a JSON object of `schema` (response_format where the server supports it)."""
    types = importlib.import_module("chronokg.models")
    request = types.ModelRequest(
        messages=messages,
        config=types.GenerateConfig(temperature=temperature, response_format={
            "type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}),
    )
    completion = await model.generate(request)
    return parse_json(completion.choices[0].text, schema)
