"""`graph.prior` through the real writer and engine: each release records the values it replaced on stored
nodes ("latest wins" keys and union lists), in the load's own transaction; dropping a release puts them back,
hands its older value on to a later release that changed the key again, and refuses (unless forced) a union
list a later release changed again, which cannot be split into what each added."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from chronokg.errors import ChronoKGError
from chronokg.graph.batch import GraphBatch
from chronokg.graph.bulk import write_bulk
from chronokg.graph.counts import content_digest
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.lifecycle import drop_release
from chronokg.graph.merge import DEFAULT_POLICY
from chronokg.graph.model import Fact, Source
from chronokg.graph.prior import PRIOR
from chronokg.graph.writer import write_batch

POLICY = DEFAULT_POLICY.with_latest("Fact")  # every fact attribute: the latest release's


def release(store: KgliteStore, n: int, rank: str, alias: str, note: str | None = None, bulk: bool = False) -> str:
    """Release `r{n}` (dated 202n): the same statement with its own rank (and, from r2 on, a note), and the
    subject entity with one more alias; written as small loads are, or as large ones (`graph.bulk`)."""
    sid = f"r{n}"
    batch = GraphBatch(POLICY)
    batch.source(Source(id=sid, kind="test", caption=sid, release_date=dt.date(2020 + n, 1, 1)))
    attrs = {"rank": rank, **({"note": note} if note else {})}
    batch.fact(Fact(subject="E", predicate="p", value="v", known_from=dt.date(2020 + n, 1, 1), source_id=sid,
                    source_kind="test", attrs=attrs))
    batch.entity("E", aliases=[alias])
    if bulk:
        write_bulk(store, [batch])
    else:
        write_batch(store, batch)
    return sid


def fact(store: KgliteStore) -> dict[str, object]:
    rows = store.run("MATCH (f:Fact) RETURN f.rank AS rank, f.note AS note")
    aliases = store.run("MATCH (e:Entity {id: 'E'}) RETURN e.aliases AS a")[0]["a"]
    return {**rows[0], "aliases": aliases}


@pytest.mark.parametrize("bulk", [False, True])
def test_drop_restores_replaced_values_and_added_keys(tmp_path: Path, bulk: bool) -> None:
    with KgliteStore(tmp_path / "s.kgl") as store:
        release(store, 1, "normal", "a", bulk=bulk)
        before = content_digest(store)
        release(store, 2, "preferred", "b", note="restated", bulk=bulk)
        assert fact(store) == {"rank": "preferred", "note": "restated", "aliases": ["a", "b"]}
        assert len(store.run(f"MATCH (n) WHERE n.{PRIOR} IS NOT NULL RETURN n.id AS id")) == 2
        release(store, 2, "preferred", "b", note="restated", bulk=bulk)  # the same release again: nothing new recorded
        removal = drop_release(store, "r2")
        assert removal.restored == {"values (latest wins)": 3}  # rank, note (absent before), aliases
        assert content_digest(store) == before


def test_a_later_release_inherits_the_older_value_and_an_unsplittable_list_is_refused(tmp_path: Path) -> None:
    with KgliteStore(tmp_path / "s.kgl") as store:
        release(store, 1, "normal", "a")
        release(store, 2, "preferred", "b")
        release(store, 3, "deprecated", "c")
        held = content_digest(store)
        with pytest.raises(ChronoKGError, match=r"cannot be restored.*Entity E aliases.*--force"):
            drop_release(store, "r2")
        assert content_digest(store) == held  # refused: nothing changed
        removal = drop_release(store, "r2", force=True)
        assert removal.kept == ["Entity E aliases"] and "kept as they are" in "\n".join(removal.lines())
        assert fact(store) == {"rank": "deprecated", "note": None, "aliases": ["a", "b", "c"]}
        drop_release(store, "r3")  # r3 now holds r1's rank as the one it replaced
        assert fact(store)["rank"] == "normal" and fact(store)["aliases"] == ["a", "b"]
