"""Chest-X-ray timelines: synthetic cohorts checked against their ground truth, and a self-authored fixture.

MIMIC-Ext-CXR-QBA and MI-CXR are credentialed, so nothing real is used here:
cohorts come from `cxr_synth` (whose manifest is the expected answer) and
tests/fixtures/cxr is self-authored in the released schema.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import statistics
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.errors import InputError
from chronokg.graph.counts import graph_counts
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import cxr, cxr_synth
from chronokg.queries import catalog

FIXTURE = Path(__file__).parent / "fixtures" / "cxr"
BASE = dt.date(2000, 1, 1)  # the documented synthetic anchor of every patient's first study
PRESENT, SEVERITY = "finding_present", "finding_severity"
DAY = dt.timedelta(days=1)


def subject(patient: str, finding: str, side: str | None) -> str:
    return f"{patient}:{finding}" if side is None else f"{patient}:{finding}:{side}"


def visit_dates(p: cxr_synth.PatientTruth) -> list[dt.date]:
    return [BASE + dt.timedelta(days=int(s.days_since_first // 1)) for s in p.studies]


def shape(present: list[bool], grades: list[str | None]) -> str:
    """The pattern a presence/severity course shows, derived independently of the generator."""
    order = ["mild", "moderate", "severe"]
    runs = [present[0]] + [b for a, b in pairwise(present) if a != b]
    if all(present):
        levels = [order.index(g) for g in grades if g is not None]
        if levels == sorted(levels) and levels[0] < levels[-1]:
            return "worsening"
        if levels == sorted(levels, reverse=True) and levels[0] > levels[-1]:
            return "improvement"
        return "persistent" if len(set(levels)) == 1 else "irregular"
    return {
        (False, True): "emergence", (True, False): "resolution", (False, True, False): "emergence_resolution",
        (True, False, True): "resolution_emergence",
    }.get(tuple(runs), "irregular")


@pytest.fixture(scope="module")
def cohort_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, cxr_synth.Cohort]:
    out = tmp_path_factory.mktemp("cohort")
    cohort = cxr_synth.generate(out, patients=20, visits=5, seed=7)
    return out, cohort


@pytest.fixture(scope="module")
def loaded(cohort_dir: tuple[Path, cxr_synth.Cohort]) -> Iterator[tuple[KgliteStore, cxr_synth.Cohort]]:
    out, cohort = cohort_dir
    with KgliteStore(":memory:") as store:
        summary = cxr.load(store, [out])
        assert summary.patients == 20 and summary.studies == 100
        yield store, cohort


# --- the synthetic cohort against its manifest ----------------------------------------------


def test_manifest_covers_every_pattern_and_reads_back(cohort_dir: tuple[Path, cxr_synth.Cohort]) -> None:
    out, cohort = cohort_dir
    assert set(cohort.pattern_counts()) == set(cxr_synth.PATTERNS)
    assert min(cohort.pattern_counts().values()) >= 8  # 60 finding slots dealt over 7 patterns
    assert cxr_synth.read_truth(out / cxr_synth.TRUTH_FILE) == cohort
    for p in cohort.patients:
        for f in p.findings:
            assert shape(f.present, f.severity) == f.pattern, (p.patient_id, f)


def test_counts_match_the_manifest(loaded: tuple[KgliteStore, cxr_synth.Cohort]) -> None:
    store, cohort = loaded
    counts = graph_counts(store)
    studies = sum(len(p.studies) for p in cohort.patients)
    findings = sum(len(p.findings) for p in cohort.patients)
    present = sum(sum(f.present) for p in cohort.patients for f in p.findings)
    assert counts["Patient"] == len(cohort.patients)
    assert counts["Study"] == counts["HAS_STUDY"] == studies
    assert counts["NEXT"] == studies - len(cohort.patients)
    # One observation per tracked finding per study, plus the finding-free technique observation.
    assert counts["Observation"] == counts["HAS_OBSERVATION"] == studies * (cohort.findings_per_patient + 1)
    # A presence fact per finding per study; a severity fact wherever the finding is present.
    assert counts["Fact"] == findings * cohort.visits + present
    assert counts["Entity"] == findings
    assert counts["SourceQuestion"] == len(cohort.questions) == 2 * findings
    assert counts["ABOUT_STUDY"] == len(cohort.questions) * cohort.visits


def test_next_chain_follows_study_order(loaded: tuple[KgliteStore, cxr_synth.Cohort]) -> None:
    store, cohort = loaded
    rows = store.run(
        "MATCH (p:Patient)-[:HAS_STUDY]->(s:Study) WHERE NOT EXISTS { MATCH (:Study)-[:NEXT]->(s) } "
        "MATCH path = (s)-[:NEXT*0..32]->(t:Study) WHERE NOT EXISTS { MATCH (t)-[:NEXT]->(:Study) } "
        "RETURN p.id AS patient, length(path) AS hops, [n IN nodes(path) | n.id] AS ids, "
        "[n IN nodes(path) | n.study_date] AS dates"
    )
    chains = {r["patient"]: r for r in rows}
    assert len(rows) == len(cohort.patients)
    for p in cohort.patients:
        chain = chains[p.patient_id]
        assert chain["hops"] == cohort.visits - 1
        assert chain["ids"] == [s.study_id for s in sorted(p.studies, key=lambda s: s.study_index)]
        assert chain["dates"] == visit_dates(p)
        # Random study ids: the order is the study order, not the id order (as in MIMIC).
    assert any(r["ids"] != sorted(r["ids"]) for r in rows)


def test_facts_as_of_each_visit_follow_the_pattern(loaded: tuple[KgliteStore, cxr_synth.Cohort]) -> None:
    store, cohort = loaded
    checked: dict[str, int] = {}
    for p in cohort.patients:
        dates = visit_dates(p)
        for f in p.findings:
            subj = subject(p.patient_id, f.finding, f.laterality)
            assert catalog.facts_as_of(store, dates[0] - DAY, subject=subj) == []
            seen, grades = [], []
            for k, day in enumerate(dates):
                rows = catalog.facts_as_of(store, day, subject=subj, predicate=PRESENT)
                assert len(rows) == 1, (subj, day)
                seen.append(rows[0].value)
                sev = catalog.facts_as_of(store, day, subject=subj, predicate=SEVERITY)
                grades.append(sev[0].value if sev else None)
                # Still the same answer the day before the next visit (inside the interval).
                last_day = (dates[k + 1] if k + 1 < len(dates) else day + dt.timedelta(days=3650)) - DAY
                later = catalog.facts_as_of(store, max(day, last_day), subject=subj, predicate=PRESENT)
                assert [r.value for r in later] == [f.present[k]]
            assert seen == f.present and grades == f.severity, subj
            assert shape([bool(v) for v in seen], [str(g) if g else None for g in grades]) == f.pattern
            checked[f.pattern] = checked.get(f.pattern, 0) + 1
    assert set(checked) == set(cxr_synth.PATTERNS)


def test_timeline_lists_visits_in_order(loaded: tuple[KgliteStore, cxr_synth.Cohort]) -> None:
    store, cohort = loaded
    for p in cohort.patients[:6]:
        dates = visit_dates(p)
        for f in p.findings:
            rows = catalog.timeline(store, subject(p.patient_id, f.finding, f.laterality), PRESENT)
            assert [r.valid_from for r in rows] == dates
            assert [r.valid_to for r in rows] == [*dates[1:], None]
            assert [r.value for r in rows] == f.present
            assert {r.precision for r in rows} == {"day"}


def test_changed_between_consecutive_visits(loaded: tuple[KgliteStore, cxr_synth.Cohort]) -> None:
    store, cohort = loaded
    for p in cohort.patients[:8]:
        dates = visit_dates(p)
        for k in range(len(dates) - 1):
            changed = {r.subject for r in catalog.changed_between(store, dates[k], dates[k + 1], predicate=PRESENT)
                       if r.subject.startswith(p.patient_id + ":")}
            expected = {subject(p.patient_id, f.finding, f.laterality) for f in p.findings
                        if f.present[k] != f.present[k + 1]}
            assert changed == expected, (p.patient_id, k)


def test_observations_carry_the_scene_graph_tags(loaded: tuple[KgliteStore, cxr_synth.Cohort]) -> None:
    store, cohort = loaded
    p = cohort.patients[0]
    f = next(x for x in p.findings if x.pattern == "emergence") if any(
        x.pattern == "emergence" for x in p.findings) else p.findings[0]
    rows = store.run(
        "MATCH (s:Study)-[:HAS_OBSERVATION]->(o:Observation)-[:OBSERVES]->(e:Entity {id: $subject}) "
        "RETURN s.study_index AS k, o.positiveness AS pos, o.change_type AS change, o.severity AS severity, "
        "o.entities AS entities, o.laterality AS side, o.quality AS quality ORDER BY k",
        {"subject": subject(p.patient_id, f.finding, f.laterality)})
    assert [r["pos"] == "pos" for r in rows] == f.present
    assert [r["severity"] for r in rows] == f.severity
    assert all(r["entities"] == [f.finding] and r["side"] == f.laterality for r in rows)
    assert json.loads(rows[0]["quality"])["region_quality"] == 4
    flips = [r["change"] for r in rows[1:]]
    for k, change in enumerate(flips, start=1):
        if f.present[k] and not f.present[k - 1]:
            assert change == "new"
        if f.present[k - 1] and not f.present[k]:
            assert change == "resolved"


def test_reload_changes_nothing(loaded: tuple[KgliteStore, cxr_synth.Cohort],
                                cohort_dir: tuple[Path, cxr_synth.Cohort]) -> None:
    store, _ = loaded
    before = graph_counts(store)
    summary = cxr.load(store, [cohort_dir[0]])
    assert summary.unchanged and graph_counts(store) == before


# --- questions ----------------------------------------------------------------------------


def test_questions_attach_to_their_studies_in_order(loaded: tuple[KgliteStore, cxr_synth.Cohort]) -> None:
    store, cohort = loaded
    studies = {p.patient_id: [s.study_id for s in p.studies] for p in cohort.patients}
    rows = store.run(
        "MATCH (q:SourceQuestion {benchmark: 'mi-cxr'})-[e:ABOUT_STUDY]->(s:Study) "
        "MATCH (q)-[:ABOUT_PATIENT]->(p:Patient) "
        "RETURN q.record AS record, p.id AS patient, e.slots AS slots, s.id AS study, q.correct AS correct, "
        "q.group_type AS group_type"
    )
    by_q: dict[int, dict[str, Any]] = {}
    for r in rows:
        q = by_q.setdefault(r["record"], {"patient": r["patient"], "slots": {}})
        for slot in r["slots"]:
            q["slots"][slot] = r["study"]
    truth = {q.q_id: q for q in cohort.questions}
    assert set(by_q) == set(truth)
    for qid, q in by_q.items():
        assert q["patient"] == truth[qid].patient_id
        assert [q["slots"][f"T{k + 1}"] for k in range(cohort.visits)] == studies[q["patient"]]


def test_tel_answers_agree_with_the_graph(loaded: tuple[KgliteStore, cxr_synth.Cohort]) -> None:
    """The generator's emergence/resolution answers are the interval where the loaded facts flip."""
    store, cohort = loaded
    patients = {p.patient_id: p for p in cohort.patients}
    checked = 0
    for q in cohort.questions:
        if q.qtype not in {"single_emergence", "single_resolution"}:
            continue
        p = patients[q.patient_id]
        subj = subject(p.patient_id, q.finding, q.laterality)
        seq = [catalog.facts_as_of(store, d, subject=subj, predicate=PRESENT)[0].value for d in visit_dates(p)]
        want = (False, True) if q.qtype == "single_emergence" else (True, False)
        flips = [k for k in range(len(seq) - 1) if (seq[k], seq[k + 1]) == want]
        answer = q.choices["ABCDE".index(q.answer)]
        assert answer == (f"T{flips[0] + 1}→T{flips[0] + 2}" if flips else cxr_synth.NO_CHANGE), q
        checked += 1
    assert checked >= 10


