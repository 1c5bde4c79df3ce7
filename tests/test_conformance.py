"""The conformance suite on each engine: always the embedded one; Neo4j when CHRONOKG_NEO4J_URI is set.

The Neo4j run deletes everything in the target database first: point it at a
disposable server (docker-compose.yml starts one).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.open import open_store
from chronokg.graph.store import GraphStore
from chronokg.settings import Settings
from tests.conformance.fixture import build
from tests.conformance.suite import CatalogConformance


class TestKgliteConformance(CatalogConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def graph(cls) -> Iterator[GraphStore]:
        with KgliteStore(":memory:") as store:
            build(store)
            yield store


class TestKgliteFileConformance(CatalogConformance):
    """The same answers from a file store that was closed and reopened (log replay and checkpoint)."""

    @pytest.fixture(scope="class")
    @classmethod
    def graph(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphStore]:
        path = tmp_path_factory.mktemp("conf") / "store.kgl"
        with KgliteStore(path) as store:
            build(store)
        with KgliteStore(path) as store:
            yield store


@pytest.mark.skipif(
    not Settings().neo4j_uri,
    reason="CHRONOKG_NEO4J_URI is not set: no Neo4j server to check against (see README, docker-compose)",
)
class TestNeo4jConformance(CatalogConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def graph(cls) -> Iterator[GraphStore]:
        settings = Settings()
        assert settings.neo4j_uri
        with open_store(settings.neo4j_uri, settings) as store:
            store.write([("MATCH (n) DETACH DELETE n", {})])
            build(store)
            yield store
