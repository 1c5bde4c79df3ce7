"""Code of Federal Regulations (eCFR / govinfo XML): sections, paragraph facts and edition-to-edition changes.

Inputs are whole-title files in either layout GPO publishes:

* eCFR ("ECFR" bulk data, and the eCFR versioner API): ``DIV1 TYPE=TITLE > DIV3 CHAPTER > (DIV4 SUBCHAP)
  > DIV5 PART > (DIV6 SUBPART) > (DIV7 SUBJGRP) > DIV8 TYPE=SECTION`` with ``N``/``NODE`` attributes,
  ``HEAD``, ``P`` (inline ``I``/``E``/...), ``CITA``, ``AUTH``/``SOURCE``; the edition date is ``AMDDATE``;
* the annual edition (``CFRDOC``): ``PART > SECTION > SECTNO, SUBJECT, P``; the edition date is
  ``REVISED`` ("Revised as of January 1, 2023"), else ``AMDDATE``.

Files are streamed with ``iterparse`` (each section is dropped once read). Several volume files of one
title and date make one edition; an edition is taken to be the whole title (a section missing from a
later edition ends there), so give every volume of an edition together.

Model (``KIND`` = ``cfr``). One entity per section (``cfr:1:1.1``, kind ``cfr_section``, caption
"§ 1.1 Definitions") and per part (``cfr:1:part-1``, kind ``cfr_part``). Facts about them, valid from
the edition date (precision day) until the first later edition that changes or drops them:

* ``paragraph:001``, ``paragraph:002``...: one predicate per paragraph, so ``changed_between`` lists
  exactly the changed paragraphs and ``timeline(subject, 'paragraph:002')`` shows one paragraph's
  versions. The number is the paragraph's identity, not its position: later editions are aligned to
  the previous one with difflib, an aligned paragraph keeps its number (changed or not), an inserted
  one takes the next unused number. Its position in the latest edition asserting it is ``position``;
  a leading "(a)" is ``designation``;
* ``heading``, ``citation`` (CITA), ``authority`` (AUTH), ``source_note`` (SOURCE) on sections and
  parts.

Changes. Facts are keyed by content and valid time (`Fact.id` includes ``valid_to``), so a fact that a
later edition ends is not edited in place: the open-ended version is *retracted* (``known_to`` = the
new edition's date, ``retracted_by``) and a *closed* version ``[valid_from, new date)`` is added
(known from the new edition, ``text_source_id`` = the edition its text came from). What was believed
before stays queryable with ``known_at``. A changed value's new version records the change for
fill-in-the-blank questions: ``change='changed'``, ``changed_from_text`` (the old value),
``changed_span_start``/``changed_span_end`` (character offsets in the new value of the changed
words), ``changed_old``/``changed_new`` (the replaced and the replacing words), ``changed_regions``
and ``prior_fact_id``. A value new in a later edition has ``change='added'``. An unchanged value is
the same fact; it only gains an ``ASSERTED_IN`` edge to the new edition.

Loading editions in separate runs reads the title's current facts from the store and continues from
them, so one-by-one and all-at-once loads give the same graph, written in one transaction per run.
Editions must arrive oldest first: an edition older than the newest one loaded is refused (load into
a fresh store instead); one already loaded from the same bytes is skipped, so re-loading changes
nothing.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from chronokg.errors import InputError
from chronokg.graph import schema
from chronokg.graph.batch import GraphBatch
from chronokg.graph.dates import Precision
from chronokg.graph.merge import DEFAULT_POLICY
from chronokg.graph.model import Fact, Scalar, Source
from chronokg.graph.store import GraphStore
from chronokg.ingest.common import LoadSummary, apply, check_release, file_sha256
from chronokg.ingest.download import Downloaded, fetch
from chronokg.progress import Progress

KIND = "cfr"
# Editions load oldest first: where a section sits, its caption and a paragraph's position are the
# newest edition's.
POLICY = DEFAULT_POLICY.with_latest(schema.ENTITY, "caption", "cfr_node", "cfr_part").with_latest(
    schema.FACT, "position", "designation", "text_source_id")
SECTION_KIND = "cfr_section"
PART_KIND = "cfr_part"
HEADING = "heading"
CITATION = "citation"
AUTHORITY = "authority"
SOURCE_NOTE = "source_note"
PARAGRAPH = "paragraph"
ECFR_BASE_URL = "https://www.ecfr.gov"

# Attributes this loader puts on facts (read back when a later edition continues from the store).
ATTR_KEYS = (
    "position", "designation", "change", "changed_from_text", "changed_span_start", "changed_span_end",
    "changed_old", "changed_new", "changed_regions", "prior_fact_id", "text_source_id", "retracted_by",
)

# --- reading the XML ---------------------------------------------------------------------------------

_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}
_DATE = re.compile(r"([A-Za-z]{3,9})\.?\s+(\d{1,2}),\s*(\d{4,})(?!\d)")
_SECTION_PREFIX = re.compile(r"^§§?\s*\S+(?:\s*[-–—]\s*\S+)?\s*")
_PART_NUMBER = re.compile(r"\bPART\s+([0-9A-Za-z]+)", re.I)
_DESIGNATION = re.compile(r"^\(([0-9A-Za-z]{1,6})\)")
_TOKEN = re.compile(r"\w+|[^\w\s]")

SECTION_TAGS = {"DIV8", "SECTION"}
PART_TAGS = {"DIV5", "PART"}
# The eCFR levels this loader reads by TYPE (GPO eCFR XML: DIV5 is a PART, DIV8 a SECTION): a DIV5/DIV8 of
# another TYPE would be skipped silently, losing the part or section, so it is refused instead.
DIV_TYPES = {"DIV5": "PART", "DIV8": "SECTION"}
# Children of a section that are not paragraphs: its number and heading, notes about it, editorial matter.
_NOT_PARAGRAPHS = {
    "HEAD", "SECTNO", "SUBJECT", "RESERVED", "CITA", "AUTH", "SECAUTH", "SOURCE", "EDNOTE", "EFFDNOTP",
    "PRTPAGE", "STARS",
}
# Block containers: their children are the paragraphs.
_CONTAINERS = {
    "EXTRACT", "EXAMPLE", "FTNT", "DIV", "NOTE", "NOTES", "APPENDIX", "BOXTXT", "TABLE", "TBODY", "THEAD",
    "GPOTABLE",
}
_ROWS = {"TR", "ROW", "BOXHD"}  # a table row is one paragraph, its cells joined with " | "
_LABELS = {"HED", "HD"}  # "Authority:" / "Source:" labels inside AUTH / SOURCE


def _norm(text: str) -> str:
    return " ".join(text.split())


def _text(el: ET.Element) -> str:
    return _norm("".join(el.itertext()))


def _note_text(el: ET.Element) -> str:
    """AUTH/SOURCE text without its "Authority:" label."""
    pieces = [el.text or ""]
    for child in el:
        if child.tag not in _LABELS:
            pieces.append("".join(child.itertext()))
        pieces.append(child.tail or "")
    return _norm(" ".join(pieces))


def _blocks(el: ET.Element) -> Iterator[str]:
    if el.tag in _ROWS:
        cells = [_text(c) for c in el]
        row = " | ".join(c for c in cells if c)
        if row:
            yield row
    elif el.tag in _CONTAINERS:
        if el.text and el.text.strip():
            yield _norm(el.text)
        for child in el:
            yield from _blocks(child)
            if child.tail and child.tail.strip():
                yield _norm(child.tail)
    elif el.tag not in _NOT_PARAGRAPHS:
        text = _text(el)
        if text:
            yield text


def parse_edition_date(text: str) -> dt.date | None:
    """The date in "Dec. 29, 2022(fm)" or "Revised as of January 1, 2023"; None if there is none."""
    m = _DATE.search(text)
    if not m or m[1][:3].lower() not in _MONTHS:
        return None
    try:
        return dt.date(int(m[3]), _MONTHS[m[1][:3].lower()], int(m[2]))
    except ValueError:
        return None


def section_number(label: str) -> str:
    """ "§ 1.1" -> "1.1", "§§ 457.104–457.109" -> "457.104-457.109" (the id part of a section)."""
    text = label.strip().lstrip("§").strip()
    return re.sub(r"\s*[-–—]\s*", "-", text)


class CfrPart(BaseModel):
    """One part as read from an edition."""

    model_config = ConfigDict(frozen=True)

    number: str
    heading: str | None = None
    authority: str | None = None
    source_note: str | None = None
    node: str | None = None


class CfrSection(BaseModel):
    """One section as read from an edition: its number, heading, paragraphs and notes."""

    model_config = ConfigDict(frozen=True)

    number: str
    label: str
    heading: str | None = None
    paragraphs: list[str]
    citation: str | None = None
    authority: str | None = None
    source_note: str | None = None
    part: str | None = None
    node: str | None = None

    @property
    def caption(self) -> str:
        text = f"{self.label} {self.heading or ''}".strip()
        return text[:-1] if text.endswith(".") else text


class CfrFile(BaseModel):
    """One parsed input file."""

    path: Path
    title: int
    edition_date: dt.date
    date_from: str
    sha256: str
    parts: list[CfrPart]
    sections: list[CfrSection]


@dataclass
class _PartBuilder:
    number: str | None
    node: str | None
    heading: str | None = None
    authority: str | None = None
    source_note: str | None = None


def _section(path: Path, el: ET.Element, part: str | None) -> CfrSection:
    node = el.get("NODE")
    label = el.get("N")
    heading: str | None = None
    citation: list[str] = []
    authority: list[str] = []
    source: list[str] = []
    for child in el:
        if child.tag == "HEAD":
            head = _text(child)
            heading = _SECTION_PREFIX.sub("", head) if head.startswith("§") else head
            if label is None and head.startswith("§"):
                m = _SECTION_PREFIX.match(head)
                label = m.group(0).strip() if m else None
        elif child.tag == "SECTNO":
            label = label or _text(child)
        elif child.tag in ("SUBJECT", "RESERVED") and heading is None:
            heading = _text(child)
        elif child.tag == "CITA":
            citation.append(_text(child))
        elif child.tag in ("AUTH", "SECAUTH"):
            authority.append(_note_text(child))
        elif child.tag == "SOURCE":
            source.append(_note_text(child))
    where = f"section NODE={node}" if node else f"section N={label!r}"
    if not label or not section_number(label):
        raise InputError(path, where, "section without a number (no N attribute, § in HEAD, or SECTNO)")
    label = _norm(label)
    if not label.startswith("§"):
        label = ("§§ " if re.search(r"[-–—]", label) else "§ ") + label
    paragraphs: list[str] = []
    if el.text and el.text.strip():
        paragraphs.append(_norm(el.text))
    for child in el:
        paragraphs.extend(_blocks(child))
        if child.tail and child.tail.strip():
            paragraphs.append(_norm(child.tail))
    number = section_number(label)
    return CfrSection(
        number=number, label=label, heading=heading or None, paragraphs=paragraphs,
        citation=" ".join(c for c in citation if c) or None, authority=" ".join(a for a in authority if a) or None,
        source_note=" ".join(s for s in source if s) or None, part=part or number.split(".")[0], node=node,
    )


class _Reader:
    """What a streamed file has shown so far: title, dates, the part being read, the sections read."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.title: int | None = None
        self.found: dict[str, str] = {}  # AMDDATE / REVISED text
        self.parts: dict[str, CfrPart] = {}
        self.sections: list[CfrSection] = []
        self.where: dict[str, str] = {}  # section number -> NODE or label, to report duplicates
        self.stack: list[ET.Element] = []
        self.part: _PartBuilder | None = None

    def start(self, el: ET.Element) -> None:
        self.stack.append(el)
        expected = DIV_TYPES.get(el.tag)
        if expected is not None and el.get("TYPE") != expected:
            where = f"{el.tag} {el.get('NODE') or el.get('N') or '(no N)'}"
            raise InputError(self.path, where, f"TYPE {el.get('TYPE')!r} (eCFR's {el.tag} is TYPE=\"{expected}\")")
        if el.tag == "DIV1" and el.get("TYPE") == "TITLE" and self.title is None:
            self.title = _title_number(self.path, el.get("N", ""))
        elif el.tag in PART_TAGS and el.get("TYPE", "PART") == "PART" and not _inside(self.stack, SECTION_TAGS):
            self.part = _PartBuilder(number=el.get("N"), node=el.get("NODE"))

    def end(self, el: ET.Element) -> None:
        self.stack.pop()
        parent = self.stack[-1] if self.stack else None
        tag = el.tag
        if tag in ("AMDDATE", "REVISED") and tag not in self.found:
            self.found[tag] = _text(el)
        elif self.title is None and (tag == "TITLENUM" or (tag == "IDNO" and el.get("TYPE") == "title")) \
                and _text(el):
            self.title = _title_number(self.path, _text(el))
        elif self.part is not None and parent is not None and parent.tag in PART_TAGS:
            self._part_child(self.part, el)
        if _is_section(el) and not _inside(self.stack, SECTION_TAGS | {"REVTXT", "EFFDNOTP"}):
            self._section(el)
            _drop(el, parent)
        elif tag in PART_TAGS and self.part is not None and not _inside(self.stack, SECTION_TAGS):
            part = self.part
            if part.number is not None:
                self.parts[part.number] = CfrPart(number=part.number, heading=part.heading,
                                                  authority=part.authority, source_note=part.source_note,
                                                  node=part.node)
            self.part = None
            _drop(el, parent)

    def _part_child(self, part: _PartBuilder, el: ET.Element) -> None:
        if el.tag in ("HEAD", "HD") and part.heading is None:
            part.heading = _text(el)
            if part.number is None and (m := _PART_NUMBER.search(part.heading)):
                part.number = m[1]
        elif el.tag == "AUTH":
            part.authority = _note_text(el)
        elif el.tag == "SOURCE":
            part.source_note = _note_text(el)

    def _section(self, el: ET.Element) -> None:
        sec = _section(self.path, el, self.part.number if self.part else None)
        if sec.number in self.where:
            raise InputError(self.path, f"section {sec.label}", f"section number {sec.number} appears twice "
                                                                f"(also at {self.where[sec.number]})")
        self.where[sec.number] = sec.node or sec.label
        self.sections.append(sec)
        if self.part is not None and self.part.number is None:
            self.part.number = sec.part

    def edition_date(self) -> tuple[dt.date, str] | None:
        """The annual edition's REVISED date, else AMDDATE, and which of them it was."""
        for tag in ("REVISED", "AMDDATE"):
            if tag in self.found and (date := parse_edition_date(self.found[tag])) is not None:
                return date, tag
        return None


