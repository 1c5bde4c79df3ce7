"""Benchmark aging (BenchAge) re-created from the graph: the real SelfAware and TruthfulQA samples and the
self-authored TriviaQA/NQ/BoolQ fixtures.

Expected values are written here by hand from the seed notes (JiangXunyi/BenchAge `src/detector/`,
`src/evaluator/evaluator.py`), from the raw data files and from the keyword rule as documented, not read
back from chronokg.
"""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench import snapshot
from chronokg.bench.export import write_seed
from chronokg.bench.families import benchage_prompts
from chronokg.bench.families.benchage import (
    Vote,
    chronokg_vote,
    keyword_verdict,
    seed_vote,
    tally,
)
from chronokg.bench.family import generate
from chronokg.bench.question import Question, read_jsonl, write_jsonl
from chronokg.bench.verify import verify_questions
from chronokg.cli.app import app
from chronokg.errors import ChronoKGError, ModelError
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import stable_id
from chronokg.ingest import qasets
from chronokg.queries.spec import run_query

FIXTURES = Path(__file__).parent / "fixtures" / "qasets"
D = dt.date
PRESIDENT = "Who is the current president of the United States?"
# sha256 of the detector's user message for PRESIDENT, as the seed notes render it (§1.1, "Fully rendered").
RENDERED_SHA = "92f9bed7bbe01ac534dd217af37ae4465d6e59ccf46ed1df5b1c62436541967d"
UN = "triviaqa:tc_90001"
NQ_PRESIDENT = "nq:" + stable_id("who is the president of the united states")
PLUTO = "boolq:" + stable_id("is pluto still considered a planet", "Pluto")


def fixture_store() -> KgliteStore:
    store = KgliteStore(":memory:")
    qasets.load(store, [FIXTURES])
    return store


def by_question(questions: list[Question]) -> dict[str, Question]:
    return {q.metadata["question_id"]: q for q in questions}


# --- prompts ---------------------------------------------------------------------------------------------------


def test_templates_are_verbatim() -> None:
    assert benchage_prompts.check() == []
    system, user = benchage_prompts.detector_messages(PRESIDENT)
    assert system == {"role": "system", "content": "You are a factual knowledge assistant."}
    assert hashlib.sha256(user["content"].encode()).hexdigest() == RENDERED_SHA
    assert user["content"].startswith("You are a helpful assistant. Your task is to determine whether a question "
                                      "is **time-sensitive**")
    assert f"Question: {PRESIDENT}\n\nStep 1: Reasoning  \n" in user["content"]
    assert user["content"].endswith('"confidence": "<a number between 0 and 1 indicating how confident you are '
                                    'in your answer>"\n}\n')
    examples = json.loads(user["content"].split("---\n")[1].rsplit("\n---", 1)[0])
    assert [e["answer"] for e in examples] == ["Yes", "No", "No", "Yes"]
    assert list(examples[0]) == ["question", "reasoning", "answer"]
    with pytest.raises(KeyError, match="no BenchAge template 'NOPE'"):
        benchage_prompts.template("NOPE")


def test_judge_prompts_byte_for_byte() -> None:
    # The rendered messages of the seed notes §2.1 (judge_pair("Q?", "GOLD", "MODEL", "TriviaQA") and the BoolQ one).
    assert benchage_prompts.judge_messages("Q?", "GOLD", "MODEL") == [
        {"role": "system", "content": "You are a factual-consistency judge."},
        {"role": "user", "content": "\nIf Answer 1 and Answer 2 state the same fact (allowing synonyms,\n"
                                    "abbreviations, or different date formats), reply **True**.\nOtherwise reply "
                                    "**False**.\n\nReply with exactly one word: True or False.\n\nQ: Q?\n"
                                    "Answer 1: GOLD\nAnswer 2: MODEL\n"}]
    system, user = benchage_prompts.judge_messages("Q?", "A", "Yes", boolq=True)
    assert system["content"] == "You are a factual-consistency judge for **Yes/No** questions."
    assert user["content"].startswith("\nMapping of options:\nA. Yes\nB. No\n\n**Step 1 \u2013 Normalise each "
                                      "answer**\n\u2022 If the answer **starts with \u201cA\u201d** "
                                      "(e.g. \u201cA\u201d,")
    assert "contains the word **No**  \u2192 No.  \n" in user["content"]
    assert user["content"].endswith("Q: Q?\nAnswer 1: A\nAnswer 2: Yes\n")
    assert benchage_prompts.JUDGE_SETTINGS == {"temperature": 0.0, "max_tokens": 1}
    scores = {r: benchage_prompts.judge_score(r) for r in ("True", " true", "TRUE.", "Trueish", "False", "", "Tru")}
    assert scores == {"True": 1.0, " true": 1.0, "TRUE.": 1.0, "Trueish": 1.0, "False": 0.0, "": 0.0, "Tru": 0.0}


