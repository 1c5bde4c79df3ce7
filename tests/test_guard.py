"""The read-only guard against a corpus of hostile and expensive statements.

Every write, DDL, admin, procedure, file/network read and trick is refused with a reason;
every expensive read is stopped by a limit; the schema-reading procedures and ordinary
reads (including ones that merely *mention* write words in strings, map keys, properties
or quoted names) are allowed. The store's content hash proves that nothing changed.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chronokg.errors import QueryLimitExceeded, QueryRefused
from chronokg.graph.batch import GraphBatch
from chronokg.graph.counts import content_digest
from chronokg.graph.guard import ReadLimits, check_text, guarded_read
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import Fact, Source
from chronokg.graph.writer import write_batch
from tests.helpers import REPO

SECRET = "chronokg-guard-secret-0f3b"

WRITES = [
    "CREATE (n:Entity {id: 'x'})",
    "MERGE (n:Entity {id: 'x'}) RETURN n",
    "MERGE (n:Entity {id: 'x'}) ON CREATE SET n.caption = 'c'",
    "MATCH (f:Fact) SET f.value = 1",
    "MATCH (f:Fact) SET f += {value: 1}",
    "MATCH (f:Fact) SET f:Hacked",
    "MATCH (f:Fact) DELETE f",
    "MATCH (f:Fact) DETACH DELETE f",
    "MATCH (f:Fact) NODETACH DELETE f",
    "MATCH (f:Fact) REMOVE f.value",
    "MATCH (f:Fact) REMOVE f:Fact",
    "MATCH (f:Fact) WITH collect(f) AS fs FOREACH (f IN fs | DETACH DELETE f)",
    "MATCH (f:Fact) RETURN f.id AS id UNION MATCH (n:Fact) DETACH DELETE n RETURN 'x' AS id",
    "RETURN 1 AS x UNION ALL CREATE (n:Entity {id: 'u'}) RETURN 2 AS x",
    "CALL { MATCH (f:Fact) DETACH DELETE f } RETURN 1",
    "MATCH (f:Fact) CALL (f) { SET f.value = 0 } IN TRANSACTIONS OF 10 ROWS",
    "CALL { CREATE (:Entity {id: 'sub'}) } IN TRANSACTIONS",
    "INSERT (:Entity {id: 'ins'})",
    "MATCH (a:Entity), (b:Entity) CREATE (a)-[:KNOWS]->(b)",
    "MATCH (f:Fact) WITH f LIMIT 1 MERGE (f)-[:X]->(:Entity {id: 'm'})",
    "UNWIND range(1, 3) AS i CREATE (:Entity {id: toString(i)})",
    "OPTIONAL MATCH (n) WITH n SET n.x = 1",
]
DDL = [
    "CREATE INDEX hack IF NOT EXISTS FOR (f:Fact) ON (f.value)",
    "CREATE RANGE INDEX hack2 FOR (f:Fact) ON (f.known_to)",
    "DROP INDEX fact_subject",
    "DROP INDEX Fact.subject_id IF EXISTS",
    "CREATE CONSTRAINT c1 FOR (n:Entity) REQUIRE n.caption IS UNIQUE",
    "DROP CONSTRAINT fact_id",
    "CREATE FULLTEXT INDEX ft FOR (n:Entity) ON EACH [n.caption]",
]
ADMIN = [
    "CREATE USER mallory SET PASSWORD 'x'",
    "ALTER USER neo4j SET PASSWORD 'x'",
    "GRANT ALL ON DATABASE * TO PUBLIC",
    "DENY READ {*} ON GRAPH * TO PUBLIC",
    "REVOKE ROLE admin FROM neo4j",
    "START DATABASE other",
    "STOP DATABASE neo4j",
    "TERMINATE TRANSACTIONS 'neo4j-transaction-1'",
    "SHOW USERS",
    "SHOW DATABASES",
    "SHOW TRANSACTIONS",
    "USE system SHOW USERS",
    "USE neo4j MATCH (n) RETURN count(n)",
]
PROCEDURES = [
    "CALL dbms.security.createUser('m', 'x', false)",
    "CALL dbms.setConfigValue('db.logs.query.enabled', 'OFF')",
    "CALL dbms.killQuery('q-1')",
    "CALL apoc.create.node(['X'], {id: 'a'})",
    "CALL apoc.periodic.iterate('MATCH (n) RETURN n', 'DETACH DELETE n', {})",
    "CALL db.cdc.enable({})",
    "CALL db.node_embeddings.set({type: 'Fact', text_column: 'value', entries: []})",
    "CALL db.createLabel('X')",
    "CALL pagerank() YIELD node, score RETURN node, score",
    "CALL gds.graph.drop('g')",
    "RETURN apoc.version() AS v",
    "MATCH (n) RETURN dbms.procedures() AS p",
]
FILES = [
    "LOAD CSV FROM 'file://{secret}' AS line RETURN line",
    "load csv from 'file://{secret}' as l return l",
    "LOAD CSV WITH HEADERS FROM 'http://127.0.0.1:9/data.csv' AS row RETURN row",
    "CALL apoc.load.json('file://{secret}') YIELD value RETURN value",
    "RETURN apoc.load.jsonParams('file://{secret}', {}, null) AS v",
    "CALL apoc.import.csv([{fileName: 'file://{secret}', labels: ['X']}], [], {})",
]
TRICKS = [
    "create (n:Entity {id: 'lower'})",
    "cReAtE (n:Entity {id: 'mixed'})",
    "MATCH (n) /* harmless */ DETACH /* really */ DELETE n",
    "MATCH (n) // a comment\nDETACH DELETE n",
    "MATCH (n)\n\tSET\tn.x = 1",
    "MATCH (f:Fact) RETURN f; MATCH (n) DETACH DELETE n",
    "RETURN 1; CREATE (:Entity {id: 'second'})",
    "RETURN 1 ;; RETURN 2",
    "EXPLAIN CREATE (n:Entity {id: 'explained'})",
    "PROFILE MATCH (f:Fact) SET f.value = 2",
    "\uff23\uff32\uff25\uff21\uff34\uff25 (n:Entity {id: 'fullwidth'})",
    "CRE\u200bATE (n:Entity {id: 'zero-width'})",
    "\u0421REATE (n:Entity {id: 'cyrillic'})",
    "MATCH (f:Fact) RETURN f.id /* CREATE (n) */ ; /* unterminated",
    "RETURN 'it''s' AS s) CREATE (n",
    "MATCH (n) RETURN n /*",
    "RETURN \"unterminated",
    "MATCH (f:Fact) WITH f CALL db.labels() YIELD label SET f.label2 = label",
    "CREATE (n:$($label) {id: 'param-label'})",
]
EXPENSIVE = [
    "RETURN size(reduce(s = '', x IN range(1, 900000) | s + 'aaaaaaaaaa')) AS n",  # the engine deadline misses it
    "RETURN size(reduce(s = '', x IN range(1, 2000000) | s + 'aaaaaaaaaa')) AS n",
    "MATCH (a:Fact), (b:Fact), (c:Fact) RETURN count(*) AS n",
    "MATCH (a:Fact), (b:Fact) RETURN a.id, b.id",  # 90,000 rows: cut at max_rows, and said so
    "MATCH (a), (b) RETURN a, b",
    "UNWIND range(1, 100000000) AS x RETURN count(x) AS n",
    "RETURN [x IN range(1, 50000000) | x] AS l",
    "UNWIND range(1, 2000) AS i RETURN i, reduce(s = '', x IN range(1, 200) | s + 'xxxxxxxxxx') AS big",
]
ALLOWED = [
    ("CALL db.labels()", None),
    ("CALL db.labels() YIELD label RETURN label ORDER BY label", None),
    ("CALL db.relationshipTypes()", None),
    ("CALL db.propertyKeys()", None),
    ("CALL db.schema.visualization()", None),
    ("SHOW INDEXES", None),
    ("SHOW CONSTRAINTS", None),
    ("CALL { MATCH (f:Fact) RETURN count(f) AS c } RETURN c", [{"c": 300}]),
    ("PROFILE MATCH (f:Fact) RETURN count(f) AS c", [{"c": 300}]),
    ("EXPLAIN MATCH (f:Fact) RETURN f.id", None),
    ("RETURN 'CREATE (n); DROP INDEX x' AS s", [{"s": "CREATE (n); DROP INDEX x"}]),
    ("RETURN {set: 1, create: 2, delete: 3} AS m", [{"m": {"set": 1, "create": 2, "delete": 3}}]),
    ("MATCH (`delete`:Fact {id: $id}) RETURN `delete`.predicate AS p", [{"p": "p"}]),
    ("MATCH (f:Fact {subject_id: 's7'}) RETURN f.value AS v;", [{"v": 7}]),
    ("// the schema\nMATCH (n:Source) RETURN n.id AS id", [{"id": "r"}]),
]


@pytest.fixture(scope="module")
def corpus_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    path = tmp_path_factory.mktemp("guard") / "guard.kgl"
    with KgliteStore(path, durable="off") as store:
        batch = GraphBatch()
        batch.source(Source(id="r", kind="test", caption="a release"))
        for i in range(300):
            batch.fact(Fact(subject=f"s{i}", predicate="p", value=i, valid_from=dt.date(2000 + i % 20, 1, 1),
                            source_id="r", source_kind="test"))
        write_batch(store, batch)
    with KgliteStore(path, read_only=True) as store:
        yield path, content_digest(store)


LIMITS = ReadLimits(timeout_s=2.0, max_rows=1000, max_result_mb=1.0, max_work=2_000_000, memory_mb=1024)


@pytest.mark.slow
@pytest.mark.parametrize("read_only", [True, False], ids=["reader", "writer-handle"])
def test_the_corpus_changes_nothing(corpus_store: tuple[Path, str], tmp_path: Path, read_only: bool) -> None:
    path, digest = corpus_store
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    hostile = [q.replace("{secret}", str(secret)) for q in [*WRITES, *DDL, *ADMIN, *PROCEDURES, *FILES, *TRICKS]]
    assert len(hostile) + len(EXPENSIVE) + len(ALLOWED) >= 60
    stamp = path.stat().st_mtime_ns
    with KgliteStore(path, read_only=read_only, lock_timeout=30) as store:
        for query in hostile:
            with pytest.raises(QueryRefused) as info:
                rows = guarded_read(store, query, {"label": "Entity"}, LIMITS).rows
                assert SECRET not in str(rows)
            assert not isinstance(info.value, QueryLimitExceeded), query
            assert info.value.reason and SECRET not in str(info.value), query
        for query in EXPENSIVE:
            start = time.monotonic()
            try:
                result = guarded_read(store, query, None, LIMITS)
                assert result.truncated and len(result.rows) == LIMITS.max_rows, query  # the row limit
            except QueryLimitExceeded:
                pass  # the time, work or size limit
            assert time.monotonic() - start < LIMITS.timeout_s + 5, query  # stopped, not run to the end
        for query, expected in ALLOWED:
            result = guarded_read(store, query, {"id": _fact_id(store, "s3")}, LIMITS)
            if expected is not None:
                assert result.rows == expected, query
        assert content_digest(store) == digest
    with KgliteStore(path, read_only=True) as store:
        assert content_digest(store) == digest
    assert read_only is False or path.stat().st_mtime_ns == stamp


def _fact_id(store: KgliteStore, subject: str) -> str:
    return str(store.run("MATCH (f:Fact {subject_id: $s}) RETURN f.id AS id", {"s": subject})[0]["id"])


def test_refusals_say_why() -> None:
    cases = {
        "MATCH (f:Fact) WITH collect(f) AS fs FOREACH (f IN fs | DETACH DELETE f)": "FOREACH is not allowed",
        "LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l": "LOAD CSV reads files",
        "CALL apoc.load.json('x')": "procedure apoc.load.json is not allowed",
        "RETURN 1; RETURN 2": "several statements",
        "\u0421REATE (n)": "CYRILLIC CAPITAL LETTER ES",
        "SHOW USERS": "only SHOW INDEXES and SHOW CONSTRAINTS",
        "RETURN apoc.version()": "function apoc.version() is not allowed",
    }
    for query, reason in cases.items():
        with pytest.raises(QueryRefused, match=reason.replace("(", r"\(").replace(")", r"\)")):
            check_text(query)


def test_a_long_truncated_result_says_so(corpus_store: tuple[Path, str]) -> None:
    path, _ = corpus_store
    with KgliteStore(path, read_only=True) as store:
        result = guarded_read(store, "MATCH (f:Fact) RETURN f.value AS v ORDER BY v", None,
                              LIMITS.model_copy(update={"max_rows": 10}))
    assert result.truncated and result.rows == [{"v": i} for i in range(10)] and result.total_rows == 300


def test_cli_refuses_with_the_reason_and_exit_code_2(corpus_store: tuple[Path, str]) -> None:
    path, digest = corpus_store
    cli = [sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{path}", "query", "cypher"]
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    refused = subprocess.run([*cli, "MATCH (f:Fact) WITH collect(f) AS fs FOREACH (f IN fs | DETACH DELETE f)"],
                             capture_output=True, text=True, env=env, timeout=120)
    assert refused.returncode == 2 and "FOREACH is not allowed" in refused.stderr
    slow = subprocess.run([*cli, "--timeout", "1", "RETURN size(reduce(s = '', x IN range(1, 900000) | s + 'a'))"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert slow.returncode == 2 and "time limit of 1 s" in slow.stderr
    ok = subprocess.run([*cli, "--max-rows", "2", "MATCH (f:Fact) RETURN f.value AS v ORDER BY v"],
                        capture_output=True, text=True, env=env, timeout=120)
    assert ok.returncode == 0 and '"v": 1' in ok.stdout and '"v": 2' not in ok.stdout
    assert "showing the first 2 of 300 rows" in ok.stderr
    with KgliteStore(path, read_only=True) as store:
        assert content_digest(store) == digest


@pytest.mark.parametrize("where", ["run_here", "no fork"])
def test_a_read_in_process_keeps_the_limits_and_names_each_failure(corpus_store: tuple[Path, str], where: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """`run_here` (serve's read workers) and `run_limited` where the OS cannot fork run the read in this process:
    rows are cut at the row limit as in the forked read, a work budget overrun is a limit, and a query the
    engine rejects is a store error, not a limit."""
    import chronokg.graph.kglite_limited as kglite_limited
    from chronokg.errors import StoreError

    path, digest = corpus_store
    with KgliteStore(path, read_only=True) as store:
        if where == "no fork":
            monkeypatch.setattr(kglite_limited, "can_fork", lambda: False)
        run = store.run_here if where == "run_here" else store.run_limited
        result = run("MATCH (f:Fact) RETURN f.value AS v ORDER BY v", None, LIMITS.model_copy(update={"max_rows": 10}))
        assert result.truncated and result.rows == [{"v": i} for i in range(10)] and result.total_rows == 300
        with pytest.raises(QueryLimitExceeded, match="budget"):
            run("MATCH (a:Fact), (b:Fact), (c:Fact) RETURN count(*) AS n", None,
                LIMITS.model_copy(update={"max_work": 1_000}))
        with pytest.raises(StoreError) as failed:
            run("MATCH (f:Fact) RETURN nosuchfunction(f.value) AS v", None, LIMITS)
        assert not isinstance(failed.value, (QueryLimitExceeded, QueryRefused))
        assert content_digest(store) == digest