def parse_file(path: Path, edition_date: dt.date | None = None) -> CfrFile:
    """Stream one eCFR or annual-edition XML file into parts and sections; bad input raises InputError."""
    if not path.is_file():
        raise InputError(path, None, "no such file")
    reader = _Reader(path)
    try:
        for event, el in _events(path):
            if event == "start":
                reader.start(el)
            else:
                reader.end(el)
    except ET.ParseError as exc:
        line, column = exc.position
        raise InputError(path, f"line {line}, column {column}", f"malformed XML: {exc}") from exc
    if not reader.sections:
        raise InputError(path, None, "no CFR sections found (expected DIV8 TYPE=\"SECTION\" or SECTION elements)")
    if reader.title is None:
        raise InputError(path, None, "no title number found (DIV1 TYPE=\"TITLE\" N=..., IDNO or TITLENUM)")
    date, date_from = (edition_date, "given") if edition_date is not None else (reader.edition_date() or (None, ""))
    if date is None:
        seen = ", ".join(f"{k}={v!r}" for k, v in reader.found.items()) or "no AMDDATE or REVISED element"
        raise InputError(path, None, f"no edition date in the file ({seen}); give one (--edition-date)")
    check_release(date, path, None, f"edition date ({date_from})")
    return CfrFile(path=path, title=reader.title, edition_date=date, date_from=date_from,
                   sha256=file_sha256(path), parts=list(reader.parts.values()), sections=reader.sections)


