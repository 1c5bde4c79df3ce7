"""Wikidata statements from a live SPARQL endpoint, as the same facts the JSON loader makes.

The query uses Wikidata's statement model (`?item p:P39 ?st . ?st ps:P39 ?o ;
wikibase:rank ?rank`, time qualifiers through their value nodes so their
precision and calendar come along), one property at a time, paged with
LIMIT/OFFSET under a total order. Rows are folded back into the neutral
`EntityRecord`s the JSON path produces, so both paths share every rule.

Politeness: a descriptive User-Agent, bounded retries with exponential
backoff on 429/5xx/timeouts (honouring Retry-After), and an on-disk cache of
responses keyed by a hash of endpoint and query, so a repeated run does not
ask again.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import socket
import time
import urllib.error
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pydantic import Field

from chronokg.errors import ChronoKGError
from chronokg.graph.store import GraphStore
from chronokg.ingest.download import USER_AGENT
from chronokg.ingest.wikidata import (
    GREGORIAN,
    TEMPORAL_PROPERTIES,
    TIME_QUALIFIERS,
    Claim,
    EntityRecord,
    Selection,
    Value,
    WdTime,
    WikidataLoadSummary,
    load_records,
    normalize_amount,
)
from chronokg.progress import Progress

DEFAULT_ENDPOINT = "https://query.wikidata.org/sparql"
PAGE_SIZE = 5000
VALUES_CHUNK = 200  # items per VALUES block, to keep requests short
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
GET_LIMIT = 4000  # longer queries are POSTed

ENTITY = "http://www.wikidata.org/entity/"
STATEMENT = "http://www.wikidata.org/entity/statement/"
GENID = "http://www.wikidata.org/.well-known/genid/"
COMMONS_FILE = "http://commons.wikimedia.org/wiki/Special:FilePath/"
WIKIBASE = "http://wikiba.se/ontology#"
XSD = "http://www.w3.org/2001/XMLSchema#"
WKT = "http://www.opengis.net/ont/geosparql#wktLiteral"
NO_UNIT = ENTITY + "Q199"

PREFIXES = """PREFIX wd: <http://www.wikidata.org/entity/>
PREFIX p: <http://www.wikidata.org/prop/>
PREFIX ps: <http://www.wikidata.org/prop/statement/>
PREFIX psv: <http://www.wikidata.org/prop/statement/value/>
PREFIX pq: <http://www.wikidata.org/prop/qualifier/>
PREFIX pqv: <http://www.wikidata.org/prop/qualifier/value/>
PREFIX wdno: <http://www.wikidata.org/prop/novalue/>
PREFIX wikibase: <http://wikiba.se/ontology#>
PREFIX schema: <http://schema.org/>
PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>
"""

# wikibase:propertyType → the JSON datatype name.
PROPERTY_TYPES = {
    "WikibaseItem": "wikibase-item", "WikibaseProperty": "wikibase-property", "WikibaseLexeme": "wikibase-lexeme",
    "WikibaseForm": "wikibase-form", "WikibaseSense": "wikibase-sense", "ExternalId": "external-id",
    "String": "string", "Url": "url", "CommonsMedia": "commonsMedia", "Monolingualtext": "monolingualtext",
    "Quantity": "quantity", "Time": "time", "GlobeCoordinate": "globe-coordinate", "Math": "math",
    "GeoShape": "geo-shape", "TabularData": "tabular-data", "MusicalNotation": "musical-notation",
    "EntitySchema": "entity-schema",
}

Binding = dict[str, dict[str, str]]


class SparqlError(ChronoKGError):
    """The endpoint could not answer (after the allowed retries) or answered nonsense."""


def cache_key(endpoint: str, query: str) -> str:
    return hashlib.sha256(f"{endpoint}\n{query}".encode()).hexdigest()


@dataclass
class SparqlClient:
    """SELECT queries against one endpoint, with retries, backoff and a response cache."""

    endpoint: str = DEFAULT_ENDPOINT
    cache_dir: Path | None = None
    page_size: int = PAGE_SIZE
    attempts: int = 5
    backoff: float = 1.0
    max_backoff: float = 60.0
    timeout: float = 120.0
    user_agent: str = USER_AGENT
    refresh: bool = False
    sleep: Callable[[float], None] = time.sleep
    requests: int = field(default=0, init=False)
    cache_hits: int = field(default=0, init=False)

    # --- one request ------------------------------------------------------------------------------

    def select(self, query: str) -> list[Binding]:
        """The bindings of one SELECT, from the cache or the endpoint."""
        path = self._cache_path(query)
        if path is not None and path.exists() and not self.refresh:
            try:
                cached = json.loads(path.read_text(encoding="utf-8"))
                bindings: list[Binding] = cached["response"]["results"]["bindings"]
                self.cache_hits += 1
                return bindings
            except (OSError, ValueError, KeyError, TypeError):
                pass  # a damaged cache entry is fetched again
        response = self._fetch_with_retries(query)
        try:
            bindings = response["results"]["bindings"]
        except (KeyError, TypeError) as exc:
            raise SparqlError(f"{self.endpoint}: not a SPARQL SELECT result ({exc})") from exc
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(path.name + ".part")
            partial.write_text(json.dumps({"endpoint": self.endpoint, "query": query, "response": response}),
                               encoding="utf-8")
            partial.replace(path)
        return bindings

    def _cache_path(self, query: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / f"{cache_key(self.endpoint, query)}.json"

    def _fetch_with_retries(self, query: str) -> dict[str, Any]:
        for attempt in range(1, self.attempts + 1):
            try:
                return self._fetch(query)
            except Exception as exc:  # classified below; anything else is not ours to retry
                retry, wait = _retryable(exc)
                if not retry:
                    raise SparqlError(f"{self.endpoint}: query failed: {_describe(exc)}") from exc
                if attempt == self.attempts:
                    raise SparqlError(f"{self.endpoint}: gave up after {attempt} attempts: {_describe(exc)}") from exc
                delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
                if wait is not None:
                    delay = min(self.max_backoff, max(delay, wait))
                self.sleep(delay)
        raise SparqlError(f"{self.endpoint}: no attempts allowed")  # attempts < 1

    def _fetch(self, query: str) -> dict[str, Any]:
        from SPARQLWrapper import GET, JSON, POST, SPARQLWrapper

        self.requests += 1
        sw = SPARQLWrapper(self.endpoint, agent=self.user_agent)
        sw.setQuery(query)
        sw.setReturnFormat(JSON)
        sw.setMethod(POST if len(query) > GET_LIMIT else GET)
        sw.setTimeout(int(self.timeout))
        result = sw.query().convert()
        if not isinstance(result, dict):
            raise SparqlError(f"{self.endpoint}: expected SPARQL JSON results, got {type(result).__name__}")
        return result

    # --- paging -------------------------------------------------------------------------------------

    def select_all(self, query: str) -> Iterator[Binding]:
        """Every row of an ordered SELECT, `page_size` rows per request (LIMIT/OFFSET)."""
        offset = 0
        while True:
            page = self.select(f"{query}\nLIMIT {self.page_size}\nOFFSET {offset}")
            yield from page
            if len(page) < self.page_size:
                return
            offset += self.page_size


def _retryable(exc: BaseException) -> tuple[bool, float | None]:
    """Whether an error is worth another try, and how long the server asked us to wait."""
    from SPARQLWrapper.SPARQLExceptions import EndPointInternalError

    if isinstance(exc, EndPointInternalError):
        return True, None
    if isinstance(exc, urllib.error.HTTPError):
        if exc.code not in RETRY_STATUS:
            return False, None
        after = exc.headers.get("Retry-After") if exc.headers else None
        try:
            return True, float(after) if after else None
        except ValueError:
            return True, None
    if isinstance(exc, urllib.error.URLError | TimeoutError | socket.timeout | ConnectionError):
        return True, None
    if isinstance(exc, json.JSONDecodeError):  # a response cut short
        return True, None
    return False, None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    return f"{type(exc).__name__}: {exc}".strip()


# --- queries ------------------------------------------------------------------------------------------


def _values(var: str, ids: Sequence[str]) -> str:
    return f"VALUES ?{var} {{ {' '.join(f'wd:{i}' for i in ids)} }}"


def entities_query(qids: Sequence[str], pids: Sequence[str]) -> str:
    """Revision, modification time and English label of items; datatypes of properties."""
    return PREFIXES + (
        "SELECT ?item ?rev ?mod ?label ?ptype WHERE {\n"
        f"  {{ {_values('item', qids)}\n"
        "    OPTIONAL { ?item schema:version ?rev }\n"
        "    OPTIONAL { ?item schema:dateModified ?mod }\n"
        "    OPTIONAL { ?item rdfs:label ?label FILTER(LANG(?label) = \"en\") } }\n"
        f"  UNION {{ {_values('item', pids)} ?item wikibase:propertyType ?ptype }}\n"
        "}\nORDER BY ?item ?rev ?mod ?label ?ptype"
    )


def statements_query(qids: Sequence[str], pid: str) -> str:
    """Statements of one property with their main value node and time qualifiers.

    Each time qualifier is read through its value node (`pqv:`), so precision
    and calendar come along; an unknown value (somevalue) shows as a blank
    node or skolem IRI under `pq:`, and novalue as `?st a wdno:P…`. Every
    selected variable is in ORDER BY, so LIMIT/OFFSET pages are stable.
    """
    variables = ["?item", "?st", "?rank", "?o", "?oprec", "?ocal", "?ounit"]
    optional = []
    for q in TIME_QUALIFIERS:
        variables += [f"?t{q}", f"?p{q}", f"?c{q}", f"?u{q}", f"?n{q}"]
        optional.append(
            f"  OPTIONAL {{ ?st pqv:{q} ?v{q} . ?v{q} wikibase:timeValue ?t{q} ; wikibase:timePrecision ?p{q} ;"
            f" wikibase:timeCalendarModel ?c{q} }}\n"
            f"  OPTIONAL {{ ?st pq:{q} ?u{q} FILTER(isBlank(?u{q}) || STRSTARTS(STR(?u{q}), \"{GENID}\")) }}\n"
            f"  OPTIONAL {{ ?st a wdno:{q} BIND(true AS ?n{q}) }}\n"
        )
    return PREFIXES + (
        f"SELECT {' '.join(variables)} WHERE {{\n"
        f"  {_values('item', qids)}\n"
        f"  ?item p:{pid} ?st .\n"
        f"  ?st ps:{pid} ?o ; wikibase:rank ?rank .\n"
        f"  OPTIONAL {{ ?st psv:{pid} ?ov .\n"
        "    OPTIONAL { ?ov wikibase:timePrecision ?oprec }\n"
        "    OPTIONAL { ?ov wikibase:timeCalendarModel ?ocal }\n"
        "    OPTIONAL { ?ov wikibase:quantityUnit ?ounit } }\n"
        + "".join(optional)
        + "}\nORDER BY " + " ".join(variables)
    )


# --- rows → records -----------------------------------------------------------------------------------


def _local(uri: str, prefix: str) -> str | None:
    return uri[len(prefix):] if uri.startswith(prefix) else None


def _unknown(term: dict[str, str]) -> bool:
    """A somevalue: a blank node or one of Wikidata's skolem IRIs."""
    return term["type"] == "bnode" or (term["type"] == "uri" and term["value"].startswith(GENID))


