"""What the embedded engine leaves out of the schema (`schema.EMBEDDED_OMITS`), and its readers' deferred indexes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from chronokg.graph import schema
from chronokg.graph.bulk import write_bulk
from chronokg.graph.facts import FactTable
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import Source
from chronokg.queries import catalog

D = dt.date
SRC = Source(id="t:1@2020-01-01", kind="t", caption="test release", release_date=D(2020, 1, 1))


def _names(graph: object) -> dict[str, str]:
    rows = [*graph.cypher("SHOW INDEXES").to_list(), *graph.cypher("SHOW CONSTRAINTS").to_list()]  # type: ignore[attr-defined]
    return {r["name"]: str(r.get("state")) for r in rows}


def _states(graph: object) -> set[str]:
    """The states of the property indexes (constraints have none)."""
    return {str(r["state"]) for r in graph.cypher("SHOW INDEXES").to_list()}  # type: ignore[attr-defined]


def _table() -> FactTable:
    t = FactTable()
    t.source(SRC)
    t.add_many([f"s{i % 5}" for i in range(40)], [f"p{i % 3}" for i in range(40)],
               objects=[f"o{i % 7}" for i in range(40)],
               valid_from=[D(2000 + i % 20, 1, 1) for i in range(40)], valid_to=[None] * 40,
               known_from=SRC.release_date, source_id=SRC.id, source_kind=SRC.kind)
    return t


def test_the_embedded_schema_is_the_schema_less_its_omissions(tmp_path: Path) -> None:
    path = tmp_path / "s.kgl"
    with KgliteStore(path, durable="off") as store:
        write_bulk(store, [_table()])
    kept = {schema.ddl_name(d) for d in schema.embedded_ddl()}
    every = {schema.ddl_name(d) for d in [*schema.constraint_ddl(), *schema.index_ddl()]}
    assert every >= schema.EMBEDDED_OMITS  # each names a real constraint or index
    assert kept == every - schema.EMBEDDED_OMITS
    with KgliteStore(path, read_only=True) as reader:
        names = set(_names(reader.raw()))
    assert kept <= names
    assert not names & schema.EMBEDDED_OMITS


def test_a_load_drops_what_an_older_store_still_has_of_the_omissions(tmp_path: Path) -> None:
    path = tmp_path / "s.kgl"
    with KgliteStore(path, durable="off") as store:
        for ddl in [*schema.constraint_ddl(), *schema.index_ddl()]:
            store.raw().cypher(ddl)  # as a store made before the omissions
        assert set(_names(store.raw())) >= schema.EMBEDDED_OMITS
        write_bulk(store, [_table()])
        assert not set(_names(store.raw())) & schema.EMBEDDED_OMITS


def test_a_reader_builds_its_indexes_at_its_first_cypher_read_only(tmp_path: Path) -> None:
    path = tmp_path / "s.kgl"
    with KgliteStore(path, durable="off") as store:
        write_bulk(store, [_table()])
    assert KgliteStore.capabilities.deferred_indexes
    with KgliteStore(path, read_only=True) as reader:
        graph = reader._g
        assert _states(graph) == {"DEFERRED"}
        rows = catalog.facts_as_of(reader, D(2010, 6, 1), subject="s1")  # from the interval sidecar
        assert rows and reader.intervals() is not None
        assert _states(graph) == {"DEFERRED"}
        cypher, params = catalog.facts_as_of_cypher(D(2010, 6, 1), subject="s1")
        assert [r["id"] for r in reader.run(cypher, params)] == [r.id for r in rows]
        assert _states(graph) == {"ONLINE"}
