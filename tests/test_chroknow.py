"""ChroKnowBench ingest on self-authored fixtures in the benchmark's four row schemas."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.errors import InputError
from chronokg.graph.counts import graph_counts
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import chroknow
from chronokg.ingest.chroknow import Domain
from chronokg.queries import catalog

FIXTURES = Path(__file__).parent / "fixtures" / "chroknow"
UK = "ck:united-kingdom"
HSA = "The annual limit on deductible contributions to a health savings account for self-only coverage is ____ ."
D = dt.date


def rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def loaded() -> KgliteStore:
    store = KgliteStore(":memory:")
    chroknow.load(store, [FIXTURES])
    return store


def shown(facts: list[catalog.FactRow]) -> set[str]:
    return {f.shown for f in facts}


def test_counts_follow_the_rows(loaded: KgliteStore) -> None:
    files = {name: rows(name) for name in ("general.jsonl", "biomedical.jsonl", "legal.jsonl", "invariant.jsonl")}
    counts = graph_counts(loaded)
    assert counts["SourceQuestion"] == sum(len(r) for r in files.values())  # one per row
    assert counts["Source"] == len(files)
    # Facts, counted independently: one per maximal run of consecutive snapshot years holding a value.
    expected = 0
    for name, records in files.items():
        for rec in records:
            if name == "invariant.jsonl":
                expected += len(rec["objects"])
                continue
            prefix = "answers" if name == "legal.jsonl" else "objects"
            years = sorted(int(k.split("_")[1]) for k in rec if k.startswith(prefix + "_"))
            def key(o: Any) -> str:
                return o[0] if isinstance(o, list) else o
            values = {key(o) for y in years for o in rec[f"{prefix}_{y}"]}
            for v in values:
                held = [v in {key(o) for o in rec[f"{prefix}_{y}"]} for y in years]
                expected += sum(1 for i, h in enumerate(held) if h and (i == 0 or not held[i - 1]))
    assert counts["Fact"] == expected


def test_uk_heads_of_government_collapse_into_intervals(loaded: KgliteStore) -> None:
    history = [(f.shown, f.valid_from, f.valid_to, f.precision) for f in catalog.timeline(loaded, UK)]
    assert history == [
        ("David Cameron", D(2015, 1, 1), D(2017, 1, 1), "year"),
        ("Theresa May", D(2016, 1, 1), D(2020, 1, 1), "year"),
        ("Boris Johnson", D(2019, 1, 1), D(2023, 1, 1), "year"),
        ("Liz Truss", D(2022, 1, 1), D(2023, 1, 1), "year"),
        ("Rishi Sunak", D(2022, 1, 1), None, "year"),
    ]
    assert {f.predicate for f in catalog.timeline(loaded, UK)} == {"head of government"}


def test_as_of_before_inside_and_after(loaded: KgliteStore) -> None:
    assert catalog.facts_as_of(loaded, D(2014, 6, 1), subject=UK) == []  # before the first snapshot
    assert shown(catalog.facts_as_of(loaded, D(2016, 7, 1), subject=UK)) == {"David Cameron", "Theresa May"}
    assert shown(catalog.facts_as_of(loaded, D(2018, 3, 1), subject=UK)) == {"Theresa May"}
    assert shown(catalog.facts_as_of(loaded, D(2030, 1, 1), subject=UK)) == {"Rishi Sunak"}  # still open
    de = catalog.facts_as_of(loaded, D(2021, 12, 31), subject="ck:germany")
    assert shown(de) == {"Angela Merkel", "Olaf Scholz"}
    change = catalog.changed_between(loaded, D(2016, 6, 1), D(2018, 6, 1), subject=UK)
    assert [(c.before, c.after) for c in change] == [(["ck:david-cameron", "ck:theresa-may"], ["ck:theresa-may"])]


def test_known_time_is_the_earliest_release_asserting_the_run(loaded: KgliteStore) -> None:
    by_name = {f.shown: f for f in catalog.timeline(loaded, UK)}
    assert by_name["Theresa May"].known_from == D(2016, 12, 28)
    assert by_name["Rishi Sunak"].known_from == D(2022, 12, 28)
    # Known at the start of 2016, only Cameron was known to hold office in mid-2016.
    early = catalog.facts_as_of(loaded, D(2016, 7, 1), subject=UK, known_at=D(2016, 1, 1))
    assert shown(early) == {"David Cameron"}


def test_legal_answers_are_values_of_a_question_entity(loaded: KgliteStore) -> None:
    qid = chroknow.question_id(HSA)
    history = [(f.value, f.valid_from.year if f.valid_from else None, f.valid_to.year if f.valid_to else None)
               for f in catalog.timeline(loaded, qid, predicate=chroknow.ANSWER)]
    # 3,350 held in 2015 and 2016, then a new limit every year (IRS figures).
    assert history[:2] == [("$3,350", 2015, 2017), ("$3,400", 2017, 2018)]
    assert history[-1] == ("$3,850", 2023, None) and len(history) == 8
    assert [f.value for f in catalog.facts_as_of(loaded, D(2020, 7, 1), subject=qid)] == ["$3,550"]
    assert catalog.facts_as_of(loaded, D(2014, 12, 31), subject=qid) == []
    (entity,) = loaded.run("MATCH (e:Entity {id: $id}) RETURN e.question AS q, e.question_type AS t", {"id": qid})
    assert entity == {"q": HSA, "t": "Amount"}


def test_static_and_dynamic_rows_are_marked(loaded: KgliteStore) -> None:
    states = {r["q"]: r["s"] for r in loaded.run(
        "MATCH (q:SourceQuestion) RETURN q.question AS q, q.temporal_state AS s")}
    assert states["United Kingdom | head of government"] == "dynamic"
    assert states["Barack Obama | spouse"] == "static"
    assert states["metformin | may treat"] == "static"
    assert states["COVID-19 | may be treated by"] == "dynamic"
    assert states[HSA] == "dynamic"
    assert states["square | number of sides"] == "invariant"
    fact_states = {r["s"] for r in loaded.run(
        "MATCH (f:Fact {subject_id: 'ck:barack-obama'}) RETURN f.temporal_state AS s")}
    assert fact_states == {"static"}
    (obama,) = catalog.timeline(loaded, "ck:barack-obama")
    assert (obama.shown, obama.valid_from, obama.valid_to) == ("Michelle Obama", D(2015, 1, 1), None)


def test_entities_keep_captions_and_aliases(loaded: KgliteStore) -> None:
    (may,) = loaded.run("MATCH (e:Entity {id: 'ck:theresa-may'}) RETURN e.caption AS c, e.aliases AS a")
    assert may == {"c": "Theresa May", "a": ["Theresa May", "Theresa Mary May"]}
    (dq,) = loaded.run("MATCH (q:SourceQuestion)-[:ABOUT]->(:Entity {id: $id}) RETURN q.distractor AS d",
                       {"id": UK})
    assert ["Gordon Brown"] in json.loads(dq["d"])
    bio = catalog.facts_as_of(loaded, D(2022, 6, 1), subject="ck:covid-19")
    assert shown(bio) == {"remdesivir", "nirmatrelvir"}
    assert shown(catalog.facts_as_of(loaded, D(2021, 6, 1), subject="ck:covid-19")) == {"remdesivir"}


def test_time_invariant_rows_hold_at_any_date(loaded: KgliteStore) -> None:
    for day in (D(1900, 1, 1), D(2024, 1, 1)):
        assert shown(catalog.facts_as_of(loaded, day, subject="ck:square")) == {"4", "four"}
    (tri,) = catalog.facts_as_of(loaded, D(2000, 1, 1), subject="ck:triangle")
    assert (tri.object, tri.valid_from, tri.valid_to) == ("ck:180-degrees", None, None)
    (aliases,) = loaded.run("MATCH (e:Entity {id: 'ck:180-degrees'}) RETURN e.aliases AS a")
    assert aliases["a"] == ["180 degrees", "180°", "pi radians"]


def test_a_gap_gives_two_intervals_and_release_dates_in_other_shapes(tmp_path: Path) -> None:
    # Fictional entities: a value held in 2010-2011, absent in 2012, back in 2013.
    row = {"subject": "Republic of Nowhere", "relation": "head of state",
           "objects_2010": [["Ann Example"]], "objects_2011": [["Ann Example"]],
           "objects_2012": [["Bob Example"]], "objects_2013": [["Ann Example"]],
           "release_date_2010": "20100105", "release_date_2011": "2011-01-05T00:00:00Z",
           "release_date_2012": 2012, "release_date_2013": "2013-02"}
    path = tmp_path / "gap.jsonl"
    path.write_text(json.dumps(row) + "\n")
    store = KgliteStore(":memory:")
    chroknow.load(store, [path])
    history = [(f.shown, f.valid_from, f.valid_to, f.known_from)
               for f in catalog.timeline(store, "ck:republic-of-nowhere")]
    assert history == [
        ("Ann Example", D(2010, 1, 1), D(2012, 1, 1), D(2010, 1, 5)),
        ("Bob Example", D(2012, 1, 1), D(2013, 1, 1), D(2012, 1, 1)),
        ("Ann Example", D(2013, 1, 1), None, D(2013, 2, 1)),
    ]
    assert chroknow.intervals([2010, 2012, 2014], {2010, 2012}) == [(2010, 2014, [2010, 2012])]


def test_domain_is_detected_or_enforced(tmp_path: Path) -> None:
    store = KgliteStore(":memory:")
    with pytest.raises(InputError, match=r"general\.jsonl, record 1 \(line 1\).*general row.*biomedical"):
        chroknow.load(store, [FIXTURES / "general.jsonl"], domain=Domain.BIOMEDICAL)
    assert chroknow.load(store, [FIXTURES / "legal.jsonl"], domain=Domain.LEGAL).records == 2
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text((FIXTURES / "biomedical.jsonl").read_text() + (FIXTURES / "legal.jsonl").read_text())
    with pytest.raises(InputError, match=r"record 3 \(line 3\).*legal row"):
        chroknow.load(store, [mixed])


def broken(name: str) -> dict[str, tuple[str, str]]:
    lines = (FIXTURES / name).read_text().splitlines(keepends=True)
    second = json.loads(lines[1])
    no_date = dict(second)
    del no_date["release_date_2018"]
    flat = dict(second)
    flat["objects_2017"] = ["Angela Merkel"]
    bad_date = dict(second)
    bad_date["release_date_2016"] = "end of 2016"
    other = {"foo": 1}

    def with_second(obj: dict[str, Any]) -> str:
        return lines[0] + json.dumps(obj) + "\n" + "".join(lines[2:])
    return {
        "truncated": ("".join(lines)[: len(lines[0]) + len(lines[1]) // 2], "broken JSON"),
        "no_release_date": (with_second(no_date), "release_date_2018"),
        "flat_general_objects": (with_second(flat), "alias"),
        "bad_date": (with_second(bad_date), "not a date"),
        "unknown_shape": (with_second(other), "not a ChroKnowBench row"),
    }


@pytest.mark.parametrize("kind", ["truncated", "no_release_date", "flat_general_objects", "bad_date",
                                  "unknown_shape"])
def test_bad_input_names_file_and_record_and_changes_nothing(tmp_path: Path, kind: str) -> None:
    text, words = broken("general.jsonl")[kind]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(text)
    with KgliteStore(tmp_path / "s.kgl") as store:
        chroknow.load(store, [FIXTURES / "legal.jsonl"])
        before = graph_counts(store)
        with pytest.raises(InputError) as info:
            chroknow.load(store, [FIXTURES / "biomedical.jsonl", bad])
        assert graph_counts(store) == before
    assert str(bad) in str(info.value) and "record 2 (line 2)" in str(info.value) and words in str(info.value)
    with KgliteStore(tmp_path / "s.kgl") as reopened:
        assert graph_counts(reopened) == before


def test_cli(tmp_path: Path) -> None:
    runner = CliRunner()
    uri = f"kglite://{tmp_path}/s.kgl"
    result = runner.invoke(app, ["--store", uri, "ingest", "chroknow", str(FIXTURES)])
    assert result.exit_code == 0, result.output
    assert "10 records from 4 files" in result.output
    result = runner.invoke(app, ["--store", uri, "ingest", "chroknow", str(FIXTURES / "legal.jsonl"),
                                 "--domain", "legal"])
    assert result.exit_code == 0 and "store unchanged" in result.output
    result = runner.invoke(app, ["--store", uri, "query", "as-of", "--date", "2019-06-01", "--subject", UK,
                                 "-f", "json"])
    assert result.exit_code == 0
    assert {r["object_caption"] for r in json.loads(result.output)} == {"Theresa May", "Boris Johnson"}
    result = runner.invoke(app, ["--store", uri, "ingest", "chroknow", str(FIXTURES / "general.jsonl"),
                                 "--domain", "invariant"])
    assert result.exit_code == 2 and "error:" in result.output and "general.jsonl" in result.output


# --- what byte-exact prompts need: rows as read, their files, the few-shot pools ---------------------------------

BENCH = FIXTURES / "bench"


def seed_files() -> list[Path]:
    return sorted(BENCH.glob("*.jsonl")) + sorted((BENCH / "Fewshots").glob("*.jsonl"))


@pytest.fixture(scope="module")
def bench() -> KgliteStore:
    store = KgliteStore(":memory:")
    chroknow.load(store, [BENCH])
    return store


def test_every_row_is_kept_exactly_as_read_with_its_file(bench: KgliteStore) -> None:
    stored = {(r["f"], r["r"]): r for r in bench.run(
        "MATCH (q:SourceQuestion) RETURN q.row_json AS j, q.file_name AS f, q.record AS r, q.fewshot AS few, "
        "q.seed_domain AS d, q.split AS s")}
    lines = [(p, n, line) for p in seed_files() for n, line in enumerate(p.read_text().splitlines(), start=1)]
    assert len(stored) == len(lines) == 30
    for path, n, line in lines:
        row = stored[path.name, n]
        # Same keys in the same order, same object/alias/distractor order and nesting, same raw release dates.
        assert list(json.loads(row["j"]).items()) == list(json.loads(line).items())
        assert row["few"] is (path.parent.name == "Fewshots")
        assert row["d"] == path.stem.split("_")[1]  # Fewshot_Legal, TimeVariant_Legal_Dynamic -> Legal
        assert row["s"] == (None if row["few"] else path.stem.split("_")[2])


def test_fewshot_rows_add_no_facts_or_entities(bench: KgliteStore) -> None:
    subjects = {r["s"] for r in bench.run("MATCH (f:Fact) RETURN DISTINCT f.subject_id AS s")}
    expected = {chroknow.entity_id(r["subject"]) for p in BENCH.glob("*.jsonl") for r in rows(f"bench/{p.name}")
                if "subject" in r}
    expected |= {chroknow.question_id(r["question"]) for r in rows("bench/TimeVariant_Legal_Dynamic.jsonl")}
    assert subjects == expected
    assert not bench.run("MATCH (e:Entity {id: 'ck:pedro-braillard-poccard'}) RETURN e.id AS id")
    (n,) = bench.run("MATCH (q:SourceQuestion {fewshot: true}) RETURN count(q) AS n")
    assert n["n"] == sum(len(rows(f"bench/Fewshots/{p.name}")) for p in (BENCH / "Fewshots").glob("*.jsonl")) == 23


def test_a_general_file_of_plain_strings_is_read_as_general(bench: KgliteStore) -> None:
    (merkel,) = catalog.timeline(bench, "ck:angela-merkel")
    assert (merkel.shown, merkel.valid_from, merkel.valid_to) == ("Leipzig University", D(2019, 1, 1), None)
    (q,) = bench.run("MATCH (q:SourceQuestion)-[:ABOUT]->(:Entity {id: 'ck:angela-merkel'}) "
                     "RETURN q.benchmark AS b, q.temporal_state AS s")
    assert q == {"b": "chroknow:general", "s": "static"}


def test_fewshot_folder_is_read_only_inside_a_given_folder(tmp_path: Path) -> None:
    assert chroknow.expand([FIXTURES]) == sorted(FIXTURES.glob("*.jsonl"))  # no Fewshots/ there
    assert chroknow.expand([BENCH]) == seed_files()
    only = tmp_path / "Fewshots"
    only.mkdir()
    (only / "pool.jsonl").write_text((BENCH / "Fewshots" / "Fewshot_Legal.jsonl").read_text())
    store = KgliteStore(":memory:")
    chroknow.load(store, [only / "pool.jsonl"])
    assert graph_counts(store).get("Fact", 0) == 0  # a file inside a Fewshots/ folder is a few-shot pool
    (r,) = store.run("MATCH (q:SourceQuestion) RETURN count(q) AS n, collect(DISTINCT q.fewshot) AS f")
    assert r == {"n": 6, "f": [True]}


@pytest.mark.parametrize("name", ["TimeVariant_Finance_Dynamic.jsonl", "TimeVariant_General_dynamic.jsonl",
                                  "TimeVariant_General.jsonl", "TimeInvariant_General_Static.jsonl",
                                  "Fewshot_Gen.jsonl"])
def test_a_seed_file_name_must_name_a_known_domain_and_split(tmp_path: Path, name: str) -> None:
    bad = tmp_path / name
    bad.write_text((FIXTURES / "general.jsonl").read_text())
    with KgliteStore(tmp_path / "s.kgl") as store:
        chroknow.load(store, [FIXTURES / "legal.jsonl"])
        before = graph_counts(store)
        with pytest.raises(InputError) as info:
            chroknow.load(store, [FIXTURES / "biomedical.jsonl", bad])
        assert graph_counts(store) == before
    assert str(info.value).startswith(f"{bad}: file name is not the seed's") and "General" in str(info.value)