# --- the keyword rule --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("question", "expected"), [
    (PRESIDENT, True),  # present cue
    ("Who is the Secretary-General of the United Nations?", True),  # office holder
    ("is pluto still considered a planet", True),  # "still"
    ("What U.S. state produces the most peaches?", True),  # ranking (a seed few-shot "Yes")
    ("What is an example of a place where people smoke more on average than in Spain?", True),  # few-shot "Yes"
    ("Who holds the world record for the 100 metres?", True),
    ("Which chemical element has the symbol Au?", False),
    ("In which city is the Eiffel Tower?", False),
    ("when did the berlin wall fall", False),
    ("Who was the first president of the United States?", False),  # past tense and "first"
    ("What was the population of Paris in 1900?", False),  # a year
    ("What is the population of Paris in 1900?", False),  # a year even in the present tense
    ("If it's cold outside, what does that tell us about global warming?", False),  # few-shot "No"
    # The rule's known miss among the seed's few-shot examples (labelled "No" there): "today" is a present cue.
    ("What is higher: The number of people living today, or the number of people who have died in the past?", True),
])
def test_keyword_rule(question: str, expected: bool) -> None:
    assert keyword_verdict(question)[0] is expected


def test_keyword_verdicts_on_the_fixtures_are_stored_on_the_questions() -> None:
    store = fixture_store()
    questions, ctx = generate("benchage", store, snapshot.current(store), {"detector": "keywords"})
    got = {q.metadata["question_id"]: q.metadata["time_sensitive"] for q in questions}
    # Hand labels by the rule, for every answerable fixture question (the NQ record without a short answer and
    # no gold is left out).
    assert got == {
        UN: True, "triviaqa:tc_90002": False, "triviaqa:sfq_90003": False,
        NQ_PRESIDENT: True, "nq:" + stable_id("what is the capital of australia"): False,
        "nq:" + stable_id("how many players are on the field for one soccer team"): False,
        "nq:900000001": False, PLUTO: True, "boolq:" + stable_id("is the eiffel tower in paris", "Eiffel Tower"): False,
    }
    assert {q.variant for q in questions if q.metadata["time_sensitive"]} == {"triviaqa/ts", "nq/ts", "boolq/ts"}
    stored = {r["id"]: (r["t"], r["by"]) for r in store.run(
        "MATCH (q:SourceQuestion) RETURN q.id AS id, q.time_sensitive AS t, q.time_sensitive_by AS by")}
    assert stored["sq:nq:900000002"] == (None, None)  # unanswerable: never judged
    assert {stored[f"sq:{k}"] for k in got} == {(True, "keywords/v1"), (False, "keywords/v1")}
    assert all(stored[f"sq:{k}"][0] is v for k, v in got.items())
    assert any("nq: 1 unanswerable" in n for n in ctx.notes)
    # --detector stored reads them back; --scope ts keeps the time-sensitive ones only.
    again, _ = generate("benchage", store, snapshot.current(store), {"detector": "stored", "scope": "ts"})
    assert sorted(q.metadata["question_id"] for q in again) == sorted(k for k, v in got.items() if v)


