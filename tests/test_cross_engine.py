"""Answers never depend on the engine: every registered catalog query, on the embedded engine and on a real
Bolt server (ArcadeDB, or your Neo4j: `bolt_target`) holding the same data, gives identical rows in
identical order; and every list inside a row is in a stated order.

The data: the conformance fixture (with its order traps) plus the real samples in ../shared/data
(TempoMed-Bench, eCFR title 1, Wikidata entities, TruthfulQA), each loaded by `chronokg ingest`
on both stores. Parameters are drawn from the loaded ids, so a query added later is covered too.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.errors import ChronoKGError
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.neo4j_store import Neo4jStore
from chronokg.graph.store import GraphStore
from chronokg.queries.spec import QuerySpec, all_queries
from chronokg.testing.bolt_server import BoltTarget
from chronokg.testing.engine_conformance import build

pytestmark = pytest.mark.slow  # a JVM (the Bolt server)


D = dt.date
DATES = [D(1990, 1, 1), D(2005, 6, 1), D(2011, 1, 1), D(2012, 1, 1), D(2016, 6, 1), D(2020, 3, 1), D(2023, 1, 1),
         D(2026, 1, 1)]
WORDS = {"topic": ["heart", "diabetes", "lung", "cancer"], "organization": ["society", "american", "hearts", "union"]}
CALLS_PER_SPEC = 20

# Lists whose order is not "sorted by value": the key each is ordered by (checked below).
STATED_ORDER: dict[tuple[str, str], tuple[str, Callable[[dict[str, Any], list[Any]], bool]]] = {
    ("cxr-windows", "study_indices"): ("the study order", lambda row, v: v == sorted(v, key=_none_last)),
    ("cxr-windows", "study_dates"): ("the study order", lambda row, v: v == sorted(v, key=_none_last)),
    ("cxr-windows", "study_ids"): ("the study order (study_indices)", lambda row, v: len(v) == len(
        row["study_indices"])),
    ("cxr-windows", "image_ids"): ("the study order, each study's images by id",
                                   lambda row, v: all(x == sorted(x) for x in v)),
    ("conflictmedqa-pairs", "records"): ("record order of the source file", lambda row, v: True),
    ("qa-questions", "answers"): ("the order the benchmark lists them (the first is the best answer)",
                                  lambda row, v: True),
    ("qa-questions", "time_sensitive_votes"): ("the annotators' order in the benchmark", lambda row, v: True),
    ("change-pair-list", "choices"): ("the MCQ's option order (A, B, C, D)", lambda row, v: True),
    ("trajectory-questions", "choices"): ("the source question's option order (A, B, C, D, E)", lambda row, v: True),
    ("trajectory-list", "versions"): ("oldest first: year, then PMID", lambda row, v: [
        (y is None, y or 0, p) for y, p in zip(row["years"], v, strict=True)] == sorted(
        (y is None, y or 0, p) for y, p in zip(row["years"], v, strict=True))),
    ("trajectory-list", "years"): ("the versions' order", lambda row, v: len(v) == len(row["versions"])),
}


def _none_last(x: Any) -> tuple[bool, Any]:
    return (x is None, x if x is not None else 0)


def _ingest(uri: str, shared: Path, env: dict[str, str]) -> None:
    runner = CliRunner()
    for source, path in (("tempomed", "tempomed-bench"), ("cfr", "ecfr-title1/ECFR-title1.subset.xml"),
                         ("wikidata", "wikidata-entities"), ("qa", "truthfulqa")):
        result = runner.invoke(app, ["--store", uri, "ingest", source, str(shared / path)], env=env)
        assert result.exit_code == 0, f"ingest {source} on {uri}: {result.output}"


@pytest.fixture(scope="module")
def engines(bolt_target: BoltTarget, shared_data: Path, tmp_path_factory: pytest.TempPathFactory,
            ) -> Iterator[tuple[GraphStore, GraphStore]]:
    path = tmp_path_factory.mktemp("cross") / "cross.kgl"
    with KgliteStore(path) as kg:
        build(kg)
    _ingest(f"kglite://{path}", shared_data, {})
    with Neo4jStore(bolt_target.uri, bolt_target.user, bolt_target.password, bolt_target.database) as bolt:
        bolt.write([("MATCH (n) DETACH DELETE n", {})])
        build(bolt)
    _ingest(bolt_target.uri, shared_data, bolt_target.env())
    with KgliteStore(path, read_only=True) as kg, \
            Neo4jStore(bolt_target.uri, bolt_target.user, bolt_target.password, bolt_target.database,
                       read_only=True) as bolt:
        yield kg, bolt


def _spread(values: list[Any], n: int) -> list[Any]:
    """Up to n values spread over the sorted list (first, last and between)."""
    if len(values) <= n:
        return values
    return [values[round(i * (len(values) - 1) / (n - 1))] for i in range(n)]


def _pools(store: GraphStore) -> dict[str, list[Any]]:
    def ids(cypher: str, n: int = 12) -> list[Any]:
        return _spread(sorted(r["v"] for r in store.run(cypher) if r["v"] is not None), n)

    every_id = ids("MATCH (n) WHERE n.id IS NOT NULL RETURN DISTINCT n.id AS v", 16)
    return {
        "subject": [*ids("MATCH (f:Fact) RETURN DISTINCT f.subject_id AS v", 16), "carol", "alice", "nope"],
        "predicate": ids("MATCH (f:Fact) RETURN DISTINCT f.predicate AS v", 30),
        "guideline": [*ids("MATCH (g:Guideline) RETURN g.id AS v"), "g2015", "h2020a"],
        "decision": ids("MATCH (f:Fact {predicate: 'recommendation'}) RETURN DISTINCT f.subject_id AS v"),
        "question": ids("MATCH (f:Fact) WHERE f.subject_id STARTS WITH 'qa:' OR f.predicate = 'answer' "
                        "RETURN DISTINCT f.subject_id AS v") or every_id,
        "title": [1, 2],
        "*": every_id,
    }


def _values(name: str, annotation: str, pools: dict[str, list[Any]]) -> list[Any]:
    if "date" in annotation:
        return DATES
    if "bool" in annotation:
        return [False, True]
    if "list" in annotation:
        return [None]
    if name in WORDS:
        return WORDS[name]
    key = "predicate" if name.startswith("predicate") else name
    if "int" in annotation:
        return pools.get(key, [2])
    return pools.get(key, pools["*"])


def _param_sets(spec: QuerySpec[Any, Any], pools: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    fields = spec.params.model_fields
    required = {k: _values(k, str(f.annotation), pools) for k, f in fields.items() if f.is_required()}
    optional = {k: _values(k, str(f.annotation), pools) for k, f in fields.items() if not f.is_required()}
    alias = {k: f.alias or k for k, f in fields.items()}
    seen: set[str] = set()
    for i in range(CALLS_PER_SPEC):
        base = {alias[k]: v[(i * (j + 1) + j) % len(v)] for j, (k, v) in enumerate(required.items())}
        variants = [base] + [{**base, alias[k]: v[i % len(v)]} for k, v in optional.items() if v != [None]]
        for params in variants:
            if repr(sorted(params.items())) not in seen:
                seen.add(repr(sorted(params.items())))
                yield params


def _answer(spec: QuerySpec[Any, Any], store: GraphStore, params: dict[str, Any]) -> Any:
    try:
        return [r.model_dump(mode="json") for r in spec.run(store, params)]
    except ChronoKGError as exc:
        return f"{type(exc).__name__}"


def test_every_catalog_query_gives_the_same_rows_in_the_same_order(
        engines: tuple[GraphStore, GraphStore]) -> None:
    kg, bolt = engines
    pools = _pools(kg)
    calls, non_empty, differences = 0, 0, []
    lists_seen: set[tuple[str, str]] = set()
    for name, spec in all_queries().items():
        for params in itertools.islice(_param_sets(spec, pools), 400):
            mine, theirs = _answer(spec, kg, params), _answer(spec, bolt, params)
            calls += 1
            if mine != theirs:
                differences.append(f"{name} {params}:\n  kglite: {str(mine)[:300]}\n  bolt:   {str(theirs)[:300]}")
            if isinstance(mine, list) and mine:
                non_empty += 1
                for row in mine:
                    lists_seen |= _check_lists(name, row)
    assert not differences, f"{len(differences)} of {calls} calls differ:\n" + "\n".join(differences[:10])
    assert calls >= 5 * len(all_queries()) and non_empty >= calls // 4, (calls, non_empty)
    print(f"{calls} calls, {non_empty} with rows: identical on both engines")
    assert {("trajectory", "organizations"), ("changed-between", "after")} <= lists_seen


def _check_lists(name: str, row: dict[str, Any]) -> set[tuple[str, str]]:
    seen = set()
    for field, value in row.items():
        if not isinstance(value, list):
            continue
        seen.add((name, field))
        if (name, field) in STATED_ORDER:
            key, ok = STATED_ORDER[(name, field)]
            assert ok(row, value), f"{name}.{field} is not in {key}: {value}"
        else:
            assert value == sorted(value, key=_none_last), f"{name}.{field} is not sorted by value: {value}"
    return seen


def test_the_guideline_with_two_organizations_answers_alike(engines: tuple[GraphStore, GraphStore]) -> None:
    """The order trap of orgs[0] over an unordered collect answers the same on both engines."""
    kg, bolt = engines
    spec = all_queries().get("trajectory")
    for store in engines:
        rows = spec.run(store, {"guideline": "g2015"})
        assert [r.organizations for r in rows][1] == ["Academy of Arteries", "Society of Hearts"]
    rec = all_queries().get("recommended-on")
    assert [r.organization for r in rec.run(kg, {"date": D(2016, 1, 1), "guideline": "g2015"})] == \
        [r.organization for r in rec.run(bolt, {"date": D(2016, 1, 1), "guideline": "g2015"})] == \
        ["Academy of Arteries"]
