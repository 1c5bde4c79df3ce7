"""Wikidata RDF export and the SPARQL client, against a real Oxigraph server on loopback.

The RDF is built from the real entity samples (../shared/data/wikidata-entities);
the client must read back exactly the facts the JSON loader makes. Retries
and downloads run against small real HTTP servers on loopback (they stand in
for the public internet, which tests do not reach).
"""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import Fact
from chronokg.ingest import wikidata, wikidata_rdf, wikidata_sparql
from chronokg.ingest.download import USER_AGENT
from chronokg.ingest.wikidata import Selection
from chronokg.ingest.wikidata_sparql import SparqlClient, SparqlError
from tests.helpers import serve_http

pytestmark = pytest.mark.slow  # SPARQL server processes


SAMPLES = ("Q646148", "Q2112", "Q271094")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def oxigraph_binary() -> str:
    found = shutil.which("oxigraph") or shutil.which("oxigraph", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("the oxigraph server binary is not installed (pip install oxigraph)")
    return found


@contextmanager
def oxigraph(location: Path) -> Iterator[str]:
    """A real Oxigraph server on a free loopback port; yields its base URL and always stops it."""
    port = free_port()
    proc = subprocess.Popen([oxigraph_binary(), "serve", "--location", str(location), "--bind", f"127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"{base}/query?query=ASK%7B%7D", timeout=1):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    err = proc.stderr.read().decode() if proc.stderr and proc.poll() is not None else ""
                    pytest.fail(f"oxigraph did not start on {base}: {err}")
                time.sleep(0.05)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def post_ntriples(base: str, data: bytes) -> None:
    request = urllib.request.Request(f"{base}/store?default", data=data, method="POST",
                                     headers={"Content-Type": "application/n-triples"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status in (200, 201, 204)


@pytest.fixture(scope="module")
def samples(shared_data: Path) -> Path:
    return shared_data / "wikidata-entities"


@pytest.fixture(scope="module")
def server(samples: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Oxigraph holding the RDF built straight from the three real entity JSON files."""
    with oxigraph(tmp_path_factory.mktemp("oxigraph")) as base:
        post_ntriples(base, wikidata_rdf.ntriples(wikidata_rdf.files_graph([samples])))
        yield f"{base}/query"


def all_pids(samples: Path) -> list[str]:
    return sorted({pid for q in SAMPLES for pid in json.loads((samples / f"{q}.json").read_text())["claims"]})


FactKey = tuple[Any, ...]


def key(f: Fact) -> FactKey:
    return (f.subject, f.predicate, f.object, f.value, f.valid_from, f.valid_to)


def json_facts(samples: Path, pids: list[str]) -> list[Fact]:
    return wikidata.facts_of_files([samples], Selection.of(pids))


def sparql_facts(client: SparqlClient, pids: list[str]) -> list[Fact]:
    records, missing = wikidata_sparql.fetch_records(client, list(SAMPLES), pids)
    assert missing == []
    return [f for r in records for f in wikidata.build_facts(r, Selection.of(pids))]


# --- agreement -----------------------------------------------------------------------------------


def test_sparql_agrees_with_the_json_loader(server: str, samples: Path, tmp_path: Path) -> None:
    pids = all_pids(samples)
    expected = json_facts(samples, pids)
    client = SparqlClient(endpoint=server, cache_dir=tmp_path / "cache")
    got = sparql_facts(client, pids)
    assert len(expected) > 300  # every statement of the three entities, population series included
    assert {key(f) for f in got} == {key(f) for f in expected}
    # Beyond the compared fields: the same ids (precision), known time, ranks, statement ids, qualifier
    # provenance, units, languages and datatypes (read back from wikibase:propertyType).
    assert {f.id: (f.known_from, f.source_id, f.attrs) for f in got} == {
        f.id: (f.known_from, f.source_id, f.attrs) for f in expected}
    assert {f.attrs["datatype"] for f in got} >= {"wikibase-item", "external-id", "quantity", "time", "url",
                                                  "commonsMedia", "monolingualtext", "globe-coordinate"}


def test_sparql_load_matches_json_load_in_the_store(server: str, samples: Path, tmp_path: Path) -> None:
    from_json, from_sparql = KgliteStore(":memory:"), KgliteStore(":memory:")
    wikidata.load(from_json, [samples])  # ChroKnowBench's temporal properties
    summary = wikidata_sparql.load(from_sparql, list(SAMPLES), client=SparqlClient(endpoint=server))
    assert summary.records == 3 and summary.facts == 2 and summary.requests > 0
    rows = ("MATCH (f:Fact) RETURN f.id AS id, f.object_id AS o, f.valid_from AS a, f.valid_to AS b, "
            "f.known_from AS k, f.source_id AS s ORDER BY id")
    assert from_sparql.run(rows) == from_json.run(rows)
    assert len(from_json.run(rows)) == 2
    captions = "MATCH (e:Entity) WHERE e.caption IS NOT NULL RETURN e.id AS id, e.caption AS c ORDER BY id"
    assert from_sparql.run(captions) == from_json.run(captions)
    assert wikidata_sparql.load(from_sparql, list(SAMPLES), client=SparqlClient(endpoint=server)).unchanged


def test_paging_gives_the_same_rows(server: str, samples: Path) -> None:
    pids = ["P1082", "P39", "P6"]
    whole = SparqlClient(endpoint=server)
    paged = SparqlClient(endpoint=server, page_size=7)
    assert {key(f) for f in sparql_facts(paged, pids)} == {key(f) for f in sparql_facts(whole, pids)}
    # 206 population statements alone need 30 pages of 7 rows.
    assert paged.requests >= whole.requests + 206 // 7


def test_second_call_is_served_from_the_cache(samples: Path, tmp_path: Path) -> None:
    pids = ["P39", "P1082"]
    with oxigraph(tmp_path / "db") as base:
        post_ntriples(base, wikidata_rdf.ntriples(wikidata_rdf.files_graph([samples])))
        first = SparqlClient(endpoint=f"{base}/query", cache_dir=tmp_path / "cache")
        online = sparql_facts(first, pids)
        assert first.requests > 0 and first.cache_hits == 0
    # The server is gone: the same queries are answered from the cache alone.
    again = SparqlClient(endpoint=f"{base}/query", cache_dir=tmp_path / "cache", attempts=1)
    assert sparql_facts(again, pids) == online
    assert again.requests == 0 and again.cache_hits == first.requests
    refresh = SparqlClient(endpoint=f"{base}/query", cache_dir=tmp_path / "cache", refresh=True, attempts=2,
                           backoff=0.0)
    with pytest.raises(SparqlError, match="gave up after 2 attempts"):
        sparql_facts(refresh, pids)


def test_store_export_reads_back_as_the_same_facts(samples: Path, tmp_path: Path) -> None:
    store = KgliteStore(":memory:")
    wikidata.load(store, [samples], Selection.parse("all"))
    out = tmp_path / "store.nt"
    n = wikidata_rdf.write(wikidata_rdf.store_graph(store), out, "nt")
    assert n > 1000
    pids = all_pids(samples)
    with oxigraph(tmp_path / "db") as base:
        post_ntriples(base, out.read_bytes())
        got = sparql_facts(SparqlClient(endpoint=f"{base}/query"), pids)
    stored = store.run("MATCH (f:Fact) RETURN f.id AS id, f.known_from AS k")
    assert {f.id for f in got} == {r["id"] for r in stored}
    assert {(f.id, f.known_from) for f in got} == {(r["id"], r["k"]) for r in stored}


# --- politeness: retries, backoff, user agent (a loopback server stands in for the internet) -----


class Flaky(http.server.BaseHTTPRequestHandler):
    """Answers with the queued statuses first, then with an empty SPARQL result; records User-Agents."""

    statuses: ClassVar[list[tuple[int, dict[str, str]]]] = []
    agents: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).agents.append(self.headers.get("User-Agent", ""))
        if type(self).statuses:
            code, headers = type(self).statuses.pop(0)
            self.send_response(code)
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(b"busy")
            return
        body = json.dumps({"head": {"vars": ["x"]}, "results": {"bindings": [{"x": {"type": "literal",
                                                                                  "value": "ok"}}]}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/sparql-results+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_retries_with_backoff_then_succeeds() -> None:
    Flaky.statuses = [(503, {}), (429, {"Retry-After": "7"}), (500, {})]
    Flaky.agents = []
    waits: list[float] = []
    with serve_http(Flaky) as base:
        client = SparqlClient(endpoint=f"{base}/sparql", backoff=0.5, max_backoff=30, sleep=waits.append)
        rows = client.select("SELECT ?x WHERE {}")
    assert rows == [{"x": {"type": "literal", "value": "ok"}}]
    assert client.requests == 4
    assert waits == [0.5, 7.0, 2.0]  # exponential, but never shorter than Retry-After
    assert Flaky.agents == [USER_AGENT] * 4


def test_gives_up_after_bounded_attempts_and_does_not_retry_client_errors() -> None:
    Flaky.statuses = [(503, {})] * 3
    waits: list[float] = []
    with serve_http(Flaky) as base:
        client = SparqlClient(endpoint=f"{base}/sparql", attempts=3, backoff=1, sleep=waits.append)
        with pytest.raises(SparqlError, match="gave up after 3 attempts"):
            client.select("SELECT ?x WHERE {}")
        assert waits == [1, 2]
        Flaky.statuses = [(400, {})]
        client = SparqlClient(endpoint=f"{base}/sparql", sleep=waits.append)
        with pytest.raises(SparqlError, match="query failed"):
            client.select("SELECT ?x WHERE {}")
        assert client.requests == 1


# --- CLI -----------------------------------------------------------------------------------------


def test_cli_ingest_wikidata_sparql(server: str, tmp_path: Path) -> None:
    uri = f"kglite://{tmp_path / 's.kgl'}"
    args = ["--store", uri, "ingest", "wikidata-sparql", "--qid", "Q646148,Q2112", "--qid", "Q271094",
            "--pid", "P39", "--pid", "P6,P1082", "--endpoint", server, "--cache", str(tmp_path / "cache")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "wikidata: 3 records" in result.output
    with KgliteStore(tmp_path / "s.kgl") as s:
        by_predicate = {r["p"]: r["n"] for r in s.run(
            "MATCH (f:Fact) RETURN f.predicate AS p, count(*) AS n ORDER BY p")}
    assert by_predicate == {"P1082": 206, "P39": 2, "P6": 5}
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0 and "0 requests" in again.output and "store unchanged" in again.output


def test_cli_download_from_a_local_entity_data_server(samples: Path, tmp_path: Path) -> None:
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(samples))
    out = tmp_path / "entities"
    with serve_http(handler) as base:
        result = CliRunner().invoke(app, ["download", "wikidata", "Q646148", "Q2112", "--out", str(out),
                                          "--base-url", base])
        assert result.exit_code == 0, result.output
        missing = CliRunner().invoke(app, ["download", "wikidata", "Q1", "--out", str(out), "--base-url", base])
    assert missing.exit_code == 2 and "404" in missing.output
    assert sorted(p.name for p in out.iterdir()) == ["Q2112.json", "Q646148.json"]  # nothing half-written
    assert (out / "Q646148.json").read_bytes() == (samples / "Q646148.json").read_bytes()
    uri = f"kglite://{tmp_path / 's.kgl'}"
    result = CliRunner().invoke(app, ["--store", uri, "ingest", "wikidata", str(out)])
    assert result.exit_code == 0, result.output
    bad = CliRunner().invoke(app, ["download", "wikidata", "Douglas", "--out", str(out)])
    assert bad.exit_code != 0
