"""The interval index beside an embedded store: the same `changed_between` answers as the Cypher, and used
only when it belongs to the checkpoint a reader loaded (after a second load, a dropped release, a stale or
missing sidecar it is rebuilt or ignored); plus the quick open of one-shot CLI queries."""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from chronokg.errors import StoreError
from chronokg.graph import interval_index
from chronokg.graph.batch import GraphBatch
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.lifecycle import drop_release
from chronokg.graph.model import Fact, Source
from chronokg.graph.store import GraphStore
from chronokg.graph.writer import write_batch
from chronokg.queries import catalog
from chronokg.queries.catalog import CHANGED_BETWEEN, ChangedParams
from chronokg.queries.rows import ChangeRow, FactRow, HopRow
from chronokg.testing.engine_conformance import EngineConformance, build

D = dt.date


class ReaderConformance(EngineConformance):
    def test_catalog_queries_are_read_only_and_writes_are_refused(self, graph: GraphStore) -> None:
        """A reader refuses every write outright (the guard's layers are the writer classes' test)."""
        before = catalog.stats(graph)
        for write in ("MATCH (f:Fact) SET f.valid_to = date('2000-01-01')", "CREATE (:Entity {id: 'x'})"):
            with pytest.raises(StoreError):
                graph.run(write)
            with pytest.raises(StoreError):
                graph.write([(write, {})])
        assert catalog.stats(graph) == before


class TestKgliteReaderConformance(ReaderConformance):
    """Every catalog answer from a reader of a closed file store: `changed_between` from the interval index."""

    @pytest.fixture(scope="class")
    @classmethod
    def graph(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphStore]:
        path = tmp_path_factory.mktemp("conf") / "store.kgl"
        with KgliteStore(path) as store:
            build(store)
        with KgliteStore(path, read_only=True) as reader:
            assert reader.intervals() is not None
            yield reader


class TestKgliteQuickReaderConformance(ReaderConformance):
    """The same answers from a quick-opened reader (mapped, property indexes left unbuilt), as the CLI opens."""

    @pytest.fixture(scope="class")
    @classmethod
    def graph(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphStore]:
        path = tmp_path_factory.mktemp("conf") / "store.kgl"
        with KgliteStore(path) as store:
            build(store)
        with KgliteStore(path, read_only=True, quick_open=True) as reader:
            yield reader


def by_cypher(store: GraphStore, start: dt.date, end: dt.date, subject: str | None = None,
              predicate: str | None = None) -> list[ChangeRow]:
    """`changed_between` through its Cypher only (the answer the index must give)."""
    params = ChangedParams.model_validate({"from": start, "to": end, "subject": subject, "predicate": predicate})
    text, args = CHANGED_BETWEEN.cypher(params)
    rows = [ChangeRow.model_validate(r) for r in store.run(text, args)]
    assert CHANGED_BETWEEN.post is not None
    return CHANGED_BETWEEN.post(rows, params)


SRC = Source(id="syn:1", kind="syn", caption="synthetic", version="1", release_date=D(2024, 1, 1))
SRC2 = Source(id="syn:2", kind="syn", caption="synthetic, later", version="2", release_date=D(2025, 1, 1))


def synthetic(seed: int, n_subjects: int, src: Source = SRC) -> GraphBatch:
    """Version chains with open starts and ends, literal values of several types, shared values, gaps,
    two versions of one value back to back, and retracted facts (known_to set)."""
    rng = random.Random(seed)
    batch = GraphBatch()
    batch.source(src)
    for i in range(n_subjects):
        for pred in rng.sample(["p1", "p2", "p3", "über"], 2):
            days = sorted(rng.sample(range(D(1995, 1, 1).toordinal(), D(2024, 1, 1).toordinal()), 4))
            for j in range(3):
                start = None if j == 0 and rng.random() < 0.2 else D.fromordinal(days[j])
                end = None if j == 2 and rng.random() < 0.5 else D.fromordinal(days[j + 1] - rng.choice([0, 0, 5]))
                kind = rng.random()
                obj = value = None
                if kind < 0.6:
                    obj = f"o{rng.randrange(8)}"
                else:
                    value = rng.choice([1, 2.5, True, "text", "Zürich"])
                batch.fact(Fact(subject=f"s{i:03d}", predicate=pred, object=obj, value=value, valid_from=start,
                                valid_to=end, known_from=src.release_date, source_id=src.id, source_kind="syn",
                                known_to=D(2025, 6, 1) if rng.random() < 0.05 else None))
    return batch


