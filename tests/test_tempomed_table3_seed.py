"""TempoMed Table 3 under `--protocol seed`, as the seed's RAG evaluation runs it (GuanZihan/TempoMed-Bench at
74b6f2246dd44df0612e3e1b24d56f6837d6428c, `pubmed_trajectory/rag_evaluation/main.py`).

Expected prompts are built here from the seed's template text (quoted below with its file and lines) the way
the seed builds them (`str.format`, its blank-line record split, its counterpart rewrite), never from chronokg's
template files; expected reader outputs are worked out by hand from `extract_prediction`'s four rules.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from chronokg.bench import snapshot
from chronokg.bench.family import generate
from chronokg.bench.question import Question, write_jsonl
from chronokg.errors import ChronoKGError
from chronokg.eval import extract, runner
from chronokg.eval.graph import write_predictions
from chronokg.eval.log import RunInfo, SampleRecord, latest
from chronokg.eval.profile import profile_for
from chronokg.eval.profiles import tempomed_seed_rag
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import tempomed
from chronokg.metrics.runs import export_seed, score_outputs
from chronokg.metrics.tempomed import ACCURACY, TABLE3, TABLE3_SEED
from chronokg.models import Completion, ModelRequest
from chronokg.models.types import Choice as CompletionChoice

# main.py:28-32 (SYSTEM_PROMPT) and :35-46 (USER_PROMPT_TEMPLATE), at the pinned commit.
SEED_SYSTEM = """You are a medical guideline QA model with access to retrieval tools.
Use the tools to identify the relevant guideline evidence before answering the question.
Answer the multiple-choice question with exactly one final option.
If the answer cannot be determined from available evidence, respond UNKNOWN.
"""
SEED_USER = """Question:
{question}

A. {choice_a}
B. {choice_b}
C. {choice_c}
D. {choice_d}

