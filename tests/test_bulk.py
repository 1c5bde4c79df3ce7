"""The bulk path (`graph.facts.FactTable`, `graph.bulk.write_bulk`): same graph, same guarantees as `write_batch`."""

from __future__ import annotations

import datetime as dt
import os
import signal
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from chronokg.errors import InputError
from chronokg.graph import bulk
from chronokg.graph.batch import GraphBatch
from chronokg.graph.bulk import write_bulk
from chronokg.graph.counts import content_digest, graph_counts
from chronokg.graph.dates import Precision
from chronokg.graph.facts import FactTable
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import Fact, Source
from chronokg.graph.writer import write_batch
from tests.helpers import child_at_marker

D = dt.date
SRC = Source(id="test:1@2020-01-01", kind="test", caption="test release", release_date=D(2020, 1, 1))
LATER = Source(id="test:1@2021-01-01", kind="test", caption="test release", release_date=D(2021, 1, 1))


def facts(n: int, source: Source = SRC, offset: int = 0) -> list[Fact]:
    """Facts of every shape: entity objects and literal values of each type, open and closed intervals."""
    out = []
    for i in range(offset, offset + n):
        value: str | int | float | bool | None = [None, "text", 7, 2.5, True][i % 5]
        out.append(Fact(
            subject=f"s{i % 37}", predicate=f"p{i % 4}", object=None if value is not None else f"o{i % 11}",
            value=value, valid_from=D(2000 + i % 20, 1 + i % 12, 1) if i % 7 else None,
            valid_to=D(2030, 1, 1) if i % 3 == 0 else None, precision=list(Precision)[i % 3],
            known_from=source.release_date, source_id=source.id, source_kind=source.kind,
            attrs={"rank": "normal"} if i % 2 else {}))
    return out


def table_of(items: list[Fact], source: Source = SRC, first: int = 1) -> FactTable:
    table = FactTable()
    table.source(source)
    for i, fact in enumerate(items):
        table.at("input.jsonl", i + first)
        assert table.add_fact(fact) == fact.id
    return table


def batch_of(items: list[Fact], source: Source = SRC) -> GraphBatch:
    batch = GraphBatch()
    batch.source(source)
    for i, fact in enumerate(items):
        batch.at("input.jsonl", i + 1)
        batch.fact(fact)
    return batch


def test_fact_ids_and_graph_equal_the_transactional_path(tmp_path: Path) -> None:
    items = facts(400)
    with KgliteStore(tmp_path / "a.kgl") as a, KgliteStore(tmp_path / "b.kgl") as b:
        expected = write_batch(a, batch_of(items))
        report = write_bulk(b, [table_of(items[:150]), table_of(items[150:], first=151)])
        assert content_digest(a) == content_digest(b)
        assert report.created == {k: v for k, v in expected.created.items()}
        assert report.edges_created == expected.edges_created
    with KgliteStore(tmp_path / "b.kgl", read_only=True) as reader:
        assert graph_counts(reader) == graph_counts(KgliteStore(tmp_path / "a.kgl", read_only=True))


def test_a_later_release_and_a_repeat_merge_by_the_same_rules(tmp_path: Path) -> None:
    items, later = facts(200), facts(200, LATER)
    with KgliteStore(tmp_path / "a.kgl") as a, KgliteStore(tmp_path / "b.kgl") as b:
        write_batch(a, batch_of(items))
        first = write_bulk(b, [table_of(items)])
        assert first.changed
        assert not write_bulk(b, [table_of(items)]).changed  # again: nothing changes, from content
        expected = write_batch(a, batch_of(later, LATER))
        got = write_bulk(b, [table_of(later, LATER)])
        assert (got.created, got.updated, got.edges_created) == (expected.created, expected.updated,
                                                                   expected.edges_created)
        assert content_digest(a) == content_digest(b)


def test_a_conflict_with_the_store_names_both_records_and_writes_nothing(tmp_path: Path) -> None:
    items = facts(50)
    with KgliteStore(tmp_path / "s.kgl") as store:
        write_bulk(store, [table_of(items)])
        before = content_digest(store)
        clash = FactTable()
        clash.source(SRC)
        clash.at("other.jsonl", 9)
        stored = items[1]  # has attrs {"rank": "normal"}, a strict property
        clash.add_fact(stored.model_copy(update={"attrs": {"rank": "deprecated"}}))
        with pytest.raises(InputError) as info:
            write_bulk(store, [table_of(facts(30, offset=500)), clash])
        text = str(info.value)
        assert "other.jsonl, record 9" in text and "rank" in text and "input.jsonl: record 2" in text
        assert content_digest(store) == before  # the first part, already staged, was dropped too
    with KgliteStore(tmp_path / "s.kgl", read_only=True) as reader:
        assert content_digest(reader) == before


