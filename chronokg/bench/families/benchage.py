"""Benchmark aging ("When Benchmarks Age", BenchAge), re-created from the graph.

Seed: JiangXunyi/BenchAge @42f499a2 (`src/detector/`, `src/evaluator/evaluator.py` @738f9508; no licence
file) and the paper (Jiang, Chang, McAuley, Xu), §2-3 and App. C-D. Every difference between
`--protocol seed` and `--protocol chronokg` is listed in docs/benchmarks/benchage.md with the seed's file
and line.

Over the QA sets `chronokg ingest qa` loads (SelfAware, TruthfulQA, TriviaQA, NaturalQuestions, BoolQ):

- **Time-sensitivity.** With a model, the seed's detector: its prompt (few-shot examples included) sent
  three times at temperature 1.0, each reply parsed as the seed parses it (the whole reply must be JSON;
  anything else is a No vote), the question time-sensitive only when Yes votes outnumber No votes. Without
  a model, a documented keyword rule (`keyword_verdict`). The verdict, how it was reached and the votes are
  stored on the question's `SourceQuestion` (`qasets.set_time_sensitive`) and in each question's metadata.
- **Questions.** One per answerable question (unanswerable SelfAware/NQ items have no gold and are left
  out, as the seed's evaluator drops them), time-sensitive or not (`--scope ts` keeps only the former; the
  adjusted accuracies need both). `input` is the QA prompt of the benchmark's OpenCompass config, which is
  how the seed's model outputs were produced; `target` is the gold at the benchmark's release.
- **Answer key.** The `qa-gold` query as known now: every gold-answer fact of the question with its
  valid time. Its metadata also carries the gold as known at the benchmark's release (`qa-gold` with
  `known_at` = the release) and the slot for the up-to-date answer: the answer the graph holds now when a
  later answer was recorded (`chronokg ingest qa-update`), else empty, to be filled by retrieval.
  Recording a later answer changes the key's evidence, so `chronokg bench verify` lists the question.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from enum import StrEnum
from typing import Any

from pydantic import Field

from chronokg.bench.families.benchage_prompts import detector_messages, render
from chronokg.bench.families.benchage_verdicts import KEYWORD_RULE, Verdict
from chronokg.bench.families.benchage_verdicts import Vote as Vote  # re-exported: tests import them from here
from chronokg.bench.families.benchage_verdicts import chronokg_vote as chronokg_vote
from chronokg.bench.families.benchage_verdicts import keyword_verdict as keyword_verdict
from chronokg.bench.families.benchage_verdicts import seed_vote as seed_vote
from chronokg.bench.families.benchage_verdicts import tally as tally
from chronokg.bench.family import OURS, Context, Family, FamilyOptions, Protocol, generator_info
from chronokg.bench.question import AnswerKey, Choice, Question, content_id
from chronokg.errors import ChronoKGError
from chronokg.ingest.qasets import Benchmark, set_time_sensitive
from chronokg.queries.benchage import QuestionRow

NAME = "benchage"
GOLD_QUERY = "qa-gold"
# The seed's dataset names (websearch.py:51, evaluator.py:33) and folder names.
SEED_NAMES: Mapping[Benchmark, str] = {
    Benchmark.TRIVIAQA: "TriviaQA", Benchmark.BOOLQ: "BoolQ", Benchmark.NQ: "NaturalQuestion",
    Benchmark.TRUTHFULQA: "TruthfulQA", Benchmark.SELFAWARE: "SelfAware",
}
QA_TEMPLATES: Mapping[Benchmark, str] = {
    Benchmark.SELFAWARE: "QA_SELFAWARE", Benchmark.TRUTHFULQA: "QA_TRUTHFULQA", Benchmark.TRIVIAQA: "QA_TRIVIAQA",
    Benchmark.NQ: "QA_NQ", Benchmark.BOOLQ: "QA_BOOLQ",
}
BOOL_LABELS = {True: "A", False: "B"}  # OpenCompass BoolQ: A. Yes / B. No
BOOL_WORDS = {True: "Yes", False: "No"}


class Scope(StrEnum):
    all = "all"
    ts = "ts"


class Detector(StrEnum):
    auto = "auto"  # the model's votes when a model is given, else the keyword rule
    llm = "llm"
    keywords = "keywords"
    stored = "stored"  # the verdicts already stored on the questions


class BenchAgeOptions(FamilyOptions):
    """What to build. Defaults reproduce the seed's detector settings as run (README, paper App. C.2)."""

    limit: int | None = Field(default=None, ge=1, description="At most this many questions per benchmark")
    benchmarks: list[Benchmark] = Field(default_factory=lambda: list(Benchmark),
                                        description="Which loaded QA sets to build from")
    scope: Scope = Field(default=Scope.all, description="all: every answerable question, each marked "
                                                        "time-sensitive or not; ts: the time-sensitive subset only")
    detector: Detector = Field(default=Detector.auto, description="auto: the seed's LLM votes with --model, else "
                                                                  "the keyword rule; llm; keywords; stored")
    rounds: int = Field(default=3, ge=1, le=15, description="Detector votes per question (the seed's --rounds)")
    temperature: float = Field(default=1.0, ge=0.0, le=2.0, description="Detector temperature (README/paper: "
                                                                         "1.0)")
    concurrency: int = Field(default=16, ge=1, le=256, description="Detector requests in flight at once")
    store_verdicts: bool = Field(default=True, description="Keep the verdicts on the questions in the store "
                                                           "(when it is opened for writing)")
    boolq_passage: bool = Field(default=False, description="BoolQ prompts with the passage (the paper's App. "
                                                           "D.3 variant; its main results are without)")


