"""Keeping a store's passage index in step with the store: build, incremental update, rebuild, compact."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from chronokg.graph.store import GraphStore
from chronokg.retrieval.embed import Embedder, shared_embedder
from chronokg.retrieval.index import (
    IVF_MIN_ROWS,
    Kind,
    PassageIndex,
    SyncReport,
    build,
    from_vectors,
    replace_folder,
    write_lock,
)
from chronokg.retrieval.passages import KINDS, store_passages
from chronokg.settings import Settings


def update_index(store: GraphStore, folder: Path, *, rebuild: bool = False, kinds: Sequence[str] = KINDS,
                 embedder: Embedder | None = None, kind: Kind | Literal["auto"] = "auto",
                 settings: Settings | None = None) -> SyncReport:
    """Build the index if there is none (or `rebuild`), else add what the store added since: only new passages
    are embedded; intervals a newer release changed are rewritten; passages no longer in the store retire."""
    embedder = embedder or shared_embedder(settings)
    with write_lock(folder):
        passages = store_passages(store, kinds)
        if rebuild or not (folder / "meta.json").exists():
            index, report = build(folder, passages, embedder, kind, store=getattr(store, "uri", None))
            index.close()
            return report
        index = PassageIndex.open(folder, read_only=False)
        try:
            report = index.sync(passages, embedder)
            index.save()
        finally:
            index.close()
    if kind == "auto" and report.kind == "flat" and report.alive >= IVF_MIN_ROWS:
        compact(folder, "ivf")  # grown past the exact index's range: re-index the stored vectors as IVF
        report.kind = "ivf"
    return report


def compact(folder: Path, kind: Kind | Literal["auto"] = "auto") -> SyncReport:
    """Drop retired rows and re-choose flat/IVF from the stored vectors (no re-embedding)."""
    import numpy as np

    with write_lock(folder):
        old = PassageIndex.open(folder, read_only=True)
        try:
            alive = np.flatnonzero(old.spans[:, 4] == 1)
            vectors = old.vectors()[alive] if len(alive) else old.vectors()[:0]
            stored = old.passages([int(r) for r in alive])
            passages = [stored[int(r)] for r in alive]
            meta = old.meta
        finally:
            old.close()
        building = folder.with_name(folder.name + ".building")
        if building.exists():
            import shutil

            shutil.rmtree(building)
        new = from_vectors(building, passages, vectors, meta.model, meta.dim, kind, meta.store)
        new.save()
        new.close()
        replace_folder(building, folder)
        return SyncReport(unchanged=len(passages), removed=meta.rows - len(passages), rows=len(passages),
                          alive=len(passages), kind=new.meta.kind)