def test_a_fact_staged_twice_with_other_content_names_both_records() -> None:
    table = FactTable()
    table.at("a.jsonl", 1)
    table.add("s", "p", object="o", source_id="x", source_kind="k", attrs={"rank": "normal"})
    table.at("a.jsonl", 2)
    with pytest.raises(InputError) as info:
        table.add("s", "p", object="o", source_id="x", source_kind="k", attrs={"rank": "deprecated"})
    assert "a.jsonl" in str(info.value) and "record 2" in str(info.value) and "record 1" in str(info.value)


CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from chronokg.graph.bulk import write_bulk
    from chronokg.graph.facts import FactTable
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.graph.model import Source
    import datetime as dt

    path, marker = sys.argv[1], Path(sys.argv[2])
    src = Source(id="kill:1", kind="kill", caption="killed load", release_date=dt.date(2020, 1, 1))

    def parts():
        for k in range(4):
            if k == 3:
                marker.write_text("staged")  # three parts are in the staged copy: now kill me
                time.sleep(60)
            table = FactTable()
            table.source(src)
            for i in range(k * 5000, (k + 1) * 5000):
                table.add(f"e{i}", "p", object=f"e{i + 1}", source_id=src.id, source_kind=src.kind)
            yield table

    with KgliteStore(path, durable=sys.argv[3]) as store:
        write_bulk(store, parts())
""")


@pytest.mark.parametrize("durable", ["off", "normal"])
def test_a_killed_bulk_load_leaves_the_store_as_it_was(tmp_path: Path, durable: str) -> None:
    path = tmp_path / "s.kgl"
    with KgliteStore(path) as store:
        write_bulk(store, [table_of(facts(300))])
    with KgliteStore(path, read_only=True) as reader:
        before = content_digest(reader)
    marker = tmp_path / "marker"
    child = child_at_marker(CHILD, [str(path), str(marker), durable], marker)
    with KgliteStore(path, read_only=True) as reader:  # a reader beside the load sees the store as it was
        assert content_digest(reader) == before
    os.kill(child.pid, signal.SIGKILL)
    child.wait(30)
    with KgliteStore(path, read_only=True) as reader:
        assert content_digest(reader) == before
        assert reader.intervals() is not None  # the interval sidecar still describes the checkpoint
    with KgliteStore(path) as writer:  # the lease went with the process; the log holds nothing of the load
        assert content_digest(writer) == before
        write_bulk(writer, [table_of(facts(20, offset=900))])
        assert content_digest(writer) != before
    with KgliteStore(path, read_only=True) as reader:  # the next load's sidecar, built from its columns
        assert reader.intervals() is not None
    assert not list(tmp_path.glob("*.tmp"))  # no unstamped sidecar left by the load that completed


KILLED_BEFORE_STAMP = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from chronokg.graph import interval_index
    from chronokg.graph.bulk import write_bulk
    from chronokg.graph.facts import FactTable
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.graph.model import Source
    import datetime as dt

    path, marker = sys.argv[1], Path(sys.argv[2])

    def stop_here(*args, **kwargs):  # the load is saved, its sidecar written unstamped: kill me now
        marker.write_text("saved")
        time.sleep(60)

    interval_index.stamp_and_publish = stop_here
    src = Source(id="kill:2", kind="kill", caption="killed load", release_date=dt.date(2021, 1, 1))
    table = FactTable()
    table.source(src)
    for i in range(3000):
        table.add(f"k{i}", "p", object=f"k{i + 1}", source_id=src.id, source_kind=src.kind)
    with KgliteStore(path) as store:
        write_bulk(store, [table])
""")


def test_the_next_writer_removes_what_a_killed_load_left(tmp_path: Path) -> None:
    """A load killed between its save and its sidecar's stamp leaves the unstamped sidecar (`*.tmp`); the
    next writer removes it, and kglite's save temp files of dead processes, leaving those of live ones."""
    path = tmp_path / "s.kgl"
    with KgliteStore(path) as store:
        write_bulk(store, [table_of(facts(300))])
    marker = tmp_path / "marker"
    child = child_at_marker(KILLED_BEFORE_STAMP, [str(path), str(marker)], marker)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(30)
    (left,) = tmp_path.glob("s.kgl.intervals.npz.*.tmp")
    assert f".{child.pid}." in left.name
    save_of_dead = tmp_path / f"s.kgl.tmp.{child.pid}.0"  # as a save killed midway leaves it
    save_of_live = tmp_path / f"s.kgl.tmp.{os.getppid()}.0"  # a live process's: not ours to remove
    for f in (save_of_dead, save_of_live):
        f.write_bytes(b"partial")
    with KgliteStore(path, read_only=True) as reader:
        assert reader.intervals() is None  # the killed load's checkpoint has no stamped sidecar
        assert left.exists()  # readers remove nothing
    with KgliteStore(path) as writer:
        assert not left.exists() and not save_of_dead.exists() and save_of_live.exists()
        assert writer.run("MATCH (f:Fact {source_id: 'kill:2'}) RETURN count(f) AS n")[0]["n"] == 3000
        write_bulk(writer, [table_of(facts(10, offset=700))])
    assert sorted(p.name for p in tmp_path.iterdir() if "tmp" in p.name) == [save_of_live.name]
    with KgliteStore(path, read_only=True) as reader:
        assert reader.intervals() is not None


