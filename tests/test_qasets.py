"""QA benchmark ingest: the real SelfAware and TruthfulQA samples, self-authored TriviaQA/NQ/BoolQ fixtures."""

from __future__ import annotations

import csv
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
from chronokg.graph.model import stable_id
from chronokg.ingest import qasets
from chronokg.ingest.qasets import Benchmark
from chronokg.queries import catalog

FIXTURES = Path(__file__).parent / "fixtures" / "qasets"
D = dt.date


def selfaware_file(shared_data: Path) -> Path:
    return shared_data / "selfaware" / "SelfAware.subset.json"


def truthfulqa_file(shared_data: Path) -> Path:
    return shared_data / "truthfulqa" / "TruthfulQA.subset.csv"


def truthful_id(question: str) -> str:
    return "truthfulqa:" + stable_id(" ".join(question.split()))


@pytest.fixture(scope="module")
def real(shared_data: Path) -> tuple[KgliteStore, list[dict[str, Any]], list[dict[str, str]]]:
    store = KgliteStore(":memory:")
    qasets.load(store, [selfaware_file(shared_data), truthfulqa_file(shared_data)])
    examples = json.loads(selfaware_file(shared_data).read_text())["example"]
    with truthfulqa_file(shared_data).open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    return store, examples, rows


def gold(store: KgliteStore, benchmark: str) -> list[dict[str, Any]]:
    return store.run("MATCH (f:Fact {predicate: 'gold_answer'}) WHERE f.source_kind = $b "
                     "RETURN f.subject_id AS q, f.value AS v, f.known_from AS k, f.valid_from AS a, f.valid_to AS b, "
                     "f.accepted_answers AS acc", {"b": benchmark})


def test_selfaware_counts_match_the_file(real: tuple[KgliteStore, list[dict[str, Any]], list[dict[str, str]]]) -> None:
    store, examples, _ = real
    answerable = [e for e in examples if e["answer"] is not None]
    facts = gold(store, "selfaware")
    assert len(facts) == len(answerable)
    (n,) = store.run("MATCH (q:SourceQuestion {benchmark: 'selfaware'}) RETURN count(q) AS n")
    assert n["n"] == len(examples)
    (n,) = store.run("MATCH (q:SourceQuestion {benchmark: 'selfaware'}) WHERE q.answerable = false "
                     "RETURN count(q) AS n")
    assert n["n"] == len(examples) - len(answerable)
    assert {f["k"] for f in facts} == {D(2023, 7, 1)}  # SelfAware's release
    assert {(f["a"], f["b"]) for f in facts} == {(None, None)}  # valid time unknown


def test_selfaware_spot_checks(real: tuple[KgliteStore, list[dict[str, Any]], list[dict[str, str]]]) -> None:
    store, examples, _ = real
    by_id = {f["q"]: f for f in gold(store, "selfaware")}
    first = examples[0]
    assert by_id[f"selfaware:{first['question_id']}"]["v"] == first["answer"][0]
    many = next(e for e in examples if e["answer"] and len(e["answer"]) > 10)
    fact = by_id[f"selfaware:{many['question_id']}"]
    assert fact["v"] == many["answer"][0]
    assert set(json.loads(fact["acc"])) == {a.strip() for a in many["answer"]}
    unanswerable = next(e for e in examples if e["answer"] is None)
    qid = f"selfaware:{unanswerable['question_id']}"
    assert qid not in by_id
    (sq,) = store.run("MATCH (q:SourceQuestion)-[:ABOUT]->(e:Entity {id: $id}) RETURN q.question AS q, "
                      "q.answerable AS a, q.origin AS o, q.time_sensitive AS t, e.kind AS k", {"id": qid})
    assert sq == {"q": unanswerable["question"], "a": False, "o": unanswerable["source"], "t": None, "k": "question"}


