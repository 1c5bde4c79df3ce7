"""The interval sidecar a bulk load builds from its own columns (`graph.interval_feed`) equals, array for array,
the one a Cypher read of every current fact builds, after a first load, a second release that retracts and
adds versions, a dropped release and a load after it; and where it cannot follow, the Cypher build answers."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from chronokg.graph import interval_index
from chronokg.graph.batch import GraphBatch
from chronokg.graph.bulk import write_bulk
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.lifecycle import drop_release
from chronokg.graph.model import Fact, Source
from tests.helpers import spy_on_sidecar
from tests.test_interval_index import SRC, SRC2, D, assert_index_agrees, synthetic


def random_store(seed: int, n: int, src: Source = SRC) -> GraphBatch:
    """`synthetic`, from the first seed at or after `seed` whose draws make valid facts (a few do not)."""
    for s in range(seed, seed + 50):
        try:
            return synthetic(s, n, src)
        except ValueError:
            continue
    raise AssertionError("no valid synthetic store")


def retractions(seed: int, batch: GraphBatch, share: float) -> GraphBatch:
    """Some of `batch`'s facts again, retracted by the later release (known_to set): they stop being current."""
    rng = random.Random(seed)
    out = GraphBatch()
    out.source(SRC2)
    for row in batch.nodes["Fact"].values():
        if rng.random() < share and row.get("known_to") is None:
            out.fact(Fact(subject=row["subject_id"], predicate=row["predicate"], object=row.get("object_id"),
                          value=row.get("value"), valid_from=row.get("valid_from"), valid_to=row.get("valid_to"),
                          known_from=row["known_from"], source_id=row["source_id"], source_kind="syn",
                          known_to=D(2025, 1, 1)))
    return out


def split(batch: GraphBatch, parts: int) -> list[GraphBatch]:
    """One batch as `parts` smaller ones (each with the source): the load merges them part by part."""
    out = [GraphBatch() for _ in range(parts)]
    for b in out:
        b.nodes["Source"] = dict(batch.nodes["Source"])
    for i, (fid, row) in enumerate(batch.nodes["Fact"].items()):
        out[i % parts].fact(Fact(subject=row["subject_id"], predicate=row["predicate"],
                                 object=row.get("object_id"), value=row.get("value"),
                                 valid_from=row.get("valid_from"), valid_to=row.get("valid_to"),
                                 known_from=row["known_from"], known_to=row.get("known_to"),
                                 source_id=row["source_id"], source_kind="syn"))
        assert fid in out[i % parts].nodes["Fact"]
    return out


def load(path: Path, parts: list[GraphBatch], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any] | None:
    """Bulk-load `parts`; returns the columns-built sidecar the load published (None: it fell back)."""
    with monkeypatch.context() as m:
        published = spy_on_sidecar(m)
        with KgliteStore(path) as store:
            write_bulk(store, parts)
    assert len(published) == 1
    return published[0]


