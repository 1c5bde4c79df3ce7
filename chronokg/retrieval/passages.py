"""Passages for retrieval, read from the store: each with its text, its validity interval and its source.

Three kinds:

* `recommendation`: a recommendation fact's text (TempoMed, DriftMed, ...), valid from its
  guideline's issue until the version that replaces it; source = the guideline (PMID); embedded
  after its `heading` (the decision's caption, the guideline's organisation, title, year and topic:
  the sentence alone rarely names what it is about);
* `fact`: any other fact verbalised as one sentence ("Alice — employer: Acme, valid from
  2000-01-01 until 2010-01-01"), with the fact's own interval;
* `chunk`: long literal texts (regulation paragraphs, guideline text) cut into chunks of at
  most `CHUNK_CHARS` characters at sentence ends, each with the interval of its fact.

A passage's key is its fact id (plus `#n` for the n-th chunk), so a target fact of an answer
key is found in the index by id. Known time comes along, so an index can also answer "as known on".
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from chronokg.graph.store import GraphStore

RECOMMENDATION = "recommendation"
CHUNK_CHARS = 1000  # ~200 word pieces: inside all-MiniLM-L6-v2's 256-token window
PAGE = 20_000
KINDS = ("recommendation", "fact", "chunk")


class Passage(BaseModel):
    """One retrievable text with its validity and provenance."""

    model_config = ConfigDict(frozen=True)

    key: str
    kind: str
    text: str
    fact_id: str
    subject: str
    predicate: str
    source: str
    title: str | None = None
    topic: str | None = None
    organization: str | None = None
    heading: str | None = None
    valid_from: dt.date | None = None
    valid_to: dt.date | None = None
    known_from: dt.date | None = None
    known_to: dt.date | None = None

    def valid_at(self, day: dt.date) -> bool:
        return (self.valid_from is None or self.valid_from <= day) and (self.valid_to is None or self.valid_to > day)

    @property
    def embedded(self) -> str:
        """What is embedded: the heading (what the passage is about, whose guideline) before the text, so a
        query that names the topic or the guideline finds a recommendation whose own words name neither."""
        return f"{self.heading}: {self.text}" if self.heading else self.text


_FACTS = """
MATCH (f:Fact) WHERE f.id > $after
WITH f ORDER BY f.id LIMIT $page
OPTIONAL MATCH (s:Entity {id: f.subject_id})
OPTIONAL MATCH (o:Entity {id: f.object_id})
OPTIONAL MATCH (p:Entity {id: f.predicate})
OPTIONAL MATCH (f)-[:FROM_GUIDELINE]->(g:Guideline)
OPTIONAL MATCH (g)-[:ISSUED_BY]->(org:Organization)
RETURN f.id AS id, f.subject_id AS subject, s.caption AS subject_caption, f.predicate AS predicate,
       p.caption AS predicate_caption, f.object_id AS object, o.caption AS object_caption, f.value AS value,
       f.valid_from AS valid_from, f.valid_to AS valid_to, f.known_from AS known_from, f.known_to AS known_to,
       f.source_id AS source_id, g.id AS guideline, g.year AS guideline_year, g.caption AS guideline_caption,
       g.topic AS guideline_topic, collect(org.caption) AS orgs
