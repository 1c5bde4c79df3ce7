"""The agent tools in process: declared once from the query specs, validated once, every read guarded.

Runs on the real embedded engine (the demo corpus plus 300 facts), with forked read workers
where a server would use them.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from chronokg.errors import ChronoKGError
from chronokg.graph.guard import ReadLimits
from chronokg.graph.kglite_store import KgliteStore
from chronokg.queries.spec import all_queries
from chronokg.registry import Registry
from chronokg.serve import SearchParams, ToolHost
from chronokg.serve.search import find_search
from chronokg.serve.tools import json_schema, tool_name
from chronokg.settings import Settings
from tests.helpers import REPO
from tests.serve_helpers import CARTESIAN, digest, hostile

# A work budget so large that the time limit is what stops the cartesian product (by default the 10M budget
# stops it sooner).
# 2048 MB as the servers default: at 1024 MB the cartesian read ran out of memory before its 2 s in CI
LIMITS = ReadLimits(timeout_s=2.0, max_rows=1000, max_result_mb=1.0, max_work=10**12, memory_mb=2048)


@pytest.fixture
def host(served: tuple[Path, str]) -> Iterator[ToolHost]:
    with ToolHost(KgliteStore(served[0], read_only=True), limits=LIMITS, close_store=True) as h:
        yield h


def _example(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Values for the required arguments of a tool's schema (what a model would fill in)."""
    out: dict[str, Any] = {}
    for name in schema.get("required", []):
        prop = schema["properties"][name]
        kinds = [prop, *prop.get("anyOf", [])]
        if any(k.get("format") == "date" for k in kinds):
            out[name] = "2016-06-01"
        elif any(k.get("type") == "integer" for k in kinds):
            out[name] = 1
        else:
            out[name] = "aha-ecc-2015"
    return out


def test_every_tool_query_is_a_tool_with_a_plain_schema(host: ToolHost) -> None:
    tagged = {name for name, spec in all_queries().items() if "tool" in spec.tags}
    by_name = {t.name: t for t in host.tools()}
    assert {t.query for t in by_name.values() if t.kind == "query"} == tagged
    for wanted in ("facts_as_of", "timeline", "recommended_on", "changed_between", "trajectory", "cypher"):
        assert wanted in by_name
    assert "search" not in by_name  # no retrieval index here: the tool is absent, not broken
    for spec in host.tool_specs():
        assert re.fullmatch(r"[A-Za-z0-9_]{1,64}", spec.name)
        text = json.dumps(spec.parameters)
        assert spec.parameters["type"] == "object" and "$ref" not in text and '"title": "' not in text
        assert spec.description and "--" not in spec.description
    changed = by_name["changed_between"].schema()
    assert set(changed["required"]) == {"from", "to"}  # the aliases the CLI and the Python API take
    assert changed["properties"]["from"]["format"] == "date"
    assert by_name["cfr_editions"].schema()["required"] == ["title"]  # a property may be named title


def test_every_query_tool_passes_the_guard_and_matches_the_spec(host: ToolHost, served: tuple[Path, str]) -> None:
    """Each query's own Cypher goes through guarded_read (text and plan checks) and returns what spec.run does."""
    with KgliteStore(served[0], read_only=True) as store:
        for tool in host.tools():
            if tool.kind != "query":
                continue
            args = _example(tool.schema())
            result = host.call_tool(tool.name, args)
            spec = all_queries().get(str(tool.query))
            try:
                expected = [r.model_dump(mode="json", by_alias=True) for r in spec.run(store, args)]
            except ChronoKGError as exc:  # a name the store does not hold (a run id): the tool says the same
                assert not result.ok and str(exc) in str(result.error), (tool.name, result.error)
                continue
            assert result.ok, (tool.name, result.error)
            assert result.rows == expected, tool.name
    answer = host.call_tool("facts_as_of", {"date": "2016-06-01", "subject": "un-secretary-general"})
    assert [r["object"] for r in answer.rows] == ["ban-ki-moon"]
    recommended = host.call_tool("recommended_on", '{"date": "2012-06-01", "topic": "resuscitation"}')
    assert recommended.ok and {r["guideline"] for r in recommended.rows} == {"aha-ecc-2010"}


