"""Wikidata entity JSON ingest on the real samples (../shared/data/wikidata-entities) and modified copies of them."""

from __future__ import annotations

import copy
import datetime as dt
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from rdflib import Graph, Literal, URIRef
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.errors import InputError
from chronokg.graph.counts import graph_counts
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import wikidata
from chronokg.ingest.wikidata import Selection
from chronokg.queries import catalog

SAMPLES = ("Q646148", "Q2112", "Q271094")
TEMPORAL = {"P39", "P54", "P108", "P463", "P69", "P169", "P1037", "P1308"}  # ChroKnowBench's, as its paper lists them
TIME_QUALIFIERS = {"P580", "P582", "P585", "P1319", "P1326"}


@pytest.fixture(scope="module")
def samples(shared_data: Path) -> Path:
    return shared_data / "wikidata-entities"


def raw(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def day(time: str) -> dt.date:
    """`+1978-08-30T00:00:00Z` → date, read independently of the loader (day precision only)."""
    return dt.date.fromisoformat(time[1:11])


def statement_keys(entity: dict[str, Any], pids: set[str] | None) -> set[str]:
    """Distinct statements with a value: the same value with the same time qualifiers is one fact."""
    keys = set()
    for pid, statements in entity["claims"].items():
        if pids is not None and pid not in pids:
            continue
        for st in statements:
            if st["mainsnak"]["snaktype"] != "value":
                continue
            quals = {q: st.get("qualifiers", {}).get(q) for q in TIME_QUALIFIERS}
            value = st["mainsnak"]["datavalue"]["value"]
            if isinstance(value, dict) and "amount" in value:
                value = {"amount": value["amount"].lstrip("+")}  # bounds are not part of a fact
            keys.add(json.dumps([pid, value, {q: [s.get("datavalue") for s in v] for q, v in quals.items() if v}],
                                sort_keys=True))
    return keys


def fact_rows(store: KgliteStore, subject: str | None = None) -> list[dict[str, Any]]:
    where = "WHERE f.source_kind = 'wikidata'" + (" AND f.subject_id = $s" if subject else "")
    return store.run(f"MATCH (f:Fact) {where} RETURN f.id AS id, f.subject_id AS subject, f.predicate AS predicate, "
                     "f.object_id AS object, f.value AS value, f.valid_from AS valid_from, f.valid_to AS valid_to, "
                     "f.precision AS precision, f.known_from AS known_from, f.known_to AS known_to, "
                     "f.source_id AS source_id, f.statement_id AS statement_id, f.rank AS rank ORDER BY id",
                     {"s": subject})


def write_entity(path: Path, entity: dict[str, Any]) -> Path:
    path.write_text(json.dumps(entity))
    return path


# --- counts and intervals ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["temporal", "all"])
def test_fact_counts_match_the_raw_statements(samples: Path, mode: str) -> None:
    store = KgliteStore(":memory:")
    summary = wikidata.load(store, [samples], Selection.parse(mode))
    entities = [raw(samples / f"{q}.json") for q in SAMPLES]
    pids = TEMPORAL if mode == "temporal" else None
    expected = sum(len(statement_keys(e, pids)) for e in entities)
    counts = graph_counts(store)
    assert summary.records == 3
    assert counts["Fact"] == expected == len(fact_rows(store))
    assert counts["Source"] == 3
    if mode == "temporal":
        # Only Henning Christophersen holds a ChroKnowBench relation: his two P39 statements.
        assert expected == len(raw(samples / "Q646148.json")["claims"]["P39"]) == 2
    for e in entities:
        src = f"wikidata:{e['id']}@{e['lastrevid']}"
        asserted = store.run("MATCH (f:Fact)-[:ASSERTED_IN]->(s:Source {id: $id}) RETURN count(f) AS n", {"id": src})
        assert asserted[0]["n"] == len(statement_keys(e, pids))
        (ent,) = store.run("MATCH (e:Entity {id: $id}) RETURN e.caption AS caption, e.kind AS kind", {"id": e["id"]})
        assert ent == {"caption": e["labels"]["en"]["value"], "kind": "wikidata_item"}
        (source,) = store.run("MATCH (s:Source {id: $id}) RETURN s.release_date AS d, s.kind AS k", {"id": src})
        assert source == {"d": dt.date.fromisoformat(e["modified"][:10]), "k": "wikidata"}


def test_position_held_intervals_match_the_raw_qualifiers(samples: Path, store: KgliteStore) -> None:
    wikidata.load(store, [samples / "Q646148.json"])
    entity = raw(samples / "Q646148.json")
    rows = {r["statement_id"]: r for r in fact_rows(store, "Q646148")}
    assert set(rows) == {st["id"] for st in entity["claims"]["P39"]}
    for st in entity["claims"]["P39"]:
        row = rows[st["id"]]
        quals = st.get("qualifiers", {})
        assert row["object"] == st["mainsnak"]["datavalue"]["value"]["id"]
        assert row["rank"] == st["rank"]
        assert row["known_from"] == dt.date.fromisoformat(entity["modified"][:10])
        assert row["source_id"] == f"wikidata:Q646148@{entity['lastrevid']}"
        start = quals.get("P580", [{}])[0].get("datavalue", {}).get("value", {}).get("time")
        end = quals.get("P582", [{}])[0].get("datavalue", {}).get("value", {}).get("time")
        assert row["valid_from"] == (day(start) if start else None)
        assert row["valid_to"] == (day(end) if end else None)
    dated = [r for r in rows.values() if r["valid_from"]]
    assert [(r["valid_from"], r["valid_to"], r["precision"]) for r in dated] == [
        (dt.date(1978, 8, 30), dt.date(1979, 10, 26), "day")]


def test_as_of_and_timeline_before_inside_after(samples: Path, store: KgliteStore) -> None:
    wikidata.load(store, [samples / "Q646148.json"])
    entity = raw(samples / "Q646148.json")
    (dated,) = [st for st in entity["claims"]["P39"] if st.get("qualifiers")]
    (undated,) = [st for st in entity["claims"]["P39"] if not st.get("qualifiers")]
    office = dated["mainsnak"]["datavalue"]["value"]["id"]
    other = undated["mainsnak"]["datavalue"]["value"]["id"]
    start = day(dated["qualifiers"]["P580"][0]["datavalue"]["value"]["time"])
    end = day(dated["qualifiers"]["P582"][0]["datavalue"]["value"]["time"])

    def held(on: dt.date) -> set[str | None]:
        return {r.object for r in catalog.facts_as_of(store, on, subject="Q646148", predicate="P39")}

    assert held(start - dt.timedelta(days=1)) == {other}  # an undated statement holds at any time
    assert held(start) == {office, other}
    assert held(end - dt.timedelta(days=1)) == {office, other}
    assert held(end) == {other}  # half-open: the end date belongs to the successor
    timeline = catalog.timeline(store, "Q646148", "P39")
    assert [r.object for r in timeline] == [other, office]
    assert timeline[0].subject_caption == entity["labels"]["en"]["value"]


def test_point_in_time_series(samples: Path, store: KgliteStore) -> None:
    """Population (P1082, P585): each point holds until the next point, the last one for its precision period."""
    wikidata.load(store, [samples / "Q2112.json", samples / "Q271094.json"], Selection.parse("timed"))
    for qid in ("Q2112", "Q271094"):
        points = []  # (first day, precision, amount) of each observation, read from the raw JSON
        for st in raw(samples / f"{qid}.json")["claims"]["P1082"]:
            t = st["qualifiers"]["P585"][0]["datavalue"]["value"]
            first = dt.date(int(t["time"][1:5]), int(t["time"][6:8]) or 1, int(t["time"][9:11]) or 1)
            points.append((first, t["precision"], st["mainsnak"]["datavalue"]["value"]["amount"].lstrip("+")))
        points.sort()
        for first, _, _ in points:
            values = {r.value for r in catalog.facts_as_of(store, first, subject=qid, predicate="P1082")}
            assert values == {a for d, _, a in points if d == first}  # the observations of that day/month
        last, precision, _ = points[-1]
        after_last = last + dt.timedelta(days=1) if precision == 11 else dt.date(last.year, last.month + 1, 1)
        assert catalog.facts_as_of(store, after_last - dt.timedelta(days=1), subject=qid, predicate="P1082")
        assert catalog.facts_as_of(store, after_last, subject=qid, predicate="P1082") == []
        assert catalog.facts_as_of(store, points[0][0] - dt.timedelta(days=1), subject=qid, predicate="P1082") == []
        # Between two observations the earlier one holds.
        a, b = points[0], points[1]
        between = b[0] - dt.timedelta(days=1)
        assert {r.value for r in catalog.facts_as_of(store, between, subject=qid, predicate="P1082")} == {a[2]}
    # Bielefeld's mayors (P6, year precision): the 1999–2009 one is gone in 2009, his successor is in.
    terms = []
    for st in raw(samples / "Q2112.json")["claims"]["P6"]:
        quals = st["qualifiers"]
        begin = quals["P580"][0]["datavalue"]["value"]["time"][1:5]
        end = quals["P582"][0]["datavalue"]["value"]["time"][1:5] if "P582" in quals else "9999"
        terms.append((begin, end, st["mainsnak"]["datavalue"]["value"]["id"]))

    def mayors(year: int) -> set[str]:
        return {str(r.object) for r in catalog.facts_as_of(store, dt.date(year, 6, 1), subject="Q2112",
                                                            predicate="P6")}

    for year in (1980, 1994, 1999, 2000, 2009, 2016):
        assert mayors(year) == {m for a, b, m in terms if a <= str(year) < b}, year
    assert mayors(2009) != mayors(2008)
    (change,) = catalog.changed_between(store, dt.date(2008, 6, 1), dt.date(2010, 6, 1), predicate="P6")
    assert change.before == sorted(mayors(2008)) and change.after == sorted(mayors(2010))


# --- idempotence, atomicity, dumps ---------------------------------------------------------------


def test_reload_changes_nothing(samples: Path, file_store: KgliteStore) -> None:
    first = wikidata.load(file_store, [samples], Selection.parse("all"))
    rows = fact_rows(file_store)
    again = wikidata.load(file_store, [samples], Selection.parse("all"))
    assert not first.unchanged and again.unchanged
    assert fact_rows(file_store) == rows
    assert again.retracted == 0


def test_truncated_file_fails_naming_it_and_changes_nothing(samples: Path, tmp_path: Path,
                                                            store: KgliteStore) -> None:
    wikidata.load(store, [samples / "Q646148.json"])
    before = graph_counts(store)
    text = (samples / "Q2112.json").read_text()
    broken = tmp_path / "Q2112-truncated.json"
    broken.write_text(text[: len(text) // 2])
    with pytest.raises(InputError) as info:
        wikidata.load(store, [samples / "Q271094.json", broken], Selection.parse("all"))
    assert "Q2112-truncated.json" in str(info.value)
    assert graph_counts(store) == before


def dump_lines(entities: list[dict[str, Any]]) -> str:
    return "[\n" + ",\n".join(json.dumps(e) for e in entities) + "\n]\n"


def test_gzipped_dump_loads_the_same_facts(samples: Path, tmp_path: Path) -> None:
    dump = tmp_path / "latest-all.json.gz"
    with gzip.open(dump, "wt", encoding="utf-8") as fh:
        fh.write(dump_lines([raw(samples / f"{q}.json") for q in SAMPLES]))
    from_files, from_dump = KgliteStore(":memory:"), KgliteStore(":memory:")
    wikidata.load(from_files, [samples], Selection.parse("all"))
    summary = wikidata.load(from_dump, [dump], Selection.parse("all"), chunk=1)  # one entity per chunk
    assert summary.records == 3
    assert fact_rows(from_dump) == fact_rows(from_files)
    assert graph_counts(from_dump) == graph_counts(from_files)
    assert wikidata.load(from_dump, [dump], Selection.parse("all"), chunk=2).unchanged


@pytest.mark.parametrize("damage", ["cut", "bad-line"])
def test_damaged_dump_rolls_back_every_chunk(samples: Path, tmp_path: Path, store: KgliteStore, damage: str) -> None:
    text = dump_lines([raw(samples / f"{q}.json") for q in SAMPLES])
    if damage == "cut":
        data = gzip.compress(text.encode())
        data = data[: len(data) * 3 // 4]
    else:
        lines = text.splitlines(keepends=True)
        lines[3] = lines[3][:100] + "\n"  # the third entity line is broken; two chunks precede it
        data = gzip.compress("".join(lines).encode())
    dump = tmp_path / "dump.json.gz"
    dump.write_bytes(data)
    before = graph_counts(store)
    with pytest.raises(InputError) as info:
        wikidata.load(store, [dump], Selection.parse("all"), chunk=1)
    assert "dump.json.gz" in str(info.value)
    if damage == "bad-line":
        assert info.value.record == "line 4"
    assert graph_counts(store) == before


def test_wrapper_with_several_entities(samples: Path, tmp_path: Path, store: KgliteStore) -> None:
    wrapped = {"entities": {q: raw(samples / f"{q}.json") for q in SAMPLES}}
    path = write_entity(tmp_path / "three.json", wrapped)
    summary = wikidata.load(store, [path], Selection.parse("timed"))
    assert summary.records == 3
    assert {r["subject"] for r in fact_rows(store)} == set(SAMPLES)


def test_invalid_time_names_file_and_statement(samples: Path, tmp_path: Path, store: KgliteStore) -> None:
    entity = raw(samples / "Q646148.json")
    (dated,) = [st for st in entity["claims"]["P39"] if st.get("qualifiers")]
    dated["qualifiers"]["P580"][0]["datavalue"]["value"]["time"] = "+1978-13-30T00:00:00Z"
    path = write_entity(tmp_path / "bad.json", entity)
    with pytest.raises(InputError, match=r"bad\.json.*month 13") as info:
        wikidata.load(store, [path])
    assert dated["id"] in str(info.value)
    assert graph_counts(store).get("Fact", 0) == 0


@pytest.mark.parametrize(("key", "value", "words"), [
    ("calendarmodel", "http://www.wikidata.org/entity/Q12138", "unknown calendarmodel"),
    ("precision", 15, "precision"),
])
def test_time_outside_its_vocabulary_names_file_and_statement(samples: Path, tmp_path: Path, store: KgliteStore,
                                                               key: str, value: Any, words: str) -> None:
    entity = raw(samples / "Q646148.json")
    (dated,) = [st for st in entity["claims"]["P39"] if st.get("qualifiers")]
    dated["qualifiers"]["P580"][0]["datavalue"]["value"][key] = value
    path = write_entity(tmp_path / "bad.json", entity)
    with pytest.raises(InputError, match=r"bad\.json") as info:
        wikidata.load(store, [path])
    assert dated["id"] in str(info.value) and words in str(info.value)
    assert graph_counts(store).get("Fact", 0) == 0


# --- time rules ----------------------------------------------------------------------------------


def _time(text: str, precision: int, calendar: str = wikidata.GREGORIAN) -> dict[str, Any]:
    return {"snaktype": "value", "property": "P580", "datatype": "time", "datavalue": {"type": "time", "value": {
        "time": text, "timezone": 0, "before": 0, "after": 0, "precision": precision, "calendarmodel": calendar}}}


def _statement(base: dict[str, Any], n: int, quals: dict[str, list[dict[str, Any]]] | None = None,
               snaktype: str = "value") -> dict[str, Any]:
    st = copy.deepcopy(base)
    st["id"] = f"Q646148$TEST-{n}"
    st["mainsnak"]["datavalue"]["value"] = {"entity-type": "item", "numeric-id": 900 + n, "id": f"Q{900 + n}"}
    if snaktype != "value":
        st["mainsnak"]["snaktype"] = snaktype
        del st["mainsnak"]["datavalue"]
    st["qualifiers"] = {q: [{**s, "property": q} for s in snaks] for q, snaks in (quals or {}).items()}
    return st


def test_precision_calendar_and_skips(samples: Path, tmp_path: Path, store: KgliteStore) -> None:
    entity = raw(samples / "Q646148.json")
    base = entity["claims"]["P39"][1]
    entity["claims"]["P39"] = [
        _statement(base, 1, {"P580": [_time("+1950-00-00T00:00:00Z", 8)]}),  # 1950s
        _statement(base, 2, {"P580": [_time("+1900-00-00T00:00:00Z", 7)]}),  # 19th century (1801–1900)
        _statement(base, 3, {"P580": [_time("+1700-02-19T00:00:00Z", 11, wikidata.JULIAN)]}),
        _statement(base, 4, {"P580": [_time("-0044-03-15T00:00:00Z", 11)]}),
        _statement(base, 5, snaktype="somevalue"),
        _statement(base, 6, snaktype="novalue"),
        _statement(base, 7, {"P580": [_time("+2009-00-00T00:00:00Z", 9)],
                             "P582": [_time("+2009-00-00T00:00:00Z", 9)]}),
        _statement(base, 8, {"P580": [_time("+2010-05-00T00:00:00Z", 10)],
                             "P582": [{"snaktype": "somevalue", "property": "P582"}]}),
        _statement(base, 9, {"P580": [_time("+2012-00-00T00:00:00Z", 9)],
                             "P582": [_time("+2011-00-00T00:00:00Z", 9)]}),
        _statement(base, 10, {"P1319": [_time("+1990-00-00T00:00:00Z", 9)],
                              "P1326": [_time("+1995-00-00T00:00:00Z", 9)]}),
        _statement(base, 11, {"P580": [_time("+1000000-00-00T00:00:00Z", 3)]}),
        _statement(base, 12, {"P585": [_time("-0100-00-00T00:00:00Z", 9)]}),  # a point before year 1
    ]
    summary = wikidata.load(store, [write_entity(tmp_path / "Q646148.json", entity)])
    assert summary.skipped == {"before_year_1": 2, "coarse_bound_dropped": 1, "inverted_interval": 1, "novalue": 1,
                               "somevalue": 1, "unknown_bound": 1}
    rows = {r["object"]: r for r in fact_rows(store, "Q646148")}
    got = {obj: (r["valid_from"], r["valid_to"], r["precision"]) for obj, r in rows.items()}
    assert got == {
        "Q901": (dt.date(1950, 1, 1), None, "year"),
        "Q902": (dt.date(1801, 1, 1), None, "year"),
        "Q903": (dt.date(1700, 3, 1), None, "day"),  # Julian 19 Feb 1700 = Gregorian 1 Mar 1700 (German switch)
        "Q907": (dt.date(2009, 1, 1), dt.date(2010, 1, 1), "year"),  # 2009–2009 widened to the year
        "Q908": (dt.date(2010, 5, 1), None, "month"),
        "Q910": (dt.date(1990, 1, 1), dt.date(1995, 1, 1), "year"),
        "Q911": (None, None, "none"),  # a bound coarser than a millennium is dropped: no date left
    }
    props = store.run("MATCH (f:Fact {subject_id: 'Q646148'}) RETURN f.object_id AS o, f.start_qualifier AS sq, "
                      "f.end_qualifier AS eq, f.start_precision AS sp, f.calendar AS cal, f.end_widened AS w")
    by = {r["o"]: r for r in props}
    assert (by["Q910"]["sq"], by["Q910"]["eq"]) == ("P1319", "P1326")
    assert by["Q901"]["sp"] == 8 and by["Q902"]["sp"] == 7
    assert by["Q903"]["cal"] == "julian" and by["Q907"]["w"] is True


# --- known time across revisions -----------------------------------------------------------------


def _revisions(samples: Path, tmp_path: Path) -> tuple[Path, Path, dict[str, Any], dict[str, Any]]:
    """The real Q646148 and a later revision: one P39 removed, the other's end corrected, one added."""
    old = raw(samples / "Q646148.json")
    new = copy.deepcopy(old)
    new["lastrevid"] = old["lastrevid"] + 1000
    new["modified"] = "2018-03-01T12:00:00Z"
    dated = next(st for st in new["claims"]["P39"] if st.get("qualifiers"))
    dated["qualifiers"]["P582"][0]["datavalue"]["value"]["time"] = "+1979-10-27T00:00:00Z"
    added = _statement(dated, 1, {"P580": [_time("+1985-01-01T00:00:00Z", 11)]})
    new["claims"]["P39"] = [dated, added]
    old_dir, new_dir = tmp_path / "old", tmp_path / "new"
    old_dir.mkdir()
    new_dir.mkdir()
    return write_entity(old_dir / "Q646148.json", old), write_entity(new_dir / "Q646148.json", new), old, new


def test_newer_revision_retracts_what_it_no_longer_asserts(samples: Path, tmp_path: Path,
                                                           store: KgliteStore) -> None:
    old_path, new_path, old, _ = _revisions(samples, tmp_path)
    wikidata.load(store, [old_path], Selection.parse("all"))
    others_before = [r for r in fact_rows(store) if r["predicate"] != "P39"]
    summary = wikidata.load(store, [new_path])  # default selection: P39 is covered, other properties are not
    assert summary.retracted == 2
    old_day, new_day = dt.date(2017, 1, 2), dt.date(2018, 3, 1)
    p39 = {(r["object"], r["valid_to"]): r for r in fact_rows(store) if r["predicate"] == "P39"}
    removed = next(st for st in old["claims"]["P39"] if not st.get("qualifiers"))
    undated_office = removed["mainsnak"]["datavalue"]["value"]["id"]

    def known(obj: str, valid_to: dt.date | None) -> tuple[dt.date | None, dt.date | None]:
        row = p39[(obj, valid_to)]
        return row["known_from"], row["known_to"]

    assert known(undated_office, None) == (old_day, new_day)  # removed by the new revision
    assert known("Q6866144", dt.date(1979, 10, 26)) == (old_day, new_day)  # its end was corrected...
    assert known("Q6866144", dt.date(1979, 10, 27)) == (new_day, None)  # ...to this
    assert known("Q901", None) == (new_day, None)  # added
    # Properties the second load did not cover are still known.
    assert [r for r in fact_rows(store) if r["predicate"] != "P39"] == others_before
    # Retraction is known time, not valid time: what we believed then is still answerable.
    on = dt.date(1979, 10, 26)
    assert {r.object for r in catalog.facts_as_of(store, on, subject="Q646148", predicate="P39")} == {"Q6866144"}
    then = catalog.facts_as_of(store, on, subject="Q646148", predicate="P39", known_at=dt.date(2017, 6, 1))
    assert {r.object for r in then} == {undated_office}
    assert len(catalog.timeline(store, "Q646148", "P39")) == 2
    assert len(catalog.timeline(store, "Q646148", "P39", include_retracted=True)) == 4
    assert wikidata.load(store, [new_path]).unchanged
    assert wikidata.load(store, [old_path]).unchanged  # an older revision loaded late changes nothing known


def test_revision_order_does_not_matter(samples: Path, tmp_path: Path) -> None:
    old_path, new_path, _, _ = _revisions(samples, tmp_path)
    in_order, reversed_order, together = KgliteStore(":memory:"), KgliteStore(":memory:"), KgliteStore(":memory:")
    for s, order in ((in_order, [old_path, new_path]), (reversed_order, [new_path, old_path])):
        for p in order:
            wikidata.load(s, [p])
    wikidata.load(together, [new_path, old_path])
    assert fact_rows(in_order) == fact_rows(reversed_order) == fact_rows(together)
    assert any(r["known_to"] for r in fact_rows(in_order))


def test_reasserted_fact_is_known_again(samples: Path, tmp_path: Path, store: KgliteStore) -> None:
    old_path, new_path, old, _ = _revisions(samples, tmp_path)
    third = copy.deepcopy(old)
    third["lastrevid"] = old["lastrevid"] + 2000
    third["modified"] = "2019-01-01T00:00:00Z"
    third_dir = tmp_path / "third"
    third_dir.mkdir()
    third_path = write_entity(third_dir / "Q646148.json", third)
    for p in (old_path, new_path, third_path):
        wikidata.load(store, [p])
    rows = {(r["object"], r["valid_to"]): r for r in fact_rows(store)}
    restored = rows[("Q6866144", dt.date(1979, 10, 26))]
    assert (restored["known_from"], restored["known_to"]) == (dt.date(2017, 1, 2), None)
    assert rows[("Q6866144", dt.date(1979, 10, 27))]["known_to"] == dt.date(2019, 1, 1)


# --- CLI -----------------------------------------------------------------------------------------


def test_cli_ingest_query_and_export(samples: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    uri = f"kglite://{tmp_path / 's.kgl'}"
    result = runner.invoke(app, ["--store", uri, "ingest", "wikidata", str(samples), "--properties", "timed"])
    assert result.exit_code == 0, result.output
    assert "wikidata: 3 records" in result.output
    result = runner.invoke(app, ["--store", uri, "query", "as-of", "--date", "1979-01-01", "--subject", "Q646148",
                                 "--predicate", "P39", "-f", "json"])
    assert result.exit_code == 0, result.output
    assert {r["object"] for r in json.loads(result.output)} == {"Q5449541", "Q6866144"}
    out = tmp_path / "wd.ttl"
    result = runner.invoke(app, ["--store", uri, "export", "rdf", "--out", str(out), "--format", "ttl"])
    assert result.exit_code == 0, result.output
    g = Graph().parse(out, format="turtle")
    p39 = URIRef("http://www.wikidata.org/prop/P39")
    statements = set(g.objects(URIRef("http://www.wikidata.org/entity/Q646148"), p39))
    assert len(statements) == 2
    start = URIRef("http://www.wikidata.org/prop/qualifier/P580")
    starts = {o for st in statements for o in g.objects(st, start)}
    assert all(isinstance(s, Literal) for s in starts)
    assert [s.toPython() for s in starts if isinstance(s, Literal)] == [dt.datetime(1978, 8, 30, tzinfo=dt.UTC)]
    assert '"1978-08-30T00:00:00Z"^^xsd:dateTime' in out.read_text()  # Wikidata's lexical form, kept exactly
    bad = runner.invoke(app, ["--store", uri, "ingest", "wikidata", str(samples), "--properties", "X1"])
    assert bad.exit_code != 0
    missing = runner.invoke(app, ["--store", uri, "ingest", "wikidata", str(tmp_path / "nope.json")])
    assert missing.exit_code == 2 and "nope.json" in missing.output
