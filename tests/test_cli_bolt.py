"""The `chronokg` command end to end against a real Bolt server (ArcadeDB, or your Neo4j: `bolt_target`):
init, ingest tempomed twice (the second changes nothing), every query command (answers identical to the
embedded engine's), `query cypher` (reads answered, writes refused), stats and both exports. Then the
store errors a user meets: one line each, never a traceback, never a password."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.errors import StoreError
from chronokg.graph import schema
from chronokg.graph.neo4j_store import Neo4jStore
from chronokg.testing.bolt_server import BoltTarget
from tests.helpers import REPO, defined_at

runner = CliRunner()
GUIDELINE = "26103502"


def cli(uri: str, env: dict[str, str], *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["--store", uri, *args], env=env)
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def loaded(bolt_target: BoltTarget, shared_data: Path, tmp_path_factory: pytest.TempPathFactory,
           ) -> Iterator[tuple[BoltTarget, str]]:
    """The Bolt database and an embedded store, each with TempoMed-Bench loaded by the CLI."""
    with Neo4jStore(bolt_target.uri, bolt_target.user, bolt_target.password, bolt_target.database) as store:
        store.write([("MATCH (n) DETACH DELETE n", {})])
    code, out = cli(bolt_target.uri, bolt_target.env(), "init")
    assert code == 0 and "ready" in out, out
    code, out = cli(bolt_target.uri, bolt_target.env(), "ingest", "tempomed", str(shared_data / "tempomed-bench"))
    assert code == 0 and "559 records" in out, out
    kg = f"kglite://{tmp_path_factory.mktemp('cli-bolt') / 'kg.kgl'}"
    code, out = cli(kg, {}, "ingest", "tempomed", str(shared_data / "tempomed-bench"))
    assert code == 0, out
    yield bolt_target, kg


def test_init_and_ingest_twice(loaded: tuple[BoltTarget, str], shared_data: Path) -> None:
    """`loaded` ran init and the first ingest; init again, and a second ingest changes nothing."""
    target, _ = loaded
    code, out = cli(target.uri, target.env(), "init")
    assert code == 0 and "ready" in out, out
    code, before = cli(target.uri, target.env(), "stats", "--format", "json")
    code, out = cli(target.uri, target.env(), "ingest", "tempomed", str(shared_data / "tempomed-bench"))
    assert code == 0 and "559 records" in out, out
    code, after = cli(target.uri, target.env(), "stats", "--format", "json")
    assert json.loads(after) == json.loads(before)
    stats = {(r["kind"], r["name"]): r["count"] for r in json.loads(after)}
    assert stats[("label", "ChangePair")] == 559


QUERY_COMMANDS: list[list[str]] = [
    ["as-of", "--subject", GUIDELINE, "--predicate", "superseded_by", "--date", "2024"],
    ["as-of", "--date", "2016-06-01", "--limit", "7"],
    ["timeline", "--subject", GUIDELINE],
    ["changed-between", "--from", "2014", "--to", "2024"],
    ["two-hop", "--subject", GUIDELINE, "--date", "2024"],
    ["recommended-on", "--date", "2016-06-01", "--guideline", "36739483"],
    ["recommended-on", "--date", "2020-01-01", "--topic", "heart"],
    ["trajectory", "--guideline", GUIDELINE],
    ["change-pairs", "--guideline", GUIDELINE],
    ["latest", "--subject", GUIDELINE],
    ["qa-questions"],
    ["cxr-windows"],
]


# `query run` parameters of every query with required ones that QUERY_COMMANDS does not run (a run id the store
# lacks is refused alike by both engines).
QUERY_PARAMS: dict[str, dict[str, Any]] = {
    "change-pair-list": {"guideline": GUIDELINE}, "decision-at": {"decision": "x", "date": "2020-01-01"},
    "facts-during": {"subject": GUIDELINE, "predicate": "superseded_by", "from": "2010", "to": "2024"},
    "relation-objects": {"predicate": "superseded_by"}, "cfr-editions": {"title": 1},
    "conflictmedqa-key": {"pair": "nope", "date": "2020-01-01"}, "qa-gold": {"question": "nope"},
    "cxr-window": {"patient": "p", "first_study": "s"}, "known-grid": {"subject": GUIDELINE},
    "question-answers": {"question": "nope"}, "question-key": {"question": "nope"},
    "trajectory-pairs": {"guideline": GUIDELINE}, "trajectory-questions": {"guideline": GUIDELINE},
    "trajectory-versions": {"guideline": GUIDELINE}, "accuracy-by-valid-year": {"run": "nope"},
    "changed-verdicts": {"run": "nope", "a": "2020-01-01", "b": "2024-01-01"},
}


def _json(out: str) -> Any:
    return json.loads(out)


def test_every_query_command_answers_as_the_embedded_engine(loaded: tuple[BoltTarget, str]) -> None:
    from chronokg.queries.spec import all_queries

    target, kg = loaded
    checked = set()
    for args in QUERY_COMMANDS:
        code, bolt_out = cli(target.uri, target.env(), "query", *args, "--format", "json")
        assert code == 0, (args, bolt_out)
        code, kg_out = cli(kg, {}, "query", *args, "--format", "json")
        assert code == 0, (args, kg_out)
        assert _json(bolt_out) == _json(kg_out), args
        checked.add(args[0])
    # Every other registered query through `query run` (the form answer keys use), with a real id.
    decision = _json(cli(kg, {}, "query", "timeline", "--subject", GUIDELINE, "-f", "json")[1])
    assert decision is not None
    for name, spec in all_queries().items():
        if name in checked:
            continue
        required = {f.alias or k for k, f in spec.params.model_fields.items() if f.is_required()}
        missing = sorted(required - set(QUERY_PARAMS.get(name, {})))
        assert not missing, (f"query {name}: no value of its required parameter(s) {missing}, so both engines "
                             "would only refuse the call: add them to QUERY_PARAMS at "
                             f"{defined_at(__file__, 'QUERY_PARAMS')}")
        given = json.dumps(QUERY_PARAMS.get(name, {}))
        code, bolt_out = cli(target.uri, target.env(), "query", "run", name, "--params", given)
        code2, kg_out = cli(kg, {}, "query", "run", name, "--params", given)
        assert (code, bolt_out if code else _json(bolt_out)) == (code2, kg_out if code2 else _json(kg_out)), name
        checked.add(name)
    assert checked >= set(all_queries().names())


def test_query_cypher_reads_and_refuses_writes(loaded: tuple[BoltTarget, str]) -> None:
    target, kg = loaded
    count = "MATCH (g:Guideline) RETURN count(g) AS n"
    code, out = cli(target.uri, target.env(), "query", "cypher", count)
    assert code == 0 and _json(out) == _json(cli(kg, {}, "query", "cypher", count)[1]), out
    n = _json(out)[0]["n"]
    assert n > 200
    code, out = cli(target.uri, target.env(), "query", "cypher", "MATCH (n) RETURN labels(n) AS l, count(*) AS c")
    assert code == 0 and "Guideline" in out, out
    code, out = cli(target.uri, target.env(), "query", "cypher", "MATCH (g:Guideline) DETACH DELETE g")
    assert len(out.strip().splitlines()) == 1, out
    assert code == 2 and "DETACH is not allowed" in out and "[text check]" in out and "Traceback" not in out
    assert _json(cli(target.uri, target.env(), "query", "cypher", count)[1]) == [{"n": n}]


def test_stats_and_exports(loaded: tuple[BoltTarget, str], tmp_path: Path) -> None:
    target, kg = loaded
    code, out = cli(target.uri, target.env(), "stats")
    assert code == 0 and "facts per source release" in out
    code, out = cli(target.uri, target.env(), "export", "neo4j-csv", "--out", str(tmp_path / "csv"))
    assert code == 0, out
    code, out = cli(kg, {}, "export", "neo4j-csv", "--out", str(tmp_path / "csv-kg"))
    assert code == 0, out
    bolt_files = sorted(p.name for p in (tmp_path / "csv").iterdir())
    assert bolt_files == sorted(p.name for p in (tmp_path / "csv-kg").iterdir())
    for name in bolt_files:
        if name.endswith(".csv"):
            lines = (tmp_path / "csv" / name).read_text().splitlines()
            kg_lines = (tmp_path / "csv-kg" / name).read_text().splitlines()
            assert lines[0] == kg_lines[0] and sorted(lines[1:]) == sorted(kg_lines[1:]), name
    code, out = cli(target.uri, target.env(), "export", "rdf", "--out", str(tmp_path / "facts.nt"))
    assert code == 0, out


# --- store errors: one line, no traceback, no password --------------------------------------------------


def _run_cli(uri: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chronokg.cli", "--store", uri, *args], capture_output=True,
                          text=True, timeout=180, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO),
                               "CHRONOKG_QUERY_DAEMON_IDLE_S": "0", **env})  # no query process left behind


def _one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    text = (proc.stdout + proc.stderr).strip()
    assert "Traceback" not in text and len(text.splitlines()) == 1, text
    return text


def test_store_errors_are_one_line(bolt_target: BoltTarget) -> None:
    host = bolt_target.uri.split("://", 1)[1]
    wrong = {**bolt_target.env(), "CHRONOKG_NEO4J_PASSWORD": "wrong-password-123"}
    text = _one_line_error(_run_cli(bolt_target.uri, wrong, "stats"))
    assert "CHRONOKG_NEO4J_USER" in text and "CHRONOKG_NEO4J_PASSWORD" in text and "wrong-password-123" not in text
    text = _one_line_error(_run_cli(f"bolt://root:secret-in-uri@{host}", {}, "stats"))
    assert "secret-in-uri" not in text and "refused the login of user 'root'" in text  # the URI's user, tried
    text = _one_line_error(_run_cli(bolt_target.uri, {**bolt_target.env(), "CHRONOKG_NEO4J_DATABASE": "nope"},
                                    "stats"))
    assert "'nope'" in text and "CHRONOKG_NEO4J_DATABASE" in text
    text = _one_line_error(_run_cli(f"neo4j://u:hunter2@127.0.0.1:{_closed_port()}", {}, "init"))
    # One line, ours: the driver's own "Unable to retrieve routing information" log line did not reach stderr.
    assert "hunter2" not in text and text.startswith("error: cannot reach Neo4j at neo4j://127.0.0.1:")


def _closed_port() -> int:
    from chronokg.testing.bolt_server import free_port

    return free_port()


def test_a_server_that_refuses_the_ddl_gives_one_line(bolt_target: BoltTarget,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """ArcadeDB (and Neo4j) reject this statement: `init` says which and changes nothing else."""
    bad = "CREATE CONSTRAINT chronokg_bad IF NOT EXISTS FOR (n:Fact) REQUIRE n.id IS KEY OF NOTHING"
    monkeypatch.setattr(schema, "index_ddl", lambda: [bad])
    with pytest.raises(StoreError) as info:
        Neo4jStore(bolt_target.uri, bolt_target.user, bolt_target.password, bolt_target.database)
    message = str(info.value)
    assert "refused the schema statement" in message and "KEY OF NOTHING" in message and "\n" not in message
    result = runner.invoke(app, ["--store", bolt_target.uri, "init"], env=bolt_target.env())
    assert result.exit_code == 2 and "refused the schema statement" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
