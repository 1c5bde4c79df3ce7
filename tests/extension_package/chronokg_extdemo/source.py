"""A source: JSON lines of `{"subject", "predicate", "value", "valid_from"}` facts, one release per file."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from chronokg.graph.batch import GraphBatch
from chronokg.graph.model import Fact
from chronokg.graph.store import GraphStore
from chronokg.ingest.common import LoadSummary, apply, file_source
from chronokg.ingest.options import RELEASE_DATE, IngestOptions
from chronokg.ingest.sources import SourceSpec, paths
from chronokg.progress import Progress

SOURCE = SourceSpec(
    "extdemo", "extdemo", "chronokg_extdemo.source:load", None, ("ingest/extdemo",), "extdemo facts (JSON lines)",
    IngestOptions(help="extdemo facts, one JSON object a line (one transaction).",
                  params=(paths("extdemo .jsonl files"), RELEASE_DATE)))


def load(store: GraphStore, paths: list[Path], release_date: dt.date | None = None,
         progress: Progress | None = None) -> LoadSummary:
    batch = GraphBatch()
    records = 0
    for path in paths:
        src = file_source(path, "extdemo", release_date)
        batch.source(src)
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            batch.at(path, n)
            row = json.loads(line)
            batch.fact(Fact(subject=row["subject"], predicate=row["predicate"], value=row["value"],
                            valid_from=dt.date.fromisoformat(row["valid_from"]), known_from=src.release_date,
                            source_id=src.id, source_kind="extdemo"))
            records += 1
    return apply(store, batch, "extdemo", list(paths), records, progress)
