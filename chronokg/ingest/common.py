"""What every loader shares: reading records with precise errors, sources, and the load summary."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from chronokg.graph.batch import GraphBatch
from chronokg.graph.counts import graph_counts
from chronokg.graph.errors import InputError
from chronokg.graph.store import GraphStore
from chronokg.graph.writer import Progress, write_batch


class LoadSummary(BaseModel):
    """What one load read and what it changed in the store."""

    source_kind: str
    paths: list[str]
    records: int
    staged: dict[str, int] = Field(default_factory=dict, description="Nodes and edges per label/type in the input")
    before: dict[str, int] = Field(default_factory=dict, description="Store counts per label/type before the load")
    after: dict[str, int] = Field(default_factory=dict, description="Store counts per label/type after the load")

    @property
    def added(self) -> dict[str, int]:
        return {k: self.after.get(k, 0) - self.before.get(k, 0) for k in sorted({*self.before, *self.after})}

    @property
    def unchanged(self) -> bool:
        return self.before == self.after


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise InputError(path, f"line {exc.lineno}", f"broken JSON: {exc.msg}") from exc


def read_json_blocks(path: Path) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """Records of a file of JSON objects: one per line, or pretty-printed and separated by blank lines.

    Yields (record number from 1, first line number, object). TempoMed-Bench's
    `.jsonl` files are the second kind.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text: {exc}") from exc
    decoder = json.JSONDecoder()
    pos, n, line, counted = 0, 0, 1, 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            return
        n += 1
        line += text.count("\n", counted, pos)
        counted = pos
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"{n} (line {line})", f"broken JSON: {exc.msg} at line {exc.lineno}") from exc
        if not isinstance(obj, dict):
            raise InputError(path, f"{n} (line {line})", f"expected a JSON object, got {type(obj).__name__}")
        yield n, line, obj


def apply(
    store: GraphStore, batch: GraphBatch, source_kind: str, paths: list[Path], records: int,
    progress: Progress | None = None,
) -> LoadSummary:
    """Write a fully staged batch in one transaction and summarise it."""
    before = graph_counts(store)
    write_batch(store, batch, progress=progress)
    return LoadSummary(
        source_kind=source_kind, paths=[str(p) for p in paths], records=records, staged=batch.counts(),
        before=before, after=graph_counts(store),
    )


def today() -> dt.date:
    return dt.date.today()