def _events(path: Path) -> Iterator[tuple[str, ET.Element]]:
    with path.open("rb") as fh:
        yield from ET.iterparse(fh, events=("start", "end"))


def _title_number(path: Path, text: str) -> int:
    m = re.search(r"\d+", text)
    if not m or not 1 <= int(m[0]) <= 99:
        raise InputError(path, "title", f"not a CFR title number: {text!r}")
    return int(m[0])


def _is_section(el: ET.Element) -> bool:
    return (el.tag == "DIV8" and el.get("TYPE") == "SECTION") or el.tag == "SECTION"


def _inside(stack: Sequence[ET.Element], tags: set[str]) -> bool:
    return any(e.tag in tags for e in stack)


def _drop(el: ET.Element, parent: ET.Element | None) -> None:
    """Free a processed subtree so memory holds one section at a time."""
    el.clear()
    if parent is not None:
        parent.remove(el)


# --- editions ------------------------------------------------------------------------------------------


@dataclass
class Edition:
    """All files of one title at one date."""

    title: int
    date: dt.date
    files: list[CfrFile]

    @property
    def source(self) -> Source:
        digests = sorted(f.sha256 for f in self.files)
        checksum = digests[0] if len(digests) == 1 else hashlib.sha256("".join(digests).encode()).hexdigest()
        origin = ", ".join(sorted({f.date_from for f in self.files}))
        return Source(
            id=source_id(self.title, self.date), kind=KIND,
            caption=f"CFR title {self.title}, edition of {self.date.isoformat()} (date: {origin})",
            version=self.date.isoformat(), release_date=self.date, checksum=f"sha256:{checksum}",
            path="; ".join(str(f.path) for f in self.files),
        )

    @property
    def parts(self) -> list[CfrPart]:
        return [p for f in self.files for p in f.parts]

    @property
    def sections(self) -> list[CfrSection]:
        return [s for f in self.files for s in f.sections]


