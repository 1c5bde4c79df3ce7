"""History that reloads cannot rewrite: a new release date is a new release, conflicts name both records.

Every check compares what the store answers (or its content hash)
before and after; nothing here reads the writer's own report alone.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from chronokg.errors import InputError
from chronokg.graph.counts import content_digest, graph_counts
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import chroknow, qasets, tempomed, wikidata
from chronokg.queries import catalog

FIXTURES = Path(__file__).parent / "fixtures"
KNOWN_AT = (None, dt.date(2026, 6, 1), dt.date(2027, 1, 1), dt.date(2031, 1, 1))
VALID_AT = (dt.date(2005, 1, 1), dt.date(2015, 6, 1), dt.date(2020, 1, 1), dt.date(2025, 6, 1))


def mcq_file(shared_data: Path) -> Path:
    return next((shared_data / "tempomed-bench").glob("*.jsonl"))


def answers(store: KgliteStore) -> dict[tuple[Any, ...], list[str]]:
    """Every as-of answer over a grid of valid and known dates (ids of the facts answering)."""
    out = {}
    for valid in VALID_AT:
        for known in KNOWN_AT:
            out["as-of", valid, known] = sorted(r.id for r in catalog.facts_as_of(store, valid, known_at=known))
    return out


def records(path: Path) -> list[dict[str, Any]]:
    return [obj for _, _, obj in tempomed.read_json_blocks(path)]


def write_blocks(path: Path, objs: list[dict[str, Any]]) -> Path:
    path.write_text("\n\n".join(json.dumps(o, indent=2) for o in objs) + "\n", encoding="utf-8")
    return path


def test_another_release_date_adds_a_release_and_keeps_every_earlier_answer(shared_data: Path) -> None:
    store = KgliteStore(":memory:")
    first = tempomed.load(store, [mcq_file(shared_data)])
    facts = graph_counts(store)["Fact"]
    before = answers(store)
    assert before["as-of", dt.date(2020, 1, 1), dt.date(2027, 1, 1)], "the grid must test real answers"

    later = tempomed.load(store, [mcq_file(shared_data)], release_date=dt.date(2030, 1, 1))
    assert answers(store) == before  # --known-at 2027 still answers exactly as before
    assert later.report is not None and first.report is not None
    assert later.report.created["Source"] == 1 and later.report.created["Fact"] == 0
    assert later.report.updated["Fact"] == 0 and not later.report.events
    assert later.report.edges_created["ASSERTED_IN"] == facts  # the new release asserts every fact again
    sources = [r for r in catalog.stats(store) if r.kind == "source"]
    assert sorted(r.release_date for r in sources) == [tempomed.DEFAULT_RELEASE, dt.date(2030, 1, 1)]
    assert all(r.count == facts for r in sources)

    # An earlier release date: known earlier now; what the first release answered stays.
    earlier = tempomed.load(store, [mcq_file(shared_data)], release_date=dt.date(2025, 1, 1))
    assert earlier.report is not None and earlier.report.events == {"known_earlier": facts}
    after = answers(store)
    for key, ids in before.items():
        if key[2] is None or key[2] >= tempomed.DEFAULT_RELEASE:
            assert after[key] == ids, key
    assert catalog.facts_as_of(store, dt.date(2020, 1, 1), known_at=dt.date(2025, 6, 1))


def test_qa_reload_with_another_release_date(shared_data: Path) -> None:
    store = KgliteStore(":memory:")
    files = [next((shared_data / "selfaware").glob("*.json"))]
    qasets.load(store, files)
    gold = "MATCH (f:Fact {predicate: 'gold_answer'}) RETURN f.id AS id, f.known_from AS k ORDER BY id"
    before = store.run(gold)
    summary = qasets.load(store, files, release_date=dt.date(2030, 1, 1))
    assert store.run(gold) == before
    assert summary.report is not None and summary.report.created["Source"] == 1
    assert sum(summary.report.updated.values()) == 0


def _chroknow_row(tmp_path: Path, name: str, change: dict[str, Any]) -> Path:
    lines = (FIXTURES / "chroknow" / "general.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    row.update(change)
    out = tmp_path / name
    out.write_text(json.dumps(row) + "\n")
    return out


def test_a_changed_chroknow_release_date_never_moves_known_time_later(tmp_path: Path) -> None:
    store = KgliteStore(":memory:")
    chroknow.load(store, [_chroknow_row(tmp_path, "a.jsonl", {})])
    query = "MATCH (f:Fact {source_kind: 'chroknow'}) RETURN f.id AS id, f.known_from AS k ORDER BY id"
    before = store.run(query)
    later = chroknow.load(store, [_chroknow_row(tmp_path, "b.jsonl", {"release_date_2015": "2017-06-01"})])
    assert store.run(query) == before
    assert later.report is not None and later.report.created["Source"] == 1 and not later.report.events
    earlier = chroknow.load(store, [_chroknow_row(tmp_path, "c.jsonl", {"release_date_2015": "2015-01-05"})])
    moved = {r["id"]: r["k"] for r in store.run(query)}
    assert earlier.report is not None and earlier.report.events == {"known_earlier": 1}
    assert sorted(moved.values()).count(dt.date(2015, 1, 5)) == 1


def test_a_stored_pmid_with_another_year_is_refused_naming_both_records(shared_data: Path, tmp_path: Path) -> None:
    store = KgliteStore(":memory:")
    real = mcq_file(shared_data)
    tempomed.load(store, [real])
    digest = content_digest(store)
    objs = records(real)
    pmid, year = objs[0]["PMID_current"], objs[0]["Year_current"]
    changed = dict(objs[0], Year_current=year - 4, idx=99999)
    with pytest.raises(InputError) as info:
        tempomed.load(store, [write_blocks(tmp_path / "other.jsonl", [changed])])
    message = str(info.value)
    assert "other.jsonl, record 1 (idx 99999)" in message and f"Guideline {pmid!r}" in message
    assert f"year is {year - 4}" in message and f"{real.name}: record 1 (idx {objs[0]['idx']})" in message
    assert content_digest(store) == digest


def test_a_conflict_inside_one_file_names_both_records(shared_data: Path, tmp_path: Path) -> None:
    objs = records(mcq_file(shared_data))[:3]
    objs.append(dict(objs[0], Year_current=objs[0]["Year_current"] + 1, idx=7777))
    with pytest.raises(InputError) as info:
        tempomed.stage([write_blocks(tmp_path / "dup.jsonl", objs)])
    assert "dup.jsonl, record 4 (idx 7777)" in str(info.value)
    assert f"dup.jsonl: record 1 (idx {objs[0]['idx']})" in str(info.value)


def test_selfaware_duplicate_id_with_another_answer(tmp_path: Path) -> None:
    example = [
        {"question_id": 1, "question": "Who wrote Hamlet?", "answer": ["Shakespeare"], "answerable": True},
        {"question_id": 2, "question": "What is 2+2?", "answer": ["4"], "answerable": True},
        {"question_id": 1, "question": "Who wrote Hamlet?", "answer": ["Marlowe"], "answerable": True},
    ]
    path = tmp_path / "SelfAware.json"
    path.write_text(json.dumps({"example": example}))
    with pytest.raises(InputError, match=r"example 3 \(question_id 1\).*first given in SelfAware.json, record "
                                         r"example 1"):
        qasets.stage([path])
    example[2]["answer"] = ["Shakespeare"]  # an identical repeat is fine
    path.write_text(json.dumps({"example": example}))
    assert qasets.stage([path])[1] == 3


def test_chroknow_duplicate_row_with_other_objects(tmp_path: Path) -> None:
    lines = (FIXTURES / "chroknow" / "general.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    other = dict(row, objects_2023=[["Keir Starmer"]])
    path = tmp_path / "general.jsonl"
    path.write_text("\n".join([lines[0], lines[1], json.dumps(other)]) + "\n")
    with pytest.raises(InputError, match=r"general.jsonl, record 3 \(line 3\).*first given in general.jsonl, "
                                         r"record 1 \(line 1\)"):
        chroknow.stage([path])


def test_two_wikidata_files_with_one_revision_and_other_values(shared_data: Path, tmp_path: Path) -> None:
    original = shared_data / "wikidata-entities" / "Q646148.json"
    data = json.loads(original.read_text())
    data["labels"]["en"]["value"] = "Someone else"
    forged = tmp_path / "Q646148-forged.json"
    forged.write_text(json.dumps(data))
    store = KgliteStore(":memory:")
    wikidata.load(store, [original])
    digest = content_digest(store)
    with pytest.raises(InputError, match=r"Q646148-forged.json: Source 'wikidata:Q646148@\d+': "
                                         r".* in the store \(from .*Q646148.json\)"):
        wikidata.load(store, [forged])
    assert content_digest(store) == digest
    with pytest.raises(InputError, match=r"Q646148-forged.json.* in .*Q646148.json"):  # the same in one load
        wikidata.load(KgliteStore(":memory:"), [original, forged])
