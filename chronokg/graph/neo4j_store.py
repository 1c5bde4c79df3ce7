"""The production engine: Neo4j 5 over Bolt with the official driver."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any

import neo4j
from neo4j import time as neo4j_time

from chronokg.errors import QueryLimitExceeded, QueryRefused, StoreError
from chronokg.graph import schema
from chronokg.graph.guard import LimitedResult, ReadLimits
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

    def explain(self, cypher: str, params: Params | None = None) -> list[str]:
        """Operator names of the plan (EXPLAIN), and `QueryType:<type>` unless the server says it only reads."""
        try:
            _, summary, _ = self._driver.execute_query(
                "EXPLAIN " + cypher, parameters_=dict(params or {}), database_=self._database,
                routing_=neo4j.RoutingControl.READ,
            )
        except neo4j.exceptions.Neo4jError as exc:
            raise StoreError(f"cannot plan query on {self._uri}: {exc}") from exc
        ops: list[str] = []

        def walk(step: Any) -> None:
            if isinstance(step, dict):
                ops.append(str(step.get("operatorType", "")))
                for child in step.get("children") or []:
                    walk(child)

        walk(summary.plan)
        if summary.query_type != "r":
            ops.append(f"QueryType:{summary.query_type}")
        return ops

    def run_limited(self, cypher: str, params: Params | None, limits: ReadLimits) -> LimitedResult:
        """A read in a READ-access session with a server-side transaction timeout; rows and bytes bounded."""
        start = time.monotonic()
        rows: list[Row] = []
        size, truncated = 0, False
        try:
            with self._driver.session(database=self._database, default_access_mode=neo4j.READ_ACCESS,
                                      fetch_size=min(limits.max_rows + 1, 1000)) as session:
                result = session.run(neo4j.Query(cypher, timeout=limits.timeout_s), dict(params or {}))
                for record in result:
                    if len(rows) == limits.max_rows:
                        truncated = True
                        break
                    row = {k: to_python(v) for k, v in record.data().items()}
                    size += len(json.dumps(row, default=str))
                    if size > limits.max_result_mb * 1e6:
                        raise QueryLimitExceeded(f"the result is larger than {limits.max_result_mb:g} MB: add "
                                                 "LIMIT or return fewer properties")
                    rows.append(row)
        except neo4j.exceptions.ClientError as exc:
            code = exc.code or ""
            if "TransactionTimedOut" in code or "Terminated" in code:
                raise QueryLimitExceeded(f"the query ran past its time limit of {limits.timeout_s:g} s") from exc
            if "Forbidden" in code or "AccessMode" in code:
                raise QueryRefused(f"the query would write: {exc.message}") from exc
            raise StoreError(f"query failed on {self._uri}: {exc}") from exc
        except neo4j.exceptions.Neo4jError as exc:
            raise StoreError(f"query failed on {self._uri}: {exc}") from exc
        return LimitedResult(rows=rows, truncated=truncated, total_rows=None if truncated else len(rows),
                             elapsed_s=time.monotonic() - start)

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
