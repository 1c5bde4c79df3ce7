"""Wikidata entity JSON (ChroKnowBench's general domain) as bitemporal facts.

Accepted inputs: one entity as `Special:EntityData/Q….json` returns it
(`{"entities": {QID: entity}}`) or bare, a JSON list of entities, and the
JSON dumps (`latest-all.json[.gz|.bz2]`: a `[` line, one entity per line
ending in `,`, a `]` line), which are streamed in chunks inside one
transaction. Each statement of a selected property becomes one fact:

* subject = QID, predicate = PID, object = the QID of an item value, else a
  literal value: quantities as exact decimal text ("329327", unit in attrs),
  times as ISO text at their precision ("1953", "1953-05", "1953-05-12"),
  strings and monolingual text as given, coordinates as WKT `Point(lon lat)`;
* valid time from the qualifiers: `[P580 start, P582 end)`, falling back to
  P1319 earliest date / P1326 latest date. A bound is the first day of the
  period it names (an end in 2009 closes the interval at 2009-01-01, where
  a successor starting in 2009 takes over). Start and end in the same period
  (2009–2009) would make an empty interval: the end is widened to the end
  of that period (`end_widened`). Decade/century/millennium precisions are
  kept as the first year of the period at year precision (`start_precision`
  keeps Wikidata's number); coarser ones drop the bound (counted);
  a statement with no time qualifier has no valid time, and its precision is
  `none` (there is no date to be precise about);
* a statement with only P585 point in time is valid from that point until
  the next point of the same property on the same item (a series such as
  population), the last one for its own precision period (a month for a
  monthly figure): we do not claim a value holds beyond what was observed;
* Julian-calendar dates of day precision are converted to Gregorian, as
  Wikidata's RDF does; coarser ones are kept as written (attrs `calendar`);
* somevalue/novalue statements, dates before year 1 or after 9999 and
  intervals ending before they start are skipped, counted, and named by
  statement id in the summary (`skipped_statements`, printed by the CLI);
  a day that does not exist (2023-02-30) is read at month precision and
  named the same way (`invalid_day_as_month`);
* known time = the revision: `known_from` is the entity's `modified` date,
  and each revision is one `Source` (`wikidata:{QID}@{lastrevid}`). Loading
  a newer revision closes (`known_to`) the facts of the properties it covers
  that it no longer asserts; a deprecated rank is kept as an attribute, it
  is not a retraction.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field

from chronokg.errors import InputError
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch
from chronokg.graph.counts import graph_counts
from chronokg.graph.model import Fact
from chronokg.graph.store import GraphStore
from chronokg.graph.writer import write_batch, write_stream
from chronokg.ingest.common import LoadSummary
from chronokg.ingest.wikidata.entity_json import record_from_json as record_from_json
from chronokg.ingest.wikidata.facts import build_fact as build_fact
from chronokg.ingest.wikidata.facts import build_facts as build_facts
from chronokg.ingest.wikidata.facts import coarser_precision as coarser_precision
from chronokg.ingest.wikidata.files import MAX_TEXT as MAX_TEXT
from chronokg.ingest.wikidata.files import expand as expand
from chronokg.ingest.wikidata.files import is_dump as is_dump
from chronokg.ingest.wikidata.files import read_document as read_document
from chronokg.ingest.wikidata.files import read_dump as read_dump
from chronokg.ingest.wikidata.records import CHUNK_ENTITIES as CHUNK_ENTITIES
from chronokg.ingest.wikidata.records import EARLIEST as EARLIEST
from chronokg.ingest.wikidata.records import END as END
from chronokg.ingest.wikidata.records import ENTITY_KINDS as ENTITY_KINDS
from chronokg.ingest.wikidata.records import GREGORIAN as GREGORIAN
from chronokg.ingest.wikidata.records import JULIAN as JULIAN
from chronokg.ingest.wikidata.records import KIND as KIND
from chronokg.ingest.wikidata.records import LATEST as LATEST
from chronokg.ingest.wikidata.records import NAMED_SKIPS as NAMED_SKIPS
from chronokg.ingest.wikidata.records import PID_PATTERN as PID_PATTERN
from chronokg.ingest.wikidata.records import POINT as POINT
from chronokg.ingest.wikidata.records import POLICY as POLICY
from chronokg.ingest.wikidata.records import PRECISION_DAY as PRECISION_DAY
from chronokg.ingest.wikidata.records import PRECISION_MONTH as PRECISION_MONTH
from chronokg.ingest.wikidata.records import PRECISION_YEAR as PRECISION_YEAR
from chronokg.ingest.wikidata.records import QID_PATTERN as QID_PATTERN
from chronokg.ingest.wikidata.records import START as START
from chronokg.ingest.wikidata.records import TEMPORAL_PROPERTIES as TEMPORAL_PROPERTIES
from chronokg.ingest.wikidata.records import TIME_QUALIFIERS as TIME_QUALIFIERS
from chronokg.ingest.wikidata.records import Claim as Claim
from chronokg.ingest.wikidata.records import EntityRecord as EntityRecord
from chronokg.ingest.wikidata.records import Selection as Selection
from chronokg.ingest.wikidata.records import Value as Value
from chronokg.ingest.wikidata.records import WdTime as WdTime
from chronokg.ingest.wikidata.records import source_id as source_id
from chronokg.ingest.wikidata.revisions import SubjectState as SubjectState
from chronokg.ingest.wikidata.revisions import read_states as read_states
from chronokg.ingest.wikidata.revisions import reconcile as reconcile
from chronokg.ingest.wikidata.revisions import stage_known as stage_known
from chronokg.ingest.wikidata.times import Resolved as Resolved
from chronokg.ingest.wikidata.times import Skip as Skip
from chronokg.ingest.wikidata.times import normalize_amount as normalize_amount
from chronokg.ingest.wikidata.times import resolve as resolve
from chronokg.ingest.wikidata.times import xsd_datetime as xsd_datetime
from chronokg.progress import Progress

# --- staging and loading ---------------------------------------------------------------------------


class WikidataLoadSummary(LoadSummary):
    """A load summary with what was skipped (by reason) and how many facts were retracted."""

    facts: int = 0
    retracted: int = 0
    skipped: dict[str, int] = Field(default_factory=dict)
    skipped_statements: dict[str, list[str]] = Field(
        default_factory=dict, description=f"The statements behind each skipped count (the first {NAMED_SKIPS})")
    not_selected: dict[str, int] = Field(default_factory=dict,
                                         description="Properties the selection left out: entities holding each")


@dataclass
class Stager:
    """Stages entity revisions into batches, keeping known time consistent with the store."""

    store: GraphStore
    selection: Selection
    skipped: Counter[str] = field(default_factory=Counter)
    skipped_statements: dict[str, list[str]] = field(default_factory=dict)
    not_selected: Counter[str] = field(default_factory=Counter)
    records: int = 0
    facts: int = 0
    retracted: int = 0
    staged: Counter[str] = field(default_factory=Counter)

    def batch(self, items: Sequence[tuple[EntityRecord, str | None]]) -> GraphBatch:
        """One batch for these revisions (several revisions of one entity are folded in order)."""
        batch = GraphBatch(POLICY)
        ordered = sorted(items, key=lambda it: (it[0].id, it[0].lastrevid))
        states = read_states(self.store, sorted({r.id for r, _ in ordered}))
        for record, origin in ordered:
            self.stage(batch, record, origin, states[record.id])
        for subject, state in states.items():
            stage_known(batch, subject, state)
        self.staged.update(batch.counts())
        return batch

    def stage(self, batch: GraphBatch, record: EntityRecord, origin: str | None, state: SubjectState) -> None:
        self.records += 1
        batch.at(origin or "wikidata", record.id)
        kind = ENTITY_KINDS.get(record.kind, "wikidata_item")
        src = record.source(origin)
        batch.source(src)
        batch.node(schema.SOURCE, src.id, entity_id=record.id)
        batch.entity(record.id, kind=kind, caption=record.label, known_from=record.modified.date())
        taken = self.selection.taken(record)
        self.not_selected.update(p for p in record.present if p not in taken)
        try:
            facts = build_facts(record, self.selection, self.skipped, self.skipped_statements)
        except ValueError as exc:
            raise InputError(origin or record.id, record.id, str(exc)) from None
        ids: dict[str, str] = {}
        for fact in facts:
            ids[batch.fact(fact, subject_kind=kind, object_kind=_object_kind(fact.object))] = fact.predicate
        self.facts += len(facts)
        covered = {p for p in taken | {f.predicate for f in state.facts.values()}
                   if self.selection.covers(record, p, taken)}
        self.retracted += reconcile(state, record, ids, covered)

    def summary(self, paths: Sequence[str], before: dict[str, int], after: dict[str, int]) -> WikidataLoadSummary:
        return WikidataLoadSummary(
            source_kind=KIND, paths=list(paths), records=self.records, staged=dict(self.staged), before=before,
            after=after, facts=self.facts, retracted=self.retracted, skipped=dict(sorted(self.skipped.items())),
            skipped_statements=dict(sorted(self.skipped_statements.items())),
            not_selected=dict(self.not_selected.most_common()),
        )


def _object_kind(obj: str | None) -> str | None:
    if obj is None:
        return None
    return {"Q": "wikidata_item", "P": "wikidata_property", "L": "wikidata_lexeme"}.get(obj[0])


def _records(path: Path, items: Iterable[tuple[str, Any]],
             selection: Selection | None = None) -> Iterator[tuple[EntityRecord, str]]:
    for where, obj in items:
        record = record_from_json(obj, path, where, selection)
        if record is not None:
            yield record, str(path)


def _chunked(items: Iterable[tuple[EntityRecord, str]], size: int) -> Iterator[list[tuple[EntityRecord, str]]]:
    part: list[tuple[EntityRecord, str]] = []
    for item in items:
        part.append(item)
        if len(part) >= size:
            yield part
            part = []
    if part:
        yield part


def load(store: GraphStore, paths: Iterable[Path], selection: Selection | None = None,
         progress: Progress | None = None, chunk: int = CHUNK_ENTITIES) -> WikidataLoadSummary:
    """Load entity JSON files and dumps in one transaction; bad input raises `InputError`, writes nothing.

    Single documents are parsed and validated whole before anything is
    written; dumps are streamed `chunk` entities at a time inside the same
    transaction, so a bad line anywhere rolls back the whole load. Known
    time is reconciled against what the store held before the load, per
    chunk: within one streamed load each entity is expected once, as in a
    dump (several revisions of an entity belong in separate loads, or in
    single documents, which are folded in revision order).
    """
    files = expand(paths)
    stager = Stager(store, selection or Selection())
    before = graph_counts(store)
    skipped_entities = 0
    if not any(is_dump(f) for f in files):
        items: list[tuple[EntityRecord, str]] = []
        for f in files:
            for where, obj in read_document(f):
                record = record_from_json(obj, f, where, stager.selection)
                if record is None:
                    skipped_entities += 1
                else:
                    items.append((record, str(f)))
        write_batch(store, stager.batch(items), progress=progress)
    else:
        def all_records() -> Iterator[tuple[EntityRecord, str]]:
            for f in files:
                yield from _records(f, read_dump(f) if is_dump(f) else read_document(f), stager.selection)

        write_stream(store, (stager.batch(part) for part in _chunked(all_records(), chunk)), progress)
    if skipped_entities:
        stager.skipped["unsupported_entity"] += skipped_entities
    return stager.summary([str(f) for f in files], before, graph_counts(store))


def load_records(store: GraphStore, records: Iterable[EntityRecord], selection: Selection, origin: str,
                 progress: Progress | None = None) -> WikidataLoadSummary:
    """Load records obtained elsewhere (the SPARQL client) exactly as the JSON path would."""
    stager = Stager(store, selection)
    before = graph_counts(store)
    write_batch(store, stager.batch([(r, origin) for r in records]), progress=progress)
    return stager.summary([origin], before, graph_counts(store))


def facts_of_files(paths: Iterable[Path], selection: Selection | None = None) -> list[Fact]:
    """The facts the files assert, without a store (for exports and comparisons)."""
    selection = selection or Selection()
    out: list[Fact] = []
    for f in expand(paths):
        items = read_dump(f) if is_dump(f) else iter(read_document(f))
        for record, _ in _records(f, items, selection):
            try:
                out.extend(build_facts(record, selection))
            except ValueError as exc:
                raise InputError(f, record.id, str(exc)) from None
    return out


def records_of_files(paths: Iterable[Path]) -> Iterator[EntityRecord]:
    for f in expand(paths):
        items = read_dump(f) if is_dump(f) else iter(read_document(f))
        for record, _ in _records(f, items):
            yield record


# --- download --------------------------------------------------------------------------------------

ENTITY_DATA = "https://www.wikidata.org/wiki/Special:EntityData"


def entity_data_url(qid: str, base_url: str = ENTITY_DATA) -> str:
    if not QID_PATTERN.match(qid):
        raise ValueError(f"not an entity id: {qid!r} (expected Q42, P39, ...)")
    return f"{base_url.rstrip('/')}/{qid}.json"