Return your final answer in this exact format:
##Explanation: <brief evidence-based explanation>
##Answer: <A/B/C/D/UNKNOWN>
"""
RESULT_KEYS = ["idx", "PMID_current", "PMID_prior", "Year_current", "Year_prior", "question_variant",
               "target_guideline_year", "opposite_original_option", "question", "gold", "prediction",
               "prediction_group", "correct", "model_answer", "tool_trace"]  # `evaluate_one_item`'s return


def seed_records(shared_data: Path) -> list[dict[str, Any]]:
    """`load_questions`: the file stripped, split on blank lines, each block a JSON object."""
    path = next((shared_data / "tempomed-bench").glob("*.jsonl"))
    text = path.read_text(encoding="utf-8").strip()
    return [json.loads(b.strip()) for b in re.split(r"\n\s*\n", text) if b.strip()]


def seed_counterpart(question: str, year_current: int, year_prior: int) -> str:
    """`build_counterpart_question`: the first "issued in <current year>", else the first standalone year."""
    out, n = re.subn(rf"(issued in ){year_current}(\b)", rf"\g<1>{year_prior}\2", question, count=1)
    return out if n else re.sub(rf"\b{year_current}\b", str(year_prior), question, count=1)


def seed_prompt(record: dict[str, Any], question: str) -> str:
    answer = record["Answer"]
    return SEED_USER.format(question=question, choice_a=answer["Choice_A"], choice_b=answer["Choice_B"],
                            choice_c=answer["Choice_C"], choice_d=answer["Choice_D"])


@pytest.fixture(scope="module")
def built(shared_data: Path) -> tuple[KgliteStore, list[Question]]:
    """The shared sample in a store, and its Table 3 items."""
    store = KgliteStore(":memory:")
    tempomed.load(store, [shared_data / "tempomed-bench"])
    return store, generate("tempomed", store, snapshot.current(store), {"table3": True, "mcq": False})[0]


@pytest.fixture(scope="module")
def loaded(built: tuple[KgliteStore, list[Question]]) -> KgliteStore:
    return built[0]


@pytest.fixture(scope="module")
def items(built: tuple[KgliteStore, list[Question]]) -> list[Question]:
    return built[1]


# --- the reader ------------------------------------------------------------------------------------------------

READER_CASES = [
    (None, "INVALID"), ("", "INVALID"), ("  \n\t ", "INVALID"),                  # nothing to read
    ("##Explanation: the 2023 update.\n##Answer: B", "B"),                       # 1. the format asked for
    ("## answer :  c\nbecause", "C"),                                            # 1. any case, spaces
    ("##Answer: b\n##Answer: A", "B"),                                           # 1. the first one
    ("##Answer: UNKNOWN", "UNKNOWN"), ("##answer: unknown.", "UNKNOWN"),         # 1. UNKNOWN is an answer
    ("##Answer: E", "INVALID"),                                                  # no label anywhere
    ("##Answer: [B]", "B"),                                                      # 4. not rule 1: one letter B
    ("d\nThe distractor fits.", "D"),                                            # 2. a first line that is a label
    ("Unknown\nNo evidence found.", "UNKNOWN"),                                  # 2. or UNKNOWN
    ("I do not know the answer.", "UNKNOWN"),                                    # 3. abstention phrase
    ("I cannot determine whether A or B applies.", "UNKNOWN"),                   # 3. before the letters
    ("Unable  to determine.", "UNKNOWN"),
    ("I choose B. Option B is right.", "B"),                                     # 4. one distinct letter
    ("The answer is C", "C"),
    ("Option A or option B", "INVALID"),                                         # 4. two letters
    ("This is a case for B", "INVALID"),                                         # 4. the article "a" counts
    ("##Answer:UNKNOWNS", "INVALID"),                                            # no whole label anywhere
]


@pytest.mark.parametrize(("text", "expected"), READER_CASES)
def test_the_seeds_reader(text: str | None, expected: str) -> None:
    assert extract.tempomed_rag_seed(text) == expected


def test_the_rag_reader_is_not_the_5_option_one() -> None:
    # `extract_choice_label` wants exactly one token; `extract_prediction` one distinct letter, and knows UNKNOWN
    assert extract.tempomed_mcq_seed("I choose B. Option B is right.", "ABCDE") == "INVALID"
    assert extract.tempomed_mcq_seed("I do not know the answer.", "ABCDE") == "INVALID"


# --- the prompts, byte for byte, on the shared records ---------------------------------------------------------


def test_prompts_byte_equal_to_the_seeds_on_every_shared_record(items: list[Question], shared_data: Path) -> None:
    records = seed_records(shared_data)
    assert len(records) == 559  # the shared sample of the 721 released records (PROVENANCE.md)
    by_key = {(q.metadata["idx"], q.metadata["target"]): q for q in items}
    assert len(items) == len(by_key) == 2 * len(records)
    for record in records:
        counterpart = seed_counterpart(record["Question"], record["Year_current"], record["Year_prior"])
        for target, question, gold in (("up_to_date", record["Question"], record["Answer"]["Correct"]),
                                       ("historical", counterpart, "B")):
            q = by_key[record["idx"], target]
            assert q.input == seed_prompt(record, question)
            assert q.system == SEED_SYSTEM
            assert q.target == gold and [c.label for c in q.choices] == ["A", "B", "C", "D"]
            assert q.metadata["question"] == question
    # the seed asks the file in its order: record by record, each record's two scopes
    assert [q.metadata["idx"] for q in items[::2]] == [r["idx"] for r in records]


def test_a_stem_with_braces_is_formatted_once() -> None:
    from chronokg.bench.families.tempomed_table3 import rag_prompt

    stem = "Which holds for {choice_a} in {year}?"
    assert rag_prompt(stem, ["a", "b", "c", "d"]) == SEED_USER.format(question=stem, choice_a="a", choice_b="b",
                                                                      choice_c="c", choice_d="d")


def test_table3_items_are_the_seeds_protocol_only(loaded: KgliteStore) -> None:
    with pytest.raises(ChronoKGError, match="protocol"):
        generate("tempomed", loaded, snapshot.current(loaded), {"table3": True, "protocol": "chronokg"})


# --- scoring, the metric, the seed's result files --------------------------------------------------------------


def sample(q: Question, output: str, steps: list[dict[str, Any]] | None = None) -> SampleRecord:
    profile = profile_for("tempomed")
    answer = profile.extract(q, output, "seed")
    correct, score, fields = profile.score(q, answer, "seed")
    fields = {**fields, **profile.context_fields(q, steps or [])}
    return SampleRecord(question_id=q.id, model="m", family="tempomed", variant=q.variant, answer=answer,
                        output=output, correct=correct, score=score, fields=fields, steps=steps or [])


def test_table3_seed_by_hand_in_both_forms(loaded: KgliteStore, items: list[Question]) -> None:
    up = [q for q in items if q.metadata["target"] == "up_to_date"][:4]
    hist = [q for q in items if q.metadata["target"] == "historical"][:2]
    plan = [(up[0], "##Answer: A"), (up[1], "I do not know the answer."), (up[2], "I choose B. Option B is right."),
            (up[3], "A or C?"), (hist[0], "##Answer: b"), (hist[1], "##Answer: D")]
    records = [sample(q, out) for q, out in plan]
    assert [r.answer for r in records] == ["A", "UNKNOWN", "B", "INVALID", "B", "D"]
    assert [r.correct for r in records] == [True, False, False, False, True, False]
    pure = TABLE3_SEED.compute(records, "m")
    info = RunInfo(run_id="run-t3", models=[{"spec": "m"}], questions=[], protocol="seed", samples=1)
    write_predictions(loaded, info, [q for q, _ in plan], records)
    assert TABLE3_SEED.from_graph(loaded, "run-t3", "m").model_dump() == pure.model_dump()
    g = pure.groups
    assert g["none · original_current_guideline"] == {"accuracy": 0.25, "n": 4, "correct": 1}
    assert g["none · original_current_guideline · counts"] == {"current_guideline": 1, "prior_guideline": 1,
                                                               "irrelevant": 0, "unknown": 1, "invalid": 1}
    assert g["none · original_current_guideline · labels"] == {"A": 1, "B": 1, "INVALID": 1, "UNKNOWN": 1}
    assert g["none · counterpart_prior_guideline"] == {"accuracy": 0.5, "n": 2, "correct": 1}
    assert g["none · counterpart_prior_guideline · shares"]["irrelevant"] == 0.5
    # Table 3's items stay out of the 5-option metrics
    assert TABLE3.compute(records, "m").groups == {} and ACCURACY.compute(records, "m").value is None


def test_arms_are_named_from_the_steps(items: list[Question]) -> None:
    q = items[0]
    retrieval = {"step": "retrieval", "mode": "atemporal", "k": 2, "passages": []}
    agent = [{"step": "tool_call", "tool": "search", "arguments": {"q": "x"}, "result": "r" * 12_000},
             {"step": "agent_answer", "model_call": 2, "tool_calls_made": 1, "output": "##Answer: A"}]
    records = [sample(q, "##Answer: A", [retrieval]), sample(q, "##Answer: A", agent),
               sample(q, "##Answer: A", [retrieval, *agent])]
    groups = TABLE3_SEED.compute(records, "m").groups
    assert {k for k in groups if "·" not in k.split(" · ", 1)[1]} == {
        "atemporal · original_current_guideline", "tools · original_current_guideline",
        "atemporal+tools · original_current_guideline"}
    assert tempomed_seed_rag.temperature("openai/gpt-4.1") == 0.0
    assert tempomed_seed_rag.temperature("openai-compat/llama") == 1.0


def test_seed_result_files_and_their_rescoring(shared_data: Path, tmp_path: Path) -> None:
    with KgliteStore(":memory:") as store:
        tempomed.load(store, [shared_data / "tempomed-bench"])
        questions = generate("tempomed", store, snapshot.current(store),
                             {"table3": True, "mcq": False, "limit": 6})[0]
        qfile = tmp_path / "q.jsonl"
        write_jsonl(qfile, questions)
        model = "baseline/random:5"
        folder, info = runner.prepare(tmp_path / "runs", [qfile], [runner.ModelEntry(spec=model)],
                                      runner.RunOptions(cache=False, concurrency=4, write=False))
        runner.run(folder, info, runner.load_questions([qfile], None), store)
    samples = {r.question_id: r for r in latest(folder / "samples.jsonl").values()}
    out = tmp_path / "out"
    export_seed(folder, out)
    base = out / "tempomed" / "rag_evaluation" / "baseline_random_5"
    for scope, variant in (("original_current_guideline", "current_guideline"),
                           ("counterpart_prior_guideline", "prior_guideline")):
        rows = json.loads((base / scope / "rag_evaluation_results.json").read_text(encoding="utf-8"))
        assert len(rows) == 6 and all(list(r) == RESULT_KEYS for r in rows)
        assert [r["idx"] for r in rows] == [q.metadata["idx"] for q in questions if q.metadata["target"] ==
                                            ("up_to_date" if variant == "current_guideline" else "historical")]
        assert {r["question_variant"] for r in rows} == {variant} and all(r["tool_trace"] == [] for r in rows)
        correct = sum(r["correct"] for r in rows)
        summary = json.loads((base / scope / "rag_evaluation_summary.json").read_text(encoding="utf-8"))
        assert list(summary) == ["model", "evaluation_scope", "total_questions", "correct", "accuracy",
                                 "prediction_group_counts", "prediction_group_percentages",
                                 "prediction_label_counts", "question_variant_counts"]
        assert (summary["model"], summary["evaluation_scope"], summary["total_questions"]) == (model, scope, 6)
        assert summary["correct"] == correct and summary["question_variant_counts"] == {variant: 6}
        text = (base / scope / "rag_evaluation_summary.csv").read_bytes().decode("utf-8")
        assert text.startswith(f"metric,count,percentage\r\naccuracy,{correct},{correct / 6:.6f}\r\n")
        assert [r[0] for r in csv.reader(io.StringIO(text))][2:] == list(tempomed_seed_rag.GROUP_ORDER)
        # the seed's own result file (no chronokg ids) scores back to the run's answers
        scored = score_outputs(qfile, base / scope / "rag_evaluation_results.json", "rescored", "seed",
                               tmp_path / "scored" / scope)
        got = {r.question_id: r.answer for r in latest(scored / "samples.jsonl").values()}
        assert len(got) == 6 and all(samples[qid].answer == a for qid, a in got.items())


class Recorder:
    """A model client that keeps the request it was sent and answers in the seed's format."""

    def __init__(self, spec: str) -> None:
        self.spec = spec
        self.sent: list[ModelRequest] = []

    async def generate(self, request: ModelRequest) -> Completion:
        self.sent.append(request)
        return Completion(spec=self.spec, choices=[CompletionChoice(index=0, text="##Answer: UNKNOWN")])


