"""The catalog's point reads and change scans answered from a reader's interval index
(chronokg/graph/interval_index.py) instead of Cypher: each is a `QuerySpec.direct` of chronokg/queries/catalog.py,
gives the same typed rows in the same order (the conformance suite and tests/test_interval_index.py compare them
with the Cypher's), and returns None where the index does not hold the answer (a writer, a quick reader, a stale
or missing sidecar, another release's view): then the Cypher answers."""

from __future__ import annotations

import datetime as dt
from typing import Any, Protocol

from chronokg.graph.interval_reads import AsOfIndex
from chronokg.graph.store import GraphStore
from chronokg.queries.rows import ChangeRow, FactRow, HopRow, trusted_dict_rows, trusted_many, trusted_rows

# What each path reads of its query's parameters (catalog.py's models; named here as protocols because
# catalog.py imports this module).


class ChangedParams(Protocol):
    @property
    def start(self) -> dt.date: ...
    @property
    def end(self) -> dt.date: ...
    @property
    def subject(self) -> str | None: ...
    @property
    def predicate(self) -> str | None: ...


class AsOfParams(Protocol):
    @property
    def date(self) -> dt.date: ...
    @property
    def subject(self) -> str | None: ...
    @property
    def predicate(self) -> str | None: ...
    @property
    def known_at(self) -> dt.date | None: ...
    @property
    def limit(self) -> int | None: ...


class TimelineParams(Protocol):
    @property
    def subject(self) -> str: ...
    @property
    def predicate(self) -> str | None: ...
    @property
    def known_at(self) -> dt.date | None: ...
    @property
    def include_retracted(self) -> bool: ...


class TwoHopParams(Protocol):
    @property
    def subject(self) -> str: ...
    @property
    def date(self) -> dt.date: ...
    @property
    def predicate(self) -> str | None: ...
    @property
    def predicate2(self) -> str | None: ...


def changed_between(store: GraphStore, p: ChangedParams) -> list[ChangeRow] | None:
    """From the store's interval index, when it has a current one (embedded readers; conformance tests
    check it against the Cypher), else None. A quick-opened reader without one builds its property
    indexes first: the Cypher looks up every touched pair by subject."""
    index = store.intervals()
    if index is None:
        store.ensure_indexes()
        return None
    subjects, predicates, before, after = index.changed_columns(p.start, p.end, p.subject, p.predicate)
    return trusted_many(ChangeRow, [{"subject": s, "predicate": q, "before": b, "after": a}
                                    for s, q, b, a in zip(subjects, predicates, before, after, strict=True)])


def _intervals(store: GraphStore) -> AsOfIndex | None:
    """The store's point-read view of its interval index, when it has a current one (embedded readers), else
    None. Not on a quick (one-shot) reader: one point query costs less than reading the sidecar."""
    if store.quick:
        return None
    index = store.intervals()
    return None if index is None else index.as_of()


def fact_rows(values: list[dict[str, Any]]) -> list[FactRow]:
    """FactRows from the interval index's dicts without re-validating them: every value comes from our own
    typed columns (ids and names decoded from the sidecar's string tables, days from ordinals, literals
    through their recorded kind), so it already has its field's exact type; tests/test_interval_index.py
    and the conformance suite compare these rows to validated Cypher rows. Validation was ~3 us a row,
    most of a point read (benchmarks/README.md)."""
    return trusted_dict_rows(FactRow, values)


def facts_as_of(store: GraphStore, p: AsOfParams) -> list[FactRow] | None:
    """One subject's facts on a day by the latest releases, from the store's interval index when it has a
    current one (embedded readers; the conformance suite runs on one), else None: the Cypher answers."""
    if p.subject is None or p.known_at is not None or p.limit is not None:
        return None
    index = _intervals(store)
    return None if index is None else fact_rows(index.facts_as_of(p.subject, p.date, p.predicate))


def timeline(store: GraphStore, p: TimelineParams) -> list[FactRow] | None:
    """A subject's versions known now, from the interval index like `facts_as_of` (which holds exactly the
    facts known now); with known_at or retracted versions asked for, None: the Cypher answers."""
    if p.known_at is not None or p.include_retracted:
        return None
    index = _intervals(store)
    return None if index is None else fact_rows(index.timeline(p.subject, p.predicate))


HOP_FIELDS = ("subject", "predicate", "middle", "predicate2", "target")  # the order of the index's tuples


def two_hop(store: GraphStore, p: TwoHopParams) -> list[HopRow] | None:
    """Both hops from the interval index like `facts_as_of` (its tuples are text from our own tables)."""
    index = _intervals(store)
    if index is None:
        return None
    return trusted_rows(HopRow, HOP_FIELDS, index.two_hop(p.subject, p.date, p.predicate, p.predicate2))
