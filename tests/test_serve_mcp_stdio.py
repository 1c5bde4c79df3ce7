"""`chronokg serve mcp` over stdio, through raw pipes and the official `mcp` client: every request written before
the client closes its input is answered (the server drains in-flight handlers before it exits), and a line it
cannot read gets JSON-RPC's -32700 Parse error with id null while it serves on."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from chronokg.graph.kglite_store import KgliteStore
from chronokg.serve import ToolHost
from chronokg.serve.mcp_stdio import unreadable
from tests.helpers import REPO
from tests.serve_helpers import CARTESIAN, server_env
from tests.test_serve_mcp import stdio_params

pytestmark = pytest.mark.slow  # server processes


INITIALIZE = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "pipe-test", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
SUBJECTS = ["un-secretary-general", "nope", "un-secretary-general", "x"]


def call(i: int) -> dict[str, Any]:
    """Request `i`: tool calls (answered by the read workers, so they finish after end of input) and listings."""
    if i % 3 == 2:
        return {"jsonrpc": "2.0", "id": i, "method": "tools/list"}
    args = {"date": f"{2010 + i % 10}-06-01", "subject": SUBJECTS[i % len(SUBJECTS)]}
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": "facts_as_of", "arguments": args}}


def through_pipes(store: Path, lines: list[str]) -> tuple[int, list[dict[str, Any]], str]:
    """Write `lines` to a fresh `serve mcp`, close its stdin at once, read every reply until it exits."""
    proc = subprocess.run([sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{store}", "serve", "mcp"],
                          input="".join(line + "\n" for line in lines), capture_output=True, text=True,
                          env=server_env(), cwd=REPO, timeout=300)
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines() if line.strip()], proc.stderr


def test_every_request_written_before_end_of_input_is_answered_20_times_of_20(served: tuple[Path, str]) -> None:
    """N requests written and stdin closed immediately, 20 runs: every id answered, each once, exit 0; the tool
    calls' rows are the in-process host's."""
    path, _ = served
    n = 12
    lines = [json.dumps(INITIALIZE), json.dumps(INITIALIZED), *(json.dumps(call(i)) for i in range(1, n + 1))]
    with ThreadPoolExecutor(4) as pool:
        runs = list(pool.map(lambda _: through_pipes(path, lines), range(20)))
    with ToolHost(KgliteStore(path, read_only=True), close_store=True) as host:
        expected = {i: host.call_tool("facts_as_of", call(i)["params"]["arguments"]).rows
                    for i in range(1, n + 1) if call(i)["method"] == "tools/call"}
    for code, replies, err in runs:
        assert code == 0, err
        assert sorted(r["id"] for r in replies) == list(range(n + 1)), (replies, err)
        by_id = {r["id"]: r for r in replies}
        for i, rows in expected.items():
            assert json.loads(by_id[i]["result"]["content"][0]["text"])["rows"] == rows
        assert all(len(by_id[i]["result"]["tools"]) > 1 for i in range(1, n + 1) if i % 3 == 2)


def test_an_unreadable_line_gets_a_parse_error_and_the_server_serves_on(served: tuple[Path, str]) -> None:
    """Not JSON, JSON nested 100,000 deep, JSON that is no JSON-RPC message: one error each, id null, in order,
    and the requests after them are answered."""
    path, _ = served
    deep = "[" * 100_000 + "]" * 100_000
    deep_object = '{"a":' * 100_000 + "1" + "}" * 100_000
    lines = [json.dumps(INITIALIZE), json.dumps(INITIALIZED), "this is not json", deep, deep_object,
             '{"jsonrpc": "2.0", "id": 7', '{"hello": "world"}', json.dumps(call(2)), json.dumps(call(1))]
    code, replies, err = through_pipes(path, lines)
    assert code == 0, err
    errors = [r for r in replies if "error" in r]
    assert [(r["id"], r["error"]["code"]) for r in errors] == [(None, -32700)] * 4 + [(None, -32600)]
    assert all(r["jsonrpc"] == "2.0" and r["error"]["message"] for r in errors)
    assert sorted(r["id"] for r in replies if "result" in r) == [0, 1, 2]
    assert "Traceback" not in err


def test_unreadable_classifies_parse_and_shape_errors() -> None:
    """-32700 for what is not JSON (or too deep for the parser), -32600 for JSON that is no message."""
    for text, code in [("{", types.PARSE_ERROR), ("[" * 5000 + "]" * 5000, types.PARSE_ERROR),
                       ("[]", types.INVALID_REQUEST), ('{"id": 1}', types.INVALID_REQUEST)]:
        try:
            types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        except ValueError as exc:
            answer = unreadable(exc)
        else:
            raise AssertionError(f"{text[:20]!r} parsed")
        assert (answer.id, answer.error.code) == (None, code), text[:20]


def test_official_client_gets_every_concurrent_answer(served: tuple[Path, str]) -> None:
    """The `mcp` client's stdio transport with 12 calls in flight at once, then closed: every call answered
    with the in-process host's rows."""
    path, _ = served
    got: dict[int, Any] = {}

    async def run() -> None:
        async with Client(stdio_params(path), read_timeout_seconds=120) as client:
            async def one(i: int) -> None:
                got[i] = await client.call_tool("facts_as_of", call(i * 3)["params"]["arguments"])

            async with anyio.create_task_group() as tg:
                for i in range(12):
                    tg.start_soon(one, i)

    anyio.run(run)
    with ToolHost(KgliteStore(path, read_only=True), close_store=True) as host:
        for i, result in sorted(got.items()):
            args = call(i * 3)["params"]["arguments"]
            assert json.loads(result.content[0].text)["rows"] == host.call_tool("facts_as_of", args).rows
    assert sorted(got) == list(range(12))


