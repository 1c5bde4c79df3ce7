"""Keeping a store's passage index in step with the store: build, incremental update, rebuild, compact."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from chronokg.graph.store import GraphStore
from chronokg.progress import Progress
from chronokg.retrieval.embed import Embedder, shared_embedder
from chronokg.retrieval.index import (
    IVF_MIN_ROWS,
    IndexMeta,
    Kind,
    PassageIndex,
    SyncReport,
    build,
    from_vectors,
    replace_folder,
    write_lock,
)
from chronokg.retrieval.index_layout import FORMAT
from chronokg.retrieval.passages import KINDS, store_passages
from chronokg.settings import Settings


def update_index(store: GraphStore, folder: Path, *, rebuild: bool = False, kinds: Sequence[str] = KINDS,
                 embedder: Embedder | None = None, kind: Kind | Literal["auto"] = "auto",
                 settings: Settings | None = None, progress: Progress | None = None) -> SyncReport:
    """Build the index if there is none (or `rebuild`, or it was written in an older format), else add what the
    store added since: only new passages are embedded; intervals a newer release changed are rewritten;
    passages no longer in the store retire. `progress` hears of reading the store and of every embedded batch."""
    embedder = embedder or shared_embedder(settings)
    with write_lock(folder):
        if progress is not None:
            progress.start(0, "reading passages from the store")
        passages = list(store_passages(store, kinds))
        if rebuild or not (folder / "meta.json").exists() or _older(folder):
            index, report = build(folder, passages, embedder, kind, store=store.uri,
                                  progress=progress)
            index.close()
            return report
        index = PassageIndex.open(folder, read_only=False)
        try:
            report = index.sync(passages, embedder, progress=progress)
            index.save()
        finally:
            index.close()
    if kind == "auto" and report.kind == "flat" and report.alive >= IVF_MIN_ROWS:
        compact(folder, "ivf")  # grown past the exact index's range: re-index the stored vectors as IVF
        report.kind = "ivf"
    return report


def _older(folder: Path) -> bool:
    """Whether the index was written in an older format (its passages then lack what this version embeds): an
    update rebuilds it rather than mixing two formats; a reader refuses it (`PassageIndex.open`)."""
    try:
        return IndexMeta.model_validate_json((folder / "meta.json").read_text(encoding="utf-8")).format < FORMAT
    except (OSError, ValueError):
        return False  # unreadable: `PassageIndex.open` names the damage


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