def test_truthfulqa_counts_and_spot_checks(
    real: tuple[KgliteStore, list[dict[str, Any]], list[dict[str, str]]],
) -> None:
    store, _, rows = real
    facts = {f["q"]: f for f in gold(store, "truthfulqa")}
    assert len(facts) == len(rows) == len({r["Question"] for r in rows})
    assert {f["k"] for f in facts.values()} == {D(2022, 5, 1)}
    for row in (rows[0], rows[len(rows) // 2], rows[-1]):
        qid = truthful_id(row["Question"])
        assert facts[qid]["v"] == row["Best Answer"].strip()
        (sq,) = store.run("MATCH (q:SourceQuestion {id: $id}) RETURN q.incorrect_answers AS bad, "
                          "q.correct_answers AS good, q.category AS c, q.question_type AS t", {"id": f"sq:{qid}"})
        assert sq["bad"] == [a.strip() for a in row["Incorrect Answers"].split(";") if a.strip()]
        assert sq["good"] == [a.strip() for a in row["Correct Answers"].split(";") if a.strip()]
        assert (sq["c"], sq["t"]) == (row["Category"], row["Type"])


def test_known_time_before_and_after_release(
    real: tuple[KgliteStore, list[dict[str, Any]], list[dict[str, str]]],
) -> None:
    store, examples, rows = real
    qid = truthful_id(rows[0]["Question"])
    for valid_at in (D(1990, 1, 1), D(2030, 1, 1)):  # valid at any date: its valid time is unknown
        assert [f.value for f in catalog.facts_as_of(store, valid_at, subject=qid)] == [rows[0]["Best Answer"]]
        assert catalog.facts_as_of(store, valid_at, subject=qid, known_at=D(2022, 4, 30)) == []
        assert len(catalog.facts_as_of(store, valid_at, subject=qid, known_at=D(2022, 5, 1))) == 1
    everything = catalog.facts_as_of(store, D(2024, 1, 1), predicate=qasets.GOLD, known_at=D(2023, 1, 1))
    assert len(everything) == len(rows)  # TruthfulQA (2022-05) was released, SelfAware (2023-07) not yet
    assert len(catalog.facts_as_of(store, D(2024, 1, 1), predicate=qasets.GOLD)) == len(rows) + sum(
        1 for e in examples if e["answer"] is not None)


@pytest.fixture
def fixtures_store() -> KgliteStore:
    store = KgliteStore(":memory:")
    qasets.load(store, [FIXTURES])
    return store


def test_triviaqa_nq_boolq_fixtures(fixtures_store: KgliteStore) -> None:
    trivia = json.loads((FIXTURES / "triviaqa.json").read_text())["Data"]
    nq_open = [json.loads(x) for x in (FIXTURES / "nq-open.jsonl").read_text().splitlines()]
    boolq = [json.loads(x) for x in (FIXTURES / "boolq.jsonl").read_text().splitlines()]
    by = {f["q"]: f for b in ("triviaqa", "nq", "boolq") for f in gold(fixtures_store, b)}
    for t in trivia:
        f = by[f"triviaqa:{t['QuestionId']}"]
        assert f["v"] == t["Answer"]["Value"] and f["k"] == D(2017, 7, 1)
        assert json.loads(f["acc"])[0] == t["Answer"]["Value"] and set(t["Answer"]["Aliases"]) <= set(
            json.loads(f["acc"]))
    for q in nq_open:
        f = by["nq:" + stable_id(q["question"])]
        assert f["v"] == q["answer"][0] and f["k"] == D(2019, 7, 1)
    # The simplified record's short answer is its tokens 10..13; the second record has none.
    assert by["nq:900000001"]["v"] == "9 November 1989"
    assert "nq:900000002" not in by
    (sq,) = fixtures_store.run("MATCH (q:SourceQuestion {id: 'sq:nq:900000002'}) RETURN q.answerable AS a")
    assert sq["a"] is False
    for b in boolq:
        f = by["boolq:" + stable_id(b["question"], b["title"])]
        assert f["v"] is b["answer"] and f["k"] == D(2019, 5, 1)
    (pluto,) = fixtures_store.run("MATCH (q:SourceQuestion) WHERE q.passage_title = 'Pluto' "
                                  "RETURN q.passage AS p, q.benchmark AS b")
    assert pluto["b"] == "boolq" and "dwarf planet" in pluto["p"]


def test_detected_or_forced_benchmark(tmp_path: Path) -> None:
    store = KgliteStore(":memory:")
    with pytest.raises(InputError, match=r"triviaqa\.json: expected SelfAware"):
        qasets.load(store, [FIXTURES / "triviaqa.json"], benchmark=Benchmark.SELFAWARE)
    odd = tmp_path / "odd.json"
    odd.write_text('{"items": []}')
    with pytest.raises(InputError, match="pass --benchmark"):
        qasets.load(store, [odd])
    assert graph_counts(store) == {}
    assert qasets.load(store, [FIXTURES / "boolq.jsonl"], benchmark=Benchmark.BOOLQ).records == 2


def test_updated_answer_is_bitemporal(fixtures_store: KgliteStore) -> None:
    s, q = fixtures_store, "triviaqa:tc_90001"
    update = qasets.add_updated_answer(s, q, "António Guterres", D(2017, 1, 1), source="UN website",
                                       known_from=D(2024, 3, 1))
    assert update.changed and len(update.retracted) == 1 and len(update.closed) == 1
    # As known now: Ban Ki-moon until 2017, Guterres since.
    assert [f.value for f in catalog.facts_as_of(s, D(2016, 6, 1), subject=q)] == ["Ban Ki-moon"]
    assert [f.value for f in catalog.facts_as_of(s, D(2017, 1, 1), subject=q)] == ["António Guterres"]
    assert [f.value for f in catalog.facts_as_of(s, D(2030, 1, 1), subject=q)] == ["António Guterres"]
    # As known before the update: the benchmark's answer, still open-ended.
    old = catalog.facts_as_of(s, D(2030, 1, 1), subject=q, known_at=D(2024, 2, 29))
    assert [(f.value, f.valid_to, f.known_to) for f in old] == [("Ban Ki-moon", None, D(2024, 3, 1))]
    assert [(f.value, f.valid_from, f.valid_to) for f in catalog.timeline(s, q)] == [
        ("Ban Ki-moon", None, D(2017, 1, 1)), ("António Guterres", D(2017, 1, 1), None)]
    assert len(catalog.timeline(s, q, include_retracted=True)) == 3
    changes = catalog.changed_between(s, D(2016, 1, 1), D(2018, 1, 1), subject=q)
    assert [(c.before, c.after) for c in changes] == [(["Ban Ki-moon"], ["António Guterres"])]
    (closed,) = s.run("MATCH (f:Fact {id: $id}) RETURN f.revises AS r, f.accepted_answers AS a, f.source_id AS s",
                      {"id": update.closed[0]})
    assert closed["r"] == update.retracted[0] and "Ban Ki Moon" in json.loads(closed["a"])
    # Repeating the update, or re-loading the benchmark, changes nothing and keeps the retraction.
    before = graph_counts(s)
    assert not qasets.add_updated_answer(s, q, "António Guterres", D(2017, 1, 1), source="UN website",
                                         known_from=D(2024, 3, 1)).changed
    assert qasets.load(s, [FIXTURES / "triviaqa.json"]).unchanged
    assert graph_counts(s) == before
    assert [f.value for f in catalog.facts_as_of(s, D(2020, 1, 1), subject=q)] == ["António Guterres"]


def test_updated_answer_errors(fixtures_store: KgliteStore) -> None:
    s = fixtures_store
    q = "nq:" + stable_id("who is the president of the united states")
    qasets.add_updated_answer(s, q, "Joe Biden", D(2021, 1, 20), known_from=D(2024, 1, 1))
    before = graph_counts(s)
    with pytest.raises(InputError, match="valid-time order"):
        qasets.add_updated_answer(s, q, "Barack Obama", D(2010, 1, 1), known_from=D(2024, 1, 1))
    with pytest.raises(InputError, match="no such question"):
        qasets.add_updated_answer(s, "nq:nope", "x", D(2021, 1, 1))
    with pytest.raises(InputError, match="before the answer it replaces was known"):
        qasets.add_updated_answer(s, "triviaqa:tc_90002", "Au", D(2018, 1, 1), known_from=D(2016, 1, 1))
    assert graph_counts(s) == before
    assert [f.value for f in catalog.facts_as_of(s, D(2019, 1, 1), subject=q)] == ["Donald Trump"]
    assert [f.value for f in catalog.facts_as_of(s, D(2022, 1, 1), subject=q)] == ["Joe Biden"]


def test_time_sensitive_is_filled_later(fixtures_store: KgliteStore) -> None:
    (n,) = fixtures_store.run("MATCH (q:SourceQuestion) WHERE q.time_sensitive IS NULL RETURN count(q) AS n")
    assert n["n"] == graph_counts(fixtures_store)["SourceQuestion"]
    assert qasets.set_time_sensitive(fixtures_store, {"triviaqa:tc_90001": True, "triviaqa:tc_90002": False,
                                                      "triviaqa:none": True}) == 2
    got = {r["id"]: r["t"] for r in fixtures_store.run(
        "MATCH (q:SourceQuestion) WHERE q.time_sensitive IS NOT NULL RETURN q.id AS id, q.time_sensitive AS t")}
    assert got == {"sq:triviaqa:tc_90001": True, "sq:triviaqa:tc_90002": False}


def bad_inputs(shared_data: Path, tmp_path: Path) -> dict[str, tuple[Path, str]]:
    sa_text = selfaware_file(shared_data).read_text()
    data = json.loads(sa_text)
    data["example"][5]["answer"] = None  # answerable, but no answer
    tq_text = truthfulqa_file(shared_data).read_text()
    cut = tq_text.index("\n", len(tq_text) // 2) + 1
    out = {
        "selfaware_truncated": ("sa.json", sa_text[: len(sa_text) // 2], "broken JSON"),
        "selfaware_no_answer": ("sa2.json", json.dumps(data),
                                f"example 6 (question_id {data['example'][5]['question_id']}): answerable question"),
        "truthfulqa_truncated": ("tq.csv", tq_text[:cut] + 'Adversarial,Misconceptions,"Is it', "broken CSV"),
        "truthfulqa_no_best": ("tq2.csv", tq_text.replace("Best Answer", "Best", 1), "Best Answer"),
        "boolq_answer_text": ("b.jsonl", (FIXTURES / "boolq.jsonl").read_text().replace('"answer": false',
                                                                                       '"answer": "no"'),
                              "line 2: field 'answer'"),
        "nq_truncated": ("n.jsonl", (FIXTURES / "nq-open.jsonl").read_text()[:-20], "line 3: broken JSON"),
        "truthfulqa_type": ("tq3.csv", tq_text.replace("\nAdversarial,", "\nAdversarail,", 1),
                            "row 1 (line 2): field 'Type'"),
        "nq_yes_no": ("n2.jsonl", (FIXTURES / "nq-simplified.jsonl").read_text().replace(
            '"yes_no_answer": "NONE"', '"yes_no_answer": "MAYBE"', 1), "line 1: field 'annotations.0.yes_no_answer'"),
    }
    paths = {}
    for kind, (name, text, words) in out.items():
        path = tmp_path / name
        path.write_text(text)
        paths[kind] = (path, words)
    return paths


@pytest.mark.parametrize("kind", ["selfaware_truncated", "selfaware_no_answer", "truthfulqa_truncated",
                                  "truthfulqa_no_best", "boolq_answer_text", "nq_truncated",
                                  "truthfulqa_type", "nq_yes_no"])
def test_bad_input_names_file_and_record_and_changes_nothing(shared_data: Path, tmp_path: Path, kind: str) -> None:
    path, words = bad_inputs(shared_data, tmp_path)[kind]
    with KgliteStore(tmp_path / "s.kgl") as store:
        qasets.load(store, [FIXTURES / "triviaqa.json"])
        before = graph_counts(store)
        with pytest.raises(InputError) as info:
            qasets.load(store, [FIXTURES / "boolq.jsonl", path])
        assert graph_counts(store) == before
    message = str(info.value)
    assert message.startswith(f"{path}, record") and words in message
    with KgliteStore(tmp_path / "s.kgl") as reopened:
        assert graph_counts(reopened) == before


def test_cli(shared_data: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    uri = f"kglite://{tmp_path}/s.kgl"
    result = runner.invoke(app, ["--store", uri, "ingest", "qa", str(truthfulqa_file(shared_data))])
    assert result.exit_code == 0, result.output
    assert "truthfulqa: 613 records" in result.output
    result = runner.invoke(app, ["--store", uri, "ingest", "qa", str(FIXTURES / "boolq.jsonl"), "--benchmark", "boolq"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["--store", uri, "ingest", "qa", str(FIXTURES / "triviaqa.json"), "--benchmark",
                                 "truthfulqa"])
    assert result.exit_code == 2 and "triviaqa.json" in result.output and "error:" in result.output
    pluto = "boolq:" + stable_id("is pluto still considered a planet", "Pluto")
    result = runner.invoke(app, ["--store", uri, "ingest", "qa-update", pluto, "true", "--as-of", "2030-01-01",
                                 "--known-from", "2030-01-02", "--source", "hypothetical IAU vote"])
    assert result.exit_code == 0 and "updated" in result.output, result.output
    result = runner.invoke(app, ["--store", uri, "query", "timeline", "--subject", pluto, "-f", "json"])
    assert [(r["value"], r["valid_to"]) for r in json.loads(result.output)] == [(False, "2030-01-01"), (True, None)]
    result = runner.invoke(app, ["--store", uri, "ingest", "qa-update", "boolq:missing", "yes", "--as-of", "2020"])
    assert result.exit_code == 2 and "no such question" in result.output


def test_time_sensitive_keeps_method_and_votes(fixtures_store: KgliteStore) -> None:
    s = fixtures_store
    assert qasets.set_time_sensitive(s, {"triviaqa:tc_90001": True, "triviaqa:tc_90002": False}, method="llm/m",
                                     votes={"triviaqa:tc_90001": [2, 1]}) == 2
    got = {r["id"]: (r["t"], r["by"], r["v"]) for r in s.run(
        "MATCH (q:SourceQuestion) WHERE q.time_sensitive IS NOT NULL RETURN q.id AS id, q.time_sensitive AS t, "
        "q.time_sensitive_by AS by, q.time_sensitive_votes AS v")}
    assert got == {"sq:triviaqa:tc_90001": (True, "llm/m", [2, 1]), "sq:triviaqa:tc_90002": (False, "llm/m", None)}
    qasets.set_time_sensitive(s, {"triviaqa:tc_90001": False})  # a verdict without a method clears the old one
    (row,) = s.run("MATCH (q:SourceQuestion {id: 'sq:triviaqa:tc_90001'}) RETURN q.time_sensitive AS t, "
                   "q.time_sensitive_by AS by, q.time_sensitive_votes AS v")
    assert row == {"t": False, "by": None, "v": None}