def test_add_many_stages_what_add_stages_row_by_row() -> None:
    items = [f for f in facts(300) if not f.attrs and f.precision == Precision.DAY]
    one, many = FactTable(), FactTable()
    for table in (one, many):
        table.source(SRC)
        table.at("input.jsonl", 1)
    expected = [one.add_fact(f) for f in items]
    got = many.add_many([f.subject for f in items], [f.predicate for f in items], source_id=SRC.id,
                        source_kind=SRC.kind, objects=[f.object for f in items], values=[f.value for f in items],
                        valid_from=[f.valid_from for f in items], valid_to=[f.valid_to for f in items],
                        known_from=SRC.release_date)
    assert got == expected == [f.id for f in items]
    assert list(many.rows()) == list(one.rows())
    assert (many.entities, many.entity_origins) == (one.entities, one.entity_origins)
    # A repeat (of a staged fact, or within the call) merges as add does: nothing staged twice.
    again = many.add_many([items[0].subject] * 2, [items[0].predicate] * 2, source_id=SRC.id, source_kind=SRC.kind,
                          objects=[items[0].object] * 2, values=[items[0].value] * 2,
                          valid_from=[items[0].valid_from] * 2, valid_to=[items[0].valid_to] * 2,
                          known_from=SRC.release_date)
    assert again == [items[0].id] * 2 and len(many) == len(one)
    with pytest.raises(ValueError, match="exactly one of object"):
        many.add_many(["s"], ["p"], source_id=SRC.id, source_kind=SRC.kind, objects=["o"], values=[1])
    with pytest.raises(ValueError, match="before valid_from"):
        many.add_many(["s"], ["p"], source_id=SRC.id, source_kind=SRC.kind, objects=["o"],
                      valid_from=[D(2020, 1, 1)], valid_to=[D(2019, 1, 1)])
    assert len(many) == len(one)  # a refused call stages nothing


def test_parts_that_repeat_earlier_parts_merge_without_reading_back(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh store: later parts repeat facts and entities of earlier ones and give an entity its kind. The
    load remembers what it wrote instead of reading it back; it must reach the graph of the transactional path
    and report what reading everything back (the path for a store that already held nodes) reports."""
    items = facts(300)
    kinds = GraphBatch()
    kinds.source(SRC)
    kinds.entity("s3", kind="drug")  # s3 was staged without a kind by the first part

    def parts() -> list[FactTable | GraphBatch]:
        return [table_of(items[:200]), table_of(items[100:], first=101), kinds]

    with KgliteStore(tmp_path / "a.kgl") as a, KgliteStore(tmp_path / "b.kgl") as b:
        batch = batch_of(items)
        batch.entity("s3", kind="drug")
        expected = write_batch(a, batch)
        got = write_bulk(b, parts())
        assert content_digest(a) == content_digest(b)
        assert (got.created, got.edges_created) == (expected.created, expected.edges_created)
        assert got.updated == {"Source": 0, "Fact": 0, "Entity": 1} and got.unchanged["Fact"] == 100
        with monkeypatch.context() as m, KgliteStore(tmp_path / "c.kgl") as c:
            m.setattr("chronokg.graph.bulk_state.LoadState.is_fresh", lambda self, reader, label: False)
            read_back = write_bulk(c, parts())
            assert content_digest(c) == content_digest(b)
        assert read_back.model_dump() == got.model_dump()
        ddl = "SHOW INDEXES", "SHOW CONSTRAINTS"  # dropped for the native loader, rebuilt once at the end
        assert [sorted(r["name"] for r in b.run(q)) for q in ddl] == [sorted(r["name"] for r in a.run(q)) for q in ddl]


def test_parts_built_ahead_in_a_thread_fail_in_order_and_write_nothing(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """With `bulk.PREFETCH` (off by default), the next part is built in a second thread while the engine loads
    the current one: an error from the caller's parts surfaces from write_bulk as it was raised, nothing is
    published, and the parts are closed."""
    monkeypatch.setattr(bulk, "PREFETCH", True)
    items = facts(120)
    closed: list[bool] = []

    def parts() -> Iterator[FactTable]:
        try:
            yield table_of(items[:60])
            raise InputError("input.jsonl", 61, "broken")
        finally:
            closed.append(True)

    with KgliteStore(tmp_path / "a.kgl") as store:
        write_bulk(store, [table_of(items[60:], first=61)])
        before = content_digest(store)
        with pytest.raises(InputError, match="broken"):
            write_bulk(store, parts())
        assert closed == [True]
        assert content_digest(store) == before
    with KgliteStore(tmp_path / "a.kgl", read_only=True) as reader:
        assert content_digest(reader) == before
