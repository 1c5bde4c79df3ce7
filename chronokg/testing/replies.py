"""Deterministic OpenAI wire-format bodies for the loopback server.

Answers are derived from a hash of the request (prompt, seed, sample index), so a test can
predict them, tell two samples apart, and see that a cached answer really came from the cache.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolCallReply:
    """One function call the model makes: its name and its arguments (a JSON-able dict)."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """What one choice says: text, or tool calls (then the finish reason is `tool_calls`)."""

    text: str = ""
    tool_calls: list[ToolCallReply] = field(default_factory=list)
    finish_reason: str | None = None


@dataclass(frozen=True)
class ScriptedRequest:
    """What a scripted reply function sees: the endpoint, the JSON body and which sample is asked for."""

    endpoint: str  # "chat" or "completions"
    body: dict[str, Any]
    sample: int

    @property
    def last_user_text(self) -> str:
        """The last user message's text (chat), or the prompt (completions)."""
        if self.endpoint == "completions":
            return str(self.body.get("prompt", ""))
        for message in reversed(self.body.get("messages", [])):
            if message.get("role") == "user":
                return content_text(message.get("content"))
        return ""


Script = Callable[[ScriptedRequest], "Reply | str"]


def content_text(content: Any) -> str:
    """A chat message's content as text (string content, or the text parts of a list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def digest(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def default_reply(request: ScriptedRequest, salt: str) -> Reply:
    """Tool call when tools are offered, JSON when a schema is asked for, else a hash-derived sentence."""
    body = request.body
    key = digest(body.get("messages"), body.get("prompt"), body.get("seed"), request.sample, salt)
    tools = body.get("tools") or []
    choice = body.get("tool_choice", "auto")
    if tools and choice != "none" and not _answered_tool(body):
        tool = _chosen_tool(tools, choice)
        params = tool.get("parameters") or {"type": "object", "properties": {}}
        return Reply(tool_calls=[ToolCallReply(tool["name"], instance(params, key))])
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return Reply(text=json.dumps(instance(fmt.get("json_schema", {}).get("schema", {}), key)))
    if fmt.get("type") == "json_object":
        return Reply(text=json.dumps({"answer": f"a{key[:6]}"}))
    words = request.last_user_text.split()[:6]
    return Reply(text=" ".join([f"s{request.sample}-{key[:8]}", "echo:", *words]))


def _answered_tool(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and messages[-1].get("role") == "tool"


def _chosen_tool(tools: list[dict[str, Any]], choice: Any) -> dict[str, Any]:
    functions = [t.get("function", t) for t in tools]
    if isinstance(choice, dict):
        wanted = choice.get("function", {}).get("name")
        for f in functions:
            if f.get("name") == wanted:
                return dict(f)
    return dict(functions[0])


def instance(schema: dict[str, Any], key: str, defs: dict[str, Any] | None = None) -> Any:
    """A small value valid for a JSON schema (objects, arrays, scalars, enum, const, anyOf, $ref)."""
    defs = defs if defs is not None else {**schema.get("$defs", {}), **schema.get("definitions", {})}
    if "$ref" in schema:
        return instance(defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), key, defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][int(key[:4], 16) % len(schema["enum"])]
    for combo in ("anyOf", "oneOf", "allOf"):
        if combo in schema:
            return instance(schema[combo][0], key, defs)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        props: dict[str, Any] = schema.get("properties", {})
        return {name: instance(sub, digest(key, name), defs) for name, sub in props.items()}
    if kind == "array":
        count = max(1, int(schema.get("minItems", 1)))
        return [instance(schema.get("items", {}), digest(key, i), defs) for i in range(count)]
    scalars: dict[str, Any] = {
        "string": f"v{key[:6]}", "integer": int(key[:4], 16) % 100, "number": int(key[:4], 16) / 1000,
        "boolean": int(key[0], 16) % 2 == 0, "null": None,
    }
    return scalars.get(kind)


def apply_limits(text: str, body: dict[str, Any]) -> tuple[str, str]:
    """Cut the text at the first stop string or at max_tokens words; return (text, finish_reason)."""
    stops = body.get("stop") or []
    for stop in [stops] if isinstance(stops, str) else stops:
        if stop and stop in text:
            return text[: text.index(stop)], "stop"
    limit = body.get("max_completion_tokens") or body.get("max_tokens")
    words = text.split(" ")
    if isinstance(limit, int) and len(words) > limit:
        return " ".join(words[:limit]), "length"
    return text, "stop"


def token_logprobs(text: str, key: str, top: int) -> list[tuple[str, float, list[tuple[str, float]]]]:
    """(token, logprob, top alternatives) per whitespace token, deterministic in the key."""
    out = []
    for i, token in enumerate(text.split(" ") if text else []):
        h = digest(key, i)
        lp = -int(h[:4], 16) / 65536
        alts = [(token, lp)] + [(f"alt{j}", lp - 1.0 - j) for j in range(max(0, top - 1))]
        out.append((token, lp, alts[:top]))
    return out


def chat_logprobs(text: str, key: str, top: int) -> dict[str, Any]:
    return {"content": [
        {"token": t, "logprob": lp, "bytes": list(t.encode()),
         "top_logprobs": [{"token": a, "logprob": alp, "bytes": list(a.encode())} for a, alp in alts]}
        for t, lp, alts in token_logprobs(text, key, top)
    ]}


def completion_logprobs(text: str, key: str, top: int) -> dict[str, Any]:
    rows = token_logprobs(text, key, top)
    offsets, pos = [], 0
    for t, _, _ in rows:
        offsets.append(pos)
        pos += len(t) + 1
    return {"tokens": [t for t, _, _ in rows], "token_logprobs": [lp for _, lp, _ in rows],
            "top_logprobs": [dict(alts) for _, _, alts in rows], "text_offset": offsets}
