"""`chronokg serve mcp`, listed and called through the official `mcp` client: stdio (the client starts the
server as a child process) and streamable HTTP (a real server on loopback, with a bearer token).

The hostile corpus goes through the MCP `cypher` tool on both transports: every statement is an
error result naming why, a cartesian product over the whole store ends at the time limit, and
the store's content hash and file never change.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from chronokg.graph.kglite_store import KgliteStore
from chronokg.serve import ToolHost
from chronokg.serve.clients import McpTools
from tests.helpers import REPO
from tests.serve_helpers import CARTESIAN, READ_TIMEOUT_S, digest, hostile, serve, server_env

pytestmark = pytest.mark.slow  # MCP server processes

TOKEN = "token-for-the-mcp-agent-0123456789"


def stdio_params(store: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, cwd=REPO, env=server_env(),
                                 args=["-m", "chronokg.cli", "--store", f"kglite://{store}", "serve", "mcp"])


async def exercise(client: Client, store: Path, secret: Path) -> None:
    """List, call, refuse the corpus, stop the cartesian product: the same on every transport."""
    listed = await client.list_tools()
    with ToolHost(KgliteStore(store, read_only=True), close_store=True) as host:
        assert [t.name for t in listed.tools] == [s.name for s in host.tool_specs()]
        assert [t.input_schema for t in listed.tools] == [s.parameters for s in host.tool_specs()]
        assert all(t.annotations is not None and t.annotations.read_only_hint for t in listed.tools)
        args = {"date": "2016-06-01", "subject": "un-secretary-general"}
        answer = await client.call_tool("facts_as_of", args)
        assert not answer.is_error
        assert json.loads(answer.content[0].text)["rows"] == host.call_tool("facts_as_of", args).rows
        assert json.loads(answer.content[0].text)["rows"][0]["object"] == "ban-ki-moon"
        assert answer.structured_content["returned_rows"] == 1 and "rows" not in answer.structured_content
    for query in hostile(secret):
        result = await client.call_tool("cypher", {"query": query, "params": {"label": "Entity"}})
        assert result.is_error, query
        error = json.loads(result.content[0].text)["error"]
        assert error["type"] == "refused" and error["message"], query
        assert "chronokg-mcp-secret" not in result.content[0].text
    start = time.monotonic()
    slow = await client.call_tool("cypher", {"query": CARTESIAN})
    took = time.monotonic() - start
    assert slow.is_error and slow.structured_content["error"]["type"] == "limit_exceeded"
    assert f"time limit of {READ_TIMEOUT_S:g} s" in slow.structured_content["error"]["message"]
    assert READ_TIMEOUT_S <= took < READ_TIMEOUT_S + 5
    bad = await client.call_tool("timeline", {"subjec": "x"})
    assert bad.is_error and bad.structured_content["error"]["type"] == "invalid_arguments"
    with pytest.raises(MCPError, match="no tool 'nope'"):
        await client.call_tool("nope", {})


def test_stdio(served: tuple[Path, str], tmp_path: Path) -> None:
    path, before = served
    stamp = path.stat().st_mtime_ns
    secret = tmp_path / "secret.txt"
    secret.write_text("chronokg-mcp-secret")

    async def run() -> None:
        async with Client(stdio_params(path), read_timeout_seconds=60) as client:
            await exercise(client, path, secret)

    anyio.run(run)
    assert digest(path) == before and path.stat().st_mtime_ns == stamp


def test_streamable_http_with_a_bearer_token(served: tuple[Path, str], tmp_path: Path) -> None:
    path, before = served
    secret = tmp_path / "secret.txt"
    secret.write_text("chronokg-mcp-secret")

    async def run(url: str) -> None:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as http, \
                Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client:
            await exercise(client, path, secret)

    async def refused(url: str) -> Any:
        async with httpx2.AsyncClient(timeout=30) as http:
            return await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})

    with serve(path, "mcp", "--transport", "http", "--workers", "2",
               env=server_env(CHRONOKG_SERVE_TOKENS=TOKEN)) as base:
        anyio.run(run, f"{base}/mcp")
        response = anyio.run(refused, f"{base}/mcp")
        assert response.status_code == 401 and response.json()["error"]["type"] == "unauthorized"
    assert digest(path) == before


def test_the_mcp_client_wrapper(served: tuple[Path, str]) -> None:
    """`McpTools` (what an agent loop uses) gives `ToolResult`s, failures as data, over stdio."""
    path, _ = served
    params = stdio_params(path)

    async def run() -> None:
        async with McpTools([params.command, *params.args], env=params.env) as tools:
            specs = await tools.specs()
            assert "cypher" in [s.name for s in specs]
            ok = await tools.call("trajectory", '{"guideline": "aha-ecc-2015"}')
            assert ok.ok and [r["pmid"] for r in ok.rows] == ["aha-ecc-2005", "aha-ecc-2010", "aha-ecc-2015"]
            refused = await tools.call("cypher", {"query": "MATCH (n) SET n.x = 1"})
            assert refused.error is not None and refused.error.type == "refused"
            unknown = await tools.call("nope", {})
            assert unknown.error is not None and unknown.error.type == "unknown_tool"

    anyio.run(run)