def windows(seed: int, n: int) -> list[tuple[dt.date, dt.date]]:
    rng = random.Random(seed)
    lo, hi = D(1994, 1, 1).toordinal(), D(2025, 1, 1).toordinal()
    return [(D.fromordinal(rng.randrange(lo, hi)), D.fromordinal(rng.randrange(lo, hi))) for _ in range(n)]


def assert_index_agrees(path: Path, seed: int) -> None:
    with KgliteStore(path, read_only=True) as reader:
        assert reader.intervals() is not None, "the sidecar of this checkpoint was not used"
        checked = 0
        for start, end in windows(seed, 40):
            expected = by_cypher(reader, start, end)
            assert catalog.changed_between(reader, start, end) == expected
            checked += len(expected)
            for row in expected[:3]:
                assert catalog.changed_between(reader, start, end, subject=row.subject) == by_cypher(
                    reader, start, end, subject=row.subject)
                assert catalog.changed_between(reader, start, end, predicate=row.predicate) == by_cypher(
                    reader, start, end, predicate=row.predicate)
        assert checked > 100  # the windows found changes to compare
        rng, found = random.Random(seed), 0
        for start, _ in windows(seed, 60):
            subject = f"s{rng.randrange(100):03d}"
            expected_facts = [FactRow.model_validate(r)
                              for r in reader.run(*catalog.facts_as_of_cypher(start, subject=subject))]
            assert catalog.facts_as_of(reader, start, subject=subject) == expected_facts
            found += len(expected_facts)
            for pred in ("p1", "über", "nothing"):
                assert catalog.facts_as_of(reader, start, subject=subject, predicate=pred) == [
                    FactRow.model_validate(r)
                    for r in reader.run(*catalog.facts_as_of_cypher(start, subject=subject, predicate=pred))]
        assert found > 30
        assert catalog.changed_between(reader, D(2000, 1, 1), D(2010, 1, 1), subject="nobody") == []


def test_the_index_answers_as_the_cypher_after_loads_and_a_dropped_release(tmp_path: Path) -> None:
    path = tmp_path / "store.kgl"
    with KgliteStore(path) as store:
        write_batch(store, synthetic(1, 60))
    assert_index_agrees(path, 10)
    with KgliteStore(path) as store:  # a second load: new subjects and new versions of old ones
        write_batch(store, synthetic(2, 90, SRC2))
    assert_index_agrees(path, 11)
    with KgliteStore(path) as store:
        drop_release(store, "syn:2")
    assert_index_agrees(path, 12)


def test_a_stale_or_missing_sidecar_is_never_used(tmp_path: Path) -> None:
    path = tmp_path / "store.kgl"
    with KgliteStore(path) as store:
        write_batch(store, synthetic(3, 40))
    side = interval_index.sidecar(path)
    old = side.read_bytes()
    with KgliteStore(path) as store:
        write_batch(store, synthetic(4, 40, SRC2))
    side.write_bytes(old)  # as if the writer had been killed between its checkpoint and the sidecar
    with KgliteStore(path, read_only=True) as reader:
        assert reader.intervals() is None
        start, end = D(2000, 1, 1), D(2020, 1, 1)
        rows = catalog.changed_between(reader, start, end)
        assert rows == by_cypher(reader, start, end) and rows
    side.unlink()  # an older store, from before the index
    with KgliteStore(path, read_only=True, quick_open=True) as reader:
        assert reader.intervals() is None
        assert catalog.changed_between(reader, start, end) == rows
    for damaged in (b"not an index", b"PK\x03\x04" + b"\x00" * 40):  # text; a zip cut short
        side.write_bytes(damaged)
        with KgliteStore(path, read_only=True) as reader:
            assert reader.intervals() is None
            assert catalog.changed_between(reader, start, end) == rows
    with KgliteStore(path) as store:  # the next checkpoint writes a current one again
        write_batch(store, synthetic(5, 5, SRC2))
    assert_index_agrees(path, 13)