def test_stored_detector_needs_verdicts() -> None:
    store = fixture_store()
    with pytest.raises(ChronoKGError, match="no stored time-sensitivity verdict"):
        generate("benchage", store, snapshot.current(store), {"detector": "stored"})
    with pytest.raises(ChronoKGError, match="needs a model"):
        generate("benchage", store, snapshot.current(store), {"detector": "llm"})


# --- the seed's vote rule, on reply texts --------------------------------------------------------------------


def reply(answer: str) -> str:
    return json.dumps({"reasoning": "r", "answer": answer, "confidence": "0.9"})


def test_seed_reading_of_replies() -> None:
    assert seed_vote(reply("Yes")) == Vote("Yes", "0.9")
    assert seed_vote("  " + reply("No") + "\n") == Vote("No", "0.9")  # json.loads ignores surrounding space
    fenced = "```json\n" + reply("Yes") + "\n```"
    assert seed_vote(fenced) == Vote("No", 0.0, json=False)  # not JSON as a whole: a No vote
    assert seed_vote("Reasoning: it changes.\nAnswer: Yes") == Vote("No", 0.0, json=False)
    lost = seed_vote('{"answer": "Yes"}')  # the seed's run raised KeyError: its vote is lost
    assert lost.answer is None and lost.note
    with pytest.raises(ModelError, match="neither 'Yes' nor 'No'"):
        tally([seed_vote(reply("yes"))], "q")


def test_chronokg_reading_of_replies() -> None:
    assert chronokg_vote("```json\n" + reply("Yes") + "\n```").answer == "Yes"
    assert chronokg_vote("Reasoning: it changes.\n\nAnswer: Yes").answer == "Yes"
    assert chronokg_vote(reply("yes.")).answer == "Yes"
    unreadable = chronokg_vote("I cannot tell.")
    assert unreadable.answer == "No" and unreadable.note


@pytest.mark.parametrize(("answers", "expected"), [
    (["Yes", "Yes", "No"], (True, 2, 1)),
    (["Yes", "No", "No"], (False, 1, 2)),
    (["Yes", "No", None], (False, 1, 1)),  # one vote lost: a tie is No
    (["Yes", None, None], (True, 1, 0)),
    ([], (False, 0, 0)),
])
def test_yes_only_when_yes_outnumbers_no(answers: list[str | None], expected: tuple[bool, int, int]) -> None:
    verdict = tally([Vote(a) for a in answers], "q")
    assert (verdict.time_sensitive, verdict.yes, verdict.no) == expected


# --- gold at release, the up-to-date slot and bench verify ----------------------------------------------------


