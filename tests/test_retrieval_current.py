"""Up-to-date facts: `latest`, `current_answer` on generated TempoMed questions, and the Wikidata refresh against a
real Oxigraph SPARQL server on loopback (it stands in for query.wikidata.org, which tests do not reach)."""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chronokg.bench.family import generate
from chronokg.bench.question import AnswerKey, Question
from chronokg.graph.batch import GraphBatch
from chronokg.graph.dates import Precision
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import Fact, Source
from chronokg.graph.writer import write_batch
from chronokg.ingest import tempomed, wikidata, wikidata_rdf
from chronokg.ingest.wikidata import Selection
from chronokg.ingest.wikidata_sparql import SparqlClient
from chronokg.queries import catalog
from chronokg.retrieval.current import current_answer, latest, params_as_of_today
from chronokg.retrieval.refresh import refresh, targets
from tests.test_wikidata_sparql import oxigraph, post_ntriples

D = dt.date
TODAY = D(2026, 11, 23)


def test_latest_falls_back_to_the_newest_version_of_a_series(store: KgliteStore) -> None:
    src = Source(id="t:1", kind="t", caption="t", release_date=D(2024, 1, 1))
    batch = GraphBatch()
    batch.source(src)
    for year, value in ((2010, "100"), (2020, "120")):
        batch.fact(Fact(subject="town", predicate="population", value=value, valid_from=D(year, 1, 1),
                        valid_to=D(year + 1, 1, 1), precision=Precision.YEAR, known_from=src.release_date,
                        source_id=src.id, source_kind="t"))
    batch.fact(Fact(subject="town", predicate="mayor", object="ann", valid_from=D(2018, 1, 1),
                    known_from=src.release_date, source_id=src.id, source_kind="t"))
    write_batch(store, batch)
    rows = latest(store, "town", today=TODAY)
    assert [(r.predicate, r.object, r.value, r.current) for r in rows] == [
        ("mayor", "ann", None, True), ("population", None, "120", False)]
    assert [r.value for r in latest(store, "town", "population", today=D(2010, 6, 1))] == ["100"]
    assert latest(store, "town", "population", today=D(2000, 1, 1)) == []  # nothing had started yet
    assert catalog.facts_as_of(store, TODAY, subject="town", predicate="population") == []  # why latest exists


@pytest.fixture(scope="module")
def tempomed_store(shared_data: Path) -> Iterator[KgliteStore]:
    with KgliteStore(":memory:") as store:
        tempomed.load(store, [shared_data / "tempomed-bench"])
        yield store


def test_current_answer_moves_a_historical_question_to_today(tempomed_store: KgliteStore) -> None:
    questions, _ = generate("tempomed", tempomed_store, "snap-test", {"limit": 3, "perturbations": ["reorder_only"]})
    historical = [q for q in questions if q.variant.startswith("mcq5/historical")]
    up_to_date = [q for q in questions if q.variant.startswith("mcq5/up_to_date")]
    assert historical and up_to_date
    for q in historical:
        now = current_answer(tempomed_store, q, today=TODAY)
        assert now.params["date"] == TODAY.isoformat() and now.key_answer != now.answer
        assert now.changed and now.target is not None and now.target != q.target
        current = next(c for c in q.choices if c.role == "up_to_date")
        assert (now.target, now.answer) == (current.label, current.text)
    for q in up_to_date:
        now = current_answer(tempomed_store, q, today=TODAY)
        assert not now.changed and now.target == q.target and now.answer == q.answer_key.answer


def test_answer_keys_move_to_today_by_their_own_rules() -> None:
    assert params_as_of_today("decision-at", {"decision": "d", "date": "2015-01-01"}, TODAY) == {
        "decision": "d", "date": "2026-11-23"}
    assert params_as_of_today("qa-gold", {"question": "q", "known_at": "2019-05-01"}, TODAY) == {
        "question": "q", "known_at": None}
    assert params_as_of_today("facts-during", {"subject": "s", "predicate": "p", "from": "2001-01-01",
                                                "to": "2002-01-01"}, TODAY) == {
        "subject": "s", "predicate": "p", "from": "2026-11-23", "to": "2026-11-24"}
    assert params_as_of_today("cxr-window", {"patient": "p"}, TODAY) == {"patient": "p"}


# --- Wikidata refresh ---------------------------------------------------------------------------------------

QID = "Q646148"


def _entity(samples: Path) -> dict[str, Any]:
    data = json.loads((samples / f"{QID}.json").read_text())
    entity: dict[str, Any] = data["entities"][QID] if "entities" in data else data
    return entity


