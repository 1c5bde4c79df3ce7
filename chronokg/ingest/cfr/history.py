"""Continuing a title's history: each paragraph's versions across editions, from the store and the new files."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch
from chronokg.graph.dates import Precision
from chronokg.graph.model import Fact, Scalar, Source
from chronokg.graph.store import GraphStore
from chronokg.ingest.cfr.editions import Edition, align, changed_span, paragraph_predicate, part_id, section_id
from chronokg.ingest.cfr.xml_reader import (
    ATTR_KEYS,
    AUTHORITY,
    CITATION,
    DESIGNATION,
    HEADING,
    KIND,
    PARAGRAPH,
    PART_KIND,
    SECTION_KIND,
    SOURCE_NOTE,
)

# --- continuing a title's history ---------------------------------------------------------------------


@dataclass
class Version:
    """One fact version this load creates or changes; `stored` ones exist in the store already."""

    fid: str
    fact: Fact
    stored: bool
    asserted: set[str] = field(default_factory=set)
    updates: dict[str, Any] = field(default_factory=dict)

    @property
    def subject_kind(self) -> str:
        return PART_KIND if ":part-" in self.fact.subject else SECTION_KIND

    def set_attrs(self, **attrs: Scalar) -> None:
        if self.stored:
            self.updates.update(attrs)
        self.fact = self.fact.model_copy(update={"attrs": {**self.fact.attrs, **attrs}})


class TitleHistory:
    """The open facts of one title, continued edition by edition."""

    def __init__(self, title: int) -> None:
        self.title = title
        self.versions: dict[str, Version] = {}
        self.open: dict[str, dict[str, str]] = {}  # subject -> predicate -> fact id
        self.max_key: dict[str, int] = {}  # subject -> highest paragraph number ever used
        self.has_history = False
        self.touched: set[str] = set()

    @classmethod
    def from_store(cls, store: GraphStore, title: int) -> TitleHistory:
        """Read the title's current (not retracted) facts; the open-ended ones are the latest edition."""
        history = cls(title)
        attrs = ", ".join(f"f.{k} AS {k}" for k in ATTR_KEYS)
        rows = store.run(
            "MATCH (f:Fact) WHERE f.source_kind = $kind AND f.subject_id STARTS WITH $prefix AND f.known_to IS NULL "
            "RETURN f.id AS id, f.subject_id AS subject, f.predicate AS predicate, f.object_id AS object, "
            "f.value AS value, f.valid_from AS valid_from, f.valid_to AS valid_to, f.precision AS precision, "
            f"f.known_from AS known_from, f.source_id AS source_id, {attrs}",
            {"kind": KIND, "prefix": f"{KIND}:{title}:"},
        )
        for r in rows:
            history.has_history = True
            history._note_key(r["subject"], r["predicate"])
            if r["valid_to"] is not None:
                continue
            fact = Fact(
                subject=r["subject"], predicate=r["predicate"], object=r["object"], value=r["value"],
                valid_from=r["valid_from"], precision=Precision(r["precision"] or "day"),
                known_from=r["known_from"], source_id=r["source_id"], source_kind=KIND,
                attrs={k: r[k] for k in ATTR_KEYS if r[k] is not None},
            )
            history.versions[r["id"]] = Version(r["id"], fact, stored=True)
            history.open.setdefault(r["subject"], {})[r["predicate"]] = r["id"]
        return history

    def _note_key(self, subject: str, predicate: str) -> None:
        if predicate.startswith(PARAGRAPH + ":"):
            key = int(predicate.split(":", 1)[1])
            self.max_key[subject] = max(self.max_key.get(subject, 0), key)

    # -- one edition --

    def apply(self, edition: Edition, batch: GraphBatch) -> None:
        src = edition.source
        batch.source(src)
        seen: set[tuple[str, str]] = set()
        for part in edition.parts:
            pid = part_id(self.title, part.number)
            batch.entity(pid, kind=PART_KIND, caption=part.heading or f"Part {part.number}", known_from=edition.date,
                         cfr_node=part.node)
            for predicate, value in ((HEADING, part.heading), (AUTHORITY, part.authority),
                                     (SOURCE_NOTE, part.source_note)):
                if value:
                    self._assert(pid, predicate, value, src, seen)
        for sec in edition.sections:
            sid = section_id(self.title, sec.number)
            batch.entity(sid, kind=SECTION_KIND, caption=sec.caption, known_from=edition.date, cfr_node=sec.node,
                         cfr_part=part_id(self.title, sec.part) if sec.part else None)
            for predicate, value in ((HEADING, sec.heading), (CITATION, sec.citation),
                                     (AUTHORITY, sec.authority), (SOURCE_NOTE, sec.source_note)):
                if value:
                    self._assert(sid, predicate, value, src, seen)
            for key, position, text in self._paragraph_keys(sid, sec.paragraphs):
                attrs: dict[str, Scalar] = {"position": position}
                if m := DESIGNATION.match(text):
                    attrs["designation"] = m.group(0)
                self._assert(sid, paragraph_predicate(key), text, src, seen, attrs)
        for subject, preds in list(self.open.items()):
            for predicate in list(preds):
                if (subject, predicate) not in seen:
                    self._close(subject, predicate, src)
        self.has_history = True

    def _paragraph_keys(self, sid: str, paragraphs: list[str]) -> list[tuple[int, int, str]]:
        """(paragraph number, position from 1, text) for the edition's paragraphs of one section."""
        current = sorted(
            ((self.versions[fid], int(pred.split(":", 1)[1])) for pred, fid in self.open.get(sid, {}).items()
             if pred.startswith(PARAGRAPH + ":")),
            key=lambda vk: (_position(vk[0].fact), vk[1]),
        )
        old_texts = [str(v.fact.value) for v, _ in current]
        out: list[tuple[int, int, str]] = []
        for i, j in align(old_texts, paragraphs):
            if j is None:
                continue  # removed: ends when unseen keys are closed
            if i is None:
                key = self.max_key.get(sid, 0) + 1
                self.max_key[sid] = key
            else:
                key = current[i][1]
            out.append((key, j + 1, paragraphs[j]))
        return sorted(out, key=lambda t: t[1])

    def _assert(self, subject: str, predicate: str, value: str, src: Source, seen: set[tuple[str, str]],
                attrs: dict[str, Scalar] | None = None) -> None:
        seen.add((subject, predicate))
        attrs = dict(attrs or {})
        fid = self.open.get(subject, {}).get(predicate)
        extra: dict[str, Scalar] = {}
        if fid is not None:
            version = self.versions[fid]
            if version.fact.value == value:
                version.asserted.add(src.id)
                changed = {k: v for k, v in attrs.items() if version.fact.attrs.get(k) != v}
                if changed:
                    version.set_attrs(**changed)
                self.touched.add(fid)
                return
            old = str(version.fact.value)
            closed = self._close(subject, predicate, src)
            span = changed_span(old, value)
            extra = {"change": "changed", "changed_from_text": old, "changed_span_start": span.start,
                     "changed_span_end": span.end, "changed_old": span.old, "changed_new": span.new,
                     "changed_regions": span.regions, "prior_fact_id": closed}
        elif self.has_history:
            extra = {"change": "added"}
        assert src.release_date is not None
        fact = Fact(subject=subject, predicate=predicate, value=value, valid_from=src.release_date,
                    precision=Precision.DAY, known_from=src.release_date, source_id=src.id, source_kind=KIND,
                    attrs={**attrs, **extra})
        self._add(fact, src.id)
        self._note_key(subject, predicate)

    def _add(self, fact: Fact, asserted_in: str) -> str:
        fid = fact.id
        version = self.versions.setdefault(fid, Version(fid, fact, stored=False))
        version.asserted.add(asserted_in)
        self.touched.add(fid)
        if fact.valid_to is None:
            self.open.setdefault(fact.subject, {})[fact.predicate] = fid
        return fid

    def _close(self, subject: str, predicate: str, src: Source) -> str:
        """End an open fact at `src`'s date: retract the open-ended version, add the closed one."""
        end = src.release_date
        assert end is not None
        fid = self.open[subject].pop(predicate)
        version = self.versions[fid]
        old = version.fact
        if version.stored:
            version.updates.update(known_to=end, retracted_by=src.id)
        version.fact = old.model_copy(update={"known_to": end, "attrs": {**old.attrs, "retracted_by": src.id}})
        self.touched.add(fid)
        attrs = {k: v for k, v in old.attrs.items() if k != "retracted_by"}
        attrs["text_source_id"] = old.attrs.get("text_source_id") or old.source_id
        closed = old.model_copy(update={"valid_to": end, "known_from": end, "known_to": None, "source_id": src.id,
                                        "attrs": attrs})
        return self._add(closed, src.id)

    # -- staging --

    def stage(self, batch: GraphBatch) -> None:
        for fid in sorted(self.touched):
            version = self.versions[fid]
            if version.stored:
                if version.updates:
                    batch.node(schema.FACT, fid, **version.updates)
            else:
                staged = batch.fact(version.fact, subject_kind=version.subject_kind)
                assert staged == fid
            for sid in sorted(version.asserted):
                batch.edge(schema.ASSERTED_IN, schema.FACT, fid, schema.SOURCE, sid)


def _position(fact: Fact) -> int:
    position = fact.attrs.get("position")
    return position if isinstance(position, int) else 0


def loaded_editions(store: GraphStore, title: int) -> dict[dt.date, str | None]:
    """Edition date -> checksum of every edition of `title` in the store."""
    rows = store.run(
        "MATCH (s:Source) WHERE s.kind = $kind AND s.id STARTS WITH $prefix "
        "RETURN s.release_date AS date, s.checksum AS checksum",
        {"kind": KIND, "prefix": f"{KIND}:title-{title}@"},
    )
    return {r["date"]: r["checksum"] for r in rows if r["date"] is not None}