def source_id(title: int, date: dt.date) -> str:
    return f"{KIND}:title-{title}@{date.isoformat()}"


def section_id(title: int, number: str) -> str:
    return f"{KIND}:{title}:{number}"


def part_id(title: int, number: str) -> str:
    return f"{KIND}:{title}:part-{number}"


def paragraph_predicate(key: int) -> str:
    return f"{PARAGRAPH}:{key:03d}"


def group_editions(files: Iterable[CfrFile]) -> list[Edition]:
    """Files of the same title and date form one edition (volumes); oldest first."""
    groups: dict[tuple[int, dt.date], list[CfrFile]] = {}
    for f in files:
        same = groups.setdefault((f.title, f.edition_date), [])
        if any(g.sha256 == f.sha256 for g in same):
            continue  # the same file given twice
        numbers = {s.number for g in same for s in g.sections}
        if dup := next((s for s in f.sections if s.number in numbers), None):
            raise InputError(f.path, f"section {dup.label}", f"also in another file of the title {f.title} "
                                                             f"edition of {f.edition_date}")
        same.append(f)
    return [Edition(t, d, fs) for (t, d), fs in sorted(groups.items())]


# --- the changed span of a changed value ---------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    """The changed words: `new[start:end]` replaced `old` (empty where words were only deleted)."""

    start: int
    end: int
    old: str
    new: str
    regions: int


