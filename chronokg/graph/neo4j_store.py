"""The production engine: Neo4j 5 over Bolt with the official driver (and Bolt servers that speak its Cypher).

Every failure is one `StoreError` line: the URI is shown without credentials, a refused login names the
variables to set, and the driver's own log lines are kept off the terminal (a `NullHandler` on the `neo4j`
logger: they still reach any handler the application configures).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any

import neo4j
from neo4j import time as neo4j_time

from chronokg.errors import QueryLimitExceeded, QueryRefused, StoreError
from chronokg.graph import schema
from chronokg.graph.guard import NEO4J_READ_OPERATORS, OPAQUE_PLAN
from chronokg.graph.read_limits import LimitedResult, ReadLimits
from chronokg.graph.store import Capabilities, GraphStore, Params, Row, Statement
from chronokg.settings import Settings
from chronokg.store_uri import StoreURI

AUTH_VARIABLES = "CHRONOKG_NEO4J_USER and CHRONOKG_NEO4J_PASSWORD"


def one_line(exc: BaseException, limit: int = 300) -> str:
    """The server's message without the driver's `{neo4j_code: ...} {gql_status: ...}` decoration."""
    text = exc.message if isinstance(exc, neo4j.exceptions.Neo4jError) and exc.message else str(exc)
    text = " ".join(text.split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def is_neo4j(agent: str) -> bool:
    """Neo4j itself (`Neo4j/5.26.0`), not a server that says it is compatible (`Neo4j/5.26.0 compatible (ArcadeDB)`)."""
    return agent.startswith("Neo4j/") and "compatible" not in agent.lower()


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


class Neo4jStore(GraphStore):
    """A Neo4j 5 database reached over Bolt."""

    engine = "neo4j"
    # Reads are READ sessions of the thread-safe driver, bounded by the server: nothing forks, nothing is kept
    # beside the database, and a write is committed by the server (no checkpoint).
    capabilities = Capabilities(read_operators=NEO4J_READ_OPERATORS)
    notices: Sequence[str] = ()

    @classmethod
    def open(cls, uri: StoreURI, settings: Settings, *, read_only: bool = False,
             on_wait: Callable[[str], None] | None = None, quick_open: bool = False,
             load: bool = False) -> Neo4jStore:
        """`neo4j://[user:password@]host:port` (and bolt://, neo4j+s://, ...); the settings' login where the URI
        has none. The driver takes the URI's options itself."""
        return cls(uri, settings.neo4j_user, settings.neo4j_password.get_secret_value(), settings.neo4j_database,
                   read_only=read_only)

    def __init__(self, uri: str | StoreURI, user: str, password: str, database: str = "neo4j", *,
                 read_only: bool = False) -> None:
        logging.getLogger("neo4j").addHandler(logging.NullHandler())
        parsed = StoreURI.parse(uri)
        given_user, given_password = parsed.credentials()
        user, password = given_user or user, password if given_password is None else given_password
        self._uri = str(parsed.without_credentials())
        uri = self._uri
        self._database = database
        self._read_only = read_only
        try:
            self._driver = neo4j.GraphDatabase.driver(uri, auth=(user, password))
        except (neo4j.exceptions.ConfigurationError, ValueError) as exc:
            raise StoreError(f"not a usable Neo4j URI {self._uri}: {one_line(exc)}") from None
        try:
            self._connect(user)
            if not read_only:
                self.ensure_schema()
        except BaseException:
            self._driver.close()
            raise

    def _connect(self, user: str) -> None:
        where = f"Neo4j at {self._uri}"
        try:
            self._driver.verify_connectivity()
            self._agent = self._driver.get_server_info().agent
            self._driver.execute_query("RETURN 1", database_=self._database, routing_=neo4j.RoutingControl.READ)
        except neo4j.exceptions.AuthError:
            raise StoreError(f"{where} refused the login of user {user!r}: set {AUTH_VARIABLES}") from None
        except neo4j.exceptions.ClientError as exc:
            if "DatabaseNotFound" in (exc.code or "") or "does not exist" in (exc.message or ""):
                raise StoreError(f"{where} has no database {self._database!r}: create it or set "
                                 "CHRONOKG_NEO4J_DATABASE") from None
            raise StoreError(f"{where} refused the connection: {one_line(exc)}") from None
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, OSError) as exc:
            raise StoreError(f"cannot reach {where}: {one_line(exc)} (is the server running there?)") from None

    @property
    def server_agent(self) -> str:
        """What the server calls itself (`Neo4j/5.26.0`, `Neo4j/5.26.0 compatible (ArcadeDB 26.10.2)`)."""
        return self._agent

    @property
    def plan_is_trusted(self) -> bool:
        """Neo4j's EXPLAIN gives an operator tree and a query type the guard can check; other servers may not."""
        return is_neo4j(self._agent)

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
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise StoreError(f"query failed on {self._uri}: {one_line(exc)}") from None
        return [{k: to_python(v) for k, v in rec.data().items()} for rec in records]

    def explain(self, cypher: str, params: Params | None = None) -> list[str]:
        """Operator names of the plan (EXPLAIN), and `QueryType:<type>` unless the server says it only reads.

        A server that is not Neo4j gives `[OPAQUE_PLAN]`: ArcadeDB answers with one operator for any
        statement and calls every statement a write, so its plan says nothing the guard can use.
        """
        try:
            _, summary, _ = self._driver.execute_query(
                "EXPLAIN " + cypher, parameters_=dict(params or {}), database_=self._database,
                routing_=neo4j.RoutingControl.READ,
            )
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise StoreError(f"cannot plan query on {self._uri}: {one_line(exc)}") from None
        if not self.plan_is_trusted:
            return [OPAQUE_PLAN]
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
        """A read in a READ-access session, in a transaction that is rolled back, never committed, with a
        server-side transaction timeout; rows and bytes bounded.

        Neo4j refuses a write in a READ session; ArcadeDB accepts one, so the rollback is what holds there.
        """
        start = time.monotonic()
        rows: list[Row] = []
        size, truncated = 0, False
        try:
            with self._driver.session(database=self._database, default_access_mode=neo4j.READ_ACCESS,
                                      fetch_size=min(limits.max_rows + 1, 1000)) as session, \
                    session.begin_transaction(timeout=limits.timeout_s) as tx:
                result = tx.run(cypher, dict(params or {}))
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
                tx.rollback()
        except neo4j.exceptions.ClientError as exc:
            code = exc.code or ""
            if "TransactionTimedOut" in code or "Terminated" in code:
                raise QueryLimitExceeded(f"the query ran past its time limit of {limits.timeout_s:g} s") from exc
            if "Forbidden" in code or "AccessMode" in code:
                raise QueryRefused(f"the query would write: {one_line(exc)} [read-only session]") from None
            raise StoreError(f"query failed on {self._uri}: {one_line(exc)}") from None
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise StoreError(f"query failed on {self._uri}: {one_line(exc)}") from None
        return LimitedResult(rows=rows, truncated=truncated, total_rows=None if truncated else len(rows),
                             elapsed_s=time.monotonic() - start)

    def write(self, statements: Iterable[Statement]) -> None:
        if self._read_only:
            raise StoreError(f"{self._uri} is open read-only: writes go through a writer (chronokg ingest, init)")
        try:
            with self._driver.session(database=self._database) as session:
                tx = session.begin_transaction()
                try:
                    for cypher, params in statements:
                        tx.run(cypher, dict(params)).consume()
                    tx.commit()
                except BaseException:
                    if not tx.closed():
                        tx.rollback()
                    raise
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise StoreError(f"write failed on {self._uri}, nothing was changed: {one_line(exc)}") from None

    def declare_properties(self, label: str, keys: Sequence[str]) -> None:
        """Neo4j accepts any property on any node."""

    def ensure_schema(self) -> None:
        """Constraints and indexes (`IF NOT EXISTS`); a server that refuses one is one line naming it."""
        ddl = ""
        try:
            with self._driver.session(database=self._database) as session:
                for ddl in [*schema.constraint_ddl(), *schema.index_ddl()]:
                    session.run(ddl).consume()
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise StoreError(f"{self._uri} refused the schema statement `{' '.join(ddl.split())}`: "
                             f"{one_line(exc)}") from None

    def close(self) -> None:
        self._driver.close()

    def __enter__(self) -> Neo4jStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
