"""Rows built by `trusted_many` (the long-answer path of `changed_between`) are the validated rows in every
respect a caller can see: equal, same dump and fields set, frozen, and no list shared between rows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from pydantic import ValidationError

from chronokg.graph.batch import GraphBatch
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import Fact, Source
from chronokg.graph.writer import write_batch
from chronokg.queries import catalog
from chronokg.queries.rows import ChangeRow, FactRow, trusted_many

D = dt.date


def test_trusted_many_rows_are_the_validated_rows() -> None:
    values = [{"subject": f"s{i}", "predicate": "p", "before": [f"a{i}"] * (i % 3), "after": [f"b{i}"]}
              for i in range(50)]
    validated = [ChangeRow.model_validate(v) for v in values]
    trusted = trusted_many(ChangeRow, [dict(v) for v in values])
    assert trusted == validated
    assert [type(r) for r in trusted] == [ChangeRow] * 50
    assert [r.model_dump() for r in trusted] == [r.model_dump() for r in validated]
    assert all(r.model_fields_set == v.model_fields_set for r, v in zip(trusted, validated, strict=True))
    assert repr(trusted[7]) == repr(validated[7])
    with pytest.raises(ValidationError):
        trusted[0].subject = "other"  # type: ignore[misc]
    assert trusted_many(FactRow, []) == []


def _release() -> tuple[Source, GraphBatch]:
    src = Source(id="s:1", kind="syn", caption="syn", release_date=D(2024, 1, 1))
    batch = GraphBatch()
    batch.source(src)
    return src, batch


def _written(tmp_path: Path, batch: GraphBatch) -> Path:
    """`batch` written to a new store file (the reader then opens it with its interval sidecar)."""
    path = tmp_path / "store.kgl"
    with KgliteStore(path) as store:
        write_batch(store, batch)
    return path


def test_changed_rows_from_the_index_share_no_list(tmp_path: Path) -> None:
    """Each row's before and after are lists of its own: changing one changes no other row's answer."""
    src, batch = _release()
    for i in range(20):
        for start, end, obj in ((D(2000, 1, 1), D(2010, 1, 1), "x"), (D(2010, 1, 1), None, "y")):
            batch.fact(Fact(subject=f"e{i:02d}", predicate="p", object=obj, valid_from=start, valid_to=end,
                            known_from=src.release_date, source_id=src.id, source_kind="syn"))
    with KgliteStore(_written(tmp_path, batch), read_only=True) as reader:
        assert reader.intervals() is not None
        rows = catalog.changed_between(reader, D(2005, 1, 1), D(2015, 1, 1))
        assert [(r.subject, r.before, r.after) for r in rows] == [(f"e{i:02d}", ["x"], ["y"]) for i in range(20)]
        lists = [id(x) for r in rows for x in (r.before, r.after)]
        assert len(set(lists)) == len(lists)
        rows[0].before.append("changed")
        assert catalog.changed_between(reader, D(2005, 1, 1), D(2015, 1, 1))[0].before == ["x"]
        assert rows[1].before == ["x"]


@pytest.mark.parametrize("fixed_width", [True, False], ids=["fixed-width-table", "string-list"])
def test_pairs_with_several_values_a_day_agree_with_the_cypher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               fixed_width: bool) -> None:
    """A predicate with two or three values on one day (the index's slicing path) and one with a single value
    (its one-value path), in one answer: the same rows as the catalog's Cypher, whether the value strings come
    from the table's fixed-width copy or (a table too wide for one) from its string list."""
    from chronokg.graph import interval_reads
    from tests.test_interval_index import by_cypher

    if not fixed_width:
        monkeypatch.setattr(interval_reads, "FIXED_TABLE_BYTES", 0)

    src, batch = _release()
    spans = {"a": (D(2000, 1, 1), D(2012, 1, 1)), "b": (D(2001, 1, 1), None), "c": (D(2011, 1, 1), None),
             "d": (D(2000, 1, 1), D(2011, 6, 1))}
    for i in range(6):
        for obj, (start, end) in spans.items():
            batch.fact(Fact(subject=f"e{i}", predicate="many", object=obj, valid_from=start, valid_to=end,
                            known_from=src.release_date, source_id=src.id, source_kind="syn"))
        batch.fact(Fact(subject=f"e{i}", predicate="one", value=i, valid_from=D(2010, 1, 1),
                        known_from=src.release_date, source_id=src.id, source_kind="syn"))
        solo = ([("x", D(2009, 1, 1), D(2010, 3, 1)), ("y", D(2010, 3, 1), None)] if i % 2
                else [("z", D(2010, 3, 1), None)])
        for obj, start, end in solo:  # keys with one value or none on a day, side by side
            batch.fact(Fact(subject=f"e{i}", predicate="solo", object=obj, valid_from=start, valid_to=end,
                            known_from=src.release_date, source_id=src.id, source_kind="syn"))
    with KgliteStore(_written(tmp_path, batch), read_only=True) as reader:
        index = reader.intervals()
        assert index is not None
        windows = ((D(2005, 1, 1), D(2015, 1, 1)), (D(1999, 1, 1), D(2005, 1, 1)), (D(2011, 2, 1), D(2020, 1, 1)),
                   (D(2009, 6, 1), D(2010, 6, 1)))
        for start, end in windows:
            rows = catalog.changed_between(reader, start, end)
            assert rows == by_cypher(reader, start, end)
            assert rows
        many = catalog.changed_between(reader, D(2005, 1, 1), D(2015, 1, 1), predicate="many")
        assert [(r.before, r.after) for r in many] == [(["a", "b", "d"], ["b", "c"])] * 6
        assert (index._fixed("values") is not None) is fixed_width
        solo = catalog.changed_between(reader, D(2009, 6, 1), D(2010, 6, 1), predicate="solo")
        assert [(r.subject, r.before, r.after) for r in solo] == [
            (f"e{i}", ["x"], ["y"]) if i % 2 else (f"e{i}", [], ["z"]) for i in range(6)]


def test_trusted_many_refuses_a_row_class_that_is_not_frozen() -> None:
    """Its rows share one fields-set object, which only a frozen row never changes."""
    from pydantic import ConfigDict

    class Loose(ChangeRow):
        model_config = ConfigDict(frozen=False)

    with pytest.raises(TypeError, match="frozen rows only"):
        trusted_many(Loose, [{"subject": "s", "predicate": "p", "before": [], "after": ["x"]}])
