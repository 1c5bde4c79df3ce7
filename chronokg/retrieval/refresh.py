"""Wikidata refresh: ask a SPARQL endpoint what is true now and record what changed, known from today.

For the items and properties a benchmark uses, the endpoint's current statements are
fetched (the SPARQL client: paging, retries, a response cache) and loaded as the Wikidata
loader loads a new revision, with one difference: the **known time is the retrieval
date**, not the revision's edit date. The store learnt these statements today, so an
as-of question with `known_at` before today still gets what the store knew then, and one
after today gets the refreshed answer (docs/integrity.md: a new release adds facts and
retracts the statements it no longer asserts; it never moves what earlier releases said).

A revision already in the store is unchanged (nothing is written); a revision older than
the newest one stored (a lagging endpoint) is skipped and reported, never loaded late.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from chronokg.bench.question import Question
from chronokg.graph.store import GraphStore
from chronokg.ingest.wikidata import KIND, TEMPORAL_PROPERTIES, EntityRecord, Selection, load_records, read_states
from chronokg.ingest.wikidata_sparql import SparqlClient, fetch_records
from chronokg.progress import Progress

_QID = re.compile(r"^Q[1-9]\d*$")
_PID = re.compile(r"^P[1-9]\d*$")


class Change(BaseModel):
    """One fact the refresh made known (`added`) or retracted, by subject and predicate."""

    subject: str
    predicate: str
    fact_id: str
    change: str  # added | retracted
    object: str | None = None
    value: Any = None
    valid_from: dt.date | None = None
    valid_to: dt.date | None = None


class RefreshSummary(BaseModel):
    """What a refresh asked, what was new, and every fact it added or retracted."""

    endpoint: str
    retrieved: dt.date
    items: int
    properties: list[str]
    new_revisions: dict[str, int] = Field(default_factory=dict, description="QID -> revision loaded")
    unchanged: list[str] = Field(default_factory=list, description="Items whose revision was already stored")
    stale: dict[str, int] = Field(default_factory=dict, description="Items the endpoint gave an older revision of")
    missing: list[str] = Field(default_factory=list, description="Items the endpoint does not know")
    changes: list[Change] = Field(default_factory=list)
    requests: int = 0
    cache_hits: int = 0

    @property
    def added(self) -> int:
        return sum(c.change == "added" for c in self.changes)

    @property
    def retracted(self) -> int:
        return sum(c.change == "retracted" for c in self.changes)


def targets(questions: Iterable[Question]) -> tuple[list[str], list[str]]:
    """The Wikidata items and properties a benchmark's answer keys ask about (subjects, predicates)."""
    qids: dict[str, None] = {}
    pids: dict[str, None] = {}
    for q in questions:
        rows = [q.answer_key.params, *q.answer_key.evidence]
        for row in rows:
            for name in ("subject", "object"):
                value = row.get(name)
                if isinstance(value, str) and _QID.match(value):
                    qids[value] = None
            predicate = row.get("predicate")
            if isinstance(predicate, str) and _PID.match(predicate):
                pids[predicate] = None
    return list(qids), list(pids)


def _known_now(store: GraphStore, subjects: Sequence[str]) -> dict[str, dict[str, Any]]:
    rows = store.run(
        "MATCH (f:Fact) WHERE f.source_kind = $kind AND f.subject_id IN $subjects AND f.known_to IS NULL "
        "RETURN f.id AS id, f.subject_id AS subject, f.predicate AS predicate, f.object_id AS object, "
        "f.value AS value, f.valid_from AS valid_from, f.valid_to AS valid_to",
        {"kind": KIND, "subjects": list(subjects)})
    return {r["id"]: r for r in rows}


def refresh(store: GraphStore, qids: Sequence[str], pids: Sequence[str] = TEMPORAL_PROPERTIES,
            client: SparqlClient | None = None, today: dt.date | None = None,
            progress: Progress | None = None) -> RefreshSummary:
    """Fetch `qids` x `pids` from the endpoint and load what changed, known from `today` (one transaction)."""
    day = today or dt.date.today()
    client = client or SparqlClient(refresh=True)
    selection = Selection.of(pids)
    qids = list(dict.fromkeys(qids))
    records, missing = fetch_records(client, qids, selection.pids, progress)
    states = read_states(store, [r.id for r in records])
    summary = RefreshSummary(endpoint=client.endpoint, retrieved=day, items=len(qids),
                             properties=list(selection.pids), missing=missing)
    fresh: list[EntityRecord] = []
    retrieved_at = dt.datetime.combine(day, dt.time(0, 0), tzinfo=dt.UTC)
    for record in records:
        stored = states[record.id].revisions
        if record.lastrevid in stored:
            summary.unchanged.append(record.id)
        elif stored and record.lastrevid < max(stored):
            summary.stale[record.id] = record.lastrevid
        elif stored and max(stored.values()) > day:
            summary.stale[record.id] = record.lastrevid  # the store already knows a later day's revision
        else:
            fresh.append(dataclasses.replace(record, modified=retrieved_at))
            summary.new_revisions[record.id] = record.lastrevid
    if fresh:
        subjects = [r.id for r in fresh]
        before = _known_now(store, subjects)
        load_records(store, fresh, selection, client.endpoint, progress)
        after = _known_now(store, subjects)
        for fid in sorted(after.keys() - before.keys()):
            summary.changes.append(_change(after[fid], "added"))
        for fid in sorted(before.keys() - after.keys()):
            summary.changes.append(_change(before[fid], "retracted"))
    summary.requests, summary.cache_hits = client.requests, client.cache_hits
    return summary


def _change(row: dict[str, Any], change: str) -> Change:
    return Change(subject=row["subject"], predicate=row["predicate"], fact_id=row["id"], change=change,
                  object=row["object"], value=row["value"], valid_from=row["valid_from"], valid_to=row["valid_to"])
