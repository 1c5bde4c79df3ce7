"""`chronokg index ...` and `chronokg retrieve ...` end to end: the real model (embedding worker), a real faiss
index beside a file store, and loopback stand-ins for the web (SearchServer) and the model (OpenAIServer)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.demo.corpus import load_demo
from chronokg.graph.kglite_store import KgliteStore
from chronokg.testing.openai_server import OpenAIServer
from chronokg.testing.search_server import Doc, SearchServer

pytestmark = pytest.mark.slow  # an embedding model, index builds

runner = CliRunner()


@pytest.fixture(scope="module")
def store_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    path = tmp_path_factory.mktemp("cli") / "store.kgl"
    with KgliteStore(path) as store:
        load_demo(store)
    yield f"kglite://{path}"


def invoke(*args: str, env: dict[str, str] | None = None) -> str:
    result = runner.invoke(app, list(args), env=env)
    assert result.exit_code == 0, result.output
    return result.output


def test_index_build_update_search_stats_compact(store_uri: str) -> None:
    built = invoke("--store", store_uri, "index", "build")
    assert "34" in built and "flat" in built
    assert Path(store_uri.removeprefix("kglite://") + ".rag", "meta.json").exists()
    again = invoke("--store", store_uri, "index", "update")
    assert "34" in again
    out = invoke("--store", store_uri, "retrieve", "search", "chest compression depth for adults", "--as-of",
                 "2007-06-01", "-k", "3", "--format", "json")
    hits = json.loads(out[out.index("["):])
    assert len(hits) == 3 and all(h["valid_from"] <= "2007-06-01" and (h["valid_to"] is None or
                                                                        h["valid_to"] > "2007-06-01") for h in hits)
    out = invoke("--store", store_uri, "retrieve", "search", "Push down 4 to 5 cm", "--as-of", "2007", "-k", "2",
                 "--format", "json")
    assert any(h["text"] == "Push down about 1.5 to 2 inches (4 to 5 cm)." for h in json.loads(out[out.index("["):]))
    stats = json.loads(invoke("--store", store_uri, "index", "stats", "--format", "json"))
    assert stats[0]["rows"] == 34 and stats[0]["model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert "34" in invoke("--store", store_uri, "index", "compact")


def test_search_errors_are_one_line(store_uri: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["--store", store_uri, "retrieve", "search", "x", "--index", str(tmp_path / "no")])
    assert result.exit_code == 2 and "no passage index" in result.output
    result = runner.invoke(app, ["retrieve", "search", "x", "--provider", "bing"])
    assert result.exit_code == 2 and "unknown search provider 'bing'" in result.output


def test_web_search_and_the_web_pipeline_from_the_command_line(tmp_path: Path) -> None:
    docs = [Doc("un", "Secretary-General of the United Nations", "António Guterres has been Secretary-General of "
                "the United Nations since 2017.", wiki=True),
            Doc("news", "United Nations news", "The Secretary-General of the United Nations spoke today.")]
    with SearchServer(docs) as web, OpenAIServer(script=lambda r: "António Guterres") as model:
        env = {"CHRONOKG_SEARXNG_URL": f"{web.url}/searxng", "CHRONOKG_WIKIPEDIA_API_URL": f"{web.url}/w/api.php",
               "CHRONOKG_RESPONSE_CACHE": str(tmp_path / "cache.sqlite")}
        out = invoke("retrieve", "search", "Secretary-General United Nations", "--provider", "searxng", "--format",
                     "json", env=env)
        assert [h["url"] for h in json.loads(out)] == [f"{web.url}/wiki/Secretary-General_of_the_United_Nations",
                                                      f"{web.url}/pages/news"]
        refused = runner.invoke(app, ["retrieve", "search", "x", "--provider", "wikipedia", "--as-of", "2010"],
                                env=env)
        assert refused.exit_code == 2 and "cannot restrict results" in refused.output
        log = tmp_path / "web.jsonl"
        out = invoke("retrieve", "web", "Who is the Secretary-General of the United Nations?", "--model",
                     "openai-compat/m", "--base-url", model.url, "--wiki", "wikipedia", "--chain", "searxng",
                     "--protocol", "chronokg", "--log", str(log), env=env)
        assert "[wikipedia] António Guterres" in out
    record = json.loads(log.read_text())
    assert record["status"] == "wikipedia" and [s["kind"] for s in record["steps"]][:2] == ["search", "fetch"]
