"""The model, dates, engine selection, value conversion and the atomic writer."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from neo4j import time as neo4j_time

from chronokg.errors import StoreError
from chronokg.graph.batch import GraphBatch
from chronokg.graph.counts import graph_counts
from chronokg.graph.dates import Precision, parse_date
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import Fact, Source
from chronokg.graph.neo4j_store import to_python
from chronokg.graph.open import open_store
from chronokg.graph.writer import write_batch, write_stream
from chronokg.settings import Settings


def f(**kw: object) -> Fact:
    base: dict[str, object] = {"subject": "s", "predicate": "p", "object": "o", "source_id": "src",
                               "source_kind": "k"}
    return Fact(**{**base, **kw})  # type: ignore[arg-type]


def test_parse_date_keeps_precision() -> None:
    assert parse_date("2015") == (dt.date(2015, 1, 1), Precision.YEAR)
    assert parse_date("2015-06") == (dt.date(2015, 6, 1), Precision.MONTH)
    assert parse_date("2015-06-30") == (dt.date(2015, 6, 30), Precision.DAY)
    with pytest.raises(ValueError, match="not a date"):
        parse_date("June 2015")


def test_fact_validation() -> None:
    with pytest.raises(ValueError, match="exactly one of object"):
        f(value="v")
    with pytest.raises(ValueError, match="before valid_from"):
        f(valid_from=dt.date(2020, 1, 1), valid_to=dt.date(2019, 1, 1))
    # An empty interval (same-year supersession) is allowed.
    f(valid_from=dt.date(2020, 1, 1), valid_to=dt.date(2020, 1, 1))


def test_fact_id_ignores_which_release_asserted_it() -> None:
    a = f(valid_from=dt.date(2000, 1, 1), known_from=dt.date(2020, 1, 1), source_id="r1")
    b = f(valid_from=dt.date(2000, 1, 1), known_from=dt.date(2021, 1, 1), source_id="r2")
    c = f(valid_from=dt.date(2000, 1, 2), known_from=dt.date(2020, 1, 1), source_id="r1")
    assert a.id == b.id != c.id


def test_batch_keeps_earliest_known_from() -> None:
    batch = GraphBatch()
    batch.fact(f(known_from=dt.date(2021, 1, 1), source_id="r2"))
    fid = batch.fact(f(known_from=dt.date(2020, 1, 1), source_id="r1"))
    batch.fact(f(known_from=dt.date(2022, 1, 1), source_id="r3"))
    assert batch.nodes["Fact"][fid]["known_from"] == dt.date(2020, 1, 1)
    assert len(batch.edges[("ASSERTED_IN", "Fact", "Source")]) == 3


def test_open_store_by_uri(tmp_path: Path) -> None:
    with open_store(f"kglite://{tmp_path}/a/b.kgl") as store:
        assert store.engine == "kglite"
    assert (tmp_path / "a" / "b.kgl").exists()
    with pytest.raises(StoreError, match="unknown store scheme"):
        open_store("postgres://x")
    with pytest.raises(StoreError, match="not a store URI"):
        open_store("store.kgl")
    settings = Settings(store=f"kglite://{tmp_path}/default.kgl")
    with open_store(None, settings) as store:
        assert store.uri == f"kglite://{tmp_path}/default.kgl"


def test_unreachable_neo4j_is_a_clear_error() -> None:
    # Nothing listens on this loopback port; the driver must fail fast with a StoreError.
    with pytest.raises(StoreError, match="cannot reach Neo4j"):
        open_store("bolt://127.0.0.1:1", Settings(neo4j_password="x"))  # type: ignore[arg-type]


def test_neo4j_values_become_plain_python() -> None:
    value = {"d": neo4j_time.Date(2020, 2, 29), "l": [neo4j_time.Date(1999, 1, 1)],
             "t": neo4j_time.DateTime(2020, 1, 1, 12, 0, 0)}
    assert to_python(value) == {"d": dt.date(2020, 2, 29), "l": [dt.date(1999, 1, 1)],
                                "t": dt.datetime(2020, 1, 1, 12, 0, 0)}


def test_failed_write_leaves_the_store_unchanged(tmp_path: Path) -> None:
    with KgliteStore(tmp_path / "s.kgl") as store:
        batch = GraphBatch()
        batch.source(Source(id="src", kind="k", caption="a release"))
        batch.fact(f(known_from=dt.date(2020, 1, 1)))
        write_batch(store, batch)
        before = graph_counts(store)

        def failing():  # type: ignore[no-untyped-def]
            more = GraphBatch()
            more.fact(f(object="o2"))
            yield more
            raise RuntimeError("input broke half-way")

        with pytest.raises(RuntimeError, match="half-way"):
            write_stream(store, failing())
        assert graph_counts(store) == before
        with pytest.raises(StoreError, match="nothing was changed"):
            store.write([("CREATE (:Entity {id: 'new'})", {}), ("THIS IS NOT CYPHER", {})])
        assert graph_counts(store) == before
    with KgliteStore(tmp_path / "s.kgl") as store:
        assert graph_counts(store) == before


def test_write_batch_twice_changes_nothing() -> None:
    store = KgliteStore(":memory:")
    batch = GraphBatch()
    batch.source(Source(id="src", kind="k", caption="a release"))
    for i in range(50):
        batch.fact(f(object=f"o{i}", valid_from=dt.date(2000 + i % 20, 1, 1)))
    first = write_batch(store, batch)
    counts = graph_counts(store)
    second = write_batch(store, batch)
    assert first.nodes_created == 50 + 51 + 1 and second.nodes_created == 0  # facts + entities + source
    assert graph_counts(store) == counts
    assert second.changed is False and sum(second.unchanged.values()) == 50 + 51 + 1
    assert not write_stream(store, [batch]).changed and graph_counts(store) == counts


def test_a_crashed_writer_is_recovered_by_a_load_without_log(tmp_path: Path) -> None:
    """A process killed after a commit leaves its work in the log; the next load (durable=off) keeps it."""
    import subprocess
    import sys

    path = tmp_path / "crash.kgl"
    script = (
        "import os, datetime as dt\n"
        "from chronokg.graph.kglite_store import KgliteStore\n"
        "from chronokg.graph.batch import GraphBatch\n"
        "from chronokg.graph.writer import write_batch\n"
        "from chronokg.graph.model import Fact\n"
        f"s = KgliteStore({str(path)!r})\n"
        "from chronokg.graph.model import Source\n"
        "b = GraphBatch()\n"
        "b.source(Source(id='x', kind='k', caption='c'))\n"
        "b.fact(Fact(subject='s', predicate='p', object='o', source_id='x', source_kind='k'))\n"
        "write_batch(s, b)\n"
        "os._exit(9)  # no close, no checkpoint\n"
    )
    assert subprocess.run([sys.executable, "-c", script], check=False).returncode == 9
    with KgliteStore(path, durable="off") as store:
        assert graph_counts(store)["Fact"] == 1
    with KgliteStore(path) as store:
        assert graph_counts(store)["Fact"] == 1


def test_stream_with_a_property_first_seen_in_a_later_chunk() -> None:
    store = KgliteStore(":memory:")
    first, second = GraphBatch(), GraphBatch()
    first.fact(f(object="o1"))
    second.fact(f(object="o2", attrs={"brand_new_key": "x"}))
    second.node("Entity", "o2", caption="O two")
    write_stream(store, [first, second])
    rows = store.run("MATCH (f:Fact) WHERE f.brand_new_key IS NOT NULL RETURN f.object_id AS o, f.brand_new_key AS k")
    assert rows == [{"o": "o2", "k": "x"}]
    assert store.run("MATCH (e:Entity {id: 'o2'}) RETURN e.caption AS c") == [{"c": "O two"}]
