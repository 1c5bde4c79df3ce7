"""The production engine: Neo4j 5 over Bolt with the official driver."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any

import neo4j
from neo4j import time as neo4j_time

from chronokg.errors import StoreError
from chronokg.graph import schema
from chronokg.graph.store import Params, Row, Statement


def to_python(value: Any) -> Any:
    """Neo4j temporal values and containers as plain Python values."""
    if isinstance(value, neo4j_time.Date | neo4j_time.DateTime | neo4j_time.Time):
        return value.to_native()
    if isinstance(value, list):
        return [to_python(v) for v in value]
    if isinstance(value, dict):
        return {k: to_python(v) for k, v in value.items()}
    if isinstance(value, neo4j.graph.Node | neo4j.graph.Relationship):
        return {k: to_python(v) for k, v in dict(value).items()}
    return value


class Neo4jStore:
    """A Neo4j 5 database reached over Bolt."""

    engine = "neo4j"

    def __init__(self, uri: str, user: str, password: str, database: str = "neo4j", *,
                 read_only: bool = False) -> None:
        self._uri = uri
        self._database = database
        self._read_only = read_only
        try:
            self._driver = neo4j.GraphDatabase.driver(uri, auth=(user, password))
            self._driver.verify_connectivity()
        except Exception as exc:
            raise StoreError(f"cannot reach Neo4j at {uri}: {exc}") from exc
        if not read_only:
            self.ensure_schema()

    @property
    def uri(self) -> str:
        return self._uri

    @property
    def read_only(self) -> bool:
        return self._read_only

    def run(self, cypher: str, params: Params | None = None) -> list[Row]:
        try:
            records, _, _ = self._driver.execute_query(
                cypher, parameters_=dict(params or {}), database_=self._database,
                routing_=neo4j.RoutingControl.READ,
            )
        except neo4j.exceptions.Neo4jError as exc:
            raise StoreError(f"query failed on {self._uri}: {exc}") from exc
        return [{k: to_python(v) for k, v in rec.data().items()} for rec in records]

    def is_read_only(self, cypher: str, params: Params | None = None) -> bool:
        try:
            _, summary, _ = self._driver.execute_query(
                "EXPLAIN " + cypher, parameters_=dict(params or {}), database_=self._database
            )
        except neo4j.exceptions.Neo4jError as exc:
            raise StoreError(f"cannot plan query on {self._uri}: {exc}") from exc
        return summary.query_type == "r"

    def write(self, statements: Iterable[Statement]) -> None:
        if self._read_only:
            raise StoreError(f"{self._uri} is open read-only: writes go through a writer (chronokg ingest, init)")
        with self._driver.session(database=self._database) as session:
            tx = session.begin_transaction()
            try:
                for cypher, params in statements:
                    tx.run(cypher, dict(params)).consume()
                tx.commit()
            except neo4j.exceptions.Neo4jError as exc:
                tx.rollback()
                raise StoreError(f"write failed on {self._uri}, nothing was changed: {exc}") from exc
            except BaseException:
                tx.rollback()
                raise

    def declare_properties(self, label: str, keys: Sequence[str]) -> None:
        """Neo4j accepts any property on any node."""

    def ensure_schema(self) -> None:
        with self._driver.session(database=self._database) as session:
            for ddl in [*schema.constraint_ddl(), *schema.index_ddl()]:
                session.run(ddl).consume()

    def close(self) -> None:
        self._driver.close()

    def __enter__(self) -> Neo4jStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
