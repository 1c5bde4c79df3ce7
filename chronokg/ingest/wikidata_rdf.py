"""Wikidata facts as RDF in Wikidata's own statement model (what the query service serves).

`wd:Q p:P39 ?st . ?st ps:P39 wd:Qx ; pq:P580 "…"^^xsd:dateTime ; wikibase:rank …`,
with full value nodes (`psv:`/`pqv:` → `wikibase:timeValue`, `timePrecision`,
`timeCalendarModel`, `quantityAmount`, `quantityUnit`) so precision and
calendar survive a round trip, and `schema:version`/`schema:dateModified` on
each entity, as the query service has them. Two builders: from entity
records (JSON files) and from the Wikidata facts in a store. Only the time
qualifiers (P580, P582, P585, P1319, P1326) are written; derived ends
(the next point of a series) are not, since Wikidata does not state them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from rdflib import RDF, RDFS, XSD, Graph, Namespace, URIRef
from rdflib import Literal as Lit
from rdflib.term import Node

from chronokg.graph.dates import parse_date
from chronokg.graph.model import stable_id
from chronokg.graph.store import GraphStore
from chronokg.ingest.wikidata import (
    EARLIEST,
    END,
    GREGORIAN,
    JULIAN,
    KIND,
    LATEST,
    POINT,
    PRECISION_DAY,
    PRECISION_MONTH,
    PRECISION_YEAR,
    START,
    TIME_QUALIFIERS,
    Claim,
    EntityRecord,
    Resolved,
    Selection,
    Skip,
    Value,
    WdTime,
    resolve,
    xsd_datetime,
)

WD = Namespace("http://www.wikidata.org/entity/")
WDS = Namespace("http://www.wikidata.org/entity/statement/")
WDV = Namespace("http://www.wikidata.org/value/")
WDT = Namespace("http://www.wikidata.org/prop/direct/")
P = Namespace("http://www.wikidata.org/prop/")
PS = Namespace("http://www.wikidata.org/prop/statement/")
PSV = Namespace("http://www.wikidata.org/prop/statement/value/")
PQ = Namespace("http://www.wikidata.org/prop/qualifier/")
PQV = Namespace("http://www.wikidata.org/prop/qualifier/value/")
WDNO = Namespace("http://www.wikidata.org/prop/novalue/")
WIKIBASE = Namespace("http://wikiba.se/ontology#")
SCHEMA = Namespace("http://schema.org/")
GEO = Namespace("http://www.opengis.net/ont/geosparql#")
GENID = "http://www.wikidata.org/.well-known/genid/"
COMMONS_FILE = "http://commons.wikimedia.org/wiki/Special:FilePath/"
NO_UNIT = WD["Q199"]  # Wikidata's RDF writes "1" (no unit) as Q199, the number one
RANKS = {"preferred": WIKIBASE.PreferredRank, "normal": WIKIBASE.NormalRank, "deprecated": WIKIBASE.DeprecatedRank}
_RDFLIB_FORMAT = {"nt": "nt", "ttl": "turtle"}
PREFIXES = {
    "wd": WD, "wds": WDS, "wdv": WDV, "wdt": WDT, "p": P, "ps": PS, "psv": PSV, "pq": PQ, "pqv": PQV,
    "wdno": WDNO, "wikibase": WIKIBASE, "schema": SCHEMA, "geo": GEO, "rdfs": RDFS, "xsd": XSD,
}


def property_type(datatype: str) -> URIRef:
    """JSON datatype → `wikibase:propertyType` (wikibase-item → WikibaseItem, commonsMedia → CommonsMedia)."""
    return WIKIBASE["".join(part[:1].upper() + part[1:] for part in datatype.split("-"))]


def new_graph() -> Graph:
    g = Graph()
    for prefix, ns in PREFIXES.items():
        g.bind(prefix, ns, override=True, replace=True)
    return g


def statement_uri(subject: str, statement_id: str | None, fallback: str) -> URIRef:
    """`Q42$ABC-…` → `wds:Q42-ABC-…` (Wikidata's form); a fact id where the id is unknown."""
    if statement_id and "$" in statement_id:
        return WDS[statement_id.replace("$", "-", 1)]
    return WDS[f"{subject}-{fallback}"]


class _Writer:
    """Adds entities and statements to a graph, one call per statement."""

    def __init__(self, graph: Graph) -> None:
        self.g = graph
        self.typed: set[str] = set()

    def entity(self, qid: str, label: str | None, revision: int | str | None, modified: dt.datetime | None) -> URIRef:
        node = WD[qid]
        self.g.add((node, RDF.type, WIKIBASE.Property if qid.startswith("P") else WIKIBASE.Item))
        if label:
            self.g.add((node, RDFS.label, Lit(label, lang="en")))
        if revision is not None:
            self.g.add((node, SCHEMA.version, Lit(int(revision), datatype=XSD.integer)))
        if modified is not None:
            stamp = modified.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if modified.tzinfo else \
                modified.strftime("%Y-%m-%dT%H:%M:%SZ")
            self.g.add((node, SCHEMA.dateModified, Lit(stamp, datatype=XSD.dateTime, normalize=False)))
        return node

    def property(self, pid: str, datatype: str | None) -> None:
        if pid in self.typed:
            return
        self.typed.add(pid)
        node = WD[pid]
        self.g.add((node, RDF.type, WIKIBASE.Property))
        self.g.add((node, WIKIBASE.claim, P[pid]))
        self.g.add((node, WIKIBASE.statementProperty, PS[pid]))
        self.g.add((node, WIKIBASE.statementValue, PSV[pid]))
        self.g.add((node, WIKIBASE.qualifier, PQ[pid]))
        self.g.add((node, WIKIBASE.qualifierValue, PQV[pid]))
        self.g.add((node, WIKIBASE.novalue, WDNO[pid]))
        if datatype:
            self.g.add((node, WIKIBASE.propertyType, property_type(datatype)))

    def statement(self, subject: str, pid: str, st: URIRef, rank: str) -> None:
        self.g.add((WD[subject], P[pid], st))
        self.g.add((st, RDF.type, WIKIBASE.Statement))
        self.g.add((st, WIKIBASE.rank, RANKS.get(rank, WIKIBASE.NormalRank)))

    def time_node(self, lexical: str, precision: int, calendar: str) -> tuple[Lit, URIRef]:
        node = WDV[stable_id(lexical, precision, calendar)]
        self.g.add((node, RDF.type, WIKIBASE.TimeValue))
        self.g.add((node, WIKIBASE.timeValue, Lit(lexical, datatype=XSD.dateTime, normalize=False)))
        self.g.add((node, WIKIBASE.timePrecision, Lit(precision, datatype=XSD.integer)))
        self.g.add((node, WIKIBASE.timeTimezone, Lit(0, datatype=XSD.integer)))
        self.g.add((node, WIKIBASE.timeCalendarModel, URIRef(calendar)))
        return Lit(lexical, datatype=XSD.dateTime, normalize=False), node

    def quantity_node(self, amount: str, unit: str | None) -> tuple[Lit, URIRef]:
        unit_node = NO_UNIT if unit in (None, "1") else URIRef(unit if "://" in unit else WD[unit])
        node = WDV[stable_id(amount, unit_node)]
        self.g.add((node, RDF.type, WIKIBASE.QuantityValue))
        self.g.add((node, WIKIBASE.quantityAmount, Lit(amount, datatype=XSD.decimal, normalize=False)))
        self.g.add((node, WIKIBASE.quantityUnit, unit_node))
        return Lit(amount, datatype=XSD.decimal, normalize=False), node

    def main(self, pid: str, st: URIRef, term: Node, value_node: URIRef | None) -> None:
        self.g.add((st, PS[pid], term))
        if value_node is not None:
            self.g.add((st, PSV[pid], value_node))

    def qualifier(self, st: URIRef, qpid: str, lexical: str | None, precision: int, calendar: str) -> None:
        """A time qualifier; `lexical` None is an unknown value (somevalue)."""
        if lexical is None:
            self.g.add((st, PQ[qpid], URIRef(GENID + stable_id(st, qpid))))
            return
        term, node = self.time_node(lexical, precision, calendar)
        self.g.add((st, PQ[qpid], term))
        self.g.add((st, PQV[qpid], node))


def _time_lexical(t: WdTime) -> tuple[str, int]:
    """xsd:dateTime and precision of a time as Wikidata's RDF writes it (Julian days made Gregorian)."""
    try:
        r = resolve(t)
        return xsd_datetime(r), r.precision
    except Skip:
        sign = "-" if t.year < 0 else ""
        return f"{sign}{abs(t.year):04d}-{max(t.month, 1):02d}-{max(t.day, 1):02d}T00:00:00Z", t.precision


def _value_term(w: _Writer, v: Value) -> tuple[Node, URIRef | None]:
    if v.entity is not None:
        return WD[v.entity], None
    if v.time is not None:
        lexical, precision = _time_lexical(v.time)
        return w.time_node(lexical, precision, v.time.calendar)
    if v.amount is not None:
        return w.quantity_node(v.amount, v.unit)
    text = v.text or ""
    if v.datatype == "monolingualtext":
        return Lit(text, lang=v.language), None
    if v.datatype == "url":
        return URIRef(text), None
    if v.datatype == "commonsMedia":
        return URIRef(COMMONS_FILE + quote(text, safe="")), None
    if v.datatype == "globe-coordinate":
        return Lit(text, datatype=GEO.wktLiteral), None
    return Lit(text), None


def add_record(graph: Graph, record: EntityRecord, selection: Selection | None = None) -> None:
    """One entity revision's statements (all of them, or the selected properties)."""
    w = _Writer(graph)
    _add_record(w, record, selection)


def _add_record(w: _Writer, record: EntityRecord, selection: Selection | None) -> None:
    w.entity(record.id, record.label, record.lastrevid, record.modified)
    taken = selection.taken(record) if selection is not None else None
    for c in record.claims:
        if taken is not None and c.pid not in taken:
            continue
        _add_claim(w, record.id, c)


def _add_claim(w: _Writer, subject: str, c: Claim) -> None:
    st = statement_uri(subject, c.statement_id, stable_id(subject, c.pid, c.value))
    w.property(c.pid, c.value.datatype if c.value is not None else None)
    w.statement(subject, c.pid, st, c.rank)
    if c.snaktype == "somevalue":
        w.main(c.pid, st, URIRef(GENID + stable_id(st, c.pid)), None)
    elif c.snaktype == "novalue":
        w.g.add((st, RDF.type, WDNO[c.pid]))
    elif c.value is not None:
        term, node = _value_term(w, c.value)
        w.main(c.pid, st, term, node)
    for qpid in TIME_QUALIFIERS:
        for t in c.times.get(qpid, ()):
            if t is None:
                w.qualifier(st, qpid, None, 0, GREGORIAN)
            else:
                lexical, precision = _time_lexical(t)
                w.qualifier(st, qpid, lexical, precision, t.calendar)


def records_graph(records: Iterable[EntityRecord], selection: Selection | None = None) -> Graph:
    """RDF of entity records as read from JSON (every statement unless a selection is given)."""
    w = _Writer(new_graph())
    for record in records:
        _add_record(w, record, selection)
    return w.g


def files_graph(paths: Iterable[Path], selection: Selection | None = None) -> Graph:
    """RDF of entity JSON files and dumps (builder (a): straight from the JSON)."""
    from chronokg.ingest.wikidata import records_of_files

    return records_graph(records_of_files(paths), selection)


# --- from a store -----------------------------------------------------------------------------------

_GRAIN_TO_WD = {"year": PRECISION_YEAR, "month": PRECISION_MONTH, "day": PRECISION_DAY}


def _bound_lexical(day: dt.date, precision: int) -> str:
    return xsd_datetime(Resolved(day, precision, False))


def store_graph(store: GraphStore, include_retracted: bool = False) -> Graph:
    """RDF of the Wikidata facts in a store (builder (b)): facts known now, unless `include_retracted`."""
    w = _Writer(new_graph())
    where = "f.source_kind = $kind" + ("" if include_retracted else " AND f.known_to IS NULL")
    facts = store.run(f"MATCH (f:Fact) WHERE {where} RETURN properties(f) AS f ORDER BY f.id", {"kind": KIND})
    entities = {r["id"]: r["caption"] for r in store.run(
        "MATCH (e:Entity) WHERE e.id IN $ids RETURN e.id AS id, e.caption AS caption",
        {"ids": sorted({r["f"]["subject_id"] for r in facts})})}
    newest: dict[str, tuple[int, dt.date | None]] = {}
    for r in store.run("MATCH (s:Source) WHERE s.kind = $kind RETURN s.entity_id AS subject, s.version AS rev, "
                       "s.release_date AS date", {"kind": KIND}):
        if r["subject"] is None or r["rev"] is None:
            continue
        if r["subject"] not in newest or int(r["rev"]) > newest[r["subject"]][0]:
            newest[r["subject"]] = (int(r["rev"]), r["date"])
    for qid in sorted(entities):
        rev, date = newest.get(qid, (None, None))
        stamp = dt.datetime(date.year, date.month, date.day, tzinfo=dt.UTC) if date else None
        w.entity(qid, entities[qid], rev, stamp)
    for row in facts:
        _add_fact(w, row["f"])
    return w.g


def _add_fact(w: _Writer, f: dict[str, Any]) -> None:
    subject, pid = f["subject_id"], f["predicate"]
    datatype = f.get("datatype")
    # A retracted version keeps its own statement node, apart from the current one with the same Wikidata id.
    st = statement_uri(subject, None if f.get("known_to") else f.get("statement_id"), f["id"])
    w.property(pid, datatype)
    w.statement(subject, pid, st, f.get("rank") or "normal")
    w.main(pid, st, *_fact_value(w, f))
    calendar = JULIAN if f.get("calendar") == "julian" else GREGORIAN
    grain = _GRAIN_TO_WD.get(f.get("precision") or "day", PRECISION_DAY)
    start_q, end_q = f.get("start_qualifier"), f.get("end_qualifier")
    if f.get("valid_from") is not None and start_q in (START, EARLIEST, POINT):
        precision = int(f.get("start_precision") or grain)
        w.qualifier(st, start_q, _bound_lexical(f["valid_from"], precision), precision, calendar)
    if end_q in (END, LATEST):
        precision = int(f.get("end_precision") or grain)
        # A widened end was stated as the same period as the start.
        end = f["valid_from"] if f.get("end_widened") else f.get("valid_to")
        if end is not None:
            w.qualifier(st, end_q, _bound_lexical(end, precision), precision, calendar)


def _fact_value(w: _Writer, f: dict[str, Any]) -> tuple[Node, URIRef | None]:
    if f.get("object_id") is not None:
        return WD[f["object_id"]], None
    value, datatype = f.get("value"), f.get("datatype")
    if datatype == "time" and isinstance(value, str):
        day, _ = parse_date(value)
        precision = int(f.get("value_precision") or PRECISION_DAY)
        calendar = JULIAN if f.get("value_calendar") == "julian" else GREGORIAN
        return w.time_node(_bound_lexical(day, precision), precision, calendar)
    if datatype == "quantity":
        return w.quantity_node(str(value), f.get("unit"))
    if datatype is None and isinstance(value, bool | int | float):
        return Lit(value), None
    v = Value(datatype or "string", text=str(value), language=f.get("language"))
    return _value_term(w, v)


def write(graph: Graph, out: Path, fmt: str = "nt") -> int:
    """Serialize to `out` (N-Triples `nt` or Turtle `ttl`); returns the number of triples."""
    if fmt not in _RDFLIB_FORMAT:
        raise ValueError(f"unknown RDF format {fmt!r} (expected nt or ttl)")
    if out.exists() and not out.is_file():  # a device or a pipe (`--out /dev/stdout`): a rename would replace it
        graph.serialize(destination=str(out), format=_RDFLIB_FORMAT[fmt], encoding="utf-8")
        return len(graph)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".part")
    graph.serialize(destination=str(partial), format=_RDFLIB_FORMAT[fmt], encoding="utf-8")
    partial.replace(out)
    return len(graph)


def ntriples(graph: Graph) -> bytes:
    data = graph.serialize(format="nt", encoding="utf-8")
    return data if isinstance(data, bytes) else data.encode()

