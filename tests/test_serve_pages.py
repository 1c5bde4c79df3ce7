"""Large answers and what a call may say, on real servers: the official `mcp` client over streamable HTTP on the
real TempoMed sample (hundreds of change pairs, about 1.9 MB of rows), and `serve http` on the same store.

The SDK's client refuses an SSE event over 1 MiB; each answer sends its rows once and holds at most
`MAX_ANSWER_BYTES` of them, the rest reachable with `offset`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import TextContent

from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import tempomed
from chronokg.queries.spec import all_queries
from chronokg.serve.clients import McpTools
from chronokg.serve.tools import MAX_ANSWER_BYTES, jsonable
from tests.serve_helpers import serve, server_env

pytestmark = pytest.mark.slow  # server processes, the real sample

ENV = {"CHRONOKG_READ_MAX_RESULT_MB": "16", "CHRONOKG_READ_MAX_ROWS": "10000", "CHRONOKG_READ_TIMEOUT_S": "30"}


@pytest.fixture(scope="module")
def pairs_store(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    """The TempoMed sample loaded, and every change pair as the catalog query gives it (JSON values)."""
    path = tmp_path_factory.mktemp("pairs") / "store.kgl"
    with KgliteStore(path, durable="off") as store:
        tempomed.load(store, [shared_data / "tempomed-bench"])
    with KgliteStore(path, read_only=True) as store:
        rows = jsonable(all_queries().get("change-pair-list").run(store, {}))
    assert len(rows) > 150 and len(json.dumps(rows)) > 2 * MAX_ANSWER_BYTES  # several answers' worth
    return path, rows


def test_the_official_client_over_streamable_http_pages_through_every_pair(
        pairs_store: tuple[Path, list[dict[str, Any]]]) -> None:
    path, expected = pairs_store
    got: list[dict[str, Any]] = []
    answers: list[Any] = []

    async def run(url: str) -> None:
        async with httpx2.AsyncClient(timeout=120) as http, \
                Client(streamable_http_client(url, http_client=http), read_timeout_seconds=120) as client:
            offset: int | None = 0
            while offset is not None:
                answer = await client.call_tool("change_pair_list", {"offset": offset} if offset else {})
                assert not answer.is_error, answer.content
                answers.append(answer)
                text = answer.content[0]
                assert isinstance(text, TextContent)
                body = json.loads(text.text)  # the rows, once: in the text a model reads
                got.extend(body["rows"])
                assert "rows" not in answer.structured_content  # ... not a second time beside it
                assert answer.structured_content["returned_rows"] == len(body["rows"])
                assert answer.structured_content["total_rows"] == len(expected)
                assert len(answer.model_dump_json(by_alias=True)) < 1 << 20
                offset = body.get("next_offset")
                assert (offset is None) == (not body.get("truncated", False))
            refused = await client.call_tool("changed_verdicts", {"run": "run-x", "a": 86400, "b": "2020"})
            assert refused.is_error and refused.structured_content["error"]["type"] == "invalid_arguments"
        async with McpTools(url) as tools:  # the client wrapper reads the rows from the text
            first = await tools.call("change_pair_list", {})
            assert first.ok and first.rows == expected[:len(first.rows)] and first.next_offset == len(first.rows)

    with serve(path, "mcp", "--transport", "http", "--workers", "1", env=server_env(**ENV)) as base:
        anyio.run(run, f"{base}/mcp")
    assert got == expected and len(answers) >= 3


def test_http_takes_a_bare_year_refuses_a_number_and_keeps_errors_short(
        pairs_store: tuple[Path, list[dict[str, Any]]]) -> None:
    path, expected = pairs_store
    with serve(path, "http", "--workers", "1", env=server_env(**ENV)) as url, \
            httpx.Client(base_url=url, timeout=120) as http:
        year = http.post("/tools/recommended_on", json={"date": "2016"})
        day = http.post("/tools/recommended_on", json={"date": "2016-01-01"})
        assert year.status_code == 200 and year.json()["rows"] == day.json()["rows"]
        unix = http.post("/tools/changed_verdicts", json={"run": "run-x", "a": 86400, "b": "2020-01-01"})
        assert unix.status_code == 422 and unix.json()["error"]["type"] == "invalid_arguments"
        assert "YYYY-MM-DD" in unix.json()["error"]["message"]
        keys = {f"k{i:05d}": 0 for i in range(60_000)}
        body = json.dumps(keys).encode()
        assert 500_000 < len(body) < 1 << 20
        many = http.post("/tools/timeline", content=body, headers={"content-type": "application/json"})
        assert many.status_code == 422 and len(many.content) < 2000, len(many.content)
        assert "k00000" in many.text and "60,000" in many.text
        pages = http.post("/tools/change_pair_list", json={})
        assert pages.status_code == 200 and pages.json()["next_offset"] == len(pages.json()["rows"])
        assert len(pages.content) <= MAX_ANSWER_BYTES + 2000
        assert pages.json()["rows"] == expected[:len(pages.json()["rows"])]
