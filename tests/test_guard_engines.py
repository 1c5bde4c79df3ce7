"""The read-only guard is right on every engine: the same corpus on the embedded engine and on a real Bolt
server (ArcadeDB, whose EXPLAIN is one opaque step and whose READ sessions accept writes; or your Neo4j).

Every read is accepted (aggregations, the embedded engine's fused counts, read-only procedures), every
write is refused naming the check that refused it, and the store's content hash is the same afterwards.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest

from chronokg.errors import QueryLimitExceeded, QueryRefused, StoreError
from chronokg.graph.batch import GraphBatch
from chronokg.graph.counts import content_digest
from chronokg.graph.guard import OPAQUE_PLAN, ReadLimits, guarded_read
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import Fact, Source
from chronokg.graph.neo4j_store import Neo4jStore
from chronokg.graph.store import GraphStore
from chronokg.graph.writer import write_batch
from chronokg.testing.bolt_server import BoltTarget
from tests.test_guard import ADMIN, DDL, FILES, PROCEDURES, TRICKS, WRITES

# Reads a guard must accept on every engine (each one was refused somewhere before).
READS = [
    "MATCH (n) RETURN count(n) AS c",  # kglite: FusedCountAll
    "MATCH (n) RETURN labels(n) AS l, count(*) AS c",  # kglite: FusedCountByType
    "MATCH ()-[r]->() RETURN count(r) AS c",  # FusedCountAllEdges
    "MATCH ()-[r]->() RETURN type(r) AS t, count(*) AS c",  # FusedCountEdgesByType
    "MATCH (f:Fact) RETURN count(f) AS c",
    "MATCH (f:Fact) RETURN f.predicate AS p, count(*) AS c ORDER BY p",
    "MATCH (f:Fact) RETURN sum(f.value) AS s, avg(f.value) AS a, min(f.value) AS lo, max(f.value) AS hi",
    "MATCH (f:Fact) WITH f.predicate AS p, count(*) AS c RETURN p, c",
    "MATCH (f:Fact) OPTIONAL MATCH (f)-[:SUBJECT]->(e) RETURN f.id AS id, count(e) AS c ORDER BY id LIMIT 5",
    "MATCH (n) WHERE n:Fact OR n:Entity RETURN count(n) AS c",
    "MATCH (f:Fact) RETURN f.subject_id AS s, collect(f.value) AS vs ORDER BY s LIMIT 5",
    "MATCH (f:Fact) RETURN DISTINCT f.predicate AS p",
    "MATCH (f:Fact) RETURN f.id AS id ORDER BY f.value DESC LIMIT 3",
    "MATCH (f:Fact) WITH f ORDER BY f.value LIMIT 2 RETURN f.value AS v",
    "MATCH (f:Fact) RETURN f.value AS v ORDER BY v SKIP 2 LIMIT 2",
    "MATCH (f:Fact) WHERE f.valid_from <= date('2005-01-01') RETURN count(f) AS c",
    "MATCH (f:Fact)-[:SUBJECT]->(e:Entity) RETURN e.id AS e, count(f) AS c ORDER BY e LIMIT 3",
    "MATCH p = (f:Fact)-[*1..2]->() RETURN count(p) AS c",
    "UNWIND [3, 1, 2] AS x RETURN x ORDER BY x",
    "RETURN 1 AS x UNION RETURN 2 AS x",
    "CALL { MATCH (f:Fact) RETURN count(f) AS c } RETURN c",
    "CALL db.labels() YIELD label RETURN label ORDER BY label",
    "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType ORDER BY relationshipType",
    "CALL db.propertyKeys() YIELD propertyKey RETURN propertyKey ORDER BY propertyKey",
    "RETURN 'CREATE (n); DROP INDEX x' AS s",
    "RETURN {set: 1, create: 2, delete: 3} AS m",
    "MATCH (`delete`:Fact {subject_id: 's3'}) RETURN `delete`.value AS v",
    "MATCH (e:Entity) WHERE e.caption CONTAINS 'Set' RETURN count(e) AS c",
]
HOSTILE = [*WRITES, *DDL, *ADMIN, *PROCEDURES, *FILES, *TRICKS]
LIMITS = ReadLimits(timeout_s=5.0, max_rows=1000, max_result_mb=1.0, max_work=2_000_000, memory_mb=1024)


def _fill(store: GraphStore) -> None:
    batch = GraphBatch()
    batch.source(Source(id="r", kind="test", caption="a release"))
    for i in range(40):
        batch.fact(Fact(subject=f"s{i}", predicate="p" if i % 2 else "q", value=i,
                        valid_from=dt.date(2000 + i % 10, 1, 1), source_id="r", source_kind="test"))
    batch.entity("s3", kind="test", caption="Settled")
    write_batch(store, batch)


@pytest.fixture(scope="module", params=["kglite", pytest.param("bolt", marks=pytest.mark.slow)])  # bolt: a JVM
def guarded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphStore]:
    if request.param == "kglite":
        path = tmp_path_factory.mktemp("guard-engines") / "g.kgl"
        with KgliteStore(path) as store:
            _fill(store)
        with KgliteStore(path, read_only=True) as store:
            yield store
        return
    target: BoltTarget = request.getfixturevalue("bolt_target")
    with Neo4jStore(target.uri, target.user, target.password, target.database) as writer:
        writer.write([("MATCH (n) DETACH DELETE n", {})])
        _fill(writer)
    with Neo4jStore(target.uri, target.user, target.password, target.database, read_only=True) as store:
        yield store


def test_every_read_is_accepted_and_every_write_refused(guarded: GraphStore) -> None:
    assert len(READS) + len(HOSTILE) >= 60
    digest = content_digest(guarded)
    unsupported = []
    for query in READS:
        try:
            result = guarded_read(guarded, query, None, LIMITS)
        except QueryRefused as exc:
            pytest.fail(f"a read was refused on {guarded.engine}: {query}: {exc}")
        except StoreError as exc:  # the guard let it through; the engine does not know the syntax
            unsupported.append(f"{query}: {exc}")
            continue
        assert not result.truncated, query
    # Reads every engine must run: the counts, the aggregates and the schema procedures.
    assert not [u for u in unsupported if "count(" in u.split(":")[0] or "CALL db." in u], unsupported
    assert len(unsupported) <= 3, unsupported
    for query in HOSTILE:
        with pytest.raises(QueryRefused) as info:
            guarded_read(guarded, query, {"label": "Entity"}, LIMITS)
        assert not isinstance(info.value, QueryLimitExceeded), query
        assert info.value.reason.endswith(("[text check]", "[plan check]", "[read-only session]")), info.value
    assert content_digest(guarded) == digest


def test_answers_of_reads_match_across_engines(guarded: GraphStore) -> None:
    """The guarded counts are right on each engine (not merely accepted)."""
    rows = guarded_read(guarded, "MATCH (f:Fact) RETURN f.predicate AS p, count(*) AS c ORDER BY p", None,
                        LIMITS).rows
    assert rows == [{"p": "p", "c": 20}, {"p": "q", "c": 20}]
    assert guarded_read(guarded, "MATCH (f:Fact) RETURN count(f) AS c", None, LIMITS).rows == [{"c": 40}]


def test_where_the_plan_is_opaque_the_rolled_back_transaction_holds(guarded: GraphStore) -> None:
    """Bypass the text check: a write sent straight to the last layer is refused or undone."""
    digest = content_digest(guarded)
    for write in ("CREATE (:Entity {id: 'sneaky'})", "MATCH (f:Fact) SET f.value = -1",
                  "MATCH (n) DETACH DELETE n"):
        try:
            guarded.run_limited(write, None, LIMITS)
        except QueryRefused:
            pass
        except StoreError:
            assert guarded.engine == "kglite"  # the read-only copy refuses a write as an error
    assert content_digest(guarded) == digest
    if isinstance(guarded, Neo4jStore):
        plan = guarded.explain("MATCH (n) RETURN count(n)")
        assert (plan == [OPAQUE_PLAN]) != guarded.plan_is_trusted, (guarded.server_agent, plan)