ORDER BY id"""


def fact_rows(store: GraphStore, page: int = PAGE) -> Iterator[dict[str, Any]]:
    """Every fact with the captions and guideline a passage needs, `page` facts per query (keyset paging)."""
    after = ""
    while True:
        rows = store.run(_FACTS, {"after": after, "page": page})
        yield from rows
        if len(rows) < page:
            return
        after = rows[-1]["id"]


def _span(row: dict[str, Any]) -> str:
    start, end = row.get("valid_from"), row.get("valid_to")
    if start and end:
        return f"valid from {start} until {end}"
    if start:
        return f"valid from {start}"
    if end:
        return f"valid until {end}"
    return "no known validity bounds"


def verbalise(row: dict[str, Any]) -> str:
    """One sentence for a fact: subject — predicate: object or value, and its validity."""
    subject = row.get("subject_caption") or row["subject"]
    if row.get("subject_caption") and row["subject_caption"] != row["subject"]:
        subject = f"{row['subject_caption']} ({row['subject']})"
    predicate = row.get("predicate_caption") or str(row["predicate"]).replace("_", " ")
    obj = row.get("object_caption") or row.get("object")
    shown = obj if obj is not None else row.get("value")
    return f"{subject} — {predicate}: {shown}; {_span(row)}."


def chunks(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """`text` cut at sentence ends (or, for a sentence longer than `limit`, at spaces) into pieces <= limit."""
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= limit:
        return [text]
    sentences = re.split(r"(?<=[.!?;])\s+", text)
    pieces: list[str] = []
    current = ""
    for sentence in sentences:
        while len(sentence) > limit:
            cut = sentence.rfind(" ", 0, limit)
            cut = cut if cut > limit // 2 else limit
            if current:
                pieces.append(current)
                current = ""
            pieces.append(sentence[:cut].strip())
            sentence = sentence[cut:].strip()
        if current and len(current) + 1 + len(sentence) > limit:
            pieces.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    if current:
        pieces.append(current)
    return [p for p in pieces if p]


def _organization(row: dict[str, Any]) -> str | None:
    orgs = sorted(o for o in row.get("orgs") or [] if o)
    return " / ".join(orgs) if orgs else None


def _title(row: dict[str, Any]) -> str | None:
    if row.get("guideline") is None:
        return None
    org = _organization(row)
    year = row.get("guideline_year")
    who = f"{org} " if org else ""
    return f"{who}guideline {row['guideline']}" + (f" ({year})" if year else "")


def heading(row: dict[str, Any]) -> str | None:
    """What a recommendation or chunk is about, for the embedded text: the subject's caption (a clinical
    decision: "chest compression depth for an adult in cardiac arrest"), then the guideline's organisation,
    title, year and topic. A recommendation's own sentence rarely names its topic ("Push down at least 2
    inches"), so without this a query about the topic ranks it below any fact that names the words."""
    parts: list[str] = []
    caption = row.get("subject_caption")
    if caption:
        parts.append(str(caption))
    if row.get("guideline") is not None:
        guideline = ", ".join(str(x) for x in (_organization(row), row.get("guideline_caption")) if x)
        year, topic = row.get("guideline_year"), row.get("guideline_topic")
        extra = "; ".join(str(x) for x in (year, topic) if x)
        parts.append(f"{guideline or 'guideline ' + str(row['guideline'])}" + (f" ({extra})" if extra else ""))
    return " — ".join(parts) or None


def passages_of_row(row: dict[str, Any], limit: int = CHUNK_CHARS) -> list[Passage]:
    """The passages one fact row gives (one, or several chunks of a long text)."""
    base = {"fact_id": row["id"], "subject": row["subject"], "predicate": row["predicate"],
            "source": row.get("guideline") or row["source_id"], "title": _title(row),
            "topic": row.get("guideline_topic"), "organization": _organization(row),
            "valid_from": row.get("valid_from"), "valid_to": row.get("valid_to"),
            "known_from": row.get("known_from"), "known_to": row.get("known_to")}
    value = row.get("value")
    if isinstance(value, str) and (row["predicate"] == RECOMMENDATION or len(value) > limit):
        base["heading"] = heading(row)
    if row["predicate"] == RECOMMENDATION and isinstance(value, str):
        pieces = chunks(value, limit)
        if len(pieces) == 1:
            return [Passage(key=row["id"], kind=RECOMMENDATION, text=pieces[0], **base)]
        return [Passage(key=f"{row['id']}#{n}", kind=RECOMMENDATION, text=p, **base) for n, p in enumerate(pieces)]
    if isinstance(value, str) and len(value) > limit:
        return [Passage(key=f"{row['id']}#{n}", kind="chunk", text=p, **base)
                for n, p in enumerate(chunks(value, limit))]
    return [Passage(key=row["id"], kind="fact", text=verbalise(row), **base)]


def store_passages(store: GraphStore, kinds: Sequence[str] = KINDS,
                   predicates: Sequence[str] | None = None) -> Iterator[Passage]:
    """Every passage of the store, of the given kinds (and predicates), in fact-id order."""
    wanted = set(kinds)
    allowed = set(predicates) if predicates is not None else None
    for row in fact_rows(store):
        if allowed is not None and row["predicate"] not in allowed:
            continue
        for passage in passages_of_row(row):
            if passage.kind in wanted:
                yield passage
