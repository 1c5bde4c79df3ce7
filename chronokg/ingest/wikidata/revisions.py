"""Known time across revisions: a newer revision closes the facts it no longer asserts."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch
from chronokg.graph.store import GraphStore
from chronokg.ingest.wikidata.records import KIND, EntityRecord, source_id

# --- known time across revisions -------------------------------------------------------------------


@dataclass
class _FactState:
    predicate: str
    known_to: dt.date | None
    revs: set[int]
    touched: bool = False


@dataclass
class SubjectState:
    revisions: dict[int, dt.date] = field(default_factory=dict)
    facts: dict[str, _FactState] = field(default_factory=dict)


def read_states(store: GraphStore, subjects: Sequence[str], chunk: int = 1000) -> dict[str, SubjectState]:
    """What the store already knows of these subjects from Wikidata: revisions and facts."""
    states: dict[str, SubjectState] = {s: SubjectState() for s in subjects}
    for i in range(0, len(subjects), chunk):
        part = list(subjects[i:i + chunk])
        for r in store.run(
            "MATCH (s:Source) WHERE s.kind = $kind AND s.entity_id IN $subjects "
            "RETURN s.entity_id AS subject, s.version AS rev, s.release_date AS date",
            {"kind": KIND, "subjects": part},
        ):
            states[r["subject"]].revisions[int(r["rev"])] = r["date"]
        for r in store.run(
            "MATCH (f:Fact) WHERE f.source_kind = $kind AND f.subject_id IN $subjects "
            "OPTIONAL MATCH (f)-[:ASSERTED_IN]->(s:Source) WHERE s.kind = $kind "
            "RETURN f.id AS id, f.subject_id AS subject, f.predicate AS predicate, f.known_to AS known_to, "
            "collect(s.version) AS revs",
            {"kind": KIND, "subjects": part},
        ):
            states[r["subject"]].facts[r["id"]] = _FactState(
                r["predicate"], r["known_to"], {int(v) for v in r["revs"] if v is not None})
    return states


def reconcile(state: SubjectState, record: EntityRecord, fact_ids: dict[str, str],
              covered: Iterable[str]) -> int:
    """Fold one revision into a subject's known-time state; returns how many facts it retracts.

    `fact_ids` maps the ids of the facts the revision asserts to their predicates.
    A newer revision closes what it no longer asserts and reopens what it
    asserts again; an older one loaded late only adds its own facts, closed at
    the next stored revision (assumed to cover the same properties).
    """
    rev, date = record.lastrevid, record.modified.date()
    later = sorted(r for r in state.revisions if r > rev)
    newest = not later
    next_date = state.revisions[later[0]] if later else None
    for fid, predicate in fact_ids.items():
        st = state.facts.get(fid)
        if st is None:
            state.facts[fid] = _FactState(predicate, next_date, {rev}, touched=True)
            continue
        st.touched = True
        if rev not in st.revs:
            if newest and st.known_to is not None and (not st.revs or rev > max(st.revs)):
                st.known_to = None
            st.revs.add(rev)
    retracted = 0
    cover = set(covered)
    for fid, st in state.facts.items():
        if fid in fact_ids or st.predicate not in cover or not newest:
            continue
        if st.known_to is None and st.revs and rev > max(st.revs):
            st.known_to = date
            st.touched = True
            retracted += 1
    state.revisions[rev] = date
    return retracted


def stage_known(batch: GraphBatch, subject: str, state: SubjectState) -> None:
    """Write the known interval and first asserting revision of every touched fact."""
    facts = batch.nodes.setdefault(schema.FACT, {})
    for fid, st in state.facts.items():
        if not st.touched or not st.revs:
            continue
        first = min(st.revs)
        row = facts.setdefault(fid, {"id": fid})
        row["known_from"] = state.revisions[first]
        row["known_to"] = st.known_to  # explicit None reopens a fact a newer revision asserts again
        row["source_id"] = source_id(subject, first)
        st.touched = False