def changed_span(old: str, new: str) -> Span:
    """The smallest run of words in `new` (with the words of `old` it replaced) holding every change."""
    ot = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(old)]
    nt = [(m.group(), m.start(), m.end()) for m in _TOKEN.finditer(new)]
    ops = [op for op in difflib.SequenceMatcher(None, [t[0] for t in ot], [t[0] for t in nt],
                                                autojunk=False).get_opcodes() if op[0] != "equal"]
    if not ops:
        return Span(0, len(new), old, new, 1)
    i1, i2, j1, j2 = ops[0][1], ops[-1][2], ops[0][3], ops[-1][4]
    if j1 < j2:
        start, end = nt[j1][1], nt[j2 - 1][2]
    else:
        start = end = nt[j1 - 1][2] if j1 > 0 else 0
    old_text = old[ot[i1][1]: ot[i2 - 1][2]] if i1 < i2 else ""
    return Span(start, end, old_text, new[start:end], len(ops))


def align(old: Sequence[str], new: Sequence[str]) -> list[tuple[int | None, int | None]]:
    """Pairs (old index, new index) of the same paragraph; None on one side for a removed/added one.

    Equal runs pair up, and so does a single paragraph replaced by a single one (revised in place).
    In a larger replaced run each new paragraph pairs, in order, with the most similar remaining old
    one if they are similar (difflib ratio >= 0.5), else with one of the same designation ("(b)").
    """
    out: list[tuple[int | None, int | None]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal" or (op == "replace" and i2 - i1 == 1 and j2 - j1 == 1):
            out.extend(zip(range(i1, i2), range(j1, j2), strict=True))
            continue
        used: set[int] = set()
        last = i1 - 1
        compare = (i2 - i1) * (j2 - j1) <= 2500  # large rewritten runs (tables): designations only
        for j in range(j1, j2):
            candidates = range(last + 1, i2)
            best, best_ratio = None, 0.0
            for i in candidates if compare else ():
                ratio = difflib.SequenceMatcher(None, old[i], new[j], autojunk=False).ratio()
                if ratio > best_ratio:
                    best, best_ratio = i, ratio
            if best is None or best_ratio < 0.5:
                label = _DESIGNATION.match(new[j])
                best = next((i for i in candidates if label and old[i].startswith(label.group(0))), None)
            if best is not None:
                out.append((best, j))
                used.add(best)
                last = best
            else:
                out.append((None, j))
        out.extend((i, None) for i in range(i1, i2) if i not in used)
    return out


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
                if m := _DESIGNATION.match(text):
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


def stage(store: GraphStore, editions: Sequence[Edition]) -> GraphBatch:
    """Continue each title's history from the store with the editions not loaded yet (nothing is written)."""
    batch = GraphBatch(POLICY)
    for title in sorted({e.title for e in editions}):
        loaded = loaded_editions(store, title)
        latest = max(loaded, default=None)
        todo: list[Edition] = []
        for ed in (e for e in editions if e.title == title):
            path = ed.files[0].path
            if ed.date in loaded:
                if loaded[ed.date] != ed.source.checksum:
                    raise InputError(path, None, f"title {title} edition of {ed.date} is already loaded from a "
                                                 f"different file ({loaded[ed.date]}); the store keeps one "
                                                 "version of an edition")
                continue
            if latest is not None and ed.date < latest:
                raise InputError(path, None, f"title {title} edition of {ed.date} is older than the newest one "
                                             f"loaded ({latest}); load editions oldest first, or into a new store")
            todo.append(ed)
        if not todo:
            continue
        history = TitleHistory.from_store(store, title)
        for ed in todo:
            history.apply(ed, batch)
        history.stage(batch)
    return batch


def load(store: GraphStore, paths: Sequence[Path], edition_dates: Sequence[dt.date | None] | None = None,
         progress: Progress | None = None) -> LoadSummary:
    """Load CFR editions in one transaction; bad input raises InputError and writes nothing.

    `edition_dates` gives one date per path (None: read AMDDATE/REVISED from the file), or one date
    for every path.
    """
    dates: list[dt.date | None] = list(edition_dates or [])
    if len(dates) == 1:
        dates = dates * len(paths)
    if dates and len(dates) != len(paths):
        raise InputError(", ".join(map(str, paths)), None,
                         f"{len(dates)} edition dates for {len(paths)} files: give one per file, or one for all")
    files = [parse_file(p, dates[i] if dates else None) for i, p in enumerate(paths)]
    batch = stage(store, group_editions(files))
    return apply(store, batch, KIND, list(paths), sum(len(f.sections) for f in files), progress)


# --- download ------------------------------------------------------------------------------------------


def ecfr_url(title: int, date: dt.date, base_url: str = ECFR_BASE_URL) -> str:
    """The eCFR versioner API's full-text XML of a title as of a date."""
    return f"{base_url.rstrip('/')}/api/versioner/v1/full/{date.isoformat()}/title-{title}.xml"


def download(title: int, date: dt.date, target: Path, base_url: str = ECFR_BASE_URL,
             progress: Progress | None = None) -> Downloaded:
    """Fetch one title's eCFR XML as of `date` (load it with `edition_dates=[date]`)."""
    return fetch(ecfr_url(title, date, base_url), target, progress=progress)
