"""Out-of-range arguments, over-long text, deep nesting and FastAPI's own refusals, on every transport.

A corpus of hostile probes: each case was a 500 over HTTP (an OverflowError in the engine, a
RecursionError parsing the body) or a JSON-RPC -32603 with a traceback over MCP stdio. Every tool's
parameter model bounds its integers, text and lists (the schema says so, and a test walks it), so
each case is now a 4xx `{"error": ...}` over HTTP and a tool error over MCP, on a real server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from chronokg.graph.guard import MAX_LENGTH
from chronokg.graph.kglite_store import KgliteStore
from chronokg.queries.spec import MAX_COUNT, MAX_ITEMS, MAX_TEXT
from chronokg.serve import ToolHost
from chronokg.serve.search import SEARCH_TOOL
from chronokg.serve.tools import CYPHER, MAX_DEPTH, query_tools
from tests.helpers import REPO
from tests.serve_helpers import build_store, digest, serve, server_env
from tests.test_serve_mcp import stdio_params

pytestmark = pytest.mark.slow  # server processes


TOKEN = "token-for-the-bounds-probe-0123456789"


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


# (tool, arguments, words the error names): every one an invalid_arguments error, never a 500 or -32603
PROBES: list[tuple[str, dict[str, Any], str]] = [
    ("facts_as_of", {"date": "2016-06-01", "limit": 10**30}, "limit"),
    ("facts_as_of", {"date": "2016-06-01", "limit": -(10**30)}, "limit"),
    ("facts_as_of", {"date": "2016-06-01", "limit": MAX_COUNT + 1}, "limit"),
    ("cfr_changes", {"max_regions": 10**30}, "max_regions"),
    ("cfr_editions", {"title": 2**64}, "title"),
    ("timeline", {"subject": "Q" * (MAX_TEXT + 1)}, "subject"),
    ("recommended_on", {"date": "2016-06-01", "topic": "x" * 50_000}, "topic"),
    ("qa_questions", {"sources": ["s"] * (MAX_ITEMS + 1)}, "sources"),
    ("cypher", {"query": "RETURN $x AS x", "params": {"x": 10**30}}, "64-bit"),
    ("cypher", {"query": "RETURN $x AS x", "params": {"x": {"y": [-(2**63) - 1]}}}, "$x.y[0]"),
    ("cypher", {"query": "RETURN $x AS x", "params": {"x": "t" * (MAX_LENGTH + 1)}}, "text"),
    ("cypher", {"query": "RETURN $x AS x", "params": {"x": nested(MAX_DEPTH + 5)}}, "nested"),
]


def check(error: dict[str, Any], tool: str, words: str) -> None:
    assert error["type"] == "invalid_arguments", error
    assert error["message"].startswith(f"{tool}:") and words in error["message"], error
    assert "\n" not in error["message"] and len(error["message"]) < 600


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("serve-bounds") / "store.kgl"
    return path, build_store(path, facts=20)


def test_every_tool_bounds_its_integers_text_and_lists() -> None:
    """The schema a model (and the OpenAPI page) sees declares a bound on every integer, text and list."""
    def walk(where: str, node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            kind = node.get("type")
            if kind == "integer" and ("maximum" not in node or "minimum" not in node):
                yield f"{where}: integer without bounds"
            if kind == "string" and "format" not in node and "maxLength" not in node and "enum" not in node:
                yield f"{where}: text without maxLength"
            if kind == "array" and "maxItems" not in node:
                yield f"{where}: list without maxItems"
            for key, sub in node.items():
                yield from walk(f"{where}.{key}", sub)
        elif isinstance(node, list):
            for i, sub in enumerate(node):
                yield from walk(f"{where}[{i}]", sub)

    tools = [*query_tools(), CYPHER, SEARCH_TOOL]
    problems = [p for t in tools for p in walk(t.name, t.schema())]
    assert problems == []
    assert len(tools) > 20


def test_in_process_every_probe_is_a_tool_error(served: tuple[Path, str]) -> None:
    with ToolHost(KgliteStore(served[0], read_only=True), close_store=True) as host:
        for tool, args, words in PROBES:
            result = host.call_tool(tool, args)
            assert result.error is not None, (tool, args)
            check(result.error.model_dump(), tool, words)
        deep = "[" * 100_000 + "]" * 100_000  # a model's arguments as JSON text, nested past the parser
        result = host.call_tool("cypher", deep)
        assert result.error is not None and result.error.type == "invalid_arguments"
        assert "nested too deep" in result.error.message


def test_over_http_every_probe_is_a_4xx_with_the_error_shape(served: tuple[Path, str]) -> None:
    path, before = served
    deep = b"[" * 100_000 + b"]" * 100_000
    with serve(path, "http", "--workers", "2", "--rate", "0") as url, httpx.Client(base_url=url, timeout=60) as http:
        for tool, args, words in PROBES:
            answer = http.post(f"/tools/{tool}", json=args)
            assert answer.status_code == 422, (tool, answer.text[:300])
            check(answer.json()["error"], tool, words)
        for tool in ("cypher", "facts_as_of"):
            answer = http.post(f"/tools/{tool}", content=deep, headers={"content-type": "application/json"})
            assert answer.status_code == 422 and answer.json()["error"]["type"] == "invalid_arguments"
            assert "nested too deep" in answer.json()["error"]["message"]
        missing = http.get("/nope")
        assert missing.status_code == 404
        assert missing.json() == {"error": {"type": "not_found", "message": "GET /nope: Not Found"}}
        wrong = http.get("/tools/timeline")
        assert wrong.status_code == 405 and wrong.json()["error"]["type"] == "method_not_allowed"
        assert "detail" not in wrong.json() and wrong.headers["allow"] == "POST"
        assert http.get("/health").json()["status"] == "ok"  # the server is still whole
    assert digest(path) == before


def test_over_mcp_every_probe_is_a_tool_error(served: tuple[Path, str], tmp_path: Path) -> None:
    """stdio and streamable HTTP, with the official client: an error result, not -32603, no traceback."""
    path, before = served

    async def probe(client: Client) -> None:
        for tool, args, words in PROBES:
            result = await client.call_tool(tool, args)
            assert result.is_error, (tool, args)
            check(json.loads(result.content[0].text)["error"], tool, words)
            assert result.structured_content is not None
            check(result.structured_content["error"], tool, words)
        ok = await client.call_tool("facts_as_of", {"date": "2016-06-01", "limit": 2})
        assert not ok.is_error and len(json.loads(ok.content[0].text)["rows"]) == 2

    async def over_stdio() -> None:
        with (tmp_path / "stderr.txt").open("w") as errlog:
            async with Client(stdio_client(stdio_params(path), errlog=errlog), read_timeout_seconds=60) as client:
                await probe(client)

    async def over_http(url: str) -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http, \
                Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client:
            await probe(client)
        deep = b"[" * 100_000 + b"]" * 100_000
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http:
            answer = await http.post(url, content=deep, headers={"content-type": "application/json",
                                                                 "accept": "application/json, text/event-stream"})
            assert 400 <= answer.status_code < 500, answer.text[:300]

    anyio.run(over_stdio)
    stderr = (tmp_path / "stderr.txt").read_text()
    assert "Traceback" not in stderr and "-32603" not in stderr, stderr[-2000:]
    with serve(path, "mcp", "--transport", "http", "--workers", "2", "--rate", "0",
               env=server_env(CHRONOKG_SERVE_TOKENS=TOKEN)) as base:
        anyio.run(over_http, f"{base}/mcp")
    assert digest(path) == before


@pytest.mark.parametrize("tokens", ["a", "good-token-0123456789,short", "two words-0123456789"])
def test_serve_tokens_from_the_environment_are_16_characters_like_the_token_file(
        served: tuple[Path, str], tokens: str) -> None:
    for transport in (["http"], ["mcp", "--transport", "http"]):
        done = subprocess.run([sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{served[0]}", "serve",
                               *transport, "--port", "0"], capture_output=True, text=True, cwd=REPO, timeout=120,
                              env=server_env(CHRONOKG_SERVE_TOKENS=tokens))
        assert done.returncode != 0
        assert "Traceback" not in done.stderr
        assert "CHRONOKG_SERVE_TOKENS" in done.stderr and "at least 16 characters" in done.stderr


def test_a_bug_in_a_call_is_a_structured_error_in_process(served: tuple[Path, str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception no boundary foresaw (injected: no real input is known to cause one any more) comes back as an
    `internal` error result, as from a forked worker, never as an exception through a transport."""
    import chronokg.serve.host as host_module

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise OverflowError("int too big to convert")  # the kind of error limit=10**30 used to raise

    with ToolHost(KgliteStore(served[0], read_only=True), close_store=True) as host:
        monkeypatch.setattr(host_module, "run_tool", broken)
        result = host.call_tool("facts_as_of", {"date": "2016-06-01"})
    assert result.error is not None and result.error.type == "internal"
    assert result.error.message == "OverflowError: int too big to convert"