def test_gold_at_release_and_verify_unchanged_after_generation(shared_data: Path) -> None:
    store = KgliteStore(":memory:")
    sa = shared_data / "selfaware" / "SelfAware.subset.json"
    tq = shared_data / "truthfulqa" / "TruthfulQA.subset.csv"
    qasets.load(store, [sa, tq])
    questions, _ = generate("benchage", store, snapshot.current(store), {"detector": "keywords"})
    examples = json.loads(sa.read_text())["example"]
    with tq.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    answerable = [e for e in examples if e["answer"] is not None]
    assert len(questions) == len(answerable) + len(rows)
    qs = by_question(questions)
    for e in (answerable[0], answerable[len(answerable) // 2], answerable[-1]):
        q = qs[f"selfaware:{e['question_id']}"]
        assert q.input == f"Q: {e['question']}\nA:"
        assert q.target == e["answer"][0].strip() and q.metadata["gold_at_release"] == q.target
        assert q.metadata["accepted_answers"] == list(dict.fromkeys(a.strip() for a in e["answer"]))
        assert q.metadata["gold_text"] == ", ".join(q.metadata["accepted_answers"])
        assert (q.metadata["release_date"], q.metadata["dataset"]) == ("2023-07-01", "SelfAware")
        assert q.target_date == D(2023, 7, 1) and q.metadata["up_to_date_answer"] is None
    for r in (rows[0], rows[-1]):
        q = qs["truthfulqa:" + stable_id(" ".join(r["Question"].split()))]
        assert q.input == r["Question"] and q.target == r["Best Answer"].strip() == q.metadata["gold_text"]
        assert q.metadata["release_date"] == "2022-05-01"
    # The seed evaluator's regex recovers the question from a SelfAware prompt (evaluator.py:86-122).
    q = qs[f"selfaware:{answerable[0]['question_id']}"]
    match = re.match(r"Q:\s*(.*?)\s*A:", q.input, re.S | re.I)
    assert match and match.group(1).strip() == answerable[0]["question"].strip()
    assert len({q.id for q in questions}) == len(questions)
    assert {q.answer_key.query for q in questions} == {"qa-gold"}
    report = verify_questions(store, questions)
    assert report.checked == len(questions) and report.changed == []


def test_prompts_of_the_fixture_benchmarks() -> None:
    store = fixture_store()
    qs = by_question(generate("benchage", store, snapshot.current(store), {})[0])
    assert qs[UN].input == "Question: Who is the Secretary-General of the United Nations?\nAnswer: "
    assert qs[NQ_PRESIDENT].input == "Question: who is the president of the united states?\nAnswer: "
    pluto = qs[PLUTO]
    assert pluto.input == "Question: is pluto still considered a planet\nA. Yes\nB. No\nAnswer:"
    assert (pluto.target, [c.label for c in pluto.choices], pluto.metadata["judge"]) == ("B", ["A", "B"],
                                                                                          "JUDGE_BOOLQ")
    assert qs[UN].metadata["accepted_answers"] == ["Ban Ki-moon", "Ban Ki Moon", "Ki-moon Ban"]
    assert qs[UN].metadata["gold_text"] == "Ban Ki-moon, Ban Ki Moon, Ki-moon Ban"
    with_passage = by_question(generate("benchage", store, snapshot.current(store), {"boolq_passage": True})[0])
    assert with_passage[PLUTO].input.startswith("Pluto is a dwarf planet in the Kuiper belt.")
    assert with_passage[PLUTO].input.endswith("excludes it.\nQuestion: is pluto still considered a planet\nA. Yes\n"
                                              "B. No\nAnswer:")
    # The seed's regexes recover each question (NQ with the "?" its evaluator appends to websearch keys).
    assert re.search(r"Question:\s*(.*?)\s*Answer:", qs[NQ_PRESIDENT].input, re.S).group(1) == (  # type: ignore[union-attr]
        "who is the president of the united states?")
    assert re.search(r"Question:\s*(.*?)\s*(?:A\.)", pluto.input, re.S).group(1) == (  # type: ignore[union-attr]
        "is pluto still considered a planet")


def test_a_later_answer_fills_the_slot_and_verify_reports_it(tmp_path: Path) -> None:
    store = fixture_store()
    snap = snapshot.record(store)
    before, _ = generate("benchage", store, snap, {"detector": "keywords"})
    assert verify_questions(store, before).changed == []
    old = by_question(before)
    qasets.add_updated_answer(store, UN, "António Guterres", D(2017, 1, 1), source="UN website",
                              known_from=D(2024, 3, 1))
    qasets.add_updated_answer(store, PLUTO, True, D(2030, 1, 1), source="hypothetical IAU vote",
                              known_from=D(2030, 1, 2))
    report = verify_questions(store, before)
    changed = {c.id: c for c in report.changed}
    assert set(changed) == {old[UN].id, old[PLUTO].id}
    un = changed[old[UN].id]
    assert (un.old_target, un.old_answer, un.new_target) == ("Ban Ki-moon", "Ban Ki-moon", "António Guterres")
    assert (changed[old[PLUTO].id].old_target, changed[old[PLUTO].id].new_target) == ("B", "A")
    # Generated again: same gold at release (its key did not move), the up-to-date slot from the graph.
    after = by_question(generate("benchage", store, snapshot.current(store), {"detector": "keywords"})[0])
    q = after[UN]
    assert (q.target, q.metadata["gold_at_release"]) == ("Ban Ki-moon", "Ban Ki-moon")
    assert q.metadata["release_key"] == old[UN].metadata["release_key"]
    assert (q.metadata["up_to_date_answer"], q.metadata["up_to_date_valid_from"]) == ("António Guterres",
                                                                                       "2017-01-01")
    assert q.metadata["up_to_date_source"].startswith("qa_update:un-website") and q.metadata["gold_outdated"] is True
    assert q.answer_key.answer == "António Guterres" and len(q.facts) == 2
    assert (after[PLUTO].metadata["up_to_date_answer"], after[PLUTO].target) == ("A", "B")
    untouched = after["triviaqa:tc_90002"]
    assert untouched.id == old["triviaqa:tc_90002"].id and untouched.metadata["up_to_date_answer"] is None
    assert verify_questions(store, list(after.values())).changed == []
    # The gold as known at the release, straight from the query.
    rows = run_query(store, "qa-gold", {"question": UN, "known_at": "2017-07-01"})
    assert [(r.value, r.current) for r in rows] == [("Ban Ki-moon", True)]
    # --since: only the questions that got a later answer.
    since, _ = generate("benchage", store, snapshot.current(store), {"detector": "keywords"},
                        since=snapshot.added_since(store, snap))
    assert {q.metadata["question_id"] for q in since} == {UN, PLUTO}


def test_deterministic_and_limit_per_benchmark() -> None:
    store = fixture_store()
    first, _ = generate("benchage", store, snapshot.current(store), {"limit": 2})
    second, _ = generate("benchage", store, snapshot.current(store), {"limit": 2})
    assert [q.model_dump() for q in first] == [q.model_dump() for q in second]
    counts: dict[str, int] = {}
    for q in first:
        counts[q.metadata["benchmark"]] = counts.get(q.metadata["benchmark"], 0) + 1
    assert counts == {"boolq": 2, "nq": 2, "triviaqa": 2}


# --- exports and the CLI ---------------------------------------------------------------------------------------


def test_exports(tmp_path: Path) -> None:
    store = fixture_store()
    qasets.add_updated_answer(store, UN, "António Guterres", D(2017, 1, 1), known_from=D(2024, 3, 1))
    questions, _ = generate("benchage", store, snapshot.current(store), {})
    canonical = tmp_path / "benchage.jsonl"
    assert write_jsonl(canonical, questions) == len(questions) == 9
    assert [q.id for q in read_jsonl(canonical)] == [q.id for q in questions]
    line = json.loads(canonical.read_text().splitlines()[0])
    assert {"id", "input", "choices", "target", "metadata"} <= set(line)
    files = {p.name: p for p in write_seed("benchage", questions, tmp_path / "seed")}
    assert set(files) == {f"benchage_{n}" for n in (
        "TriviaQA-questions.json", "TriviaQA-majority_vote_results.json", "triviaqa-time-sensitive.jsonl",
        "TriviaQA-websearch.jsonl", "TriviaQA-items.jsonl", "NaturalQuestion-questions.json",
        "NaturalQuestion-majority_vote_results.json", "naturalquestion-time-sensitive.jsonl",
        "NaturalQuestion-websearch.jsonl", "NaturalQuestion-items.jsonl", "BoolQ-questions.json",
        "BoolQ-majority_vote_results.json", "boolq-time-sensitive.jsonl", "BoolQ-websearch.jsonl",
        "BoolQ-items.jsonl", "chronokg_ids.jsonl")}
    detector_input = json.loads(files["benchage_TriviaQA-questions.json"].read_text())
    assert detector_input == [{"question": q} for q in (  # record order: sfq_90003, tc_90001, tc_90002
        "In which city is the Eiffel Tower?", "Who is the Secretary-General of the United Nations?",
        "Which chemical element has the symbol Au?")]
    # detector.py `majority_vote`: {question, final_answer, yes_votes, no_votes, total_votes}, ints; the keyword
    # rule (no model here) counts as one round.
    votes = json.loads(files["benchage_TriviaQA-majority_vote_results.json"].read_text())
    assert votes[1] == {"question": "Who is the Secretary-General of the United Nations?", "final_answer": "Yes",
                        "yes_votes": 1, "no_votes": 0, "total_votes": 1}
    assert all(list(v) == ["question", "final_answer", "yes_votes", "no_votes", "total_votes"] for v in votes)
    # websearch.py reads `id` (logged as int(qid)) and `question`, and writes id, question, status, search_answer,
    # urls (:198-202).
    sensitive = [json.loads(x) for x in files["benchage_triviaqa-time-sensitive.jsonl"].read_text().splitlines()]
    assert sensitive == [{"id": 1, "question": "Who is the Secretary-General of the United Nations?"}]
    search = [json.loads(x) for x in files["benchage_TriviaQA-websearch.jsonl"].read_text().splitlines()]
    assert search == [{"id": 1, "question": "Who is the Secretary-General of the United Nations?",
                       "status": "chronokg_graph", "search_answer": "António Guterres", "urls": []}]
    items = [json.loads(x) for x in files["benchage_BoolQ-items.jsonl"].read_text().splitlines()]
    assert [(list(i), i["gold"], i["origin_prompt"][0]["role"]) for i in items] == [
        (["origin_prompt", "gold"], "A", "HUMAN"), (["origin_prompt", "gold"], "B", "HUMAN")]
    side = [json.loads(x) for x in files["benchage_chronokg_ids.jsonl"].read_text().splitlines()]
    un = by_question(questions)[UN].id
    assert {"file": "benchage_TriviaQA-websearch.jsonl", "record": 0, "chronokg_ids": [un]} in side
    assert {"file": "benchage_triviaqa-time-sensitive.jsonl", "record": 0, "chronokg_ids": [un],
            "question_id": by_question(questions)[UN].metadata["question_id"]} in side


def test_cli_generate_verify_and_seed_format(tmp_path: Path) -> None:
    runner = CliRunner()
    uri = f"kglite://{tmp_path}/s.kgl"
    assert runner.invoke(app, ["--store", uri, "ingest", "qa", str(FIXTURES)]).exit_code == 0
    out = tmp_path / "b.jsonl"
    result = runner.invoke(app, ["--store", uri, "generate", "benchage", "--benchmarks", "triviaqa,boolq",
                                 "--scope", "ts", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 2 questions" in result.output and "triviaqa/ts: 1" in result.output
    result = runner.invoke(app, ["--store", uri, "bench", "verify", str(out)])
    assert result.exit_code == 0 and "0 answers changed, 0 evidence only" in result.output, result.output
    result = runner.invoke(app, ["--store", uri, "ingest", "qa-update", UN, "António Guterres", "--as-of",
                                 "2017-01-01", "--known-from", "2024-03-01"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["--store", uri, "bench", "verify", str(out), "-f", "json"])
    changed = json.loads(result.output)["changed"]
    assert [(c["old_answer"], c["new_target"]) for c in changed] == [("Ban Ki-moon", "António Guterres")]
    result = runner.invoke(app, ["--store", uri, "generate", "benchage", "--format", "seed", "--out",
                                 str(tmp_path / "seed"), "--no-write"])
    assert result.exit_code == 0 and (tmp_path / "seed" / "benchage_boolq-time-sensitive.jsonl").is_file()


# --- the seed's detector through a real loopback model server --------------------------------------------------


def test_detector_votes_through_a_loopback_model_server() -> None:
    """No model can run on these machines: a real OpenAI-compatible HTTP server on loopback answers instead."""
    server_module = pytest.importorskip("chronokg.testing.openai_server")
    models = pytest.importorskip("chronokg.models")
    yes = reply("Yes")
    scripted: dict[str, list[str]] = {
        # UN: 2 JSON Yes + a fenced Yes -> seed 2 Yes/1 No (time-sensitive); chronokg 3 Yes.
        "Who is the Secretary-General of the United Nations?": [yes, yes, "```json\n" + yes + "\n```"],
        # Au: 1 JSON Yes + 2 non-JSON Yes -> seed 1/2 (not); chronokg 3 Yes.
        "Which chemical element has the symbol Au?": [yes, "Reasoning: x\nAnswer: Yes", "```json\n" + yes + "\n```"],
    }

    def script(request: Any) -> str:
        question = request.last_user_text.rsplit("Question: ", 1)[1].split("\n\nStep 1", 1)[0]
        return scripted.get(question, [reply("No")] * 3)[request.sample]

    with server_module.OpenAIServer() as server:
        server.script = script
        model = models.get_model("openai-compat/qwen2.5-14b-instruct", base_url=server.url)
        store = fixture_store()
        options = {"benchmarks": ["triviaqa"], "detector": "llm", "protocol": "seed"}
        seed, _ = generate("benchage", store, snapshot.current(store), options, model=model)
        bodies = list(server.bodies)
        chronokg, _ = generate("benchage", store, snapshot.current(store), dict(options, protocol="chronokg"),
                               model=model)
    got = {q.metadata["question_id"]: (q.metadata["detector"]["yes_votes"], q.metadata["detector"]["no_votes"],
                                       q.metadata["time_sensitive"]) for q in seed}
    assert got == {UN: (2, 1, True), "triviaqa:tc_90002": (1, 2, False), "triviaqa:sfq_90003": (0, 3, False)}
    fixed = {q.metadata["question_id"]: q.metadata["time_sensitive"] for q in chronokg}
    assert fixed == {UN: True, "triviaqa:tc_90002": True, "triviaqa:sfq_90003": False}
    # One request per question, three samples, the seed's messages and settings (no max_tokens, no format).
    assert len(bodies) == 3
    for body in bodies:
        assert body["n"] == 3 and body["temperature"] == 1.0
        assert "max_tokens" not in body and "response_format" not in body
        question = body["messages"][1]["content"].rsplit("Question: ", 1)[1].split("\n\nStep 1", 1)[0]
        assert body["messages"] == benchage_prompts.detector_messages(question)
    (stored,) = store.run("MATCH (q:SourceQuestion {id: $id}) RETURN q.time_sensitive AS t, "
                          "q.time_sensitive_votes AS v, q.time_sensitive_by AS by", {"id": "sq:triviaqa:tc_90002"})
    assert stored["t"] is True and stored["v"] == [3, 0] and "chronokg parsing" in stored["by"]


def test_seed_json_lists_are_the_seeds_bytes(tmp_path: Path) -> None:
    # detector.py:321-330 saves `json.dump(final_results, f, indent=4)`: 4-space indent, non-ASCII escaped
    # (`ensure_ascii` left at its default), no trailing newline. The bytes below are written by hand.
    store = fixture_store()
    questions, _ = generate("benchage", store, snapshot.current(store), {"benchmarks": ["triviaqa"]})
    un = by_question(questions)[UN]
    renamed = un.model_copy(update={"metadata": {**un.metadata, "question": "Qui est le secrétaire général ?"}})
    files = {p.name: p for p in write_seed("benchage", [renamed], tmp_path / "seed")}
    assert files["benchage_TriviaQA-majority_vote_results.json"].read_bytes() == (
        b'[\n    {\n        "question": "Qui est le secr\\u00e9taire g\\u00e9n\\u00e9ral ?",\n'
        b'        "final_answer": "Yes",\n        "yes_votes": 1,\n        "no_votes": 0,\n'
        b'        "total_votes": 1\n    }\n]')
    assert files["benchage_TriviaQA-questions.json"].read_bytes() == (
        b'[\n    {\n        "question": "Qui est le secr\\u00e9taire g\\u00e9n\\u00e9ral ?"\n    }\n]')
    # websearch.py:198-202 writes its `.jsonl` lines with `json.dump(..., ensure_ascii=False)` + "\n".
    assert files["benchage_TriviaQA-websearch.jsonl"].read_text(encoding="utf-8") == (
        '{"id": 1, "question": "Qui est le secrétaire général ?", "status": "unanswered", "search_answer": "", '
        '"urls": []}\n')