def test_failures_come_back_as_data_naming_why(host: ToolHost) -> None:
    cases: list[tuple[str, Any, str, str]] = [
        ("nope", {}, "unknown_tool", "no tool 'nope'"),
        ("timeline", {"subjec": "x"}, "invalid_arguments", "subject: Field required"),
        ("timeline", "{not json", "invalid_arguments", "not JSON"),
        ("timeline", [1, 2], "invalid_arguments", "must be a JSON object"),
        ("facts_as_of", {"date": "yesterday"}, "invalid_arguments", "date"),
        ("cypher", {"query": ""}, "invalid_arguments", "query"),
        ("cypher", {"query": "MATCH (n) DETACH DELETE n"}, "refused", "DETACH is not allowed"),
        ("cypher", {"query": "MATCH (n RETURN n"}, "query_failed", "syntax"),
        ("cypher", {"query": CARTESIAN}, "limit_exceeded", "time limit of 2 s"),
    ]
    for name, args, kind, words in cases:
        result = host.call_tool(name, args)
        assert not result.ok and result.error is not None, name
        assert result.error.type == kind and words.lower() in result.error.message.lower(), result.error
        assert json.loads(result.content())["error"]["type"] == kind


def test_cypher_rows_are_json_and_cut_at_the_row_limit(host: ToolHost) -> None:
    result = host.call_tool("cypher", {"query": "MATCH (f:Fact {subject_id: $s}) RETURN f.valid_from AS d",
                                       "params": {"s": "s3"}})
    assert result.rows == [{"d": "2003-01-01"}]
    many = host.call_tool("cypher", {"query": "MATCH (f:Fact {predicate: 'p'}) RETURN f.value AS v ORDER BY v"})
    assert many.ok and not many.truncated and len(many.rows) == 300
    small = ToolHost(host.store, limits=LIMITS.model_copy(update={"max_rows": 5}))
    cut = small.call_tool("cypher", {"query": "MATCH (f:Fact {predicate: 'p'}) RETURN f.value AS v ORDER BY v"})
    assert cut.truncated and cut.total_rows == 300 and [r["v"] for r in cut.rows] == [0, 1, 2, 3, 4]
    assert json.loads(cut.content())["truncated"] is True


