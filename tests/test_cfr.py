"""CFR ingest on the real eCFR Title 1 sample (../shared/data/ecfr-title1) and editions made from it here.

The real file is one edition (AMDDATE Dec. 29, 2022). Later editions in these tests are of our own
making: copies of the real file with a later AMDDATE in which the test edits a few paragraphs' words,
deletes a paragraph and adds a section. The annual-edition and versioner-API snippets are self-authored
in the real schemas.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.errors import InputError
from chronokg.graph.counts import graph_counts
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import cfr
from chronokg.queries import catalog
from tests.helpers import serve_folder

D1 = dt.date(2022, 12, 29)  # AMDDATE of the real file
D2 = dt.date(2023, 3, 1)  # AMDDATE of our edition 2
DAY = dt.timedelta(days=1)


def sample(shared_data: Path) -> Path:
    return shared_data / "ecfr-title1" / "ECFR-title1.subset.xml"


def norm(text: str) -> str:
    return " ".join(text.split())


def raw_sections(path: Path) -> dict[str, ET.Element]:
    """DIV8 TYPE=SECTION elements by their N, read with a plain DOM parse (independently of the loader)."""
    root = ET.parse(path).getroot()
    return {el.get("N", ""): el for el in root.iter("DIV8") if el.get("TYPE") == "SECTION"}


def paragraphs_at(store: KgliteStore, subject: str, day: dt.date, known_at: dt.date | None = None) -> list[str]:
    rows = [r for r in catalog.facts_as_of(store, day, subject=subject, known_at=known_at)
            if r.predicate.startswith("paragraph:")]
    return [str(r.value) for r in sorted(rows, key=lambda r: position(store, r.id))]


def position(store: KgliteStore, fid: str) -> int:
    (row,) = store.run("MATCH (f:Fact {id: $id}) RETURN f.position AS p", {"id": fid})
    return int(row["p"])


def props(store: KgliteStore, fid: str, *keys: str) -> dict[str, Any]:
    (row,) = store.run("MATCH (f:Fact {id: $id}) RETURN " + ", ".join(f"f.{k} AS {k}" for k in keys), {"id": fid})
    return row


def asserted_in(store: KgliteStore, fid: str) -> set[str]:
    rows = store.run("MATCH (f:Fact {id: $id})-[:ASSERTED_IN]->(s:Source) RETURN s.id AS id", {"id": fid})
    return {r["id"] for r in rows}


def fact_with(store: KgliteStore, subject: str, day: dt.date, text: str) -> Any:
    (row,) = [r for r in catalog.facts_as_of(store, day, subject=subject) if r.value == text]
    return row


def cfr_facts(store: KgliteStore) -> set[tuple[Any, ...]]:
    rows = store.run("MATCH (f:Fact) WHERE f.source_kind = 'cfr' RETURN f.id AS id, f.value AS v, "
                     "f.valid_from AS vf, f.valid_to AS vt, f.known_from AS kf, f.known_to AS kt, "
                     "f.source_id AS src, f.changed_new AS cn")
    return {tuple(r.values()) for r in rows}


def asserted_edges(store: KgliteStore) -> set[tuple[str, str]]:
    rows = store.run("MATCH (f:Fact)-[:ASSERTED_IN]->(s:Source) WHERE f.source_kind = 'cfr' "
                     "RETURN f.id AS f, s.id AS s")
    return {(r["f"], r["s"]) for r in rows}


# --- one edition: the real file ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loaded(shared_data: Path) -> Iterator[KgliteStore]:
    with KgliteStore(":memory:") as store:
        cfr.load(store, [sample(shared_data)])
        yield store


def test_one_entity_per_section_of_the_file(loaded: KgliteStore, shared_data: Path) -> None:
    path = sample(shared_data)
    raw = raw_sections(path)
    assert len(raw) == 226  # what PROVENANCE.md says the cut holds
    rows = loaded.run("MATCH (e:Entity {kind: 'cfr_section'}) RETURN e.id AS id, e.caption AS caption")
    assert len(rows) == len(raw)
    expected = {"cfr:1:" + n.lstrip("§ ").replace("–", "-") for n in raw}
    assert {r["id"] for r in rows} == expected
    captions = {r["id"]: r["caption"] for r in rows}
    assert captions["cfr:1:1.1"] == "§ 1.1 Definitions"
    assert captions["cfr:1:457.104-457.109"] == "§§ 457.104–457.109 [Reserved]"
    (src,) = loaded.run("MATCH (s:Source {kind: 'cfr'}) RETURN s.id AS id, s.release_date AS d, s.checksum AS c")
    assert src == {"id": "cfr:title-1@2022-12-29", "d": D1,
                   "c": "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()}


def test_paragraph_facts_are_the_p_texts(loaded: KgliteStore, shared_data: Path) -> None:
    checked = 0
    for n, el in raw_sections(sample(shared_data)).items():
        if {c.tag for c in el} - {"HEAD", "P", "CITA"}:
            continue  # sections with extracts, tables or footnotes: spot-checked below
        sid = "cfr:1:" + n.lstrip("§ ").replace("–", "-")
        expected = [norm("".join(p.itertext())) for p in el.findall("P")]
        assert paragraphs_at(loaded, sid, D1) == expected, n
        heads = {r.value for r in catalog.facts_as_of(loaded, D1, subject=sid, predicate="heading")}
        assert heads == {norm(el.findtext("HEAD", "")).split(None, 2)[-1].strip()}, n
        cita = el.find("CITA")
        cites = [r.value for r in catalog.facts_as_of(loaded, D1, subject=sid, predicate="citation")]
        assert cites == ([] if cita is None else [norm(cita.text or "")]), n
        assert catalog.facts_as_of(loaded, D1 - DAY, subject=sid) == []  # nothing before the edition
        checked += 1
    assert checked > 150


def test_extracts_tables_and_inline_markup(loaded: KgliteStore) -> None:
    paras = paragraphs_at(loaded, "cfr:1:1.1", D1)
    # <I>Agency</I> means ...: the inline markup is gone, its words kept.
    assert paras[2].startswith("Agency means each authority, whether or not within")
    # § 18.6: a P, an EXTRACT holding one FP, then an FP.
    assert paragraphs_at(loaded, "cfr:1:18.6", D1)[1:] == [
        "(Certified to be a true copy of the original)",
        "The certification must be signed by a certifying officer designated under § 16.1 of this chapter.",
    ]
    # § 17.2 has a table: one paragraph per row.
    rows = [p for p in paragraphs_at(loaded, "cfr:1:17.2", D1) if " | " in p]
    assert rows[0] == "Received before 2:00 p.m. | Filed for public inspection | Published"
    assert "Monday | Wednesday | Thursday" in rows
    # Part-level AUTH/SOURCE are facts of the part, without their "Authority:" label.
    auth = catalog.facts_as_of(loaded, D1, subject="cfr:1:part-1", predicate="authority")
    assert [r.value for r in auth] == ["44 U.S.C. 1506; sec. 6, E.O. 10530, 19 FR 2709; 3 CFR, 1954–1958 Comp., p.189."]


# --- two editions ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Edit:
    section: str
    old: str  # the paragraph in edition 1
    new: str  # the paragraph in edition 2
    old_words: str
    new_words: str


@dataclass(frozen=True)
class Editions:
    ed1: Path
    ed2: Path
    edits: list[Edit]
    deleted: tuple[str, str]  # (section id, paragraph text)
    added: str  # section id


NEW_SECTION = """<DIV8 N="§ 1.2" NODE="1:1.0.1.1.1.0.1.2" TYPE="SECTION">
<HEAD>§ 1.2   Test provision.</HEAD>
<P>(a) This section was added in an edition made for a test.</P>
<P>(b) It has <I>two</I> paragraphs.</P>
</DIV8>
"""


def make_edition2(ed1: Path, target: Path) -> Editions:
    """Edition 2, of our own making: later AMDDATE, three paragraphs reworded, one deleted, one section added."""
    raw = ed1.read_text(encoding="utf-8")

    def sub(old: str, new: str) -> None:
        nonlocal raw
        assert raw.count(old) == 1, old
        raw = raw.replace(old, new)

    sub("<AMDDATE>Dec. 29, 2022(fm)", "<AMDDATE>Mar. 1, 2023(fm)")
    edits = []
    sections = raw_sections(ed1)
    for sec, old_words, new_words, before, after in [
        ("8.6", "books", "volumes", "separately bound books as", "separately bound volumes as"),
        ("1.1", "license", "permit", "competition, license, notice", "competition, permit, notice"),
        ("2.2", "", "Executive", "is the Secretary of the", "is the Executive Secretary of the"),
    ]:
        (para,) = [norm("".join(p.itertext())) for p in sections[f"§ {sec}"].iter("P")
                   if before in "".join(p.itertext())]
        sub(before, after)
        edits.append(Edit(f"cfr:1:{sec}", para, para.replace(before, after), old_words, new_words))
    sub("<P>(2) Online on <I>www.govinfo.gov</I> (44 US.C. 4101). \n</P>\n", "")
    end_of_1_1 = raw.index("</DIV8>", raw.index('<DIV8 N="§ 1.1"')) + len("</DIV8>\n")
    raw = raw[:end_of_1_1] + NEW_SECTION + raw[end_of_1_1:]
    target.write_text(raw, encoding="utf-8")
    return Editions(ed1, target, edits, ("cfr:1:8.6", "(2) Online on www.govinfo.gov (44 US.C. 4101)."), "cfr:1:1.2")


@pytest.fixture(scope="module")
def editions(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Editions:
    return make_edition2(sample(shared_data), tmp_path_factory.mktemp("cfr") / "ECFR-title1.ed2.xml")


@pytest.fixture(scope="module")
def two(editions: Editions) -> Iterator[KgliteStore]:
    """Edition 1 and edition 2 loaded in separate runs."""
    with KgliteStore(":memory:") as store:
        cfr.load(store, [editions.ed1])
        cfr.load(store, [editions.ed2])
        yield store


def test_changed_paragraphs_get_a_new_fact_with_the_changed_span(two: KgliteStore, editions: Editions) -> None:
    for e in editions.edits:
        old = fact_with(two, e.section, D1, e.old)
        new = fact_with(two, e.section, D2, e.new)
        assert old.predicate == new.predicate  # the same paragraph, in a new version
        assert (old.valid_from, old.valid_to, old.known_from, old.source_id) == (D1, D2, D2, "cfr:title-1@2023-03-01")
        assert (new.valid_from, new.valid_to, new.known_from) == (D2, None, D2)
        p = props(two, new.id, "change", "changed_from_text", "changed_span_start", "changed_span_end",
                  "changed_old", "changed_new", "prior_fact_id")
        assert p["change"] == "changed"
        assert p["changed_from_text"] == e.old
        assert (p["changed_old"], p["changed_new"]) == (e.old_words, e.new_words)
        assert e.new[p["changed_span_start"]:p["changed_span_end"]] == e.new_words
        # Blanking the span in the new text and filling in the old words gives back the old text.
        assert norm(e.new[:p["changed_span_start"]] + e.old_words + e.new[p["changed_span_end"]:]) == e.old
        assert p["prior_fact_id"] == old.id
        # The open-ended version edition 1 asserted is retracted, not deleted.
        versions = catalog.timeline(two, e.section, old.predicate, include_retracted=True)
        assert [(v.value, v.valid_from, v.valid_to, v.known_from, v.known_to) for v in versions] == [
            (e.old, D1, D2, D2, None), (e.old, D1, None, D1, D2), (e.new, D2, None, D2, None)]


def test_unchanged_paragraphs_stay_one_fact(two: KgliteStore, editions: Editions) -> None:
    at1 = {r.id: r for r in catalog.facts_as_of(two, D1, subject="cfr:1:8.6")}
    at2 = {r.id: r for r in catalog.facts_as_of(two, D2, subject="cfr:1:8.6")}
    same = set(at1) & set(at2)
    changed = {editions.edits[0].old, editions.deleted[1]}
    assert {at1[f].value for f in same} == {r.value for r in at1.values()} - changed
    assert len(same) == 4  # (a), (1), the heading and the citation
    for fid in same:
        assert (at1[fid].valid_from, at1[fid].valid_to, at1[fid].known_to) == (D1, None, None)
        assert asserted_in(two, fid) == {"cfr:title-1@2022-12-29", "cfr:title-1@2023-03-01"}
    # Across the whole title, edition 2 created facts only for what changed.
    (n1,) = two.run("MATCH (f:Fact)-[:ASSERTED_IN]->(:Source {id: 'cfr:title-1@2022-12-29'}) RETURN count(f) AS n")
    untouched = two.run("MATCH (f:Fact) WHERE f.source_kind = 'cfr' AND f.valid_from = $d1 AND f.valid_to IS NULL "
                        "AND f.known_to IS NULL RETURN count(f) AS n", {"d1": D1})[0]["n"]
    retracted = two.run("MATCH (f:Fact) WHERE f.known_to IS NOT NULL RETURN count(f) AS n")[0]["n"]
    assert retracted == len(editions.edits) + 1  # three changed, one deleted
    assert untouched + retracted == n1["n"]


def test_as_of_before_at_and_after_edition_2(two: KgliteStore, editions: Editions) -> None:
    e = editions.edits[0]
    sid, deleted = editions.deleted
    assert paragraphs_at(two, sid, D1 - DAY) == []
    for day in (D1, D2 - DAY):
        paras = paragraphs_at(two, sid, day)
        assert e.old in paras and deleted in paras and e.new not in paras
        assert catalog.facts_as_of(two, day, subject=editions.added) == []
    for day in (D2, dt.date(2030, 1, 1)):
        paras = paragraphs_at(two, sid, day)
        assert e.new in paras and e.old not in paras and deleted not in paras
        assert paragraphs_at(two, editions.added, day) == [
            "(a) This section was added in an edition made for a test.", "(b) It has two paragraphs."]
    # Known time: before edition 2 was released the store believed edition 1's text held on.
    believed = paragraphs_at(two, sid, dt.date(2030, 1, 1), known_at=D2 - DAY)
    assert e.old in believed and deleted in believed
    assert paragraphs_at(two, sid, dt.date(2030, 1, 1), known_at=D1 - DAY) == []


def test_changed_between_lists_exactly_the_changed_paragraphs(two: KgliteStore, editions: Editions) -> None:
    rows = catalog.changed_between(two, D1, D2)
    expected = {(e.section, fact_with(two, e.section, D1, e.old).predicate): ([e.old], [e.new])
                for e in editions.edits}
    sid, deleted = editions.deleted
    expected[(sid, fact_with(two, sid, D1, deleted).predicate)] = ([deleted], [])
    added = catalog.facts_as_of(two, D2, subject=editions.added)
    expected.update({(r.subject, r.predicate): ([], [str(r.value)]) for r in added})
    assert len(added) == 3  # heading and two paragraphs
    assert {(r.subject, r.predicate): (r.before, r.after) for r in rows} == expected
    assert catalog.changed_between(two, D1 - 10 * DAY, D1 - DAY) == []
    assert catalog.changed_between(two, D2, dt.date(2030, 1, 1)) == []


def test_reloading_changes_nothing_and_order_does_not_matter(two: KgliteStore, editions: Editions) -> None:
    before = graph_counts(two)
    for paths in ([editions.ed1], [editions.ed2], [editions.ed2, editions.ed1]):
        assert cfr.load(two, paths).unchanged
    assert graph_counts(two) == before
    # Both editions given together (in any order) build the same graph as two separate runs.
    with KgliteStore(":memory:") as together:
        cfr.load(together, [editions.ed2, editions.ed1])
        assert cfr_facts(together) == cfr_facts(two)
        assert asserted_edges(together) == asserted_edges(two)
        assert graph_counts(together) == before


def test_a_third_edition_continues_from_the_store(two: KgliteStore, editions: Editions, tmp_path: Path) -> None:
    """Edition 3 (ours): § 8.6 (b) as of edition 2 is edited again and the added § 1.2 is dropped."""
    e = editions.edits[0]
    ed3 = tmp_path / "ed3.xml"
    text = editions.ed2.read_text(encoding="utf-8")
    assert text.count(NEW_SECTION) == 1
    ed3.write_text(text.replace("<AMDDATE>Mar. 1, 2023", "<AMDDATE>Jan. 2, 2024").replace(NEW_SECTION, "")
                   .replace("bound volumes as", "bound volumes or files as"), encoding="utf-8")
    d3 = dt.date(2024, 1, 2)
    with KgliteStore(":memory:") as store:
        for path in (editions.ed1, editions.ed2, ed3):
            cfr.load(store, [path])
        pred = fact_with(store, e.section, D1, e.old).predicate
        versions = catalog.timeline(store, e.section, pred)
        assert [(v.valid_from, v.valid_to) for v in versions] == [(D1, D2), (D2, d3), (d3, None)]
        p = props(store, versions[-1].id, "changed_old", "changed_new", "changed_from_text")
        assert p == {"changed_old": "", "changed_new": "or files", "changed_from_text": e.new}
        # The dropped section's facts end at edition 3; its entity stays for the history.
        assert catalog.facts_as_of(store, d3, subject=editions.added) == []
        dropped = catalog.timeline(store, editions.added)
        assert len(dropped) == 3 and {(v.valid_from, v.valid_to) for v in dropped} == {(D2, d3)}
        changed = {(r.subject, r.predicate) for r in catalog.changed_between(store, D2, d3)}
        assert changed == {(e.section, pred)} | {(editions.added, v.predicate) for v in dropped}


def test_older_or_conflicting_editions_are_refused(editions: Editions, tmp_path: Path) -> None:
    with KgliteStore(":memory:") as store:
        cfr.load(store, [editions.ed2])
        before = graph_counts(store)
        with pytest.raises(InputError, match="older than the newest one loaded"):
            cfr.load(store, [editions.ed1])
        other = tmp_path / "other.xml"
        other.write_text(editions.ed2.read_text(encoding="utf-8").replace("two</I> paragraphs", "2</I> paragraphs"),
                         encoding="utf-8")
        with pytest.raises(InputError, match="already loaded from a different file") as info:
            cfr.load(store, [other])
        assert str(other) in str(info.value)
        assert graph_counts(store) == before


def test_malformed_xml_names_the_file_and_line_and_writes_nothing(two: KgliteStore, editions: Editions,
                                                                  tmp_path: Path) -> None:
    text = editions.ed2.read_text(encoding="utf-8").replace("Mar. 1, 2023", "Apr. 1, 2023")
    broken = tmp_path / "truncated.xml"
    broken.write_text(text[: len(text) // 2], encoding="utf-8")
    before = graph_counts(two)
    with pytest.raises(InputError) as info:
        cfr.load(two, [editions.ed1, broken])
    assert info.value.path == str(broken)
    assert str(info.value.record).startswith("line ")
    assert int(str(info.value.record).split()[1].rstrip(",")) > text[: len(text) // 2].count("\n") - 2
    assert graph_counts(two) == before


def test_a_div_of_the_wrong_type_is_refused(two: KgliteStore, editions: Editions, tmp_path: Path) -> None:
    text = editions.ed2.read_text(encoding="utf-8")
    bad = tmp_path / "mistyped.xml"
    bad.write_text(text.replace('TYPE="SECTION"', 'TYPE="SECTON"', 1), encoding="utf-8")
    before = graph_counts(two)
    with pytest.raises(InputError) as info:
        cfr.load(two, [bad])
    assert info.value.path == str(bad) and str(info.value.record).startswith("DIV8 ")
    assert "TYPE 'SECTON'" in str(info.value)
    assert graph_counts(two) == before


# --- other layouts --------------------------------------------------------------------------------------

# Self-authored, in the annual-edition (govinfo CFR bulk) schema: CFRDOC > FMTR/TITLEPG, TITLE > CHAPTER > PART
# > SECTION/SECTNO/SUBJECT/P, a GPOTABLE, a reserved section, and an effective-date note quoting a future text.
ANNUAL = """<?xml version="1.0" encoding="UTF-8"?>
<CFRDOC>
<AMDDATE>Dec. 1, 2023</AMDDATE>
<FMTR><TITLEPG><TITLENUM>Title 7</TITLENUM><SUBJECT>Agriculture</SUBJECT>
<REVISED>Revised as of January 1, 2024</REVISED></TITLEPG></FMTR>
<TITLE><CHAPTER><HD SOURCE="HED">CHAPTER I—SAMPLE SERVICE</HD>
<PART><EAR>Pt. 10</EAR><HD SOURCE="HED">PART 10—SAMPLE RULES</HD>
<CONTENTS><SECHD>Sec.</SECHD><SECTNO>10.1</SECTNO><SUBJECT>Purpose.</SUBJECT></CONTENTS>
<AUTH><HD SOURCE="HED">Authority:</HD><P>7 U.S.C. 1.</P></AUTH>
<SOURCE><HD SOURCE="HED">Source:</HD><P>88 FR 100, Jan. 3, 2023, unless otherwise noted.</P></SOURCE>
<SECTION><SECTNO>§ 10.1</SECTNO><SUBJECT>Purpose.</SUBJECT>
<P>(a) This part sets <E T="03">sample</E> rules.</P>
<P>(b) It applies to everyone.</P>
<EFFDNOTP><HD SOURCE="HED">Effective Date Note:</HD><P>At 88 FR 200, § 10.1 was revised, effective Mar. 1, 2024:</P>
<REVTXT><SECTION><SECTNO>§ 10.1</SECTNO><SUBJECT>Purpose.</SUBJECT><P>(a) Future text.</P></SECTION></REVTXT>
</EFFDNOTP></SECTION>
<SECTION><SECTNO>§ 10.2</SECTNO><SUBJECT>Fees.</SUBJECT><P>Fees are:</P>
<GPOTABLE COLS="2"><BOXHD><CHED H="1">Service</CHED><CHED H="1">Fee</CHED></BOXHD>
<ROW><ENT I="01">Grading</ENT><ENT>$10</ENT></ROW></GPOTABLE>
<CITA>[88 FR 101, Jan. 3, 2023]</CITA></SECTION>
<SECTION><SECTNO>§§ 10.3-10.9</SECTNO><RESERVED>[Reserved]</RESERVED></SECTION>
</PART></CHAPTER></TITLE></CFRDOC>
"""

# Self-authored, in the eCFR versioner API's layout: N without "§", no AMDDATE.
VERSIONER = """<?xml version="1.0" encoding="UTF-8"?>
<DIV1 N="7" TYPE="TITLE"><HEAD>Title 7—Agriculture</HEAD>
<DIV5 N="10" TYPE="PART"><HEAD>PART 10—SAMPLE RULES</HEAD>
<DIV8 N="10.1" TYPE="SECTION" VOLUME="1"><HEAD>§ 10.1   Purpose.</HEAD><P>(a) This part sets sample rules.</P></DIV8>
</DIV5></DIV1>
"""


def test_annual_edition_layout(tmp_path: Path) -> None:
    path = tmp_path / "CFR-2024-title7-vol1.xml"
    path.write_text(ANNUAL, encoding="utf-8")
    parsed = cfr.parse_file(path)
    assert (parsed.title, parsed.edition_date, parsed.date_from) == (7, dt.date(2024, 1, 1), "REVISED")
    with KgliteStore(":memory:") as store:
        cfr.load(store, [path])
        day = dt.date(2024, 1, 1)
        assert paragraphs_at(store, "cfr:7:10.1", day) == ["(a) This part sets sample rules.",
                                                           "(b) It applies to everyone."]
        assert paragraphs_at(store, "cfr:7:10.2", day) == ["Fees are:", "Service | Fee", "Grading | $10"]
        ids = {r["id"] for r in store.run("MATCH (e:Entity {kind: 'cfr_section'}) RETURN e.id AS id")}
        assert ids == {"cfr:7:10.1", "cfr:7:10.2", "cfr:7:10.3-10.9"}  # the quoted future § 10.1 is not a section
        part = {r.predicate: r.value for r in catalog.facts_as_of(store, day, subject="cfr:7:part-10")}
        assert part == {"heading": "PART 10—SAMPLE RULES", "authority": "7 U.S.C. 1.",
                        "source_note": "88 FR 100, Jan. 3, 2023, unless otherwise noted."}


def test_versioner_layout_needs_a_date(tmp_path: Path) -> None:
    path = tmp_path / "title-7.xml"
    path.write_text(VERSIONER, encoding="utf-8")
    with KgliteStore(":memory:") as store:
        with pytest.raises(InputError, match="--edition-date"):
            cfr.load(store, [path])
        assert graph_counts(store).get("Fact", 0) == 0
        cfr.load(store, [path], [dt.date(2024, 5, 1)])
        (row,) = store.run("MATCH (e:Entity {id: 'cfr:7:10.1'}) RETURN e.caption AS c")
        assert row["c"] == "§ 10.1 Purpose"


def test_changed_span_and_alignment() -> None:
    span = cfr.changed_span("pay $10 within 30 days.", "pay $12 within 60 days.")
    assert (span.old, span.new, span.regions) == ("10 within 30", "12 within 60", 2)
    gone = cfr.changed_span("a b c d", "a d")
    assert (gone.start, gone.end, gone.old, gone.new) == (1, 1, "b c", "")
    old = ["(a) one.", "(b) two items.", "(c) three.", "(d) four."]
    new = ["(a) one.", "(c) three, revised.", "(new) inserted text here.", "(d) four."]
    assert cfr.align(old, new) == [(0, 0), (2, 1), (None, 2), (1, None), (3, 3)]


# --- CLI ---------------------------------------------------------------------------------------------------


@pytest.fixture
def served(tmp_path: Path, editions: Editions) -> Iterator[str]:
    """A loopback HTTP server laid out like the eCFR versioner API (the public internet is never used)."""
    root = tmp_path / "www"
    api = root / "api" / "versioner" / "v1" / "full" / "2023-03-01"
    api.mkdir(parents=True)
    (api / "title-1.xml").write_bytes(editions.ed2.read_bytes())
    with serve_folder(root) as base:
        yield base


def test_cli_download_ingest_and_query(tmp_path: Path, editions: Editions, served: str) -> None:
    runner = CliRunner()
    store = ["--store", f"kglite://{tmp_path / 's.kgl'}"]
    out = tmp_path / "got.xml"
    r = runner.invoke(app, ["download", "cfr", "--title", "1", "--date", "2023-03-01", "--base-url", served,
                            "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == editions.ed2.read_bytes()
    r = runner.invoke(app, ["download", "cfr", "--title", "2", "--date", "2023-03-01", "--base-url", served,
                            "--out", str(tmp_path / "missing.xml")])
    assert r.exit_code == 2 and not (tmp_path / "missing.xml").exists()

    r = runner.invoke(app, [*store, "ingest", "cfr", str(editions.ed1)])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, [*store, "ingest", "cfr", str(out), "--edition-date", "2023-03-01"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, [*store, "ingest", "cfr", str(editions.ed1), str(out)])
    assert r.exit_code == 0 and "store unchanged" in r.output
    r = runner.invoke(app, [*store, "query", "changed-between", "--from", "2022-12-29", "--to", "2023-03-01",
                            "--subject", "cfr:1:8.6", "-f", "json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert sorted(len(row["before"]) + len(row["after"]) for row in rows) == [1, 2]  # one deleted, one changed

    broken = tmp_path / "broken.xml"
    broken.write_text(editions.ed2.read_text(encoding="utf-8")[:5000], encoding="utf-8")
    r = runner.invoke(app, [*store, "ingest", "cfr", str(broken)])
    assert r.exit_code == 2 and "broken.xml" in r.output and "line" in r.output  # one red line
    r = runner.invoke(app, [*store, "ingest", "cfr", str(editions.ed1), str(out), "--edition-date", "2023-01-01",
                            "--edition-date", "2023-02-01", "--edition-date", "2023-03-01"])
    assert r.exit_code == 2 and "3 edition dates for 2 files" in norm(r.output)  # rich wraps long lines
