"""Answers never depend on the engine: every registered catalog query, on the embedded engine and on a real
Bolt server (ArcadeDB, or your Neo4j: `bolt_target`) holding the same data, gives identical rows in
identical order; and every list inside a row is in a stated order.

The data: the conformance fixture (with its order traps), the real samples in ../shared/data (TempoMed-Bench,
eCFR title 1, Wikidata entities, TruthfulQA) and tests/fixtures/cross_engine, each loaded by `chronokg ingest`
on both stores, the demo's slices of the other sources, and a run of two reference baselines. Parameters are
drawn from the loaded ids, so a query added later is covered too; a query no call of which answers a row fails,
naming what to add.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from tests.helpers import defined_at

if TYPE_CHECKING:
    from chronokg.bench.question import Question
    from chronokg.eval.log import RunInfo, SampleRecord

pytestmark = pytest.mark.slow  # a JVM (the Bolt server)


D = dt.date
DATES = [D(1990, 1, 1), D(2005, 6, 1), D(2011, 1, 1), D(2012, 1, 1), D(2016, 6, 1), D(2020, 3, 1), D(2023, 1, 1),
         D(2026, 1, 1),
         D(2027, 1, 1)]  # after the demo's release of updated answers
WORDS = {"topic": ["heart", "diabetes", "lung", "cancer"], "organization": ["society", "american", "hearts", "union"]}
CALLS_PER_SPEC = 20
BASELINES = ("baseline/oracle", "baseline/frozen:2018")  # the frozen one with a cutoff (`run-cutoffs`)
JOINT = "joint"  # the pool of parameters drawn together (a patient and one of its studies)
FIXTURE_DATA = Path(__file__).parent / "fixtures" / "cross_engine"

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
    """The shared samples and this test's own fixtures (tests/fixtures/cross_engine), through `chronokg ingest`."""
    runner = CliRunner()
    for source, path in (("tempomed", shared / "tempomed-bench"),
                         ("cfr", shared / "ecfr-title1/ECFR-title1.subset.xml"),
                         ("wikidata", shared / "wikidata-entities"), ("qa", shared / "truthfulqa"),
                         ("tempomed", FIXTURE_DATA / "trajectory_90000013.json")):
        result = runner.invoke(app, ["--store", uri, "ingest", source, str(path)], env=env)
        assert result.exit_code == 0, f"ingest {source} on {uri}: {result.output}"


def _load(store: GraphStore) -> None:
    """The demo's slices of the other sources (DriftMed pairs, NQ-open with its updates, ChroKnowBench rows, UMLS
    and CFR releases, a CXR cohort), loaded after the shared CFR edition, which is older than the demo's."""
    from chronokg.demo.sources import load_sources

    load_sources(store)


def _baseline_run(path: Path, tmp: Path) -> tuple[RunInfo, list[Question], list[SampleRecord]]:
    """A run of two reference baselines over a few TempoMed questions of the embedded store and the BenchAge ones
    of the demo's NQ-open slice (whose gold answers a later release updates: `changed-verdicts`): the `Run` and
    `Prediction` nodes the run queries read (`run-summary`, `run-cutoffs`, `accuracy-by-valid-year`, ...)."""
    from chronokg.bench import snapshot
    from chronokg.bench.family import generate
    from chronokg.bench.question import write_jsonl
    from chronokg.eval import runner
    from chronokg.eval.log import latest

    with KgliteStore(path, read_only=True) as kg:
        snap = snapshot.current(kg)
        questions = generate("tempomed", kg, snap, {"protocol": "chronokg", "limit": 6})[0]
        questions += generate("benchage", kg, snap, {"protocol": "chronokg"})[0]  # the demo's updated NQ answers
        qfile = tmp / "questions.jsonl"
        write_jsonl(qfile, questions)
        folder, info = runner.prepare(tmp / "runs", [qfile], [runner.ModelEntry(spec=m) for m in BASELINES],
                                      runner.RunOptions(protocol="chronokg", cache=False, concurrency=4))
        info, _ = runner.run(folder, info, runner.load_questions([qfile], None), kg)
    return info, questions, list(latest(folder / "samples.jsonl").values())