def test_a_rewritten_sidecar_under_a_copied_stamp_is_never_used(tmp_path: Path) -> None:
    """The stamp names the checkpoint; the digest proves the arrays: other arrays under the stamp and digest
    of the right sidecar (a tool that rewrote it, a copy from another store) are ignored, and the reader
    answers from its Cypher."""
    import numpy as np

    path, other = tmp_path / "store.kgl", tmp_path / "other.kgl"
    with KgliteStore(path) as store:
        write_batch(store, synthetic(21, 40))
    with KgliteStore(other) as store:
        write_batch(store, synthetic(22, 40))
    side = interval_index.sidecar(path)
    with np.load(side) as data:
        right = {k: data[k] for k in data.files}
    with np.load(interval_index.sidecar(other)) as data:
        foreign = {k: data[k] for k in data.files if k not in interval_index.UNSTAMPED}
    shifted = dict(right)
    shifted["vf"] = right["vf"] + 400  # every valid_from a year later, nothing else changed
    start, end = D(2000, 1, 1), D(2030, 1, 1)
    with KgliteStore(path, read_only=True) as reader:
        assert reader.intervals() is not None
        rows = catalog.changed_between(reader, start, end)
        assert rows == by_cypher(reader, start, end) and rows
    for arrays in (shifted, {**foreign, "stamp": right["stamp"], "digest": right["digest"]}):
        with side.open("wb") as fh:
            np.savez(fh, **arrays)
        for quick in (False, True):
            with KgliteStore(path, read_only=True, quick_open=quick) as reader:
                assert reader.intervals() is None
                assert catalog.changed_between(reader, start, end) == rows
    with side.open("wb") as fh:  # the right arrays back under their stamp: used again
        np.savez(fh, **right)
    with KgliteStore(path, read_only=True) as reader:
        assert reader.intervals() is not None
        assert catalog.changed_between(reader, start, end) == rows


def test_a_stale_sidecar_stamped_again_by_hand_is_never_used(tmp_path: Path) -> None:
    """A sidecar of an older checkpoint whose stamp is rewritten to name the file now (its arrays and digest left
    as they were) is not the current one: the seal over digest and stamp no longer holds, and the reader answers
    from its Cypher. Nor is a sidecar stamped for a file of another checkpoint's content."""
    import shutil

    import numpy as np

    path = tmp_path / "store.kgl"
    with KgliteStore(path) as store:
        write_batch(store, synthetic(31, 40))
    side = interval_index.sidecar(path)
    stale = tmp_path / "stale.npz"
    shutil.copy2(side, stale)
    older = tmp_path / "older.kgl"
    shutil.copy2(path, older)
    with KgliteStore(path) as store:
        write_batch(store, synthetic(32, 40))
    start, end = D(2000, 1, 1), D(2030, 1, 1)
    with KgliteStore(path, read_only=True) as reader:
        rows = by_cypher(reader, start, end)
    with np.load(stale) as data:
        restamped = {k: data[k] for k in data.files}
    restamped["stamp"] = np.array(interval_index.stamp_of(path), dtype=np.int64)
    with side.open("wb") as fh:
        np.savez(fh, **restamped)
    for quick in (False, True):
        with KgliteStore(path, read_only=True, quick_open=quick) as reader:
            assert reader.intervals() is None
            assert catalog.changed_between(reader, start, end) == rows
    now = interval_index.stamp_of(path)
    assert now is not None and interval_index.stamp_of(older) is not None
    assert now[3] != interval_index.stamp_of(older)[3]  # the checkpoints' content identities differ


