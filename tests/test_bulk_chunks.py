"""A bulk load in bounded chunks (`bulk.CHUNK_FACTS`, `FactTable.slices`): the same store as one chunk, and a
conflict between chunks refused like one within a chunk."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chronokg.errors import InputError
from chronokg.graph import bulk, interval_index
from chronokg.graph.bulk import write_bulk
from chronokg.graph.counts import content_digest
from chronokg.graph.facts import FactTable
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import Source
from tests.helpers import spy_on_sidecar
from tests.test_bulk import SRC, facts, table_of

D = dt.date


def columnar(n: int, source: Source = SRC) -> FactTable:
    """`n` object facts staged by `add_many` (the day ordinals travel with them), some open, some undated."""
    table = FactTable()
    table.source(source)
    table.at("bulk.jsonl", 1)
    table.add_many([f"s{i % 23}" for i in range(n)], [f"p{i % 3}" for i in range(n)],
                   objects=[f"o{i % 17}" for i in range(n)],
                   valid_from=[D(1990 + i % 30, 1 + i % 12, 1) if i % 5 else None for i in range(n)],
                   valid_to=[D(2025, 1, 1) if i % 3 == 0 else None for i in range(n)],
                   known_from=source.release_date, source_id=source.id, source_kind=source.kind)
    return table


def load(path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> tuple[str, dict[str, Any], dict[str, int]]:
    """One load of the same input in chunks of `chunk` facts: the content digest, the sidecar's arrays, what
    the load reported created."""
    with monkeypatch.context() as m:
        m.setattr(bulk, "CHUNK_FACTS", chunk)
        published = spy_on_sidecar(m)
        with KgliteStore(path) as store:
            report = write_bulk(store, [columnar(500), table_of(facts(120, offset=40))])
            digest = content_digest(store)
    (cols,) = published
    assert cols is not None, "the load fell back to the Cypher build"
    return digest, cols, dict(report.created)


def test_a_load_in_many_chunks_equals_one_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one = load(tmp_path / "one.kgl", monkeypatch, 10_000)
    many = load(tmp_path / "many.kgl", monkeypatch, 37)  # 500 facts in 14 chunks, the 120 in 4
    assert one[0] == many[0]
    assert one[2] == many[2] and one[2]["Fact"] == 620
    assert sorted(one[1]) == sorted(many[1])
    for key, arr in one[1].items():
        assert arr.dtype == many[1][key].dtype and np.array_equal(arr, many[1][key]), key
    with KgliteStore(tmp_path / "many.kgl", read_only=True) as reader:  # and it is the Cypher build's
        expected = interval_index.build_columns(reader.raw())
    assert expected is not None and all(np.array_equal(v, many[1][k]) for k, v in expected.items())


def test_slices_stage_what_the_whole_table_stages() -> None:
    table = columnar(250)
    parts = list(table.slices(100))
    assert [len(p) for p in parts] == [100, 100, 50]
    assert [i for p in parts for i in p.ids] == table.ids
    assert [r for p in parts for r in p.rows()] == list(table.rows())
    whole = table.day_ordinals()
    assert whole is not None
    for key, arr in whole.items():
        got = [p.day_ordinals() for p in parts]
        assert np.array_equal(np.concatenate([g[key] for g in got if g is not None]), arr), key
    named = {e for p in parts for e in p.entities}
    assert named == set(table.entities)


def test_a_conflict_split_across_two_chunks_names_both_records(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk, "CHUNK_FACTS", 25)
    items = facts(60)
    clash = table_of(facts(40, offset=300), first=1)
    clash.at("other.jsonl", 9)
    stored = items[3]  # attrs {"rank": "normal"}: a strict property
    clash.add_fact(stored.model_copy(update={"attrs": {"rank": "deprecated"}}))
    with KgliteStore(tmp_path / "s.kgl") as store:
        write_bulk(store, [columnar(30)])
        before = content_digest(store)
        with pytest.raises(InputError) as info:
            write_bulk(store, [table_of(items), clash])  # three chunks, then the clash in the second one of two
        text = str(info.value)
        assert "other.jsonl, record 9" in text and "rank" in text and "input.jsonl: record 4" in text
        assert content_digest(store) == before  # nothing of the chunks already written
    with KgliteStore(tmp_path / "s.kgl", read_only=True) as reader:
        assert content_digest(reader) == before


def test_a_repeated_load_in_chunks_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bulk, "CHUNK_FACTS", 40)
    with KgliteStore(tmp_path / "s.kgl") as store:
        assert write_bulk(store, [columnar(300)]).changed
        before = content_digest(store)
        again = write_bulk(store, [columnar(300)])
        assert not again.changed and again.unchanged["Fact"] == 300
        assert content_digest(store) == before


def test_add_many_with_days_that_are_not_dates_stages_what_add_stages() -> None:
    """A datetime, or a NaN where a day belongs, goes item by item as `add` stages it: the same ids, and no day
    ordinals (the sidecar converts, or leaves it to the Cypher build)."""
    starts: list[Any] = [float("nan"), dt.datetime(2001, 2, 3, 4, 5), D(2000, 1, 1), None]
    many, one = FactTable(), FactTable()
    got = many.add_many(["s"] * 4, ["p"] * 4, objects=[f"o{i}" for i in range(4)], valid_from=starts,
                        source_id=SRC.id, source_kind=SRC.kind)
    expected = [one.add("s", "p", object=f"o{i}", valid_from=a, source_id=SRC.id, source_kind=SRC.kind)
                for i, a in enumerate(starts)]
    assert got == expected and list(many.rows()) == list(one.rows())
    assert many.day_ordinals() is None and columnar(10).day_ordinals() is not None