@pytest.mark.parametrize(("spec", "temperature"), [("openai/gpt-4.1", 0.0), ("openai-compat/qwen3-8b", 1.0)])
def test_the_seeds_request(items: list[Question], spec: str, temperature: float) -> None:
    client = Recorder(spec)
    outcome = asyncio.run(profile_for("tempomed").answer(client, items[0], "seed", 0))  # type: ignore[arg-type]
    (request,) = client.sent
    assert request.messages is not None and [(m.role, m.content) for m in request.messages] == [
        ("system", SEED_SYSTEM), ("user", items[0].input)]
    config = request.config.model_dump(exclude_defaults=True)
    assert config == {"temperature": temperature}  # no top_p, no max_tokens, as `run_one_question`
    assert (outcome.answer, outcome.correct, outcome.fields["group"]) == ("UNKNOWN", False, "unknown")


def test_chronokg_reads_table3_items_by_its_own_rule(items: list[Question]) -> None:
    profile = profile_for("tempomed")
    q = items[0]
    assert profile.extract(q, "##Answer: A\n##Answer: UNKNOWN", "chronokg") == "UNKNOWN"  # the last one
    assert profile.extract(q, "##Answer: A\n##Answer: UNKNOWN", "seed") == "A"  # the seed's: the first
    assert profile.extract(q, "I do not know the answer.", "chronokg") == "INVALID"