def test_question_file_alone_attaches_to_stored_studies(tmp_path: Path) -> None:
    out = tmp_path / "c"
    cohort = cxr_synth.generate(out, patients=2, visits=5, seed=3)
    qfile = out / cxr_synth.QUESTIONS_FILE
    # Name T2 by image id only: the loader must find it among the stored studies' image ids.
    records = [json.loads(line) for line in qfile.read_text().splitlines()]
    for r in records:
        r["images"]["T2"] = Path(r["images"]["T2"]).stem
    alone = tmp_path / "questions.jsonl"
    alone.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    qfile.unlink()
    with KgliteStore(":memory:") as store:
        cxr.load(store, [out])
        summary = cxr.load(store, [alone])
        assert summary.questions == len(cohort.questions) and summary.unmatched_questions == 0
        rows = store.run("MATCH (q:SourceQuestion)-[e:ABOUT_STUDY]->(s:Study) WHERE 'T2' IN e.slots "
                         "RETURN q.record AS q, s.study_index AS k")
        assert len(rows) == len(cohort.questions) and {r["k"] for r in rows} == {1}


def test_unmatched_question_images(tmp_path: Path) -> None:
    out = tmp_path / "c"
    cxr_synth.generate(out, patients=2, visits=5, seed=5)
    qfile = out / cxr_synth.QUESTIONS_FILE
    records = [json.loads(line) for line in qfile.read_text().splitlines()]
    records[3]["images"]["T4"] = "files/p19/p19999999/s59999999/ffff.jpg"
    qfile.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    with KgliteStore(":memory:") as store:
        with pytest.raises(InputError) as err:
            cxr.load(store, [out])
        assert str(qfile) in str(err.value) and "q_id 3" in str(err.value) and "T4" in str(err.value)
        assert graph_counts(store) == {}
        summary = cxr.load(store, [out], allow_unmatched=True)
        assert summary.unmatched_questions == 1 and summary.questions == len(records)
        slots = store.run("MATCH (q:SourceQuestion {record: 3})-[e:ABOUT_STUDY]->() RETURN e.slots AS slots")
        assert sorted(s for r in slots for s in r["slots"]) == ["T1", "T2", "T3", "T5"]


