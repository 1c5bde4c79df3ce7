"""TempoMed-Bench records that must not be stored: over-long text, one idx with two contents (in a file, or
against the store's question of the same release), each an error naming both records and writing nothing.

Cases from probes of the loaders, on records of the real MCQ sample (../shared/data).
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from chronokg.errors import InputError
from chronokg.graph.counts import content_digest
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import tempomed
from tests.test_tempomed import mcq_file, raw_records


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("\n\n\n".join(json.dumps(r, indent=4) for r in records))
    return path


@pytest.fixture
def records(shared_data: Path) -> list[dict[str, Any]]:
    return raw_records(mcq_file(shared_data))[:3]


def test_an_over_long_question_is_refused_naming_file_and_record(records: list[dict[str, Any]],
                                                                  tmp_path: Path) -> None:
    huge = copy.deepcopy(records)
    huge[1]["Question"] = "Which? " * 1_000_000  # 7 MB: the probe's 50 MB question, smaller
    huge[2]["Answer"]["Choice_D"] = "x" * (tempomed.MAX_TEXT + 1)
    store = KgliteStore(":memory:")
    with pytest.raises(InputError) as info:
        tempomed.load(store, [write(tmp_path / "q.jsonl", huge)])
    message = str(info.value)
    assert "q.jsonl, record 2 (idx" in message and f"record 2 (idx {records[1]['idx']})" in message
    assert "'Question' is 7,000,000 characters (at most 20,000 for this source)" in message and "\n" not in message
    assert len(message) < 400
    huge[1] = records[1]
    with pytest.raises(InputError, match=r"record 3 .*'Answer.Choice_D' is 20,001 characters"):
        tempomed.load(store, [write(tmp_path / "q.jsonl", huge)])
    assert content_digest(store) == content_digest(KgliteStore(":memory:"))


@pytest.mark.parametrize("field", ["Question", "Choice_A", "Choice_C", "Correct", "Explanation", "PMID_prior"])
def test_one_idx_twice_in_a_file_with_different_content_names_both(records: list[dict[str, Any]], tmp_path: Path,
                                                                    field: str) -> None:
    twin = copy.deepcopy(records[0])
    target = twin if field in {"Question", "PMID_prior"} else twin["Answer"]
    target[field] = "B" if field == "Correct" else ("12345" if field == "PMID_prior" else target[field] + " (edited)")
    path = write(tmp_path / "q.jsonl", [*records, twin])
    store = KgliteStore(":memory:")
    with pytest.raises(InputError) as info:
        tempomed.load(store, [path])
    message = str(info.value)
    idx = records[0]["idx"]
    assert f"q.jsonl, record 4 (idx {idx})" in message and f"also q.jsonl: record 1 (idx {idx})" in message
    shown = "choices" if field.startswith("Choice_") else field
    assert f"{shown} is " in message and "\n" not in message
    assert content_digest(store) == content_digest(KgliteStore(":memory:"))
    # The same record twice, unchanged, is no conflict (and one question)
    tempomed.load(store, [write(tmp_path / "same.jsonl", [*records, records[0]])])


@pytest.mark.parametrize("field", ["Question", "Choice_B", "Explanation", "PMID_current"])
def test_a_record_contradicting_the_stores_question_of_the_same_release_names_both(
        records: list[dict[str, Any]], tmp_path: Path, field: str) -> None:
    with KgliteStore(tmp_path / "s.kgl") as store:
        tempomed.load(store, [write(tmp_path / "first.jsonl", records)])
        before = content_digest(store)
        other = copy.deepcopy(records[1])
        target = other if field in {"Question", "PMID_current"} else other["Answer"]
        target[field] = "99999999" if field == "PMID_current" else target[field] + " (changed)"
        with pytest.raises(InputError) as info:
            tempomed.load(store, [write(tmp_path / "second.jsonl", [other])])
        message = str(info.value)
        idx = records[1]["idx"]
        assert f"second.jsonl, record 1 (idx {idx})" in message
        assert f"already in the store from first.jsonl: record 2 (idx {idx})" in message
        assert ("choices" if field == "Choice_B" else field) + " is " in message
        assert content_digest(store) == before
        if field not in {"Question", "PMID_current"}:
            return  # the same question text with other choices stays one question node: a conflict in any release
        # Another release may reuse the idx for another question: a new release, not a contradiction
        tempomed.load(store, [write(tmp_path / "second.jsonl", [other])], release_date=dt.date(2027, 1, 1))
        assert content_digest(store) != before