class Failing:
    """A model client whose request fails for the questions in `fail` (as after its retries) and answers A else."""

    def __init__(self, spec: str, fail: set[str]) -> None:
        self.spec = spec
        self.fail = fail

    async def generate(self, request: ModelRequest) -> Completion:
        if request.metadata.get("question_id") in self.fail:
            raise ChronoKGError("the server closed the connection")
        return Completion(spec=self.spec, choices=[CompletionChoice(index=0, text="##Explanation: x\n##Answer: A")])


def test_a_failed_request_counts_invalid_in_the_denominator_as_the_seed_counts_it(
        loaded: KgliteStore, items: list[Question], tmp_path: Path) -> None:
    """`evaluate_one_item` catches the failure: model_answer "INVALID: <exception>", prediction INVALID, a row of
    its scope, wrong. Four up-to-date items, one request failing: n 4, accuracy 3/4 (never n 3, accuracy 1)."""
    from chronokg.eval.log import SampleLog

    up = [q for q in items if q.metadata["target"] == "up_to_date"][:4]
    assert all(q.target == "A" for q in up)
    options = runner.RunOptions(protocol="seed", cache=False, concurrency=2, write=False)
    log = SampleLog(tmp_path / "samples.jsonl")
    try:
        tally = asyncio.run(runner.execute(log, [(q, "m", 0) for q in up], {"m": Failing("m", {up[1].id})},
                                           options))  # type: ignore[dict-item]
    finally:
        log.close()
    records = list(latest(tmp_path / "samples.jsonl").values())
    assert tally.failed == 1 and len(records) == 4 and all(r.ok for r in records)
    broken = next(r for r in records if r.question_id == up[1].id)
    assert broken.output == "INVALID: ChronoKGError: the server closed the connection"
    assert (broken.answer, broken.correct, broken.fields["group"]) == ("INVALID", False, "invalid")
    assert broken.fields["request_error"] == "ChronoKGError: the server closed the connection"
    g = TABLE3_SEED.compute(records, "m").groups
    assert g["none · original_current_guideline"] == {"accuracy": 0.75, "n": 4, "correct": 3}
    assert g["none · original_current_guideline · counts"]["invalid"] == 1
    info = RunInfo(run_id="run-t3-failed", models=[{"spec": "m"}], questions=[], protocol="seed", samples=1)
    write_predictions(loaded, info, up, records)
    assert TABLE3_SEED.from_graph(loaded, "run-t3-failed", "m").model_dump() == TABLE3_SEED.compute(
        records, "m").model_dump()
    _, row = profile_for("tempomed").seed_result(up[1], broken) or ("", {})
    assert (row["prediction"], row["prediction_group"], row["correct"]) == ("INVALID", "invalid", False)
    assert row["model_answer"].startswith("INVALID: ") and row["tool_trace"] == [
        {"error": "ChronoKGError: the server closed the connection"}]


def test_the_canonical_input_is_the_question_alone(items: list[Question], tmp_path: Path) -> None:
    """`input` as inspect's `multiple_choice()` wants it (its own answer format): no option lines and none of the
    seed's answer-format lines; the seed's exact prompt stays in `metadata.prompt` and is what the runner sends."""
    from chronokg.bench.question import read_jsonl

    path = tmp_path / "t3.jsonl"
    write_jsonl(path, items[:4])
    for q, line in zip(items[:4], path.read_text(encoding="utf-8").splitlines(), strict=True):
        record = json.loads(line)
        text = record["input"]
        assert "##Answer" not in text and "##Explanation" not in text and "exact format" not in text, text
        assert "UNKNOWN" not in text and "\nA. " not in text
        assert text.startswith("Question:\n") and q.metadata["question"] in text
        assert record["metadata"]["prompt"] == q.input  # the seed's prompt, byte for byte, for the runner
    assert [q.input for q in read_jsonl(path)] == [q.input for q in items[:4]]
