"""TempoMed-Bench ingest on the real MCQ sample (../shared/data/tempomed-bench) and self-authored fixtures."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from chronokg.errors import InputError
from chronokg.graph.counts import graph_counts
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import stable_id
from chronokg.ingest import tempomed
from chronokg.queries import catalog

FIXTURES = Path(__file__).parent / "fixtures" / "tempomed"


def mcq_file(shared_data: Path) -> Path:
    (path,) = (shared_data / "tempomed-bench").glob("*.jsonl")
    return path


def raw_records(path: Path) -> list[dict[str, Any]]:
    """The records, read independently of the loader (upstream splits on blank lines)."""
    return [json.loads(block) for block in re.split(r"\n\s*\n", path.read_text()) if block.strip()]


@pytest.fixture(scope="module")
def loaded(shared_data: Path) -> tuple[KgliteStore, list[dict[str, Any]]]:
    store = KgliteStore(":memory:")
    path = mcq_file(shared_data)
    tempomed.load(store, [path])
    return store, raw_records(path)


def decision_of(rec: dict[str, Any]) -> str:
    a = rec["Answer"]
    digest = stable_id(rec["Question"], a["Choice_A"], a["Choice_B"])[:8]
    return f"tm-{rec['PMID_current']}-{rec['PMID_prior']}-{digest}"


def test_counts_match_the_file(loaded: tuple[KgliteStore, list[dict[str, Any]]]) -> None:
    store, records = loaded
    counts = graph_counts(store)
    pmids = {r["PMID_current"] for r in records} | {r["PMID_prior"] for r in records}
    pairs = {(r["PMID_current"], r["PMID_prior"]) for r in records}
    assert len(records) == 559
    assert counts["ChangePair"] == len(records)  # one change pair per MCQ record
    assert counts["SourceQuestion"] == len(records)
    assert counts["Guideline"] == len(pmids)
    assert counts["SUPERSEDES"] == len(pairs)  # one supersession per distinct (current, prior) pair
    # A trajectory is a current guideline with its prior versions, as in TempoMed's trajectory files.
    assert counts["Trajectory"] == len({r["PMID_current"] for r in records})
    # Two recommendation facts per decision, one superseded_by fact per pair.
    assert counts["Fact"] == 2 * len(records) + len(pairs)


def test_recommended_on_for_every_record(loaded: tuple[KgliteStore, list[dict[str, Any]]]) -> None:
    store, records = loaded
    checked = 0
    for rec in records:
        yp, yc = rec["Year_prior"], rec["Year_current"]
        decision = decision_of(rec)
        prior_days = [dt.date(yp, 1, 1), dt.date(yc - 1, 12, 31)] if yp < yc else []
        current_days = [dt.date(yc, 1, 1), dt.date(yc, 12, 31), dt.date(2030, 6, 1)]
        expectations = [(d, rec["Answer"]["Choice_B"], rec["PMID_prior"]) for d in prior_days]
        expectations += [(d, rec["Answer"]["Choice_A"], rec["PMID_current"]) for d in current_days]
        expectations.append((dt.date(yp - 1, 12, 31), None, None))
        for day, text, guideline in expectations:
            # Any version's PMID selects the trajectory.
            for pmid in (rec["PMID_current"], rec["PMID_prior"]):
                rows = [r for r in catalog.recommended_on(store, day, guideline=pmid) if r.decision_id == decision]
                if text is None:
                    assert rows == [], (rec["idx"], day)
                else:
                    assert [(r.recommendation, r.guideline) for r in rows] == [(text.strip(), guideline)], (
                        rec["idx"], day)
                checked += 1
    assert checked >= len(records) * 8


def test_same_year_pairs_answer_with_the_update(loaded: tuple[KgliteStore, list[dict[str, Any]]]) -> None:
    store, records = loaded
    same_year = [r for r in records if r["Year_prior"] == r["Year_current"]]
    assert len(same_year) == 6
    for rec in same_year:
        decision = decision_of(rec)
        year = rec["Year_current"]
        (row,) = [r for r in catalog.recommended_on(store, dt.date(year, 6, 1), guideline=rec["PMID_prior"])
                  if r.decision_id == decision]
        assert row.guideline == rec["PMID_current"]
        history = catalog.timeline(store, decision)
        assert [h.value for h in history] == [rec["Answer"]["Choice_B"].strip(), rec["Answer"]["Choice_A"].strip()]
        versions = [v.pmid for v in catalog.trajectory(store, rec["PMID_current"]) if v.year == year]
        assert versions.index(rec["PMID_prior"]) < versions.index(rec["PMID_current"])


def test_organization_from_the_stem(loaded: tuple[KgliteStore, list[dict[str, Any]]]) -> None:
    store, records = loaded
    rec = next(r for r in records if "American Association of Physicists in Medicine guideline issued in 2023"
               in r["Question"])
    rows = catalog.recommended_on(store, dt.date(2024, 1, 1), organization="Physicists in Medicine")
    assert decision_of(rec) in {r.decision_id for r in rows}
    assert all(r.organization == "American Association of Physicists in Medicine" for r in rows
               if r.guideline == rec["PMID_current"])


def corruptions(text: str) -> dict[str, tuple[str, str]]:
    """Broken copies of the real file and the words the error must contain."""
    blocks = text.split("\n\n\n")
    year_as_text = blocks[:]
    year_as_text[40] = year_as_text[40].replace('"Year_prior": ', '"Year_prior": "', 1).replace(
        ',\n  "Question"', '",\n  "Question"', 1)
    prior_newer = blocks[:]
    prior_newer[41] = re.sub(r'"Year_prior": \d+', '"Year_prior": 2099', prior_newer[41])
    missing = blocks[:]
    missing[42] = re.sub(r'\s*"PMID_prior": "\d+",', "", missing[42])
    bad_correct = blocks[:]
    bad_correct[43] = bad_correct[43].replace('"Correct": "A"', '"Correct": "F"', 1)
    return {
        "truncated": (text[: len(text) // 2], "broken JSON"),
        "year_not_int": ("\n\n\n".join(year_as_text), "Year_prior"),
        "prior_newer": ("\n\n\n".join(prior_newer), "newer than current"),
        "missing_field": ("\n\n\n".join(missing), "PMID_prior"),
        "correct_not_a_choice": ("\n\n\n".join(bad_correct), "field 'Correct' must be one of the choice letters"),
    }


@pytest.mark.parametrize("kind", ["truncated", "year_not_int", "prior_newer", "missing_field", "correct_not_a_choice"])
def test_corrupted_copy_fails_and_changes_nothing(shared_data: Path, tmp_path: Path, kind: str) -> None:
    good = mcq_file(shared_data)
    text, words = corruptions(good.read_text())[kind]
    bad = tmp_path / "broken.jsonl"
    bad.write_text(text)
    with KgliteStore(tmp_path / "store.kgl") as store:
        tempomed.load(store, [FIXTURES])
        before = graph_counts(store)
        with pytest.raises(InputError) as info:
            tempomed.load(store, [bad])
        assert graph_counts(store) == before
    message = str(info.value)
    assert str(bad) in message and words in message and "record" in message
    with KgliteStore(tmp_path / "store.kgl") as reopened:  # nothing half-written reached the log either
        assert graph_counts(reopened) == before


def test_bad_record_in_a_later_file_rolls_back_the_whole_load(shared_data: Path, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(mcq_file(shared_data), folder / "a.jsonl")
    (folder / "b.jsonl").write_text('{"idx": 1, "PMID_current": "x1"}')
    store = KgliteStore(":memory:")
    with pytest.raises(InputError, match=r"b\.jsonl.*PMID_current"):
        tempomed.load(store, [folder])
    assert graph_counts(store) == {}


def test_trajectory_and_difference_files() -> None:
    store = KgliteStore(":memory:")
    summary = tempomed.load(store, [FIXTURES])
    assert summary.records == 3  # one trajectory + two differences
    chain = catalog.trajectory(store, "90000001")
    assert [(v.pmid, v.year) for v in chain] == [("90000001", 2012), ("90000002", 2016), ("90000003", 2021)]
    assert chain[-1].organizations == ["Society of Fictional Medicine"]
    rows = catalog.recommended_on(store, dt.date(2018, 1, 1), topic="fever")
    assert sorted(r.recommendation for r in rows) == ["Offer drug A first.", "Treat from 38.0 °C."]
    rows = catalog.recommended_on(store, dt.date(2022, 1, 1), organization="fictional medicine")
    assert sorted(r.recommendation for r in rows) == ["Offer drug B first.", "Treat from 38.5 °C."]
    pairs = catalog.change_pairs(store, "90000003")
    assert {p.summary for p in pairs} == {"First-line drug changed from A to B.", "Threshold raised by half a degree."}


def test_difference_file_needs_known_years(tmp_path: Path) -> None:
    diff = tmp_path / "90000003_90000002_extracted_diffs.json"
    shutil.copy(FIXTURES / diff.name, diff)
    with pytest.raises(InputError, match="no year known"):
        tempomed.load(KgliteStore(":memory:"), [diff])
    # Years already in the store (from an earlier load) are enough.
    store = KgliteStore(":memory:")
    tempomed.load(store, [FIXTURES / "trajectory_90000003.json"])
    assert tempomed.load(store, [diff]).records == 2


def test_organization_parser_on_stem_shapes() -> None:
    parse = tempomed.organization_from_question
    assert parse("According to the European Alliance of Associations for Rheumatology (EULAR) "
                 "recommendations issued in 2023, which is best?", 2023) == (
        "European Alliance of Associations for Rheumatology (EULAR)")
    assert parse("According to the 2023 Korean Diabetes Association guideline, which?", 2023) == (
        "Korean Diabetes Association")
    assert parse("According to the X guideline issued in 2019, which?", 2023) is None


@pytest.mark.parametrize(("category", "stored"), [("Pharma", None), ("noncomm", "Non-commercial"), ("Other", "Other")])
def test_trajectory_category_is_one_of_the_seeds_three(tmp_path: Path, category: str, stored: str | None) -> None:
    data = json.loads((FIXTURES / "trajectory_90000003.json").read_text())
    first = data[0] if isinstance(data, list) else data
    first["category"] = category
    bad = tmp_path / "trajectory.json"
    bad.write_text(json.dumps(data))
    store = KgliteStore(":memory:")
    if stored is None:
        with pytest.raises(InputError) as info:
            tempomed.load(store, [bad])
        assert str(info.value).startswith(f"{bad}, record 1") and "unknown category 'Pharma'" in str(info.value)
        assert graph_counts(store) == {}
    else:
        tempomed.load(store, [bad])
        assert store.run("MATCH (t:Trajectory {current_pmid: '90000003'}) RETURN t.category AS c") == [{"c": stored}]
