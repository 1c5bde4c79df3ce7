"""What a passage-index folder holds, apart from the vectors: the format and `meta.json` record, what an
update reports, the SQLite schema of `passages.sqlite`, and the day-ordinal spans of `spans.npy`.

Split out of `index.py` so that each module holds one thing; `index` re-exports what others import.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, Field

from chronokg.errors import ChronoKGError
from chronokg.retrieval.passages import Passage

FORMAT = 2  # 2: passages carry topic, organization and the heading embedded before their text
IVF_MIN_ROWS = 50_000  # below: exact flat search; from here IVF keeps p50 far under target (benchmarks/README.md)
NPROBE_BASE = 8  # probes when every row is valid; divided by the valid share, capped at nlist
EMBED_BATCH = 256
INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
Kind = Literal["flat", "ivf"]
Strategy = Literal["filter", "overfetch"]


class IndexError_(ChronoKGError):
    """The index folder is missing, damaged or built with another model."""


class IndexMeta(BaseModel):
    format: int = FORMAT
    model: str
    dim: int
    kind: Kind = "flat"
    nlist: int = 0
    rows: int = 0
    alive: int = 0
    created: str = Field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    updated: str | None = None
    store: str | None = None


class SyncReport(BaseModel):
    """What an update did."""

    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    embed_s: float = 0.0
    total_s: float = 0.0
    rows: int = 0
    alive: int = 0
    kind: str = "flat"


def day(value: dt.date | str | None, open_value: int) -> int:
    if value is None:
        return open_value
    if isinstance(value, str):
        value = dt.date.fromisoformat(value)
    return value.toordinal()


def date(value: str | None) -> dt.date | None:
    return None if value is None else dt.date.fromisoformat(value)


SCHEMA = """
CREATE TABLE IF NOT EXISTS passages (
    row INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, text TEXT NOT NULL,
    fact_id TEXT NOT NULL, subject TEXT NOT NULL, predicate TEXT NOT NULL, source TEXT NOT NULL, title TEXT,
    topic TEXT, organization TEXT, heading TEXT, valid_from TEXT, valid_to TEXT, known_from TEXT, known_to TEXT,
    alive INTEGER NOT NULL DEFAULT 1
)"""
COLUMNS = ("key", "kind", "text", "fact_id", "subject", "predicate", "source", "title", "topic", "organization",
           "heading", "valid_from", "valid_to", "known_from", "known_to")


def passage_spans(p: Passage, alive: int = 1) -> tuple[int, int, int, int, int]:
    return (day(p.valid_from, INT_MIN), day(p.valid_to, INT_MAX), day(p.known_from, INT_MIN),
            day(p.known_to, INT_MAX), alive)


def passage_record(p: Passage) -> tuple[Any, ...]:
    return (p.key, p.kind, p.text, p.fact_id, p.subject, p.predicate, p.source, p.title, p.topic, p.organization,
            p.heading,
            *(None if d is None else d.isoformat() for d in (p.valid_from, p.valid_to, p.known_from, p.known_to)))