def _int(term: dict[str, str] | None) -> int | None:
    return None if term is None else int(float(term["value"]))


def term_value(row: Binding, datatype: str | None) -> Value | None:
    """The main value of a row as the JSON path's `Value`."""
    o = row["o"]
    kind, text = o["type"], o["value"]
    if kind == "uri":
        entity = _local(text, ENTITY)
        if entity is not None:
            return Value(datatype or _entity_datatype(entity), entity=entity)
        filename = _local(text, COMMONS_FILE)
        if filename is not None:
            return Value(datatype or "commonsMedia", text=unquote(filename))
        return Value(datatype or "url", text=text)
    lit_type = o.get("datatype")
    if "xml:lang" in o:
        return Value(datatype or "monolingualtext", text=text, language=o["xml:lang"])
    if lit_type == XSD + "decimal" or (datatype == "quantity" and lit_type in (XSD + "integer", XSD + "double")):
        unit = row.get("ounit", {}).get("value")
        return Value(datatype or "quantity", amount=normalize_amount(text),
                     unit="1" if unit in (None, NO_UNIT) else unit)
    if lit_type == XSD + "dateTime":
        precision = _int(row.get("oprec"))
        calendar = row.get("ocal", {}).get("value", GREGORIAN)
        return Value(datatype or "time", time=WdTime.parse(text, 11 if precision is None else precision, calendar,
                                                           gregorian=True))
    if lit_type == WKT:
        return Value(datatype or "globe-coordinate", text=text)
    return Value(datatype or "string", text=text)