def assert_same_as_cypher(path: Path, cols: dict[str, Any] | None) -> None:
    assert cols is not None, "the load fell back to the Cypher build"
    with KgliteStore(path, read_only=True) as reader:
        expected = interval_index.build_columns(reader.raw())
    assert expected is not None
    assert sorted(cols) == sorted(expected)
    for key, arr in expected.items():
        assert arr.dtype == cols[key].dtype, key
        assert np.array_equal(arr, cols[key]), key
    with np.load(interval_index.sidecar(path)) as data:  # and it is what was written, stamped for the file
        assert tuple(data["stamp"].tolist()) == interval_index.stamp_of(path)
        assert np.array_equal(data["ids_blob"], expected["ids_blob"])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_columns_built_sidecar_equals_the_cypher_built_one(tmp_path: Path, seed: int,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "store.kgl"
    first = random_store(seed, 50 + seed * 7)
    cols = load(path, split(first, 3), monkeypatch)  # a first load, in parts
    assert_same_as_cypher(path, cols)
    assert_index_agrees(path, seed)
    gone = retractions(seed, first, 0.2)
    assert len(gone.nodes["Fact"]) > 10
    later = random_store(seed + 100, 70, SRC2)  # new subjects and new versions of old ones
    cols = load(path, [*split(later, 2), gone], monkeypatch)
    assert_same_as_cypher(path, cols)
    assert_index_agrees(path, seed + 20)
    with KgliteStore(path) as store:  # by Cypher: the checkpoint rebuilds the sidecar by a read of the facts
        drop_release(store, SRC2.id)
    cols = load(path, [random_store(seed + 200, 30, SRC2)], monkeypatch)  # from the sidecar the drop left
    assert_same_as_cypher(path, cols)
    assert_index_agrees(path, seed + 40)


def test_without_a_sidecar_for_the_store_the_cypher_build_answers(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "store.kgl"
    assert_same_as_cypher(path, load(path, [random_store(9, 30)], monkeypatch))
    interval_index.sidecar(path).unlink()  # an older store, from before the index
    assert load(path, [random_store(10, 30, SRC2)], monkeypatch) is None
    assert_index_agrees(path, 9)  # the Cypher build wrote a current one
    with KgliteStore(path) as store:  # a write since the last sidecar: the load cannot start from it
        store.write([("MATCH (f:Fact) WITH f LIMIT 5 SET f.known_to = date('2025-02-01')", {})])
        assert load_in(store, [random_store(11, 10, SRC2)]) is None
    assert_index_agrees(path, 10)


def load_in(store: KgliteStore, parts: list[GraphBatch]) -> dict[str, Any] | None:
    seen: list[dict[str, Any] | None] = []
    real = store.publish_sidecar

    def spy(cols: dict[str, Any] | None) -> None:
        seen.append(cols)
        real(cols)

    store.publish_sidecar = spy  # type: ignore[method-assign]
    write_bulk(store, parts)
    return seen[0]


def objects_only(batch: GraphBatch) -> GraphBatch:
    """`batch` with every literal value made an object (an entity id): what the columnar finish takes."""
    out = GraphBatch()
    out.nodes["Source"] = dict(batch.nodes["Source"])
    for row in batch.nodes["Fact"].values():
        out.fact(Fact(subject=row["subject_id"], predicate=row["predicate"],
                      object=row.get("object_id") or f"v-{row['value']}", valid_from=row.get("valid_from"),
                      valid_to=row.get("valid_to"), known_from=row["known_from"], known_to=row.get("known_to"),
                      source_id=row["source_id"], source_kind="syn"))
    return out


@pytest.mark.parametrize("seed", [4, 5])
def test_columnar_finish_equals_the_cypher_build(tmp_path: Path, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A load with no literal and no update of a stored fact joins its columns as codes and byte blobs
    (`interval_feed._finish_columns`, which bounds the 10M load's peak memory); the arrays are the same,
    over a first load in parts (retracted facts among them) and a second release on top of its sidecar."""
    from chronokg.graph import interval_feed

    taken: list[int] = []
    real = interval_feed._finish_columns

    def spy(parts: list[dict[str, Any]], graph: Any) -> dict[str, Any] | None:
        taken.append(len(parts))
        return real(parts, graph)

    monkeypatch.setattr(interval_feed, "_finish_columns", spy)
    path = tmp_path / "store.kgl"
    first = objects_only(random_store(seed, 60))
    assert any(r.get("known_to") for r in first.nodes["Fact"].values())
    assert_same_as_cypher(path, load(path, split(first, 3), monkeypatch))
    assert taken == [3]
    later = objects_only(random_store(seed + 100, 70, SRC2))
    assert_same_as_cypher(path, load(path, split(later, 2), monkeypatch))
    assert taken == [3, 3]  # the previous sidecar is one part more
    assert_index_agrees(path, seed)


def test_packed_texts_reorder_as_the_list_would() -> None:
    """`PackedTexts.take` (the ids of a 10M load reordered without decoding them) gives the bytes and offsets
    `_strings` gives for the reordered list: over several gather chunks, empty texts included."""
    rng = random.Random(7)
    texts = ["".join(rng.choice("f-0123456789abcdef") for _ in range(rng.randrange(0, 20))) for _ in range(300_000)]
    packed = interval_index.PackedTexts(**interval_index._strings(texts))
    assert len(packed) == len(texts) and packed[12345] == texts[12345]
    for rows in (np.array(rng.sample(range(len(texts)), len(texts))), np.flatnonzero(np.arange(len(texts)) % 3)):
        got, want = packed.take(rows), interval_index._strings([texts[i] for i in rows.tolist()])
        assert np.array_equal(got.blob, want["blob"]) and np.array_equal(got.offsets, want["offsets"])
