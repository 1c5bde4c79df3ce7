"""UMLS loader: intervals across releases, names, filters, incremental loads, bad input, CLI.

The RRF files under tests/fixtures/umls/ are self-authored (the UMLS is licensed):
three small releases in the real MRREL/MRCONSO/MRFILES layout, see their README.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app, download_app
from chronokg.errors import InputError
from chronokg.graph.counts import graph_counts
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.store import GraphStore
from chronokg.ingest import umls
from chronokg.queries import catalog

FIXTURES = Path(__file__).parent / "fixtures" / "umls"
RELEASES = ("2020AA", "2021AA", "2022AA")
DATES = {"2020AA": dt.date(2020, 5, 1), "2021AA": dt.date(2021, 5, 1), "2022AA": dt.date(2022, 5, 1)}
ASPIRIN, HEADACHE, MI, APAP, FEVER = "C0004057", "C0018681", "C0027051", "C0000970", "C0015967"
T2DM, BETA, HEART = "C0011860", "C0001645", "C0018787"


def folders(root: Path = FIXTURES, names: tuple[str, ...] = RELEASES) -> list[Path]:
    return [root / n for n in names]


def mrrel(root: Path, release: str) -> Path:
    meta = root / release / "META" / "MRREL.RRF"
    return meta if meta.exists() else root / release / "MRREL.RRF"


def raw_triples(release: str, relas: frozenset[str] = frozenset(umls.CHROKNOW_RELAS)) -> set[tuple[str, str, str]]:
    """(CUI2, RELA, CUI1) of a fixture release, read with a plain split: the oracle for the loader."""
    out = set()
    for line in mrrel(FIXTURES, release).read_text().splitlines():
        f = line.split("|")
        if f[7] in relas and f[0] != f[4]:
            out.add((f[4], f[7], f[0]))
    return out


def current_facts(store: GraphStore) -> dict[tuple[str, str, str], list[tuple[dt.date | None, dt.date | None]]]:
    rows = store.run("MATCH (f:Fact) WHERE f.source_kind = 'umls' AND f.known_to IS NULL "
                     "RETURN f.subject_id AS s, f.predicate AS p, f.object_id AS o, f.valid_from AS a, "
                     "f.valid_to AS b ORDER BY a")
    out: dict[tuple[str, str, str], list[tuple[dt.date | None, dt.date | None]]] = {}
    for r in rows:
        out.setdefault((r["s"], r["p"], r["o"]), []).append((r["a"], r["b"]))
    return out


def fact_state(store: GraphStore) -> tuple[list[dict[str, object]], ...]:
    """Every fact, edge and entity, for comparing two stores."""
    return (
        store.run("MATCH (f:Fact) RETURN properties(f) AS p ORDER BY f.id"),
        store.run("MATCH (f:Fact)-[e]->(x) RETURN f.id AS f, type(e) AS t, x.id AS x ORDER BY f, t, x"),
        store.run("MATCH (e:Entity) RETURN properties(e) AS p ORDER BY e.id"),
    )


@pytest.fixture
def loaded(store: KgliteStore) -> KgliteStore:
    umls.load(store, folders())
    return store


def test_intervals_follow_the_raw_rows(loaded: KgliteStore) -> None:
    presence = {r: raw_triples(r) for r in RELEASES}
    expected: dict[tuple[str, str, str], list[tuple[dt.date | None, dt.date | None]]] = {}
    for triple in set().union(*presence.values()):
        runs, start = [], None
        for r in RELEASES:
            if triple in presence[r] and start is None:
                start = DATES[r]
            elif triple not in presence[r] and start is not None:
                runs.append((start, DATES[r]))
                start = None
        if start is not None:
            runs.append((start, None))
        expected[triple] = runs
    assert current_facts(loaded) == expected
    # Spot checks against the rows themselves. 2020AA has "HEADACHE|..|RO|ASPIRIN|..|may_treat": read right
    # to left, aspirin may treat headache.
    assert expected[(ASPIRIN, "may_treat", HEADACHE)] == [(DATES["2020AA"], None)]
    assert expected[(APAP, "may_treat", FEVER)] == [(DATES["2020AA"], DATES["2021AA"]), (DATES["2022AA"], None)]
    assert expected[(ASPIRIN, "may_prevent", MI)] == [(DATES["2020AA"], DATES["2022AA"])]
    [row] = catalog.facts_as_of(loaded, dt.date(2021, 1, 1), subject=ASPIRIN, predicate="may_treat")
    assert (row.subject_caption, row.object_caption) == ("Aspirin", "Headache")


def test_each_version_links_to_the_releases_that_hold_it(loaded: KgliteStore) -> None:
    rows = loaded.run("MATCH (f:Fact {subject_id: $s, predicate: 'may_prevent'})-[:ASSERTED_IN]->(r:Source) "
                      "RETURN f.valid_to AS valid_to, f.known_from AS known_from, f.known_to AS known_to, "
                      "f.source_id AS source, collect(r.version) AS releases", {"s": ASPIRIN})
    by_end = {r["valid_to"]: r for r in rows}
    # The open version, believed from 2020AA until 2022AA dropped the relation ...
    assert by_end[None]["known_from"] == DATES["2020AA"] and by_end[None]["known_to"] == DATES["2022AA"]
    # ... and the closed one, known since 2022AA.
    closed = by_end[DATES["2022AA"]]
    assert closed["known_from"] == DATES["2022AA"] and closed["known_to"] is None
    for r in rows:
        assert sorted(r["releases"]) == ["2020AA", "2021AA"]
        assert r["source"] == "umls:2020AA"
    # A relation asserted by two vocabularies (and twice by one) is one fact.
    [fact] = loaded.run("MATCH (f:Fact {subject_id: $s, predicate: 'may_treat', object_id: $o}) RETURN f.sabs AS sabs",
                        {"s": ASPIRIN, "o": HEADACHE})
    assert fact["sabs"] == "MED-RT|NDFRT"


def test_catalog_before_inside_and_after_the_intervals(loaded: KgliteStore) -> None:
    def objects(day: dt.date, subject: str, predicate: str, known_at: dt.date | None = None) -> list[str | None]:
        return [r.object for r in catalog.facts_as_of(loaded, day, subject=subject, predicate=predicate,
                                                      known_at=known_at)]

    assert objects(dt.date(2019, 12, 31), APAP, "may_treat") == []
    assert objects(dt.date(2020, 5, 1), APAP, "may_treat") == [FEVER]
    assert objects(dt.date(2021, 4, 30), APAP, "may_treat") == [FEVER]
    assert objects(dt.date(2021, 5, 1), APAP, "may_treat") == []  # half-open: the dropping release's date
    assert objects(dt.date(2022, 6, 1), APAP, "may_treat") == [FEVER]
    assert objects(dt.date(2022, 4, 30), ASPIRIN, "may_prevent") == [MI]
    assert objects(dt.date(2030, 1, 1), ASPIRIN, "may_prevent") == []
    # As known when only 2020AA was out, acetaminophen still treated fever in mid-2021; as known now, it did not.
    assert objects(dt.date(2021, 6, 1), APAP, "may_treat", known_at=dt.date(2020, 12, 1)) == [FEVER]
    assert objects(dt.date(2020, 6, 1), APAP, "may_treat", known_at=dt.date(2020, 12, 1)) == [FEVER]  # one version
    assert objects(dt.date(2021, 6, 1), APAP, "may_treat", known_at=dt.date(2021, 6, 1)) == []
    assert objects(dt.date(2020, 6, 1), APAP, "may_treat", known_at=dt.date(2019, 1, 1)) == []

    versions = catalog.timeline(loaded, APAP, predicate="may_treat")
    assert [(v.valid_from, v.valid_to) for v in versions] == [(DATES["2020AA"], DATES["2021AA"]),
                                                                (DATES["2022AA"], None)]
    with_retracted = catalog.timeline(loaded, APAP, predicate="may_treat", include_retracted=True)
    assert len(with_retracted) == 3
    changes = catalog.changed_between(loaded, dt.date(2020, 6, 1), dt.date(2021, 6, 1), predicate="may_treat")
    assert [(c.subject, c.before, c.after) for c in changes if c.subject == APAP] == [(APAP, [FEVER], [])]
    assert (T2DM, [], ["C0025598"]) in [(c.subject, c.before, c.after) for c in catalog.changed_between(
        loaded, dt.date(2020, 6, 1), dt.date(2021, 6, 1), predicate="may_be_treated_by")]


def captions(store: GraphStore) -> dict[str, str | None]:
    return {r["id"]: r["caption"] for r in store.run("MATCH (e:Entity) RETURN e.id AS id, e.caption AS caption")}


def test_names_are_preferred_english_strings(store: KgliteStore) -> None:
    umls.load(store, folders(names=("2020AA",)))
    names = captions(store)
    # MRCONSO also holds a Spanish preferred row, a synonym, a variant and a non-preferred atom per concept.
    assert names[ASPIRIN] == "Aspirin" and names[HEADACHE] == "Headache"
    assert names[T2DM] == "Diabetes Mellitus, Non-Insulin-Dependent"
    assert names[BETA] is None  # 2020AA has no preferred English string for it
    assert HEART not in names  # only in a relation the filters skip: its name is never kept
    kinds = {r["kind"] for r in store.run("MATCH (e:Entity) RETURN DISTINCT e.kind AS kind")}
    assert kinds == {umls.CONCEPT}
    umls.load(store, folders(names=("2021AA", "2022AA")))
    names = captions(store)
    assert names[T2DM] == "Type 2 diabetes mellitus"  # renamed in 2021AA: the newest release wins
    assert names[BETA] == "Adrenergic beta-Antagonists"


def test_sab_and_rela_filters(tmp_path: Path) -> None:
    with KgliteStore(":memory:") as s:
        umls.load(s, folders(), sabs=["SNOMEDCT_US"])
        assert {k[1] for k in current_facts(s)} == {"isa", "inverse_isa"}
        [source] = s.run("MATCH (r:Source {id: 'umls:2020AA'}) RETURN r.sab_filter AS sabs, r.rela_filter AS relas")
        assert source["sabs"] == "SNOMEDCT_US" and "may_treat" in source["relas"]
    with KgliteStore(":memory:") as s:
        umls.load(s, folders(), relas=["may_treat"])
        facts = current_facts(s)
        assert {k[1] for k in facts} == {"may_treat"}
        assert set(facts) == raw_triples("2020AA", frozenset({"may_treat"})) | raw_triples(
            "2021AA", frozenset({"may_treat"})) | raw_triples("2022AA", frozenset({"may_treat"}))
    with KgliteStore(":memory:") as s:
        umls.load(s, folders(), relas=None)
        facts = current_facts(s)
        assert (MI, "has_finding_site", HEART) in facts
        assert "" not in {k[1] for k in facts}  # rows without a RELA are skipped
        assert all(k[0] != k[2] for k in facts)  # so are self-relations
        assert captions(s)[HEART] == "Heart"


def test_reload_changes_nothing(file_store: KgliteStore) -> None:
    first = umls.load(file_store, folders())
    assert not first.unchanged
    again = umls.load(file_store, folders())
    assert again.unchanged and graph_counts(file_store) == first.after
    assert [r.skipped for r in again.releases] == [True, True, True]
    assert umls.load(file_store, folders(names=("2021AA",))).unchanged


def test_incremental_loads_equal_one_run(store: KgliteStore, file_store: KgliteStore) -> None:
    umls.load(store, folders())
    umls.load(file_store, folders(names=("2020AA",)))
    umls.load(file_store, folders(names=("2020AA", "2021AA")))  # 2020AA is skipped
    umls.load(file_store, folders(names=("2022AA",)))
    assert fact_state(file_store) == fact_state(store)


def test_out_of_order_and_mixed_filter_loads_are_rejected(file_store: KgliteStore) -> None:
    umls.load(file_store, folders(names=("2021AA",)))
    before = graph_counts(file_store)
    with pytest.raises(InputError, match="out-of-order"):
        umls.load(file_store, folders(names=("2020AA",)))
    with pytest.raises(InputError, match="same filters"):
        umls.load(file_store, folders(names=("2022AA",)), sabs=["MSH"])
    with pytest.raises(InputError, match="release date"):
        umls.load(file_store, folders(names=("2021AA",)), release_dates={"2021AA": "2021-05-03"})
    assert graph_counts(file_store) == before


def test_release_dates(store: KgliteStore, tmp_path: Path) -> None:
    umls.load(store, folders(names=("2020AA", "2021AA")), release_dates={"2020AA": "2020-05-04"})
    [closed, open_] = sorted(
        store.run("MATCH (f:Fact {subject_id: $s, predicate: 'may_treat'}) RETURN f.valid_from AS a, "
                  "f.valid_to AS b, f.precision AS p, f.known_to AS k", {"s": APAP}),
        key=lambda r: r["b"] is None)
    assert (closed["a"], closed["b"], closed["p"]) == (dt.date(2020, 5, 4), DATES["2021AA"], "month")
    assert (open_["a"], open_["p"], open_["k"]) == (dt.date(2020, 5, 4), "day", DATES["2021AA"])
    # A later run need not repeat the date of a release it skips; a different one is refused.
    assert umls.load(store, folders(names=("2020AA", "2021AA"))).unchanged
    with pytest.raises(InputError, match="loaded with release date 2020-05-04"):
        umls.load(store, folders(names=("2020AA",)), release_dates={"2020AA": "2020-05"})
    odd = tmp_path / "2008AC"
    shutil.copytree(FIXTURES / "2020AA", odd)
    with pytest.raises(InputError, match="--release-date 2008AC="):
        umls.load(store, [odd])
    unnamed = tmp_path / "latest"
    shutil.copytree(FIXTURES / "2020AA", unnamed)
    with pytest.raises(InputError, match="name the folder after the release"):
        umls.load(store, [unnamed])


def _cut_last_row(path: Path) -> int:
    text = path.read_text()
    path.write_text(text[: len(text) - 9])
    return text.count("\n")


def _append(path: Path, row: str) -> int:
    with path.open("a") as fh:
        fh.write(row)
    return path.read_text().count("\n")


def _bad_byte(path: Path) -> int:
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b"(product)", b"(pr\xffduct)")
    path.write_bytes(b"\n".join(lines))
    return 4


def _drop_last_line(path: Path) -> int:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-1]))
    return len(lines) - 1


GOOD = "C0018681|A1|SCUI|RO|C0004057|A2|SCUI|may_treat|R1||MED-RT|MED-RT|||N||\n"
CASES = {
    "too few fields": ("2022AA/META/MRREL.RRF", lambda p: _append(p, GOOD.replace("|N||", "|N|")), "fields"),
    "too many fields": ("2022AA/META/MRREL.RRF", lambda p: _append(p, GOOD.replace("|N||", "|N|||")), "fields"),
    "empty CUI": ("2022AA/META/MRREL.RRF", lambda p: _append(p, GOOD.replace("C0004057", "")), "CUI2: empty"),
    "not a CUI": ("2021AA/MRCONSO.RRF", lambda p: _append(
        p, "X123|ENG|P|L1|PF|S1|Y|A1||||MTH|PN|NOCODE|x|0|N||\n"), "not a CUI"),
    "unknown TS": ("2021AA/MRCONSO.RRF", lambda p: _append(
        p, "C0018681|ENG|X|L1|PF|S1|Y|A1||||MTH|PN|NOCODE|x|0|N||\n"), "TS: 'X' is not one of P, S, p, s"),
    "unknown STT": ("2022AA/META/MRCONSO.RRF", lambda p: _append(
        p, "C0018681|ENG|P|L1|PFX|S1|Y|A1||||MTH|PN|NOCODE|x|0|N||\n"), "STT: 'PFX' is not one of"),
    "unknown ISPREF": ("2020AA/MRCONSO.RRF", lambda p: _append(
        p, "C0018681|ENG|P|L1|PF|S1|y|A1||||MTH|PN|NOCODE|x|0|N||\n"), "ISPREF: 'y' is not one of N, Y"),
    "truncated mid-row": ("2022AA/META/MRREL.RRF", _cut_last_row, "truncated"),
    "not UTF-8": ("2020AA/MRCONSO.RRF", _bad_byte, "UTF-8"),
    "fewer rows than MRFILES says": ("2021AA/MRREL.RRF", _drop_last_line, "MRFILES.RRF lists"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_names_file_and_line_and_writes_nothing(case: str, tmp_path: Path) -> None:
    root = tmp_path / "umls"
    shutil.copytree(FIXTURES, root)
    relative, damage, message = CASES[case]
    line = damage(root / relative)
    with KgliteStore(tmp_path / "s.kgl") as s:
        before = graph_counts(s)
        with pytest.raises(InputError, match=message) as info:
            umls.load(s, folders(root))
        assert info.value.path == str(root / relative)
        assert info.value.record == f"line {line}"
        assert graph_counts(s) == before
    with KgliteStore(tmp_path / "s.kgl") as s:  # and nothing reached the file either
        assert graph_counts(s) == before


def test_bad_row_in_a_later_release_rolls_back_an_incremental_load(tmp_path: Path) -> None:
    root = tmp_path / "umls"
    shutil.copytree(FIXTURES, root)
    line = _append(root / "2022AA/META/MRREL.RRF", GOOD.replace("|SCUI|RO|", "|SCUI|"))
    with KgliteStore(tmp_path / "s.kgl") as s:
        umls.load(s, folders(root, ("2020AA",)))
        before = fact_state(s), graph_counts(s)
        with pytest.raises(InputError) as info:
            umls.load(s, folders(root))  # 2021AA would load fine, 2022AA fails at its last line
        assert info.value.record == f"line {line}"
        assert (fact_state(s), graph_counts(s)) == before


def test_cli(tmp_path: Path) -> None:
    runner = CliRunner()
    uri = f"kglite://{tmp_path / 's.kgl'}"
    args = ["--store", uri, "ingest", "umls", *map(str, folders()), "--release-date", "2021AA=2021-05-03"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "UMLS releases" in result.output and "2022AA" in result.output
    with KgliteStore(tmp_path / "s.kgl") as s:
        assert current_facts(s)[(APAP, "may_treat", FEVER)] == [(DATES["2020AA"], dt.date(2021, 5, 3)),
                                                                 (DATES["2022AA"], None)]
        counts = graph_counts(s)
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "store unchanged" in again.output
    with KgliteStore(tmp_path / "s.kgl") as s:
        assert graph_counts(s) == counts

    other = runner.invoke(app, ["--store", f"kglite://{tmp_path / 't.kgl'}", "ingest", "umls",
                                str(FIXTURES / "2020AA"), "--sab", "SNOMEDCT_US", "--rela", "isa"])
    assert other.exit_code == 0, other.output
    with KgliteStore(tmp_path / "t.kgl") as s:
        assert list(current_facts(s)) == [(T2DM, "isa", "C0011849")]

    both = runner.invoke(app, ["--store", uri, "ingest", "umls", str(FIXTURES / "2020AA"), "--rela", "isa",
                               "--all-relations"])
    assert both.exit_code != 0
    bad_date = runner.invoke(app, ["--store", uri, "ingest", "umls", str(FIXTURES / "2020AA"), "--release-date",
                                   "2020AA"])
    assert bad_date.exit_code != 0 and "RELEASE=DATE" in bad_date.output
    broken = tmp_path / "broken" / "2023AA"
    shutil.copytree(FIXTURES / "2021AA", broken)
    (broken / "MRFILES.RRF").unlink()
    line = _append(broken / "MRREL.RRF", "C0018681|A1|SCUI\n")
    failed = runner.invoke(app, ["--store", uri, "ingest", "umls", str(broken)])
    assert failed.exit_code == 2
    assert "MRREL.RRF" in failed.output and f"line {line}" in failed.output
    # The UMLS is licensed: no download command.
    assert all("umls" not in (c.name or getattr(c.callback, "__name__", "")) for c in download_app.registered_commands)