def _entity_datatype(entity: str) -> str:
    return {"P": "wikibase-property", "L": "wikibase-lexeme"}.get(entity[:1], "wikibase-item")


def _statement_id(uri: str) -> str:
    local = _local(uri, STATEMENT) or uri
    return local.replace("-", "$", 1)


@dataclass
class _Building:
    item: str
    rank: str
    value: Value | None
    snaktype: str
    times: dict[str, dict[str, WdTime | None]] = field(default_factory=dict)


def claims_from_rows(rows: Iterable[Binding], pid: str, datatype: str | None) -> dict[str, list[Claim]]:
    """Fold statement rows (one per time-qualifier value) into claims per item."""
    building: dict[str, _Building] = {}
    for row in rows:
        item = _local(row["item"]["value"], ENTITY)
        st = row["st"]["value"]
        if item is None:
            continue
        b = building.get(st)
        if b is None:
            rank = (_local(row["rank"]["value"], WIKIBASE) or "NormalRank").removesuffix("Rank").lower()
            unknown = _unknown(row["o"])
            b = _Building(item, rank, None if unknown else term_value(row, datatype),
                          "somevalue" if unknown else "value")
            building[st] = b
        for q in TIME_QUALIFIERS:
            values = b.times.get(q, {})
            if f"t{q}" in row:
                t = WdTime.parse(row[f"t{q}"]["value"], _int(row.get(f"p{q}")) or 11,
                                 row.get(f"c{q}", {}).get("value", GREGORIAN), gregorian=True)
                values.setdefault(f"{t}", t)
            if f"u{q}" in row:
                values.setdefault(row[f"u{q}"]["value"], None)  # somevalue: an unknown bound
            if f"n{q}" in row:
                values.setdefault("novalue", None)
            if values:
                b.times[q] = values
    out: dict[str, list[Claim]] = {}
    for st, b in building.items():
        times = {q: tuple(v.values()) for q, v in b.times.items()}
        out.setdefault(b.item, []).append(Claim(pid, _statement_id(st), b.rank, b.snaktype, b.value, times))
    return out