def _model_name(model: Any) -> str:
    for attr in ("spec", "name", "model"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def _replies(ctx: Context, options: BenchAgeOptions, asks: list[tuple[str, int]]) -> list[list[str]]:
    """The model's replies to the detector prompt: `n` samples per question text, bounded concurrency."""
    from chronokg.bench.llm import ask_texts

    async def run() -> list[list[str]]:
        gate = asyncio.Semaphore(options.concurrency)

        async def one(text: str, n: int) -> list[str]:
            async with gate:
                replies = await ask_texts(ctx.model, detector_messages(text), options.temperature, n=n)
            if ctx.progress is not None:
                ctx.progress.advance(1)
            return replies

        return list(await asyncio.gather(*(one(text, n) for text, n in asks)))

    if ctx.progress is not None:
        ctx.progress.start(len(asks), "benchage detector")
    return asyncio.run(run())


def llm_verdicts(ctx: Context, options: BenchAgeOptions, rows: list[QuestionRow]) -> dict[str, Verdict]:
    """The seed's detector through the model client. Seed protocol: votes are keyed by question text within a
    benchmark, so duplicates pool theirs (`rounds` per occurrence, detector.py:308-316); chronokg: per question."""
    seed = options.protocol is Protocol.seed
    groups: dict[tuple[str, str], list[QuestionRow]] = {}
    for row in rows:
        groups.setdefault((row.benchmark, row.question) if seed else (row.question_id, row.question), []).append(row)
    asks = [(text, options.rounds * (len(members) if seed else 1)) for (_, text), members in groups.items()]
    replies = _replies(ctx, options, asks)
    read = seed_vote if seed else chronokg_vote
    method = (f"llm/{_model_name(ctx.model)}/{options.rounds} votes/T={options.temperature:g}/"
              f"{options.protocol.value} parsing")
    out: dict[str, Verdict] = {}
    for ((_, text), members), (_, asked), texts in zip(groups.items(), asks, replies, strict=True):
        votes = [read(t) for t in texts]
        for vote in votes:
            if vote.note:
                ctx.notes.append(f"{members[0].question_id}: {vote.note}")
        if len(texts) < asked:
            ctx.notes.append(f"{members[0].question_id}: {len(texts)} of {asked} votes came back")
        verdict = tally(votes, text, method)
        for row in members:
            out[row.question_id] = verdict
    return out


def detect(ctx: Context, options: BenchAgeOptions, rows: list[QuestionRow]) -> dict[str, Verdict]:
    """Each question's verdict by the chosen detector."""
    detector = options.detector
    if detector is Detector.auto:
        detector = Detector.llm if ctx.model is not None else Detector.keywords
    if detector is Detector.llm:
        if ctx.model is None:
            raise ChronoKGError("--detector llm needs a model: pass --model SPEC (and --base-url)")
        return llm_verdicts(ctx, options, rows)
    if detector is Detector.keywords:
        out = {}
        for row in rows:
            flag, why = keyword_verdict(row.question)
            out[row.question_id] = Verdict(time_sensitive=flag, method=KEYWORD_RULE, reason=why)
        return out
    missing = [r.question_id for r in rows if r.time_sensitive is None]
    if missing:
        raise ChronoKGError(f"{len(missing):,} questions have no stored time-sensitivity verdict (first: "
                            f"{', '.join(missing[:3])}); run with --detector llm --model SPEC or --detector "
                            "keywords first")
    stored = {}
    for r in rows:
        yes, no = (r.time_sensitive_votes[0], r.time_sensitive_votes[1]) if r.time_sensitive_votes else (None, None)
        stored[r.question_id] = Verdict(time_sensitive=bool(r.time_sensitive), method=r.time_sensitive_by or "stored",
                                        yes=yes, no=no)
    return stored


def _store_verdicts(ctx: Context, options: BenchAgeOptions, verdicts: dict[str, Verdict]) -> None:
    if options.detector is Detector.stored or not options.store_verdicts or not verdicts:
        return
    if ctx.store.read_only:
        ctx.notes.append("time-sensitivity verdicts not stored: the store is open read-only (--no-write)")
        return
    by_method: dict[str, dict[str, Verdict]] = {}
    for qid, verdict in verdicts.items():
        by_method.setdefault(verdict.method, {})[qid] = verdict
    for method, group in by_method.items():
        votes = {q: [v.yes, v.no] for q, v in group.items() if v.yes is not None and v.no is not None}
        set_time_sensitive(ctx.store, {q: v.time_sensitive for q, v in group.items()}, method=method, votes=votes)


# --- answers -----------------------------------------------------------------------------------------------------


def as_target(benchmark: Benchmark | str, value: Any) -> str | None:
    """A gold value as a target: BoolQ's True/False as the option labels A/B, anything else as text."""
    if value is None:
        return None
    if Benchmark(benchmark) is Benchmark.BOOLQ and isinstance(value, bool):
        return BOOL_LABELS[value]
    return str(value)


def _current(evidence: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The gold fact in force now (open-ended valid time): the last one in the key's order."""
    found = [r for r in evidence if r.get("current")]
    return found[-1] if found else None


def current_answer(benchmark: Benchmark | str, evidence: list[dict[str, Any]]) -> str | None:
    """The answer a `qa-gold` key's evidence gives now."""
    row = _current(evidence)
    return as_target(benchmark, row["value"]) if row is not None else None


def accepted(benchmark: Benchmark, row: Mapping[str, Any]) -> list[str]:
    """Every accepted answer of a gold fact (the loader keeps them as a JSON list when there is more than one)."""
    if benchmark is Benchmark.BOOLQ and isinstance(row.get("value"), bool):
        return [BOOL_LABELS[row["value"]], BOOL_WORDS[row["value"]]]
    values = json.loads(row["accepted_answers"]) if row.get("accepted_answers") else [row.get("value")]
    return [str(v) for v in values if v is not None]


def gold_text(benchmark: Benchmark, row: Mapping[str, Any]) -> str:
    """The gold as the seed's judge is given it (evaluator.py:255: a list joined with ", "): TruthfulQA's best
    answer, BoolQ's option label, else every accepted answer joined."""
    if benchmark is Benchmark.BOOLQ:
        return as_target(benchmark, row.get("value")) or ""
    if benchmark is Benchmark.TRUTHFULQA:
        return str(row.get("value"))
    return ", ".join(accepted(benchmark, row))


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _up_to_date(benchmark: Benchmark, key: AnswerKey, release: AnswerKey) -> dict[str, Any]:
    """The up-to-date slot: the answer the graph holds now when it is a later answer than the release's."""
    released = {r["fact_id"] for r in release.evidence}
    row = _current(key.evidence)
    if row is None or row["fact_id"] in released:
        return {"up_to_date_answer": None, "up_to_date_source": None, "up_to_date_valid_from": None,
                "up_to_date_fact": None}
    return {"up_to_date_answer": as_target(benchmark, row["value"]), "up_to_date_source": row["source_id"],
            "up_to_date_valid_from": row["valid_from"], "up_to_date_fact": row["fact_id"]}


# --- building ------------------------------------------------------------------------------------------------


def _prompt(options: BenchAgeOptions, benchmark: Benchmark, row: QuestionRow) -> tuple[str, str]:
    """(template name, the exact user message) for one question."""
    if benchmark is Benchmark.BOOLQ and options.boolq_passage:
        if not row.passage:
            raise ChronoKGError(f"{row.question_id}: --boolq-passage, but the question has no passage")
        return "QA_BOOLQ_PASSAGE", render("QA_BOOLQ_PASSAGE", passage=row.passage, question=row.question)
    name = QA_TEMPLATES[benchmark]
    return name, render(name, question=row.question)


def _rows(ctx: Context, options: BenchAgeOptions) -> list[QuestionRow]:
    """The answerable questions of the chosen benchmarks, at most `limit` per benchmark."""
    params: dict[str, Any] = {"benchmarks": [b.value for b in options.benchmarks]}
    if ctx.since is not None:
        params["sources"] = sorted(ctx.since)
    rows: list[QuestionRow] = ctx.rows("qa-questions", params)
    kept: list[QuestionRow] = []
    counts: Counter[str] = Counter()
    dropped: Counter[str] = Counter()
    for row in rows:
        if row.answerable is False:
            dropped[row.benchmark] += 1
            continue
        if options.limit is not None and counts[row.benchmark] >= options.limit:
            continue
        counts[row.benchmark] += 1
        kept.append(row)
    for bench, n in sorted(dropped.items()):
        ctx.notes.append(f"{bench}: {n:,} unanswerable questions left out (no gold answer; the seed's evaluator "
                         "drops them)")
    return kept


def _question(ctx: Context, options: BenchAgeOptions, row: QuestionRow, verdict: Verdict) -> Question | None:
    bench = Benchmark(row.benchmark)

    def answer(evidence: list[dict[str, Any]]) -> str | None:
        return current_answer(bench, evidence)

    if row.release_date is None:
        raise ChronoKGError(f"{row.question_id}: its source has no release date")
    release = ctx.key(GOLD_QUERY, {"question": row.question_id, "known_at": row.release_date}, answer)
    gold = _current(release.evidence)
    if gold is None:
        ctx.notes.append(f"{row.question_id}: no gold answer known at the release ({row.release_date}); left out")
        return None
    key = ctx.key(GOLD_QUERY, {"question": row.question_id}, answer)
    target = as_target(bench, gold["value"])
    assert target is not None
    template, prompt = _prompt(options, bench, row)
    slot = _up_to_date(bench, key, release)
    new = slot["up_to_date_answer"]
    aliases = accepted(bench, gold)
    variant = f"{bench.value}/{'ts' if verdict.time_sensitive else 'non_ts'}"
    meta: dict[str, Any] = {
        "dataset": SEED_NAMES[bench], "benchmark": bench.value, "question_id": row.question_id,
        "record": row.record, "question": row.question, "release_date": row.release_date.isoformat(),
        "time_sensitive": verdict.time_sensitive, "detector": verdict.record(),
        "gold_at_release": target, "gold_text": gold_text(bench, gold), "accepted_answers": aliases,
        "gold_fact": gold["fact_id"],
        "release_key": {"query": release.query, "params": release.params, "evidence_hash": release.evidence_hash},
        **slot,
        "gold_outdated": None if new is None else _norm(new) not in {_norm(a) for a in aliases},
        "prompt_template": template, "judge": "JUDGE_BOOLQ" if bench is Benchmark.BOOLQ else "JUDGE",
        "protocol": options.protocol.value,
    }
    choices = ([Choice(label="A", text="Yes", role="yes"), Choice(label="B", text="No", role="no")]
               if bench is Benchmark.BOOLQ else [])
    return Question(
        id=content_id("q", NAME, variant, row.question_id, prompt, target), family=NAME, variant=variant,
        input=prompt, choices=choices, target=target, target_date=row.release_date, answer_key=key,
        snapshot=ctx.snapshot, generator=generator_info(NAME, options),
        facts=[f for f in (gold["fact_id"], slot["up_to_date_fact"]) if f],
        derived_from=[f"SourceQuestion:{row.source_question}"], metadata=meta,
    )


def generate(ctx: Context, options: BenchAgeOptions) -> Iterator[Question]:
    rows = _rows(ctx, options)
    verdicts = detect(ctx, options, rows)
    _store_verdicts(ctx, options, verdicts)
    summary: dict[str, Counter[bool]] = {}
    for row in rows:
        summary.setdefault(row.benchmark, Counter())[verdicts[row.question_id].time_sensitive] += 1
    for bench, counter in sorted(summary.items()):
        method = next(verdicts[r.question_id].method for r in rows if r.benchmark == bench)
        ctx.notes.append(f"{bench}: {counter[True]:,} of {sum(counter.values()):,} questions time-sensitive "
                         f"({method})")
    if ctx.progress is not None:
        ctx.progress.start(len(rows), "benchage")
    for row in rows:
        verdict = verdicts[row.question_id]
        if options.scope is Scope.all or verdict.time_sensitive:
            question = _question(ctx, options, row, verdict)
            if question is not None:
                yield question
        if ctx.progress is not None:
            ctx.progress.advance(1)


def answer(question: Question, evidence: list[dict[str, Any]]) -> str | None:
    """The answer the graph gives now (the up-to-date answer when a later one was recorded)."""
    return current_answer(str(question.metadata.get("benchmark", "")), evidence)


# --- the seed's file formats ----------------------------------------------------------------------------------


def seed_format(questions: Iterable[Question]) -> Iterator[tuple[str, Any]]:
    """The seed's files, per dataset, each record with exactly the seed's fields (the chronokg question id, the
    dataset's own question id and the detector method go to the side file, `OURS`):

    - `<Dataset>-questions.json`: the detector's input (a JSON list of `{"question"}` objects, README);
    - `<Dataset>-majority_vote_results.json`: its output (`question, final_answer, yes_votes, no_votes,
      total_votes`, ints, detector.py:318-330); the keyword rule counts as one round (1 vote);
    - `<dataset>-time-sensitive.jsonl`: the time-sensitive subset as the web search reads it (`id`, `question`;
      websearch.py:97-100, 168: `id` an integer, 1.. per dataset, since the runner logs `int(qid)`);
    - `<Dataset>-websearch.jsonl`: the evaluator's up-to-date answers (`id, question, status, search_answer,
      urls`, websearch.py:198-202): the graph's answer (status `chronokg_graph`) or empty (`unanswered`);
    - `<Dataset>-items.jsonl`: each question as an OpenCompass prediction record without a prediction
      (`origin_prompt` as a HUMAN turn, `gold`), for the runner's seed export.
    """
    numbers: dict[str, int] = {}
    for q in questions:
        m = q.metadata
        ds = str(m.get("dataset"))
        text = str(m.get("question"))
        detector = m.get("detector") or {}
        ours = {"chronokg_ids": [q.id]}
        yield f"{ds}-questions.json", {"question": text, OURS: ours}
        votes = detector.get("total_votes")
        one = int(bool(m.get("time_sensitive")))  # the keyword rule: one round
        yield f"{ds}-majority_vote_results.json", {
            "question": text, "final_answer": "Yes" if m.get("time_sensitive") else "No",
            "yes_votes": detector.get("yes_votes") if votes is not None else one,
            "no_votes": detector.get("no_votes") if votes is not None else 1 - one,
            "total_votes": votes if votes is not None else 1, OURS: {**ours, "method": detector.get("method")},
        }
        if m.get("time_sensitive"):
            numbers[ds] = n = numbers.get(ds, 0) + 1
            yield f"{ds.lower()}-time-sensitive.jsonl", {"id": n, "question": text,
                                                          OURS: {**ours, "question_id": m.get("question_id")}}
            found = m.get("up_to_date_answer")
            yield f"{ds}-websearch.jsonl", {
                "id": n, "question": text, "status": "chronokg_graph" if found is not None else "unanswered",
                "search_answer": found if found is not None else "", "urls": [], OURS: ours,
            }
        yield f"{ds}-items.jsonl", {
            "origin_prompt": [{"role": "HUMAN", "prompt": q.input}], "gold": m.get("gold_text"),
            OURS: {**ours, "time_sensitive": m.get("time_sensitive")},
        }


FAMILY = Family(
    name=NAME, help="Benchmark aging (BenchAge): the QA sets' time-sensitive questions by the seed's detector "
                    "(or a keyword rule), with their gold at release and the up-to-date answer the graph holds.",
    options=BenchAgeOptions, generate=generate, seed_format=seed_format, answer=answer,
    seed_json_indent=4, seed_json_ascii=True,  # detector.py:321-330 `json.dump(final_results, f, indent=4)`
    needs=("QA-benchmark questions: `chronokg ingest qa FILE` (SelfAware, TruthfulQA, TriviaQA, NQ, BoolQ); "
          "later answers with `chronokg ingest qa-update`"),
    sources="JiangXunyi/BenchAge@42f499a2 (no licence file); 'When Benchmarks Age' (Jiang, Chang, McAuley, Xu)",
)
