"""A prototype `GraphStore` over LadybugDB (the maintained successor of Kùzu), for the engine bake-off only.

Not registered as an engine (benchmarks/README.md, "LadybugDB bake-off" says why). LadybugDB is columnar and
strictly typed: every label is a node table with declared columns and one primary key, every relationship type
a rel table over declared (from, to) label pairs. So this store declares tables and columns as they are first
written, and types them by property name (`column_type`); a value whose type differs from its column's is
stored as text (a fact's integer `value` comes back as a string: the conformance suite counts that).

Reads pass the catalog's Neo4j 5 Cypher through unchanged, with two small rewrites that make the question
answerable at all, counted by `ladybug_catalog.py`: `properties(x)` reads the node `x` (ladybug returns a node
as a dict of its properties) and `CALL db.labels()` / `CALL db.relationshipTypes()` read `show_tables()`.
Writes take the writer's statement shapes (`chronokg.graph.writer`) apart and run them as parameterised
single-row statements in one transaction; bulk loads use `COPY FROM` directly (`bench_ladybug.py`).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import ladybug as lb

from chronokg.errors import QueryRefused, StoreError
from chronokg.graph import schema
from chronokg.graph.read_limits import LimitedResult, ReadLimits
from chronokg.graph.store import Capabilities, GraphStore, Params, Row, Statement
from chronokg.settings import Settings
from chronokg.store_uri import StoreURI

DATE_KEYS = frozenset({"valid_from", "valid_to", "known_from", "known_to", "release_date", "issued"})
INT_KEYS = frozenset({"year"})
LIST_KEYS = frozenset({"caption_versions", "choices", "answers"})
# Plan operators of ladybug reads (EXPLAIN's physical plan); writes show INSERT, SET_PROPERTY, DELETE, MERGE.
LADYBUG_READ_OPERATORS = frozenset({
    "RESULT_COLLECTOR", "PROJECTION", "FILTER", "SCAN_NODE_TABLE", "PRIMARY_KEY_SCAN_NODE_TABLE", "INDEX_LOOKUP",
    "SCAN_REL_TABLE", "EXTEND", "RECURSIVE_EXTEND", "PATH_PROPERTY_PROBE", "HASH_JOIN_BUILD", "HASH_JOIN_PROBE",
    "INTERSECT_BUILD", "INTERSECT", "CROSS_PRODUCT", "FLATTEN", "AGGREGATE", "AGGREGATE_FINALIZE", "AGGREGATE_SCAN",
    "ORDER_BY", "ORDER_BY_MERGE", "ORDER_BY_SCAN", "TOP_K", "TOP_K_SCAN", "LIMIT", "SKIP", "UNWIND", "DUMMY_SCAN",
    "EMPTY_RESULT", "MULTIPLICITY_REDUCER", "SEMI_MASKER", "UNION_ALL_SCAN", "TABLE_FUNCTION_CALL", "PARTITIONER",
    "DUMMY_SINK", "MARK_JOIN", "OFFSET_SCAN_NODE_TABLE", "COUNT_REL_TABLE", "QUERY_PRIMARY_KEY_LOOKUP",
})

# Every relationship type with the (from, to) labels schema.py documents: a rel table must exist to be read.
S = schema
REL_PAIRS: tuple[tuple[str, str, str], ...] = (
    (S.SUBJECT, S.FACT, S.ENTITY), (S.OBJECT, S.FACT, S.ENTITY), (S.ASSERTED_IN, S.FACT, S.SOURCE),
    (S.FROM_GUIDELINE, S.FACT, S.GUIDELINE), (S.ISSUED_BY, S.GUIDELINE, S.ORGANIZATION),
    (S.SUPERSEDES, S.GUIDELINE, S.GUIDELINE), (S.IN_TRAJECTORY, S.GUIDELINE, S.TRAJECTORY),
    (S.CURRENT, S.CHANGE_PAIR, S.FACT), (S.PRIOR, S.CHANGE_PAIR, S.FACT), (S.ABOUT, S.SOURCE_QUESTION, S.CHANGE_PAIR),
    (S.ABOUT, S.SOURCE_QUESTION, S.ENTITY), (S.LOADED_FROM, S.GUIDELINE, S.SOURCE),
    (S.LOADED_FROM, S.TRAJECTORY, S.SOURCE), (S.TESTS, S.QUESTION, S.FACT), (S.DERIVED_FROM, S.QUESTION, S.CHANGE_PAIR),
    (S.DERIVED_FROM, S.QUESTION, S.TRAJECTORY), (S.DERIVED_FROM, S.QUESTION, S.STUDY),
    (S.DERIVED_FROM, S.QUESTION, S.SOURCE_QUESTION), (S.GENERATED_AT, S.QUESTION, S.SNAPSHOT),
    (S.ANSWERS, S.PREDICTION, S.QUESTION), (S.IN_RUN, S.PREDICTION, S.RUN), (S.CHOSE, S.PREDICTION, S.FACT),
)

_PLAN_OP = re.compile(r"│\s+([A-Z_]+)\[\d+\]\s+│")
_PARAM = re.compile(r"\$(\w+)")
_PROPERTIES = re.compile(r"\bproperties\((\w+)\)")
_LABELS_CALL = "CALL db.labels() YIELD label RETURN label"
_TYPES_CALL = "CALL db.relationshipTypes() YIELD relationshipType AS t RETURN t"
_CREATE_NODE = re.compile(r"UNWIND \$rows AS r CREATE \(n:(\w+) \{(.*)\}\)$")
_SET_NODE = re.compile(r"UNWIND \$rows AS r (MATCH|MERGE) \(n:(\w+) \{id: r\.id\}\) SET n \+= r\.props$")
_EDGE = re.compile(r"UNWIND \$rows AS r MATCH \(a:(\w+) \{id: r\.s\}\) MATCH \(b:(\w+) \{id: r\.d\}\) "
                   r"(CREATE|MERGE|MATCH) \(a\)-\[e:(\w+)\]->\(b\) SET e \+= r\.p$")
_INTERNAL = frozenset({"_ID", "_LABEL", "_SRC", "_DST"})


def column_type(key: str) -> str:
    if key in DATE_KEYS:
        return "DATE"
    if key in INT_KEYS:
        return "INT64"
    return "STRING[]" if key in LIST_KEYS else "STRING"


def _coerce(kind: str, value: Any) -> Any:
    """A value fit for a column of `kind`; text where its Python type does not fit (the typed-column cost)."""
    if value is None:
        return None
    if kind == "DATE":
        return value if isinstance(value, dt.date) else dt.date.fromisoformat(str(value)[:10])
    if kind == "INT64":
        return int(value)
    if kind == "STRING[]":
        return [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]
    if isinstance(value, str):
        return value
    return json.dumps(value, default=str) if isinstance(value, list | dict) else str(value)


def _plain(value: Any) -> Any:
    """A node or edge as its properties (nulls dropped, as a property graph has them); lists recursively."""
    if isinstance(value, dict) and "_LABEL" in value:
        return {k: v for k, v in value.items() if k not in _INTERNAL and v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def rewrite(cypher: str) -> str:
    """The two rewrites reads get (module docstring); everything else runs as the catalog wrote it."""
    if cypher.strip() == _LABELS_CALL:
        return "CALL show_tables() WHERE type = 'NODE' RETURN name AS label"
    if cypher.strip() == _TYPES_CALL:
        return "CALL show_tables() WHERE type = 'REL' RETURN name AS t"
    return _PROPERTIES.sub(r"\1", cypher)


class LadybugStore(GraphStore):
    """A ladybug database directory (or in memory), written one transaction at a time."""

    engine = "ladybug"
    capabilities = Capabilities(read_operators=LADYBUG_READ_OPERATORS)
    notices: Sequence[str] = ()

    @classmethod
    def open(cls, uri: StoreURI, settings: Settings, *, read_only: bool = False,
             on_wait: Callable[[str], None] | None = None, quick_open: bool = False,
             load: bool = False) -> LadybugStore:
        return cls(uri.location, read_only=read_only)

    def __init__(self, path: str | Path = ":memory:", *, read_only: bool = False) -> None:
        self._path = str(path)
        self._read_only = read_only
        self._db = lb.Database(self._path, read_only=read_only) if self._path != ":memory:" else lb.Database()
        self._conn = lb.Connection(self._db)
        # The catalog follows supersession chains up to 32 hops; ladybug's default bound is 30.
        self._conn.execute("CALL var_length_extend_max_depth=64")
        self._columns: dict[str, dict[str, str]] = {}  # table -> column -> type
        self._pairs: dict[str, set[tuple[str, str]]] = {}  # rel table -> (from, to) pairs
        self._read_schema()
        if not read_only:
            self.ensure_schema()

    # --- the schema, declared as it is first written --------------------------------------------

    def _rows(self, cypher: str) -> list[list[Any]]:
        result = self._conn.execute(cypher)
        assert not isinstance(result, list)  # one statement, one result
        return [list(r) for r in result.get_all()]

    def _read_schema(self) -> None:
        for name, kind in self._rows("CALL show_tables() RETURN name, type"):
            self._columns[name] = {c: t for c, t in self._rows(f"CALL table_info('{name}') RETURN name, type")}
            if kind == "REL":
                conns = self._rows(f"CALL show_connection('{name}') RETURN *")
                self._pairs[name] = {(c[0], c[1]) for c in conns}

    def _ddl(self, text: str) -> None:
        self._conn.execute(text)

    def _node_table(self, label: str, keys: Iterable[str] = ()) -> None:
        if label not in self._columns:
            self._ddl(f"CREATE NODE TABLE {label}(id STRING, PRIMARY KEY (id))")
            self._columns[label] = {"id": "STRING"}
        self._add_columns(label, keys)

    def _add_columns(self, table: str, keys: Iterable[str]) -> None:
        cols = self._columns[table]
        for key in keys:
            if key not in cols:
                kind = column_type(key)
                self._ddl(f"ALTER TABLE {table} ADD `{key}` {kind}")
                cols[key] = kind

    def _rel_table(self, rel: str, src: str, dst: str, keys: Iterable[str] = ()) -> None:
        if rel not in self._columns:
            self._ddl(f"CREATE REL TABLE {rel}(FROM {src} TO {dst})")
            self._columns[rel], self._pairs[rel] = {}, {(src, dst)}
        elif (src, dst) not in self._pairs[rel]:
            self._ddl(f"ALTER TABLE {rel} ADD FROM {src} TO {dst}")
            self._pairs[rel].add((src, dst))
        self._add_columns(rel, keys)

    def ensure_schema(self) -> None:
        for label in schema.KEYED_LABELS:
            self._node_table(label, schema.BASE_PROPERTIES.get(label, ()))
        for rel, src, dst in REL_PAIRS:
            self._rel_table(rel, src, dst)

    def declare_properties(self, label: str, keys: Sequence[str]) -> None:
        self._node_table(label, [k for k in keys if k != "id"])

    # --- reads ----------------------------------------------------------------------------------

    @property
    def uri(self) -> str:
        return str(StoreURI("ladybug", self._path))

    @property
    def read_only(self) -> bool:
        return self._read_only

    def _execute(self, cypher: str, params: Params | None = None) -> list[Row]:
        used = set(_PARAM.findall(cypher))
        args = {k: v for k, v in (params or {}).items() if k in used}
        try:
            result = self._conn.execute(cypher, args)
        except RuntimeError as exc:
            raise StoreError(f"query failed on {self.uri}: {exc}") from exc
        assert not isinstance(result, list)
        names = result.get_column_names()
        return [{n: _plain(v) for n, v in zip(names, row, strict=True)} for row in result.get_all()]

    def run(self, cypher: str, params: Params | None = None) -> list[Row]:
        return self._execute(rewrite(cypher), params)

    def explain(self, cypher: str, params: Params | None = None) -> list[str]:
        rows = self._execute("EXPLAIN " + rewrite(cypher), params)
        text = "\n".join(str(v) for r in rows for v in r.values())
        return _PLAN_OP.findall(text)

    def run_limited(self, cypher: str, params: Params | None, limits: ReadLimits) -> LimitedResult:
        """In a read-only transaction under ladybug's own query timeout; a write is refused by the engine."""
        start = time.perf_counter()
        self._conn.set_query_timeout(int(limits.timeout_s * 1000))
        self._conn.execute("BEGIN TRANSACTION READ ONLY")
        try:
            rows = self.run(cypher, params)
        except StoreError as exc:
            if "read-only" in str(exc):
                raise QueryRefused(f"the engine refused a write [read-only session]: {exc}") from exc
            raise
        finally:
            self._conn.execute("COMMIT")
            self._conn.set_query_timeout(0)
        return LimitedResult(rows=rows[: limits.max_rows], truncated=len(rows) > limits.max_rows,
                             total_rows=len(rows), elapsed_s=time.perf_counter() - start)

    # --- writes ---------------------------------------------------------------------------------

    def write(self, statements: Iterable[Statement]) -> None:
        if self._read_only:
            raise StoreError(f"{self.uri} is open read-only")
        self._conn.execute("BEGIN TRANSACTION")
        try:
            for cypher, params in statements:
                self._write_one(cypher, params)
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def _write_one(self, cypher: str, params: Params) -> None:
        rows: list[dict[str, Any]] = list(params.get("rows", []))
        if m := _CREATE_NODE.match(cypher):
            label = m[1]
            for r in rows:
                self._set_node(label, "CREATE", {k: v for k, v in r.items() if v is not None})
        elif m := _SET_NODE.match(cypher):
            for r in rows:
                self._set_node(m[2], m[1], {"id": r["id"], **r["props"]})
        elif m := _EDGE.match(cypher):
            src, dst, verb, rel = m[1], m[2], m[3], m[4]
            for r in rows:
                self._set_edge(rel, src, dst, verb, r["s"], r["d"], r["p"] or {})
        else:
            self._execute(cypher, params)

    def _set_node(self, label: str, verb: str, props: dict[str, Any]) -> None:
        self._node_table(label, [k for k in props if k != "id"])
        cols = self._columns[label]
        args = {f"p{i}": _coerce(cols[k], v) for i, (k, v) in enumerate(props.items())}
        names = list(props)
        if verb == "CREATE":
            inner = ", ".join(f"`{k}`: $p{i}" for i, k in enumerate(names))
            self._execute(f"CREATE (n:{label} {{{inner}}})", args)
            return
        sets = ", ".join(f"n.`{k}` = $p{i}" for i, k in enumerate(names) if k != "id")
        head = f"{verb} (n:{label} {{id: $p0}})"
        self._execute(f"{head} SET {sets}" if sets else head, args)

    def _set_edge(self, rel: str, src: str, dst: str, verb: str, s: str, d: str, props: dict[str, Any]) -> None:
        self._rel_table(rel, src, dst, props)
        cols = self._columns[rel]
        args: dict[str, Any] = {"s": s, "d": d, **{f"p{i}": _coerce(cols[k], v) for i, (k, v) in
                                                   enumerate(props.items())}}
        sets = ", ".join(f"e.`{k}` = $p{i}" for i, k in enumerate(props))
        edge = f"MATCH (a:{src} {{id: $s}}), (b:{dst} {{id: $d}}) {verb} (a)-[e:{rel}]->(b)"
        self._execute(f"{edge} SET {sets}" if sets else edge, args)

    # --- lifecycle ------------------------------------------------------------------------------

    def close(self) -> None:
        self._conn.close()
        self._db.close()

    def __enter__(self) -> LadybugStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