def _chunks(ids: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for i in range(0, len(ids), size):
        yield ids[i:i + size]


def fetch_records(client: SparqlClient, qids: Sequence[str], pids: Sequence[str],
                  progress: Progress | None = None) -> tuple[list[EntityRecord], list[str]]:
    """Entity records for `qids` restricted to `pids`; also the QIDs the endpoint does not know."""
    qids = list(dict.fromkeys(qids))
    pids = list(dict.fromkeys(pids))
    meta: dict[str, dict[str, Any]] = {}
    datatypes: dict[str, str] = {}
    if progress is not None:
        progress.start(len(qids) * (len(pids) + 1), "querying")
    for part in _chunks(qids, VALUES_CHUNK):
        for row in client.select_all(entities_query(part, pids)):
            ident = _local(row["item"]["value"], ENTITY)
            if ident is None:
                continue
            if "ptype" in row:
                ptype = _local(row["ptype"]["value"], WIKIBASE)
                if ptype in PROPERTY_TYPES:
                    datatypes[ident] = PROPERTY_TYPES[ptype]
                continue
            m = meta.setdefault(ident, {})
            if "rev" in row:
                m["rev"] = max(m.get("rev", 0), _int(row["rev"]) or 0)
            if "mod" in row:
                m["mod"] = row["mod"]["value"]
            if "label" in row:
                m.setdefault("label", row["label"]["value"])
        if progress is not None:
            progress.advance(len(part))
    claims: dict[str, list[Claim]] = {}
    for pid in pids:
        for part in _chunks(qids, VALUES_CHUNK):
            for item, found in claims_from_rows(client.select_all(statements_query(part, pid)), pid,
                                                datatypes.get(pid)).items():
                claims.setdefault(item, []).extend(found)
            if progress is not None:
                progress.advance(len(part))
    records, missing = [], []
    for qid in qids:
        m = meta.get(qid, {})
        if "rev" not in m or "mod" not in m:
            missing.append(qid)
            continue
        modified = dt.datetime.fromisoformat(m["mod"].replace("Z", "+00:00"))
        kind = "property" if qid.startswith("P") else "item"
        records.append(EntityRecord(qid, kind, int(m["rev"]), modified, m.get("label"), tuple(claims.get(qid, []))))
    return records, missing


class SparqlLoadSummary(WikidataLoadSummary):
    """A Wikidata load summary with the endpoint's traffic and the items it did not know."""

    requests: int = 0
    cache_hits: int = 0
    missing: list[str] = Field(default_factory=list)


def load(store: GraphStore, qids: Sequence[str], pids: Sequence[str] = TEMPORAL_PROPERTIES,
         client: SparqlClient | None = None, progress: Progress | None = None) -> SparqlLoadSummary:
    """Query the endpoint for these items and properties and load the facts in one transaction."""
    client = client or SparqlClient()
    selection = Selection.of(pids)
    records, missing = fetch_records(client, qids, selection.pids, progress)
    summary = load_records(store, records, selection, client.endpoint, progress)
    return SparqlLoadSummary(**summary.model_dump(), requests=client.requests, cache_hits=client.cache_hits,
                             missing=missing)