@pytest.fixture(scope="module")
def engines(bolt_target: BoltTarget, shared_data: Path, tmp_path_factory: pytest.TempPathFactory,
            ) -> Iterator[tuple[GraphStore, GraphStore]]:
    from chronokg.eval.graph import write_predictions

    tmp = tmp_path_factory.mktemp("cross")
    path = tmp / "cross.kgl"

    def bolt(read_only: bool = False) -> Neo4jStore:
        return Neo4jStore(bolt_target.uri, bolt_target.user, bolt_target.password, bolt_target.database,
                          read_only=read_only)

    with KgliteStore(path) as kg:
        build(kg)
    _ingest(f"kglite://{path}", shared_data, {})
    with KgliteStore(path) as kg:
        _load(kg)
    with bolt() as store:
        store.write([("MATCH (n) DETACH DELETE n", {})])
        build(store)
    _ingest(bolt_target.uri, shared_data, bolt_target.env())
    run = _baseline_run(path, tmp)
    with bolt() as store:
        _load(store)
        write_predictions(store, *run)
    with KgliteStore(path) as kg:
        write_predictions(kg, *run)
    with KgliteStore(path, read_only=True) as kg, bolt(read_only=True) as store:
        yield kg, store


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
        # a QA-set question's id (`qa-gold`) or a generated question's (`question-key`, `question-answers`)
        "question": [*ids("MATCH (f:Fact {predicate: 'gold_answer'}) RETURN DISTINCT f.subject_id AS v"),
                     *ids("MATCH (q:Question) RETURN q.id AS v", 8)],
        "run": ids("MATCH (r:Run) RETURN r.id AS v"),
        "pair": ids("MATCH (c:ChangePair) RETURN c.id AS v"),
        "title": [1, 2],
        "*": every_id,
        # parameters drawn together, one row of values per call
        JOINT: [{"patient": r["p"], "first_study": r["s"]} for r in store.run(
            "MATCH (s:Study) RETURN s.patient_id AS p, s.id AS s ORDER BY s.patient_id, s.study_date, s.id")],
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
    joint = [row for row in pools[JOINT] if set(row) <= set(required)]
    seen: set[str] = set()
    for i in range(CALLS_PER_SPEC):
        base = {alias[k]: v[(i * (j + 1) + j) % len(v)] for j, (k, v) in enumerate(required.items())}
        if joint:
            base |= {alias[k]: v for k, v in joint[i * 3 % len(joint)].items()}
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
    answered: dict[str, int] = {}
    for name, spec in all_queries().items():
        answered[name] = 0
        for params in itertools.islice(_param_sets(spec, pools), 400):
            mine, theirs = _answer(spec, kg, params), _answer(spec, bolt, params)
            calls += 1
            if mine != theirs:
                differences.append(f"{name} {params}:\n  kglite: {str(mine)[:300]}\n  bolt:   {str(theirs)[:300]}")
            if isinstance(mine, list) and mine:
                non_empty += 1
                answered[name] += 1
                for row in mine:
                    lists_seen |= _check_lists(name, row)
    assert not differences, f"{len(differences)} of {calls} calls differ:\n" + "\n".join(differences[:10])
    empty = sorted(name for name, n in answered.items() if not n)
    assert not empty, (
        f"no call of {', '.join(empty)} answered a row, so nothing of it was compared: the test data hold none of "
        f"its facts. Add a file holding them to {FIXTURE_DATA.relative_to(Path(__file__).parents[1])} and load it in "
        f"_ingest at {defined_at(__file__, '_ingest')} (or, if they are there, a pool of the query's parameters to "
        f"_pools at {defined_at(__file__, '_pools')})")
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