def test_writers_and_stores_in_memory_answer_from_cypher(tmp_path: Path) -> None:
    path = tmp_path / "store.kgl"
    with KgliteStore(path) as store:
        write_batch(store, synthetic(6, 20))
        assert store.intervals() is None  # a writer's graph runs ahead of any sidecar
        assert catalog.changed_between(store, D(2000, 1, 1), D(2020, 1, 1)) == by_cypher(
            store, D(2000, 1, 1), D(2020, 1, 1))
    with KgliteStore(":memory:") as memory:
        assert memory.intervals() is None


def test_a_checkpoint_that_changed_no_fact_carries_the_sidecar_over(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes of other things (a run's predictions) re-stamp the sidecar without reading every fact again;
    a write that names facts rebuilds it, and both leave the same answers as the Cypher."""
    path = tmp_path / "store.kgl"
    with KgliteStore(path) as store:
        write_batch(store, synthetic(7, 50))
    built: list[int] = []
    real = interval_index.build_columns
    monkeypatch.setattr(interval_index, "build_columns", lambda g: built.append(1) or real(g))
    with KgliteStore(path) as store:
        store.write([("CREATE (:Run {id: 'r1', model: 'm'})", {})])
    assert built == []  # carried over, not rebuilt
    assert_index_agrees(path, 14)
    with KgliteStore(path) as store:
        store.write([("MATCH (f:Fact) WITH f LIMIT 3 SET f.valid_to = date('1990-01-01')", {})])
    assert built == [1]
    assert_index_agrees(path, 15)


def overlapping(src: Source = SRC) -> GraphBatch:
    """Versions of one predicate that overlap (several values at once), share a start (ties broken by id),
    start open, or carry literals: the orders the point reads must sort themselves."""
    batch = GraphBatch()
    batch.source(src)
    rng = random.Random(7)
    for i in range(12):
        for n in range(6):
            start = None if n == 0 and i % 3 == 0 else D(2000 + rng.randrange(4), 1 + n % 2, 1)
            end = None if n % 3 == 2 else D(2006 + rng.randrange(4), 1, 1)
            obj = f"x{rng.randrange(12):02d}" if n % 2 == 0 else None  # links back: two hops
            batch.fact(Fact(subject=f"x{i:02d}", predicate=rng.choice(["q1", "q2"]), object=obj,
                            value=None if obj else rng.choice([3, 4.5, False, "ü"]), valid_from=start,
                            valid_to=end, known_from=src.release_date, source_id=src.id, source_kind="syn"))
    return batch


def test_point_reads_from_the_index_answer_as_the_cypher(tmp_path: Path) -> None:
    """`facts_as_of`, `timeline` and `two_hop_as_of` from the index (typed rows built without validation)
    equal the Cypher's validated rows, field by field and in order, including overlapping versions, open
    starts and links between subjects."""
    path = tmp_path / "store.kgl"
    with KgliteStore(path) as store:
        write_batch(store, synthetic(21, 40))
        write_batch(store, overlapping())
    with KgliteStore(path, read_only=True) as reader:
        assert reader.intervals() is not None
        subjects = [f"x{i:02d}" for i in range(12)] + [f"s{i:03d}" for i in range(0, 40, 7)] + ["nobody"]
        compared = 0
        for subject in subjects:
            for pred in (None, "q1", "p2", "über", "nothing"):
                params = catalog.TimelineParams(subject=subject, predicate=pred)
                direct = catalog.TIMELINE.direct
                assert direct is not None and direct(reader, params) is not None  # the index answered
                expected = [FactRow.model_validate(r) for r in reader.run(*catalog.TIMELINE.cypher(params))]
                got = catalog.timeline(reader, subject, predicate=pred)
                assert got == expected
                assert [r.model_dump() for r in got] == [r.model_dump() for r in expected]
                compared += len(expected)
                for day in (D(1999, 6, 1), D(2000, 1, 1), D(2002, 3, 1), D(2007, 1, 1), D(2030, 1, 1)):
                    want = [FactRow.model_validate(r) for r in reader.run(
                        *catalog.facts_as_of_cypher(day, subject=subject, predicate=pred))]
                    rows = catalog.facts_as_of(reader, day, subject=subject, predicate=pred)
                    assert [r.model_dump() for r in rows] == [r.model_dump() for r in want]
                    assert [type(r.value) for r in rows] == [type(r.value) for r in want]
                    compared += len(want)
        assert compared > 300
        hops = 0
        for subject in subjects:
            for day in (D(1999, 6, 1), D(2002, 3, 1), D(2007, 1, 1)):
                for p1, p2 in ((None, None), ("q1", None), (None, "q2"), ("p1", "nothing")):
                    params = catalog.TwoHopParams(subject=subject, date=day, predicate=p1, predicate2=p2)
                    assert catalog.TWO_HOP.direct is not None and catalog.TWO_HOP.direct(reader, params) is not None
                    want = [HopRow.model_validate(r) for r in reader.run(*catalog.TWO_HOP.cypher(params))]
                    got = catalog.two_hop_as_of(reader, subject, day, predicate=p1, predicate2=p2)
                    assert [r.model_dump() for r in got] == [r.model_dump() for r in want]
                    hops += len(want)
        assert hops > 100
        # Asked for what the index does not hold (retracted versions, another release's view): the Cypher.
        assert catalog.TIMELINE.direct is not None
        assert catalog.TIMELINE.direct(reader, catalog.TimelineParams(subject="x01", include_retracted=True)) is None
        assert catalog.TIMELINE.direct(reader, catalog.TimelineParams(subject="x01", known_at=D(2024, 6, 1))) is None


def test_a_deep_history_is_read_as_arrays_and_answers_as_the_cypher(tmp_path: Path) -> None:
    """A subject with more versions than `interval_reads.DEEP` is tested as arrays: same rows, same order, as the
    Cypher, with overlapping versions, open starts and a predicate asked for."""
    from chronokg.graph.interval_reads import DEEP

    batch = GraphBatch()
    batch.source(SRC)
    rng = random.Random(11)
    n = DEEP * 2 + 5
    for i in range(n):
        start = None if i % 17 == 0 else D(1990 + rng.randrange(30), 1 + rng.randrange(12), 1)
        end = None if i % 5 == 0 else D(2021 + rng.randrange(5), 1, 1)
        batch.fact(Fact(subject="deep", predicate=rng.choice(["a", "b", "c"]), object=f"o{rng.randrange(9)}",
                        valid_from=start, valid_to=end, known_from=SRC.release_date, source_id=SRC.id,
                        source_kind="syn"))
    path = tmp_path / "store.kgl"
    with KgliteStore(path) as store:
        write_batch(store, batch)
    with KgliteStore(path, read_only=True) as reader:
        index = reader.intervals()
        assert index is not None
        as_of = index.as_of()
        code = as_of.subject_code["deep"]
        assert as_of.rows_of[code + 1] - as_of.rows_of[code] == n > DEEP
        hits = 0
        for pred in (None, "a", "c", "none"):
            for year in (1989, 1995, 2005, 2020, 2023, 2030):
                day = D(year, 6, 1)
                want = [FactRow.model_validate(r) for r in reader.run(
                    *catalog.facts_as_of_cypher(day, subject="deep", predicate=pred))]
                rows = catalog.facts_as_of(reader, day, subject="deep", predicate=pred)
                assert [r.model_dump() for r in rows] == [r.model_dump() for r in want]
                hits += len(want)
        assert hits > 50
