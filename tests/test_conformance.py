"""The conformance suite on each engine: the embedded one, and a real Bolt server through the Neo4j store.

The Bolt server is ArcadeDB started on loopback (tests/conftest.py, `bolt_target`), or your Neo4j when
CHRONOKG_NEO4J_URI is set: that run deletes everything in the target database first, so point it at a
disposable server (docker-compose.yml starts one).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.neo4j_store import Neo4jStore
from chronokg.graph.store import GraphStore
from chronokg.testing.bolt_server import BoltTarget
from chronokg.testing.engine_conformance import EngineConformance, build


class TestKgliteConformance(EngineConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def graph(cls) -> Iterator[GraphStore]:
        with KgliteStore(":memory:") as store:
            build(store)
            yield store


class TestKgliteFileConformance(EngineConformance):
    """The same answers from a file store that was closed and reopened (log replay and checkpoint)."""

    @pytest.fixture(scope="class")
    @classmethod
    def graph(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphStore]:
        path = tmp_path_factory.mktemp("conf") / "store.kgl"
        with KgliteStore(path) as store:
            build(store)
        with KgliteStore(path) as store:
            yield store


class TestNeo4jConformance(EngineConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def graph(cls, bolt_target: BoltTarget) -> Iterator[GraphStore]:
        with Neo4jStore(bolt_target.uri, bolt_target.user, bolt_target.password, bolt_target.database) as store:
            store.write([("MATCH (n) DETACH DELETE n", {})])
            build(store)
            yield store
