"""`chronokg serve http` as a real server on loopback (a child process started through the CLI).

The hostile corpus of tests/test_guard.py (and more spellings of it) goes through the `cypher`
endpoint: every statement is a 403 naming why, a cartesian product over the whole store ends
at the time limit (422), and the store's content hash and file never change. Also: bearer
tokens, the per-token rate limit, the body size limit, structured errors, /health, /tools and
the OpenAPI page.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from chronokg.graph.kglite_store import KgliteStore
from chronokg.serve import ToolHost
from chronokg.serve.clients import HttpTools, ToolTransportError
from tests.helpers import REPO
from tests.serve_helpers import (
    CARTESIAN,
    READ_TIMEOUT_S,
    digest,
    hostile,
    serve,
    server_env,
)
from tests.test_guard import ALLOWED, EXPENSIVE

pytestmark = pytest.mark.slow  # server processes


TOKENS = ["token-for-agent-one-0123456789", "token-for-agent-two-0123456789"]


@pytest.fixture(scope="module")
def server(served: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    token_file = tmp_path_factory.mktemp("tokens") / "tokens.txt"
    token_file.write_text(f"# agents\n{TOKENS[0]}\n")
    env = server_env(CHRONOKG_SERVE_TOKENS=TOKENS[1])
    with serve(served[0], "http", "--workers", "3", "--rate", "1000", "--burst", "1000", "--max-body-kb", "64",
               "--token-file", str(token_file), env=env) as url:
        yield url


def client(url: str, token: str | None = TOKENS[0]) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=60,
                        headers={"Authorization": f"Bearer {token}"} if token else {})


def test_the_corpus_over_http_is_refused_and_changes_nothing(server: str, served: tuple[Path, str],
                                                              tmp_path: Path) -> None:
    path, before = served
    stamp = path.stat().st_mtime_ns
    secret = tmp_path / "secret.txt"
    secret.write_text("chronokg-http-secret")
    with client(server) as http:
        for query in hostile(secret):
            response = http.post("/tools/cypher", json={"query": query, "params": {"label": "Entity"}})
            assert response.status_code == 403, (query, response.text)
            error = response.json()["error"]
            assert error["type"] == "refused" and error["message"], query
            assert "chronokg-http-secret" not in response.text
        for query in EXPENSIVE:
            start = time.monotonic()
            response = http.post("/tools/cypher", json={"query": query})
            if response.status_code == 200:
                assert response.json()["truncated"] is True, query  # the row limit
            else:
                assert response.status_code == 422 and response.json()["error"]["type"] == "limit_exceeded", query
            assert time.monotonic() - start < READ_TIMEOUT_S + 5, query
    with ToolHost(KgliteStore(path, read_only=True), close_store=True) as host, client(server) as http:
        fact = host.call_tool("cypher", {"query": "MATCH (f:Fact {subject_id: 's3'}) RETURN f.id AS id"})
        for query, _ in ALLOWED:
            args = {"query": query, "params": {"id": fact.rows[0]["id"]}}
            response = http.post("/tools/cypher", json=args)
            assert response.status_code == 200, (query, response.text)
            if not query.startswith(("EXPLAIN", "PROFILE")):
                assert response.json()["rows"] == host.call_tool("cypher", args).rows, query
    assert digest(path) == before and path.stat().st_mtime_ns == stamp


def test_a_cartesian_product_over_the_whole_store_ends_at_the_time_limit(server: str,
                                                                          served: tuple[Path, str]) -> None:
    with client(server) as http:
        nodes = http.post("/tools/cypher", json={"query": "MATCH (n) RETURN count(n.id) AS n"}).json()["rows"][0]["n"]
        assert nodes > 300  # so the product has more than 300**4 rows
        start = time.monotonic()
        response = http.post("/tools/cypher", json={"query": CARTESIAN})
        took = time.monotonic() - start
        health = http.get("/health").json()
    assert response.status_code == 422
    assert response.json()["error"] == {"type": "limit_exceeded", "message": "the query ran past its time limit of "
                                        f"{READ_TIMEOUT_S:g} s and was stopped"}
    assert READ_TIMEOUT_S <= took < READ_TIMEOUT_S + 5
    assert health["workers_alive"] == 3 and health["worker_restarts"] == 0  # the worker lives on; its child died
    assert digest(served[0]) == served[1]


def test_tools_answer_like_in_process(server: str, served: tuple[Path, str]) -> None:
    with ToolHost(KgliteStore(served[0], read_only=True), close_store=True) as host, client(server) as http:
        listed = http.get("/tools").json()
        assert listed == [{"type": "function", "function": s.model_dump(mode="json")} for s in host.tool_specs()]
        from openai.types.chat import ChatCompletionFunctionTool  # what the openai SDK sends as `tools`

        assert [ChatCompletionFunctionTool.model_validate(t).function.name for t in listed] == [
            s.name for s in host.tool_specs()]
        for name, args in [("facts_as_of", {"date": "2016-06-01", "subject": "un-secretary-general"}),
                           ("recommended_on", {"date": "2012-06-01", "topic": "resuscitation"}),
                           ("changed_between", {"from": "2010-01-01", "to": "2020-01-01"}),
                           ("trajectory", {"guideline": "aha-ecc-2015"}),
                           ("timeline", {"subject": "un-secretary-general"})]:
            response = http.post(f"/tools/{name}", json=args)
            assert response.status_code == 200, response.text
            assert response.json()["rows"] == host.call_tool(name, args).rows and response.json()["rows"], name


def test_structured_errors_name_why(server: str) -> None:
    cases = [
        ("/tools/nope", {}, 404, "unknown_tool"),
        ("/tools/timeline", {"subjec": "x"}, 422, "invalid_arguments"),
        ("/tools/timeline", [1], 422, "invalid_arguments"),
        ("/tools/facts_as_of", {"date": "not a date"}, 422, "invalid_arguments"),
        ("/tools/cypher", {"query": "MATCH (n RETURN n"}, 400, "query_failed"),
        ("/tools/cypher", {"query": "LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l"}, 403, "refused"),
    ]
    with client(server) as http:
        for path, body, status, kind in cases:
            response = http.post(path, json=body)
            assert response.status_code == status and response.json()["error"]["type"] == kind, response.text
        broken = http.post("/tools/timeline", content=b"{not json", headers={"content-type": "application/json"})
        assert broken.status_code == 422 and "not JSON" in broken.json()["error"]["message"]


def test_bearer_tokens_and_the_body_limit(server: str) -> None:
    args = {"subject": "un-secretary-general"}
    with client(server, token=None) as anonymous:
        response = anonymous.post("/tools/timeline", json=args)
        assert response.status_code == 401 and response.json()["error"]["type"] == "unauthorized"
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert anonymous.get("/health").status_code == 200  # open: probes need no token
        assert "/tools/facts_as_of" in anonymous.get("/openapi.json").json()["paths"]
        assert anonymous.get("/docs").status_code == 200
    with client(server, token="wrong-token-0123456789") as wrong:
        assert wrong.post("/tools/timeline", json=args).status_code == 401
    for token in TOKENS:  # from the token file and from CHRONOKG_SERVE_TOKENS
        with client(server, token=token) as ok:
            assert ok.post("/tools/timeline", json=args).status_code == 200
    with client(server) as http:
        big = http.post("/tools/cypher", json={"query": "RETURN 1 AS x", "params": {"pad": "x" * 70_000}})
        assert big.status_code == 413 and big.json()["error"]["type"] == "too_large"
        chunked = http.post("/tools/cypher", content=iter([b'{"query": "RETURN 1", "params": {"p": "', b"x" * 70_000,
                                                           b'"}}']), headers={"content-type": "application/json"})
        assert chunked.status_code == 413  # no Content-Length: counted as it arrives


def test_the_openapi_page_describes_every_tool(server: str) -> None:
    with client(server) as http:
        spec = http.get("/openapi.json").json()
        tools = [t["function"] for t in http.get("/tools").json()]
    for tool in tools:
        operation = spec["paths"][f"/tools/{tool['name']}"]["post"]
        documented = operation["requestBody"]["content"]["application/json"]["schema"]
        assert documented == _without_nulls(tool["parameters"])  # FastAPI drops `"default": null`
        assert {"200", "403", "422", "429"} <= set(operation["responses"])
    assert "/health" in spec["paths"]


def test_the_rate_limit_is_per_token(served: tuple[Path, str], tmp_path: Path) -> None:
    token_file = tmp_path / "tokens.txt"
    token_file.write_text("\n".join(TOKENS))
    with serve(served[0], "http", "--workers", "1", "--rate", "0.5", "--burst", "3",
               "--token-file", str(token_file)) as url, client(url, TOKENS[0]) as first, \
            client(url, TOKENS[1]) as second:
        codes = [first.post("/tools/cypher", json={"query": "RETURN 1 AS x"}).status_code for _ in range(5)]
        assert codes[:3] == [200, 200, 200] and codes[3:] == [429, 429]
        limited = first.post("/tools/cypher", json={"query": "RETURN 1 AS x"})
        assert limited.json()["error"]["type"] == "rate_limited" and int(limited.headers["retry-after"]) >= 1
        assert second.post("/tools/cypher", json={"query": "RETURN 1 AS x"}).status_code == 200  # its own bucket

        async def patient() -> list[bool]:  # HttpTools waits as Retry-After asks instead of failing
            async with HttpTools(url, token=TOKENS[1]) as tools:
                return [(await tools.call("cypher", {"query": "RETURN 1 AS x"})).ok for _ in range(4)]

        start = time.monotonic()
        assert asyncio.run(patient()) == [True] * 4 and time.monotonic() - start >= 1.0


def test_the_http_client_gives_the_same_results(server: str) -> None:
    async def run() -> None:
        async with HttpTools(server, token=TOKENS[0]) as tools:
            specs = await tools.specs()
            assert "facts_as_of" in [s.name for s in specs]
            ok = await tools.call("facts_as_of", '{"date": "2016-06-01", "subject": "un-secretary-general"}')
            assert ok.ok and [r["object"] for r in ok.rows] == ["ban-ki-moon"]
            refused = await tools.call("cypher", {"query": "CREATE (n)"})
            assert refused.error is not None and refused.error.type == "refused"
        async with HttpTools(server, token="wrong-token-0123456789") as tools:
            with pytest.raises(ToolTransportError, match="401"):
                await tools.call("timeline", {"subject": "x"})

    asyncio.run(run())


def test_binding_beyond_loopback_needs_tokens(served: tuple[Path, str]) -> None:
    cmd = [sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{served[0]}", "serve", "http",
           "--host", "0.0.0.0", "--port", "0"]
    done = subprocess.run(cmd, capture_output=True, text=True, env=server_env(), cwd=REPO, timeout=120)
    assert done.returncode == 2 and "set bearer tokens first" in " ".join(done.stderr.split())


def _without_nulls(node: object) -> object:
    if isinstance(node, dict):
        return {k: _without_nulls(v) for k, v in node.items() if v is not None}
    if isinstance(node, list):
        return [_without_nulls(v) for v in node]
    return node