def test_a_request_with_an_id_json_rpc_does_not_allow_gets_invalid_request_with_id_null(
        served: tuple[Path, str]) -> None:
    """null, 1.5, an object, a list and true are no request ids: each gets -32600 with id null (an answer, not
    silence), and the requests after them are answered."""
    path, _ = served
    bad = [{"jsonrpc": "2.0", "id": value, "method": "tools/list"} for value in (None, 1.5, {"a": 1}, [1], True)]
    lines = [json.dumps(INITIALIZE), json.dumps(INITIALIZED), *map(json.dumps, bad), json.dumps(call(2)),
             json.dumps({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})]
    code, replies, err = through_pipes(path, lines)
    assert code == 0, err
    errors = [r for r in replies if "error" in r]
    assert [(r["id"], r["error"]["code"]) for r in errors] == [(None, -32600)] * 5, replies
    assert all("id" in r["error"]["message"] for r in errors)
    assert sorted(r["id"] for r in replies if "result" in r) == [0, 2]  # a notification is never answered


def test_a_second_request_with_an_id_still_in_flight_is_refused_with_that_id(served: tuple[Path, str]) -> None:
    """Two requests sharing an id (MCP: an id is used once per session): the first is answered as usual, the
    second, while the first is in flight, gets -32600 with that id; an id reused after its answer is a new
    request."""
    path, _ = served
    first = {"jsonrpc": "2.0", "id": 4, "method": "tools/call",  # runs to the time limit: still in flight
             "params": {"name": "cypher", "arguments": {"query": CARTESIAN}}}
    lines = [json.dumps(INITIALIZE), json.dumps(INITIALIZED), json.dumps(first), json.dumps(call(7) | {"id": 4}),
             json.dumps(call(5))]
    code, replies, err = through_pipes(path, lines)
    assert code == 0, err
    fours = [r for r in replies if r["id"] == 4]
    assert len(fours) == 2, replies
    assert sum("result" in r for r in fours) == 1 and sum("error" in r for r in fours) == 1
    refused = next(r for r in fours if "error" in r)
    assert refused["error"]["code"] == -32600 and "4" in refused["error"]["message"]
    answered = next(r for r in fours if "result" in r)
    assert answered["result"]["structuredContent"]["tool"] == "cypher"
    assert sorted(r["id"] for r in replies if "result" in r) == [0, 4, 5]
