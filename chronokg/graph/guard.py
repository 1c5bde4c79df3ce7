"""The one read-only guard for Cypher that comes from outside (CLI, HTTP, MCP, agents).

Three layers, each enough to stop a write on its own, because each has been fooled
alone before (a `FOREACH` the plan check did not know, a write hidden in a `UNION`
half the plan does not expand):

1. `check_text`: a tokenizer-level check of the text. One statement; no write,
   admin or file clause word outside strings, comments and backtick-quoted names
   (`CREATE`, `MERGE`, `SET`, `DELETE`, `FOREACH`, `LOAD CSV`, `IN TRANSACTIONS`, ...);
   `CALL` only of a subquery or of a small allow-list of schema procedures;
   `SHOW` only of indexes and constraints; no `apoc.` / `dbms.` / `gds.` function;
   ASCII outside strings (no look-alike letters); bounded length and nesting.
2. `check_plan`: the engine's plan (EXPLAIN; nothing runs) may contain only
   operators from an allow-list of reads. A Bolt server that is not Neo4j (ArcadeDB)
   answers EXPLAIN with one opaque operator for any statement: its store says so
   (`OPAQUE_PLAN`) and this layer then adds nothing; the other two still hold.
3. The engine runs it read-only (a forked, read-only copy of the embedded graph;
   on Bolt a READ session, in a transaction that is always rolled back) under limits:
   a time limit, a work budget, a row limit and a result-size limit (`ReadLimits`).
   The embedded engine's own deadline is not checked inside every expression, so the
   fork is killed when the time is up.

Which guarantees hold on which engine: docs/integrity.md, "The read-only guard per engine".

A refused query raises `QueryRefused` saying why and ending with the check that refused
(`[text check]`, `[plan check]`, `[read-only session]`); a read stopped by a limit raises
`QueryLimitExceeded` naming the limit.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass

from chronokg.errors import QueryRefused
from chronokg.graph.read_limits import LimitedResult as LimitedResult  # re-exported: callers import them from here
from chronokg.graph.read_limits import ReadLimits as ReadLimits
from chronokg.graph.store import GraphStore, Params

MAX_LENGTH = 100_000  # characters of query text
MAX_DEPTH = 64  # nested brackets

# Clause words that write, administer, read files or commit: refused wherever they are a keyword.
FORBIDDEN = {
    "CREATE": "it creates nodes, relationships, indexes or constraints",
    "MERGE": "it writes", "SET": "it writes", "DELETE": "it deletes", "DETACH": "it deletes",
    "NODETACH": "it deletes", "REMOVE": "it writes", "DROP": "it drops indexes or constraints",
    "FOREACH": "it runs write clauses per element", "INSERT": "it writes",
    "LOAD": "LOAD CSV reads files and URLs", "ALTER": "it administers the server",
    "GRANT": "it administers users", "DENY": "it administers users", "REVOKE": "it administers users",
    "RENAME": "it administers the server", "START": "it administers databases", "STOP": "it administers databases",
    "TERMINATE": "it stops other transactions", "USE": "it switches databases",
    "TRANSACTIONS": "CALL { } IN TRANSACTIONS commits writes", "PERIODIC": "it commits writes",
    "COMMIT": "it commits writes", "FORMAT": "FORMAT CSV is not supported here (rows come back as JSON)",
    "IMPORT": "it reads files",
}
# Read-only schema procedures (Neo4j 5 names; the embedded engine knows most of them).
PROCEDURES = frozenset({
    "db.labels", "db.relationshiptypes", "db.propertykeys", "db.schema.visualization",
    "db.schema.nodetypeproperties", "db.schema.reltypeproperties", "db.indexes", "db.constraints",
    "dbms.components",
})
SHOWABLE = frozenset({"INDEX", "INDEXES", "CONSTRAINT", "CONSTRAINTS"})
# Namespaces of functions and procedures that reach outside the graph or administer it.
OUTSIDE = frozenset({"apoc", "dbms", "gds", "db", "java", "system"})

# Operators a read may have in its plan.
KGLITE_READ_OPERATORS = frozenset({
    "Match", "OptionalMatch", "Expand", "Where", "Filter", "With", "Return", "Unwind", "OrderBy", "Skip",
    "Limit", "Union", "CallSubquery", "Call", "Finish", "ShowIndexes", "ShowConstraints", "OptimizerPass",
    "Having", "Distinct", "Aggregate",
    # kglite 0.21's fused read pipelines (counts, aggregates, top-k), from its EXPLAIN output
    "FusedNodeScanAggregate", "FusedMatchReturnAggregate", "FusedNodeScanTopK", "FusedOrderByTopK",
    "FusedChainDistinctCount", "FusedChainGroupedPathCount", "FusedChainPathCount", "FusedCountAnchoredEdges",
    "FusedCountLabelUnion", "FusedCountTypedEdge", "FusedCountTypedNode", "FusedValidAtJoin",
    "FusedCountAll", "FusedCountAllEdges", "FusedCountByType", "FusedCountEdgesByType", "FusedMatchWithAggregate",
    "FusedOptionalMatchAggregate",
})
# What a store's `explain` returns when its engine's plan cannot be checked (see the module docstring).
OPAQUE_PLAN = "OpaquePlan"
NEO4J_READ_OPERATORS = frozenset({
    "ProduceResults", "AllNodesScan", "NodeByLabelScan", "NodeByIdSeek", "NodeByElementIdSeek", "Argument",
    "NodeIndexSeek", "NodeUniqueIndexSeek", "NodeIndexScan", "NodeIndexContainsScan", "NodeIndexEndsWithScan",
    "NodeIndexSeekByRange", "NodeUniqueIndexSeekByRange", "MultiNodeIndexSeek", "IntersectionNodeByLabelsScan",
    "UnionNodeByLabelsScan", "DirectedRelationshipIndexSeek", "UndirectedRelationshipIndexSeek",
    "DirectedRelationshipIndexScan", "UndirectedRelationshipIndexScan", "DirectedRelationshipTypeScan",
    "UndirectedRelationshipTypeScan", "DirectedRelationshipByIdSeek", "UndirectedRelationshipByIdSeek",
    "DirectedAllRelationshipsScan", "UndirectedAllRelationshipsScan", "Expand(All)", "Expand(Into)",
    "OptionalExpand(All)", "OptionalExpand(Into)", "VarLengthExpand(All)", "VarLengthExpand(Into)",
    "VarLengthExpand(Pruning)", "VarLengthExpand(Pruning,BFS)", "BFSPruningVarExpand", "ShortestPath",
    "StatefulShortestPath(All)", "StatefulShortestPath(Into)", "Filter", "Projection", "Aggregation",
    "EagerAggregation", "OrderedAggregation", "Sort", "PartialSort", "Top", "PartialTop", "Limit",
    "ExhaustiveLimit", "Skip", "Distinct", "OrderedDistinct", "Apply", "SemiApply", "AntiSemiApply",
    "SelectOrSemiApply", "SelectOrAntiSemiApply", "LetSemiApply", "LetAntiSemiApply", "LetSelectOrSemiApply",
    "LetSelectOrAntiSemiApply", "RollUpApply", "ConditionalApply", "AntiConditionalApply", "CartesianProduct",
    "NodeHashJoin", "NodeLeftOuterHashJoin", "NodeRightOuterHashJoin", "ValueHashJoin", "Union",
    "OrderedUnion", "Unwind", "Optional", "Eager", "CacheProperties", "NodeCountFromCountStore",
    "RelationshipCountFromCountStore", "ProcedureCall", "ShowIndexes", "ShowConstraints", "EmptyResult",
    "TriadicSelection", "TriadicBuild", "TriadicFilter", "Trail", "Repeat(Trail)", "NullifyMetadata",
    "AssertSameNode", "AssertSameRelationship", "SubqueryForeach",
})


@dataclass(frozen=True)
class Token:
    kind: str  # word, quoted, string, number, param, symbol
    text: str
    pos: int


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"[0-9][0-9A-Za-z_.]*")


def tokens(text: str) -> Iterator[Token]:
    """Tokens of Cypher text, comments dropped; refuses what cannot be read unambiguously."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise QueryRefused("a /* comment is never closed")
            i = end + 2
        elif c in "'\"":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            if j >= n:
                raise QueryRefused("a string is never closed")
            yield Token("string", text[i : j + 1], i)
            i = j + 1
        elif c == "`":
            j = i + 1
            while True:
                j = text.find("`", j)
                if j < 0:
                    raise QueryRefused("a `quoted name` is never closed")
                if text.startswith("``", j):
                    j += 2
                    continue
                break
            yield Token("quoted", text[i : j + 1], i)
            i = j + 1
        elif c == "$":
            m = _WORD.match(text, i + 1) or _NUMBER.match(text, i + 1)
            if m is None and text.startswith("`", i + 1):
                end = text.find("`", i + 2)
                m_end = n if end < 0 else end + 1
                yield Token("param", text[i:m_end], i)
                i = m_end
                continue
            if m is None:
                raise QueryRefused(f"a $ without a parameter name at character {i + 1}")
            yield Token("param", text[i : m.end()], i)
            i = m.end()
        elif m := _WORD.match(text, i):
            yield Token("word", m.group(), i)
            i = m.end()
        elif m := _NUMBER.match(text, i):
            yield Token("number", m.group(), i)
            i = m.end()
        elif ord(c) > 127:
            name = unicodedata.name(c, f"U+{ord(c):04X}")
            raise QueryRefused(f"character {c!r} ({name}) at position {i + 1}: outside strings and `quoted "
                               "names`, a query must be plain ASCII")
        else:
            yield Token("symbol", c, i)
            i += 1


@dataclass(frozen=True)
class CheckedText:
    """A query that passed the text check; `statement` is it without a leading EXPLAIN or PROFILE."""

    text: str
    statement: str
    explain: bool
    profile: bool
    procedures: tuple[str, ...]


def _dotted(toks: list[Token], k: int) -> tuple[str, int]:
    """The dotted name starting at toks[k] (`db.schema.visualization`) and the index after it."""
    parts = [toks[k].text]
    k += 1
    while k + 1 < len(toks) and toks[k].text == "." and toks[k + 1].kind in {"word", "quoted"}:
        parts.append(toks[k + 1].text.strip("`"))
        k += 2
    return ".".join(parts), k


def check_text(cypher: str) -> CheckedText:
    """Refuse (QueryRefused, "... [text check]") any text that is not one plain read statement."""
    try:
        return _check_text(cypher)
    except QueryRefused as exc:
        raise QueryRefused(f"{exc.reason} [text check]") from None


def _check_text(cypher: str) -> CheckedText:
    if len(cypher) > MAX_LENGTH:
        raise QueryRefused(f"the query is {len(cypher):,} characters long (at most {MAX_LENGTH:,})")
    toks = list(tokens(cypher))
    if not toks:
        raise QueryRefused("the query is empty")
    semis = [k for k, t in enumerate(toks) if t.text == ";" and t.kind == "symbol"]
    if semis and semis[0] != len(toks) - 1:
        raise QueryRefused("several statements: send one statement at a time")
    if semis:
        toks = toks[:-1]
    depth, stack = 0, []
    procedures: list[str] = []
    first = toks[0].text.upper() if toks[0].kind == "word" else ""
    for k, t in enumerate(toks):
        if t.kind == "symbol":
            if t.text in "([{":
                stack.append(t.text)
                depth = max(depth, len(stack))
                if depth > MAX_DEPTH:
                    raise QueryRefused(f"brackets nested more than {MAX_DEPTH} deep")
            elif t.text in ")]}" and stack:
                stack.pop()
            continue
        if t.kind != "word":
            continue
        prev = toks[k - 1] if k else None
        nxt = toks[k + 1] if k + 1 < len(toks) else None
        if prev is not None and prev.text in {".", ":"} and prev.kind == "symbol":
            continue  # a property, label or relationship type
        if nxt is not None and nxt.text == ":" and stack and stack[-1] == "{":
            continue  # a map key
        word = t.text.upper()
        if word in FORBIDDEN:
            raise QueryRefused(f"{word} is not allowed in a read query: {FORBIDDEN[word]} (quote an identifier "
                               "of that name with backticks)")
        if word == "CALL":
            if nxt is None or nxt.text in {"{", "("}:
                continue  # a subquery: its body is checked like the rest
            name, _ = _dotted(toks, k + 1)
            if name.lower() not in PROCEDURES:
                allowed = ", ".join(sorted(PROCEDURES))
                raise QueryRefused(f"procedure {name} is not allowed here (allowed: {allowed})")
            procedures.append(name)
        elif word == "SHOW":
            what = nxt.text.upper() if nxt is not None else ""
            if what not in SHOWABLE:
                raise QueryRefused(f"SHOW {what} is not allowed: only SHOW INDEXES and SHOW CONSTRAINTS")
        elif (word in {"EXPLAIN", "PROFILE"}) and k != 0:
            raise QueryRefused(f"{word} may only start the query")
        elif t.text.lower() in OUTSIDE and nxt is not None and nxt.text == ".":
            name, after = _dotted(toks, k)
            called = after < len(toks) and toks[after].text == "("
            is_procedure = prev is not None and prev.kind == "word" and prev.text.upper() == "CALL"
            if called and not is_procedure:
                raise QueryRefused(f"function {name}() is not allowed: {t.text}.* reaches outside the graph or "
                                   "administers the server")
    prefixed = first in {"EXPLAIN", "PROFILE"}
    if prefixed and len(toks) < 2:
        raise QueryRefused(f"{first} of nothing")
    statement = cypher[toks[1].pos:] if prefixed else cypher
    return CheckedText(cypher, statement, explain=first == "EXPLAIN", profile=first == "PROFILE",
                       procedures=tuple(procedures))


def check_plan(operations: list[str], allowed: frozenset[str]) -> None:
    """Every operator of the plan must be a read: in `allowed`, the engine's `capabilities.read_operators` (an
    allow-list; an unknown operator is refused).

    `[OPAQUE_PLAN]` (a store whose engine's plan says nothing) passes: the text check and the
    store's read-only run are what hold there.
    """
    if operations == [OPAQUE_PLAN]:
        return
    if not operations:
        raise QueryRefused("the engine gave no plan to check [plan check]")
    for op in operations:
        name = op.split(" ", 1)[0].split("@", 1)[0]
        if name not in allowed:
            raise QueryRefused(f"the query plan has a {name} step, which is not a read [plan check]")


def check(store: GraphStore, cypher: str, params: Params | None = None) -> CheckedText:
    """The text check, then the plan check on `store`'s engine: QueryRefused unless `cypher` can only read."""
    checked = check_text(cypher)
    check_plan(store.explain(checked.statement, params), store.capabilities.read_operators)
    return checked


def guarded_read(store: GraphStore, cypher: str, params: Params | None = None,
                 limits: ReadLimits | None = None) -> LimitedResult:
    """Run Cypher from outside only if it can only read, within `limits` (see the module docstring)."""
    check(store, cypher, params)
    return store.run_limited(cypher, params, limits or ReadLimits())