def test_the_corpus_in_process_changes_nothing(host: ToolHost, served: tuple[Path, str], tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("chronokg-serve-secret")
    stamp = served[0].stat().st_mtime_ns
    for query in hostile(secret):
        result = host.call_tool("cypher", {"query": query, "params": {"label": "Entity"}})
        assert result.error is not None and result.error.type == "refused", (query, result)
        assert "chronokg-serve-secret" not in result.content()
    assert digest(served[0]) == served[1] and served[0].stat().st_mtime_ns == stamp


def test_a_writer_handle_is_refused(tmp_path: Path) -> None:
    with KgliteStore(tmp_path / "w.kgl") as writer, pytest.raises(Exception, match="read-only"):
        ToolHost(writer)


@pytest.mark.slow
def test_workers_run_reads_in_parallel_and_a_slow_read_blocks_only_its_worker(host: ToolHost) -> None:
    """With forked workers, fast calls finish while a read that runs to its time limit holds one worker."""
    patient = ToolHost(host.store, limits=LIMITS.model_copy(update={"timeout_s": 8.0}))
    patient.start_workers(3)
    try:
        assert patient.workers is not None and patient.workers.alive() == 3
        slow: list[Any] = []
        thread = threading.Thread(target=lambda: slow.append(patient.call_tool("cypher", {"query": CARTESIAN})))
        thread.start()
        time.sleep(0.2)
        fast = [patient.call_tool("timeline", {"subject": "un-secretary-general"})]
        # A serial pool would answer the first fast call only after the slow read ends (by its time or memory
        # limit, whichever comes first on the machine), so the slow one must still be running here.
        still_running = thread.is_alive()
        fast += [patient.call_tool("timeline", {"subject": "un-secretary-general"}) for _ in range(19)]
        thread.join()
    finally:
        patient.close()
    assert all(r.ok and len(r.rows) == len(fast[0].rows) > 0 for r in fast)
    assert slow[0].error.type == "limit_exceeded" and still_running  # the fast calls did not queue behind it


@pytest.mark.slow
def test_many_threads_through_workers_get_exactly_the_serial_answers(host: ToolHost) -> None:
    calls = [("facts_as_of", {"date": f"{y}-06-01", "subject": "un-secretary-general"}) for y in range(1990, 2024)]
    calls += [("cypher", {"query": "MATCH (f:Fact {subject_id: $s}) RETURN f.value AS v", "params": {"s": f"s{i}"}})
              for i in range(40)]
    serial = [host.call_tool(n, a).rows for n, a in calls]

    def threaded() -> list[Any]:
        results: list[Any] = [None] * len(calls)

        def run(k: int) -> None:
            results[k] = host.call_tool(*calls[k])

        threads = [threading.Thread(target=run, args=(k,)) for k in range(len(calls))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return results

    in_process = threaded()  # no workers: the host's lock keeps forks away from engine calls in other threads
    assert [r.rows for r in in_process] == serial and all(r.ok for r in in_process)
    host.start_workers(2)
    pooled = threaded()
    assert [r.rows for r in pooled] == serial and all(r.ok for r in pooled)


def test_a_killed_worker_is_replaced(host: ToolHost) -> None:
    host.start_workers(1)
    pool = host.workers
    assert pool is not None
    pool._workers[0].process.kill()  # as the OOM killer would
    pool._workers[0].process.join(5)
    broken = host.call_tool("timeline", {"subject": "un-secretary-general"})
    assert broken.error is not None and broken.error.type == "unavailable"
    again = host.call_tool("timeline", {"subject": "un-secretary-general"})
    assert again.ok and again.rows and pool.restarts == 1 and pool.alive() == 1


class _Passages:
    """A minimal search backend for the hook (retrieval's real one is tested with retrieval)."""

    def __init__(self, texts: list[tuple[str, int]]) -> None:
        self.texts = texts

    def search(self, query: str, as_of: dt.date | None, k: int) -> Sequence[BaseModel | Mapping[str, Any]]:
        words = set(query.lower().split())
        hits = [{"text": t, "score": len(words & set(t.lower().split())), "valid_from": f"{y}-01-01"}
                for t, y in self.texts if as_of is None or y <= as_of.year]
        return sorted(hits, key=lambda h: -int(h["score"]))[:k]


def test_search_is_registered_only_where_a_backend_has_an_index(served: tuple[Path, str]) -> None:
    registry: Registry[Any] = Registry("search backend")
    registry.register("missing", "chronokg.retrieval_that_does_not_exist:search_backend")
    registry.register("no-index", lambda store, settings: None)
    with KgliteStore(served[0], read_only=True) as store:
        backend, note = find_search(store, Settings(), registry)
        assert backend is None and "missing: not installed" in note and "no-index: no passage index" in note
        registry.register("rag", lambda s, _: _Passages([("push hard and fast", 2010), ("push harder", 2015)]))
        backend, note = find_search(store, Settings(), registry)
        assert backend is not None and note == "rag: ready"
        host = ToolHost(store, limits=LIMITS, search=backend)
        assert "search" in [t.name for t in host.tools()]
        schema = host.tool("search").schema()
        assert schema["properties"].pop("offset")["minimum"] == 0 and schema == json_schema(SearchParams)
        hits = host.call_tool("search", {"query": "push harder", "as_of": "2012-01-01", "k": 2})
        assert hits.ok and [h["text"] for h in hits.rows] == ["push hard and fast"]
        bad = host.call_tool("search", {"query": "x", "k": 500})
        assert bad.error is not None and bad.error.type == "invalid_arguments"


def test_tool_names_follow_the_python_api() -> None:
    assert tool_name("as-of") == "facts_as_of" and tool_name("changed-between") == "changed_between"


def test_importing_the_cli_and_the_tools_loads_no_server_framework() -> None:
    code = ("import sys, chronokg.cli, chronokg.serve\n"
            "print([m for m in ('fastapi', 'uvicorn', 'mcp', 'starlette', 'kglite', 'httpx2') if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert result.stdout.strip() == "[]"


def test_a_missing_extra_is_one_clear_error(served: tuple[Path, str]) -> None:
    code = ("import sys; sys.modules['fastapi'] = None\n"
            "from chronokg.cli import main\n"
            f"sys.argv = ['chronokg', '--store', 'kglite://{served[0]}', 'serve', 'http']\n"
            "main()")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 2 and "pip install 'chronokg[serve]'" in " ".join(result.stderr.split())
