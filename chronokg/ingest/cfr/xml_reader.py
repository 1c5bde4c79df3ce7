"""CFR constants, and eCFR / annual-edition XML read into parts, sections and paragraphs (streamed)."""

from __future__ import annotations

import datetime as dt
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from chronokg.errors import InputError
from chronokg.graph import schema
from chronokg.graph.merge import DEFAULT_POLICY
from chronokg.ingest.common import check_release, file_sha256
from chronokg.ingest.limits import check_text

KIND = "cfr"
# Characters in one paragraph, heading or note of a section (README, "Input limits"); a whole table row is one
# paragraph, so this is far above any real one.
MAX_TEXT = 100_000
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
DESIGNATION = re.compile(r"^\(([0-9A-Za-z]{1,6})\)")
TOKEN = re.compile(r"\w+|[^\w\s]")

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


def norm(text: str) -> str:
    return " ".join(text.split())


def element_text(el: ET.Element) -> str:
    return norm("".join(el.itertext()))


def _note_text(el: ET.Element) -> str:
    """AUTH/SOURCE text without its "Authority:" label."""
    pieces = [el.text or ""]
    for child in el:
        if child.tag not in _LABELS:
            pieces.append("".join(child.itertext()))
        pieces.append(child.tail or "")
    return norm(" ".join(pieces))


def blocks(el: ET.Element) -> Iterator[str]:
    if el.tag in _ROWS:
        cells = [element_text(c) for c in el]
        row = " | ".join(c for c in cells if c)
        if row:
            yield row
    elif el.tag in _CONTAINERS:
        if el.text and el.text.strip():
            yield norm(el.text)
        for child in el:
            yield from blocks(child)
            if child.tail and child.tail.strip():
                yield norm(child.tail)
    elif el.tag not in _NOT_PARAGRAPHS:
        text = element_text(el)
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
            head = element_text(child)
            heading = _SECTION_PREFIX.sub("", head) if head.startswith("§") else head
            if label is None and head.startswith("§"):
                m = _SECTION_PREFIX.match(head)
                label = m.group(0).strip() if m else None
        elif child.tag == "SECTNO":
            label = label or element_text(child)
        elif child.tag in ("SUBJECT", "RESERVED") and heading is None:
            heading = element_text(child)
        elif child.tag == "CITA":
            citation.append(element_text(child))
        elif child.tag in ("AUTH", "SECAUTH"):
            authority.append(_note_text(child))
        elif child.tag == "SOURCE":
            source.append(_note_text(child))
    where = f"section NODE={node}" if node else f"section N={label!r}"
    if not label or not section_number(label):
        raise InputError(path, where, "section without a number (no N attribute, § in HEAD, or SECTNO)")
    label = norm(label)
    if not label.startswith("§"):
        label = ("§§ " if re.search(r"[-–—]", label) else "§ ") + label
    paragraphs: list[str] = []
    if el.text and el.text.strip():
        paragraphs.append(norm(el.text))
    for child in el:
        paragraphs.extend(blocks(child))
        if child.tail and child.tail.strip():
            paragraphs.append(norm(child.tail))
    number = section_number(label)
    for name, text in (("label", label), ("heading", heading), *((f"paragraph {i}", t) for i, t in
                       enumerate(paragraphs, start=1)), ("citation", " ".join(citation)),
                       ("authority", " ".join(authority)), ("source", " ".join(source))):
        if text:
            check_text(text, path, where, name, MAX_TEXT)
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
            self.found[tag] = element_text(el)
        elif self.title is None and (tag == "TITLENUM" or (tag == "IDNO" and el.get("TYPE") == "title")) \
                and element_text(el):
            self.title = _title_number(self.path, element_text(el))
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
            part.heading = element_text(el)
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