def _newer_revision(entity: dict[str, Any]) -> dict[str, Any]:
    """The next revision: one P39 statement removed, one added (from 2025-03-01)."""
    new = copy.deepcopy(entity)
    new["lastrevid"] = entity["lastrevid"] + 1
    new["modified"] = "2026-01-05T10:00:00Z"
    claims = new["claims"]["P39"]
    claims.pop(0)
    start = {"snaktype": "value", "property": "P580", "datatype": "time", "datavalue": {"type": "time", "value": {
        "time": "+2025-03-01T00:00:00Z", "timezone": 0, "before": 0, "after": 0, "precision": 11,
        "calendarmodel": "http://www.wikidata.org/entity/Q1985727"}}}
    claims.append({"mainsnak": {"snaktype": "value", "property": "P39", "datatype": "wikibase-item", "datavalue": {
        "type": "wikibase-entityid", "value": {"entity-type": "item", "numeric-id": 1234567, "id": "Q1234567"}}},
        "type": "statement", "id": f"{QID}$00000000-0000-0000-0000-000000000001", "rank": "normal",
        "qualifiers": {"P580": [start]}, "qualifiers-order": ["P580"]})
    return new


def test_refresh_writes_what_changed_known_from_the_retrieval_date(shared_data: Path, tmp_path: Path) -> None:
    samples = shared_data / "wikidata-entities"
    entity = _entity(samples)
    newer = tmp_path / "newer"
    newer.mkdir()
    (newer / f"{QID}.json").write_text(json.dumps({"entities": {QID: _newer_revision(entity)}}))
    with KgliteStore(":memory:") as store:
        wikidata.load(store, [samples / f"{QID}.json"], Selection.of(["P39"]))
        before = catalog.facts_as_of(store, D(1970, 1, 1), subject=QID, predicate="P39")
        assert [r.object for r in before] == ["Q5449541"]  # no dates: valid at any time
        known_then = {r.id for r in catalog.timeline(store, QID, "P39")}
        with oxigraph(tmp_path / "db") as base:
            post_ntriples(base, wikidata_rdf.ntriples(wikidata_rdf.files_graph([newer])))
            client = SparqlClient(endpoint=f"{base}/query", cache_dir=tmp_path / "cache", refresh=True)
            summary = refresh(store, [QID], ["P39"], client=client, today=TODAY)
            assert summary.new_revisions == {QID: entity["lastrevid"] + 1} and summary.requests > 0
            assert [(c.change, c.object) for c in summary.changes] == [("added", "Q1234567"),
                                                                        ("retracted", "Q5449541")]
            assert (summary.added, summary.retracted) == (1, 1)
            # What the store knew the day before the refresh is unchanged; from the refresh on, the new answer.
            day = D(2025, 6, 1)
            old = catalog.facts_as_of(store, day, subject=QID, predicate="P39", known_at=TODAY - dt.timedelta(1))
            new = catalog.facts_as_of(store, day, subject=QID, predicate="P39")
            assert [r.object for r in old] == ["Q5449541"]
            assert [r.object for r in new] == ["Q1234567"] and new[0].known_from == TODAY
            timeline = {r.object: r for r in catalog.timeline(store, QID, "P39", include_retracted=True)}
            assert timeline["Q5449541"].known_to == TODAY and timeline["Q6866144"].known_to is None
            assert known_then <= {r.id for r in catalog.timeline(store, QID, "P39", include_retracted=True)}
            again = refresh(store, [QID], ["P39"], client=SparqlClient(endpoint=f"{base}/query", refresh=True),
                            today=TODAY + dt.timedelta(1))
        assert again.unchanged == [QID] and again.changes == [] and again.new_revisions == {}


def test_refresh_skips_an_endpoint_that_lags_behind_the_store(shared_data: Path, tmp_path: Path) -> None:
    samples = shared_data / "wikidata-entities"
    newer = tmp_path / "newer"
    newer.mkdir()
    (newer / f"{QID}.json").write_text(json.dumps({"entities": {QID: _newer_revision(_entity(samples))}}))
    with KgliteStore(":memory:") as store:
        wikidata.load(store, [newer / f"{QID}.json"], Selection.of(["P39"]))
        with oxigraph(tmp_path / "db") as base:
            post_ntriples(base, wikidata_rdf.ntriples(wikidata_rdf.files_graph([samples / f"{QID}.json"])))
            summary = refresh(store, [QID, "Q999999999"], ["P39"], client=SparqlClient(endpoint=f"{base}/query"),
                              today=TODAY)
    assert summary.stale == {QID: _entity(samples)["lastrevid"]} and summary.changes == []
    assert summary.missing == ["Q999999999"]


def test_targets_are_the_wikidata_items_and_properties_of_answer_keys() -> None:
    def q(params: dict[str, Any], evidence: list[dict[str, Any]]) -> Question:
        key = AnswerKey(query="facts-during", params=params, evidence=evidence, evidence_hash="h")
        return Question(id="x", family="f", variant="v", input="i", target="t", answer_key=key, snapshot="s")

    questions = [q({"subject": "Q42", "predicate": "P69"}, [{"object": "Q691283"}]),
                 q({"subject": "C0011849", "predicate": "may_treat"}, []),
                 q({"subject": "Q42", "predicate": "P108"}, [])]
    assert targets(questions) == (["Q42", "Q691283"], ["P69", "P108"])