@pytest.mark.parametrize(("change", "message"), [
    ({"answer": "F"}, "answer 'F'"),
    ({"group_type": "XYZ"}, "group_type"),
    ({"qtype": "interval_worsening"}, "qtype 'interval_worsening' is not one of MI-CXR's question types"),
    ({"qtype": "icr_multi_abn", "group_type": "GTS"}, "qtype 'icr_multi_abn' is an ICR question, but group_type"),
    ({"images": {"T1": "s{late}", "T2": "s{early}"}}, "time order"),
])
def test_bad_questions_name_file_and_qid(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    out = tmp_path / "c"
    cohort = cxr_synth.generate(out, patients=1, visits=5, seed=9)
    qfile = out / cxr_synth.QUESTIONS_FILE
    records = [json.loads(line) for line in qfile.read_text().splitlines()]
    ids = [s.study_id[1:] for s in cohort.patients[0].studies]
    change = json.loads(json.dumps(change).replace("{late}", ids[3]).replace("{early}", ids[1]))
    records[1].update(change)
    qfile.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    with KgliteStore(":memory:") as store:
        with pytest.raises(InputError) as err:
            cxr.load(store, [out])
        assert str(qfile) in str(err.value) and "q_id 1" in str(err.value) and message in str(err.value)
        assert graph_counts(store) == {}


# --- bad scene graphs ---------------------------------------------------------------------


class Recorder:
    """A progress sink that counts what the writer reports."""

    def __init__(self) -> None:
        self.items = 0

    def start(self, total: int, description: str) -> None:
        pass

    def advance(self, n: int) -> None:
        self.items += n


def _break_missing_patient(path: Path) -> None:
    data = json.loads(path.read_text())
    del data["patient_id"]
    path.write_text(json.dumps(data))


def _break_json(path: Path) -> None:
    path.write_text(path.read_text().replace('"observations":', '"observations" ', 1))


def _truncate(path: Path) -> None:
    text = path.read_text()
    path.write_text(text[: len(text) // 2])


def _no_time(path: Path) -> None:
    meta = path.with_name(path.name.replace(".scene_graph.json", ".metadata.json"))
    data = json.loads(meta.read_text())
    data["timestamp_since_first"] = None
    meta.write_text(json.dumps(data))


def _other_patient_meta(path: Path) -> None:
    meta = path.with_name(path.name.replace(".scene_graph.json", ".metadata.json"))
    data = json.loads(meta.read_text())
    data["patient_id"] = "p10000001"
    meta.write_text(json.dumps(data))


def _set_first_observation(path: Path, key: str, value: str) -> None:
    data = json.loads(path.read_text())
    obs = data["observations"]
    first = next(iter(obs.values())) if isinstance(obs, dict) else obs[0]
    first[key] = value
    path.write_text(json.dumps(data))


def _unknown_positiveness(path: Path) -> None:
    _set_first_observation(path, "positiveness", "maybe")


def _unknown_laterality(path: Path) -> None:
    _set_first_observation(path, "laterality", "lft")


@pytest.mark.parametrize(("breaker", "message"), [
    (_break_missing_patient, "patient_id"),
    (_unknown_positiveness, "unknown positiveness 'maybe'"),
    (_unknown_laterality, "unknown laterality 'lft'"),
    (_other_patient_meta, "gives patient_id p10000001"),
    (_break_json, "broken JSON"),
    (_truncate, "broken JSON"),
    (_no_time, "timestamp_since_first"),
])
def test_malformed_scene_graph_leaves_store_unchanged(tmp_path: Path, file_store: KgliteStore, breaker: Any,
                                                      message: str) -> None:
    cxr.load(file_store, [FIXTURE])  # something already in the store
    before = graph_counts(file_store)
    out = tmp_path / "c"
    cohort = cxr_synth.generate(out, patients=4, visits=5, seed=2)
    # Break the last patient's last study: with 5 studies per chunk, three patients are written first.
    last = max(cohort.patients, key=lambda p: p.patient_id)
    bad = next(out.rglob(f"{last.studies[-1].study_id}.scene_graph.json"))
    breaker(bad)
    written = Recorder()
    with pytest.raises(InputError) as err:
        cxr.load(file_store, [out], chunk_studies=5, progress=written)
    assert str(bad) in str(err.value) and message in str(err.value)
    assert written.items > 0  # earlier patients were written inside the transaction, then rolled back
    assert graph_counts(file_store) == before


def test_chunked_load_matches_one_step(loaded: tuple[KgliteStore, cxr_synth.Cohort],
                                       cohort_dir: tuple[Path, cxr_synth.Cohort]) -> None:
    one_step, _ = loaded
    query = ("MATCH (f:Fact) RETURN f.id AS id, f.subject_id AS s, f.value AS v, f.valid_from AS a, "
             "f.valid_to AS b ORDER BY id")
    with KgliteStore(":memory:") as chunked:
        cxr.load(chunked, [cohort_dir[0]], chunk_studies=7)  # a patient folder per step, or two
        assert graph_counts(chunked) == graph_counts(one_step)
        assert chunked.run(query) == one_step.run(query)


def test_patient_split_across_folders_is_rejected(tmp_path: Path) -> None:
    out = tmp_path / "c"
    cohort = cxr_synth.generate(out, patients=2, visits=5, seed=6)
    study = cohort.patients[0].studies[2].study_id
    stray = tmp_path / "c" / "elsewhere"
    stray.mkdir()
    for f in (out / "scene_data").rglob(f"{study}.*.json"):
        f.rename(stray / f.name)
    with KgliteStore(":memory:") as store, pytest.raises(InputError, match="keep a patient's studies in one folder"):
        cxr.load(store, [out], chunk_studies=1)


def test_partial_patient_reload_is_rejected(tmp_path: Path) -> None:
    out = tmp_path / "c"
    cohort = cxr_synth.generate(out, patients=2, visits=5, seed=4)
    with KgliteStore(":memory:") as store:
        cxr.load(store, [out])
        before = graph_counts(store)
        p = cohort.patients[0]
        subset = tmp_path / "subset" / p.patient_id
        subset.mkdir(parents=True)
        for s in p.studies[:3]:
            for f in (out / "scene_data").rglob(f"{s.study_id}.*.json"):
                shutil.copy(f, subset / f.name)
        with pytest.raises(InputError, match="load all of a patient's studies together"):
            cxr.load(store, [subset])
        assert graph_counts(store) == before


# --- generator properties -----------------------------------------------------------------


@pytest.mark.parametrize("dist", list(cxr_synth.GapDistribution))
def test_visit_gaps_are_heavy_tailed(dist: cxr_synth.GapDistribution) -> None:
    cohort = cxr_synth.plan(2000, visits=5, seed=11, gaps=dist, median_gap_days=30)
    gaps = cohort.gaps()
    median = statistics.median(gaps)
    assert len(gaps) == 8000 and min(gaps) >= 1
    assert 20 <= median <= 45
    assert max(gaps) > 20 * median
    # An exponential with this median puts 0.1% beyond ten medians; these put over 1% there.
    assert sum(g > 10 * median for g in gaps) / len(gaps) > 0.01


def test_generation_is_deterministic(tmp_path: Path) -> None:
    a = cxr_synth.generate(tmp_path / "a", patients=3, visits=5, seed=42)
    b = cxr_synth.generate(tmp_path / "b", patients=3, visits=5, seed=42)
    assert a == b and a != cxr_synth.plan(3, visits=5, seed=43)
    files_a = {p.relative_to(tmp_path / "a"): p.read_bytes() for p in (tmp_path / "a").rglob("*") if p.is_file()}
    files_b = {p.relative_to(tmp_path / "b"): p.read_bytes() for p in (tmp_path / "b").rglob("*") if p.is_file()}
    assert files_a == files_b and len(files_a) == 3 * 5 * 2 + 3


def test_double_event_patterns() -> None:
    every = cxr_synth.PATTERNS + cxr_synth.DOUBLE_EVENT_PATTERNS
    cohort = cxr_synth.plan(40, visits=5, seed=3, findings=3, patterns=every)
    for p in cohort.patients:
        for f in p.findings:
            x = f.present
            ups = sum(not a and b for a, b in pairwise(x))
            downs = sum(a and not b for a, b in pairwise(x))
            if f.pattern == "relapsing":
                assert (x[0], ups, downs) == (False, 2, 1)
            elif f.pattern == "remitting":
                assert (x[0], ups, downs) == (True, 1, 2)
    assert set(cohort.pattern_counts()) == set(every)
    assert cxr_synth.plan(5, seed=3).patterns == list(cxr_synth.PATTERNS)  # opt-in only
    with pytest.raises(ValueError, match="unknown pattern"):
        cxr_synth.plan(5, patterns=("relapsed",))


def test_other_visit_counts(tmp_path: Path) -> None:
    cohort = cxr_synth.generate(tmp_path, patients=7, visits=8, seed=1, findings=1)
    assert cohort.questions == []  # MI-CXR questions are defined over five visits
    with KgliteStore(":memory:") as store:
        summary = cxr.load(store, [tmp_path])
        assert summary.studies == 56 and graph_counts(store)["NEXT"] == 7 * 7
        for p in cohort.patients:
            f = p.findings[0]
            values = [catalog.facts_as_of(store, d, subject=subject(p.patient_id, f.finding, f.laterality),
                                          predicate=PRESENT)[0].value for d in visit_dates(p)]
            assert values == f.present and shape(f.present, f.severity) == f.pattern


# --- the self-authored fixture in the released layout ---------------------------------------


def test_fixture_formats(store: KgliteStore) -> None:
    summary = cxr.load(store, [FIXTURE])
    assert (summary.patients, summary.studies, summary.observations, summary.questions) == (1, 3, 9, 1)
    rows = store.run("MATCH (s:Study) RETURN s.id AS id, s.study_index AS k, s.study_date AS day, "
                     "s.days_since_first AS days, s.days_since_prev AS prev, s.procedure AS procedure ORDER BY k")
    assert [r["id"] for r in rows] == ["s50000003", "s50000001", "s50000002"]  # time order, not id order
    assert [r["day"] for r in rows] == [dt.date(2000, 1, 1), dt.date(2000, 1, 13), dt.date(2000, 2, 10)]
    assert rows[1]["days"] == pytest.approx(12 + 6.5 / 24) and rows[2]["prev"] == pytest.approx(27 + 19.5 / 24)
    assert rows[2]["procedure"] == "CHEST (PA AND LAT)"  # from study_metadata.csv
    effusion = catalog.timeline(store, "p10000001:pleural effusion:left")
    present = [(r.value, r.valid_from, r.valid_to) for r in effusion if r.predicate == PRESENT]
    assert present == [(True, dt.date(2000, 1, 1), dt.date(2000, 1, 13)),
                       (True, dt.date(2000, 1, 13), dt.date(2000, 2, 10)),
                       (False, dt.date(2000, 2, 10), None)]
    assert [r.value for r in effusion if r.predicate == SEVERITY] == ["small", "moderate"]
    # "unspecified" laterality gives no suffix; a missing positiveness falls back to the probability.
    assert [r.value for r in catalog.timeline(store, "p10000001:pneumothorax")] == [False]
    # Positive if any observation of the study says so ("unchanged" beside "no new").
    pneumonia = catalog.timeline(store, "p10000001:pneumonia:right", PRESENT)
    assert [r.value for r in pneumonia] == [True, True]
    assert store.run("MATCH (f:Fact {id: $id})-[:FROM_OBSERVATION]->(o:Observation) RETURN o.obs_id AS o",
                     {"id": pneumonia[1].id}) == [{"o": "O02"}]
    assert [r.value for r in catalog.timeline(store, "p10000001:consolidation:right")] == [False]
    # The finding-free observation is a node but no fact.
    assert store.run("MATCH (o:Observation {id: 's50000003:O03'}) OPTIONAL MATCH (o)-[:OBSERVES]->(e) "
                     "RETURN o.caption AS c, count(e) AS n") == [{"c": "normal heart size", "n": 0}]
    q = store.run("MATCH (q:SourceQuestion)-[e:ABOUT_STUDY]->(s:Study) RETURN q.record AS r, q.correct AS c, "
                  "q.choices AS choices, e.slots AS slots, s.id AS study ORDER BY study")
    assert {r["study"]: r["slots"] for r in q} == {"s50000001": ["T2"], "s50000002": ["T3"], "s50000003": ["T1"]}
    assert q[0]["r"] == 7 and q[0]["c"] == "C" and len(q[0]["choices"]) == 5


def test_same_day_studies(tmp_path: Path, store: KgliteStore) -> None:
    """A second study on the same day leaves the first an empty interval: as-of answers from the later one."""
    data = tmp_path / "cxr"
    shutil.copytree(FIXTURE, data)
    sg = next(data.rglob("s50000001.scene_graph.json"))
    graph = json.loads(sg.read_text())
    graph["metadata"] = {"timestamp_since_first": "0 days 05:00:00"}
    sg.write_text(json.dumps(graph))
    cxr.load(store, [data])
    day = dt.date(2000, 1, 1)
    rows = catalog.facts_as_of(store, day, subject="p10000001:pleural effusion:left")
    assert sorted((r.predicate, r.value) for r in rows) == [(PRESENT, True), (SEVERITY, "moderate")]
    assert catalog.facts_as_of(store, day, subject="p10000001:pneumothorax") == []
    (empty,) = catalog.timeline(store, "p10000001:pneumothorax")
    assert empty.valid_from == empty.valid_to == day


@pytest.mark.parametrize(("text", "days"), [
    (3, 3.0), (2.5, 2.5), ("4", 4.0), ("0 days 00:00:00", 0.0), ("12 days 06:00:00", 12.25), ("1 day", 1.0),
    ("06:00:00", 0.25), ("P2DT12H", 2.5), ("P1W", 7.0), ("PT36H", 1.5), (None, None),
])
def test_time_offsets(text: Any, days: float | None) -> None:
    assert cxr.parse_days(text) == (None if days is None else pytest.approx(days))


@pytest.mark.parametrize("text", ["soon", "P", "3 weeks", "12:3"])
def test_bad_time_offsets(text: str) -> None:
    with pytest.raises(ValueError, match="not a time offset"):
        cxr.parse_days(text)


def test_image_references() -> None:
    path = "files/p14/p14993854/s52186348/8409b86d-bdf8d832-61e5876d-8ce614f1-26c7dec3.jpg"
    assert cxr.image_study(path) == ("s52186348", "p14993854", "8409b86d-bdf8d832-61e5876d-8ce614f1-26c7dec3")
    assert cxr.image_study("52186348")[0] == cxr.image_study("s52186348")[0] == "s52186348"
    assert cxr.image_study("abc-def.jpg") == (None, None, "abc-def")
    assert [cxr.change_type(c) for c in (["no new"], ["new"], ["has resolved"], ["increased"], ["decreased"],
                                         ["unchanged"], [], ["odd"])] == [
        "no_new", "new", "resolved", "worsened", "improved", "unchanged", None, "other"]


# --- the command line ---------------------------------------------------------------------


def test_cli_generate_and_ingest(tmp_path: Path) -> None:
    runner = CliRunner()
    uri = f"kglite://{tmp_path / 's.kgl'}"
    data = tmp_path / "data"
    result = runner.invoke(app, ["--store", uri, "generate", "cxr", "--patients", "4", "--visits", "5",
                                 "--seed", "8", "--out", str(data)])
    assert result.exit_code == 0, result.output
    cohort = cxr_synth.read_truth(data / cxr_synth.TRUTH_FILE)
    assert len(cohort.patients) == 4 and cohort.seed == 8
    result = runner.invoke(app, ["--store", uri, "ingest", "cxr", str(data)])
    assert result.exit_code == 0, result.output
    assert "4 patients, 20 studies" in " ".join(result.output.split())
    p, f = cohort.patients[0], cohort.patients[0].findings[0]
    result = runner.invoke(app, ["--store", uri, "query", "timeline", "--subject",
                                 subject(p.patient_id, f.finding, f.laterality), "--predicate", PRESENT,
                                 "--format", "json"])
    assert result.exit_code == 0, result.output
    assert [r["value"] for r in json.loads(result.output)] == f.present
    result = runner.invoke(app, ["--store", uri, "ingest", "cxr", str(data)])
    assert result.exit_code == 0 and "store unchanged" in " ".join(result.output.split())
    result = runner.invoke(app, ["--store", uri, "ingest", "cxr", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "no such file" in " ".join(result.output.split())
    result = runner.invoke(app, ["--store", uri, "generate", "cxr", "--out", str(data), "--gaps", "uniform"])
    assert result.exit_code == 2


def test_synthetic_questions_use_the_released_question_types(tmp_path: Path) -> None:
    """The synthetic cohort writes only MI-CXR's released `qtype`s, each under its own group, so it loads under
    the loader's vocabulary check (and every type it asks about is one the metrics' tables know)."""
    from chronokg.ingest.micxr_types import GROUP_OF, QType

    out = tmp_path / "c"
    cxr_synth.generate(out, patients=4, visits=5, seed=2, findings=5)
    records = [json.loads(line) for line in (out / cxr_synth.QUESTIONS_FILE).read_text().splitlines()]
    kinds = {(r["group_type"], r["qtype"]) for r in records}
    assert kinds == {(GROUP_OF[QType(t)], t) for _, t in kinds} and {g for g, _ in kinds} == {"TEL", "ICR", "GTS"}
    with KgliteStore(":memory:") as store:
        assert cxr.load(store, [out]).questions == len(records)
