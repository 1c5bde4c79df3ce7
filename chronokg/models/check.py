"""What a server supports, found by sending one short request per feature (`chronokg models check`).

The first probe (a plain chat request) must succeed: if it fails, so does the check. The others
report "no" with the server's reason, since many OpenAI-compatible servers lack one feature or another.
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from chronokg.errors import ModelError
from chronokg.models.protocol import ModelClient
from chronokg.models.types import Completion, ModelRequest, ResponseFormat, ToolSpec

_DATE_TOOL = ToolSpec(name="get_current_date", description="Returns today's date.",
                      parameters={"type": "object", "properties": {"timezone": {"type": "string"}}})
_YEAR_SCHEMA = {"type": "object", "properties": {"year": {"type": "integer"}}, "required": ["year"],
                "additionalProperties": False}


class FeatureCheck(BaseModel):
    feature: str
    works: bool
    detail: str


class ModelCheck(BaseModel):
    spec: str
    server_model: str | None
    latency_s: float
    reply: str
    features: list[FeatureCheck]


async def check_model(client: ModelClient) -> ModelCheck:
    """Probe chat (required), tool calls, logprobs, JSON schema and the completions endpoint."""
    basic = await client.generate(ModelRequest.chat("Reply with the single word OK.", max_tokens=16))
    features = [FeatureCheck(feature="chat", works=True, detail=f"replied {basic.text[:40]!r}")]
    probes = [
        ("tool calls", ModelRequest.chat("What is today's date? Use the tool.", tools=[_DATE_TOOL],
                                         tool_choice="required", max_tokens=64), _tool_calls),
        ("logprobs", ModelRequest.chat("Say OK.", logprobs=True, top_logprobs=2, max_tokens=4), _logprobs),
        ("JSON schema", ModelRequest.chat(
            "In which year did the Berlin Wall fall? Answer as JSON.", max_tokens=32,
            response_format=ResponseFormat(name="year", json_schema=_YEAR_SCHEMA)), _json_schema),
        ("completions endpoint", ModelRequest.completion("The capital of France is", max_tokens=8), _completion),
    ]
    for name, request, judge in probes:
        try:
            works, detail = judge(await client.generate(request))
        except ModelError as exc:
            works, detail = False, str(exc).removeprefix(f"{client.spec}: ")
        features.append(FeatureCheck(feature=name, works=works, detail=detail))
    return ModelCheck(spec=client.spec, server_model=basic.model, latency_s=basic.latency_s, reply=basic.text,
                      features=features)


def _tool_calls(c: Completion) -> tuple[bool, str]:
    calls = c.choices[0].tool_calls if c.choices else []
    if not calls:
        return False, f"no tool call; replied {c.text[:40]!r}"
    return True, f"called {calls[0].name}({calls[0].arguments[:40]})"


def _logprobs(c: Completion) -> tuple[bool, str]:
    lps = c.choices[0].logprobs if c.choices else None
    if not lps:
        return False, "no logprobs in the reply"
    return True, f"{len(lps)} tokens, {len(lps[0].top)} alternatives each"


def _json_schema(c: Completion) -> tuple[bool, str]:
    try:
        value = json.loads(c.text)
    except json.JSONDecodeError:
        return False, f"not JSON: {c.text[:40]!r}"
    if isinstance(value, dict) and isinstance(value.get("year"), int):
        return True, f"valid: {c.text[:40]}"
    return False, f"JSON but not the schema: {c.text[:40]}"


def _completion(c: Completion) -> tuple[bool, str]:
    return bool(c.choices), f"continued {c.text[:40]!r}"
