"""BenchAge ("When Benchmarks Age"): how its QA questions are asked and scored.

The model answers the benchmark's QA prompt (OpenCompass's format, as the seed's model outputs were made:
greedy, `max_out_len` 50 for TriviaQA). Then, as the seed's evaluator does (`src/evaluator/evaluator.py`
@738f9508, lines 185-276), a judge model compares answers with the seed's judge prompt (`judge_messages`:
system "You are a factual-consistency judge.", BoolQ its own prompt; temperature 0, `max_tokens=1`, a reply
starting with "true" = match, `judge_score`):

- every question: Answer 1 = the gold at the benchmark's release (y), Answer 2 = the model's output -> s_gold;
- time-sensitive questions also: Answer 1 = the up-to-date answer (y*), Answer 2 = the output -> s_search,
  and Answer 1 = y, Answer 2 = y* -> gs (one judgement per question per run, shared by its samples).

Both per-sample judge calls (and the shared one) are recorded in the sample's `steps`. The judge is the
run's `--judge SPEC` (`chronokg.eval.judge`); without one, the same three comparisons are made by
exact/alias match (SQuAD-style normalisation; BoolQ by the seed judge's own Yes/No normalisation rules),
so a run needs no second model. The up-to-date answer y* is the answer the question's answer key
(`qa-gold` as known now) gives: the later answer the graph holds (`metadata.up_to_date_answer`), else the
gold itself, still in force as far as the graph knows. Every difference from the seed is listed in
docs/metrics/benchage.md.
"""

from __future__ import annotations

import re
import string
import time
from dataclasses import dataclass
from typing import Any

from chronokg.bench.families.benchage import accepted, as_target, gold_text
from chronokg.bench.families.benchage_prompts import JUDGE_SETTINGS, judge_messages, judge_score
from chronokg.bench.family import OURS
from chronokg.bench.question import Question
from chronokg.errors import ModelError
from chronokg.eval.judge import Judge, current_judge
from chronokg.eval.profile import Outcome, Profile, request_hash
from chronokg.ingest.qasets import Benchmark
from chronokg.models import ChatMessage, Completion, GenerateConfig, ModelClient, ModelConfigError, ModelRequest

EXACT = "exact"  # the judge field of samples scored without a judge model
# OpenCompass's TriviaQA config (`triviaqa_gen_3e39a5.py`: GenInferencer max_out_len=50); the other configs
# leave it to the model's own config, which the paper does not give.
MAX_OUT_LEN = {"TriviaQA": 50}

# The seed's question recovery from OpenCompass's origin_prompt (evaluator.py:86-122), DOTALL | IGNORECASE.
_RECOVER: dict[str, tuple[re.Pattern[str], bool]] = {
    "BoolQ": (re.compile(r"Question:\s*(.*?)\s*(?:A\.)", re.S | re.I), False),
    "SelfAware": (re.compile(r"Q:\s*(.*?)\s*A:", re.S | re.I), True),
    "NaturalQuestion": (re.compile(r"Question:\s*(.*?)\s*Answer:", re.S | re.I), False),
    "TriviaQA": (re.compile(r"Question:\s*(.*?)\s*Answer:", re.S | re.I), False),
}


def judge_question(question: Question) -> str:
    """The question text the seed's judge is given: recovered from the prompt by the seed's regex for the
    dataset (search; SelfAware: match at the start), TruthfulQA the raw prompt; stripped. So NQ's carries the
    "?" the prompt appends."""
    dataset = str(question.metadata.get("dataset", ""))
    rule = _RECOVER.get(dataset)
    if rule is None:
        return question.input
    pattern, at_start = rule
    found = pattern.match(question.input) if at_start else pattern.search(question.input)
    return found.group(1).strip() if found else str(question.metadata.get("question", question.input)).strip()


# --- exact/alias matching (no judge) ------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)
_YES = re.compile(r"\byes\b", re.I)
_NO = re.compile(r"\bno\b", re.I)


def normalise(text: str) -> str:
    """SQuAD/TriviaQA exact-match normalisation: lower case, no punctuation, no articles, single spaces."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split())


def yes_no(text: str | None) -> bool | None:
    """The seed BoolQ judge's normalisation (evaluator.py:138-160), as rules: starts with "A" (A, A., A:) ->
    Yes; starts with "B" -> No; else the word Yes -> Yes; the word No -> No; else undecided (None)."""
    t = (text or "").strip()
    if re.match(r"A(?![A-Za-z])", t):
        return True
    if re.match(r"B(?![A-Za-z])", t):
        return False
    if _YES.search(t):
        return True
    if _NO.search(t):
        return False
    return None


def first_answer(output: str) -> str | None:
    """An open answer as chronokg reads it without a judge: the first non-empty line, the text after its last
    "answer is" if any, a leading "Answer:"/"A:" and a trailing full stop removed."""
    line = next((ln.strip() for ln in output.splitlines() if ln.strip()), "")
    if "answer is" in line.lower():
        line = line[line.lower().rindex("answer is") + len("answer is"):].strip(" :")
    line = re.sub(r"^(?:answer|a)\s*:\s*", "", line, flags=re.I).rstrip(".").strip()
    return line or None


@dataclass(frozen=True)
class Reference:
    """An answer the model is compared with: the text the judge sees, and the forms exact match accepts."""

    text: str
    aliases: tuple[str, ...]


def _benchmark(question: Question) -> Benchmark:
    return Benchmark(str(question.metadata["benchmark"]))


def is_boolq(question: Question) -> bool:
    return question.metadata.get("dataset") == "BoolQ"


def gold(question: Question) -> Reference:
    """y: the gold at the benchmark's release, as the seed's judge is given it (`gold_text`)."""
    m = question.metadata
    aliases = [*(m.get("accepted_answers") or []), str(m.get("gold_at_release", question.target))]
    return Reference(str(m.get("gold_text", question.target)), tuple(dict.fromkeys(aliases)))


def up_to_date(question: Question) -> tuple[Reference, str] | None:
    """(y*, where it comes from): the answer key's answer now: "update" when the graph holds a later answer than
    the release's, "gold" when the gold is still the one in force; None when the key has no answer in force."""
    rows = [r for r in question.answer_key.evidence if r.get("current")]
    if not rows:
        return None
    row, bench = rows[-1], _benchmark(question)
    aliases = [*accepted(bench, row), str(as_target(bench, row.get("value")))]
    origin = "update" if question.metadata.get("up_to_date_answer") is not None else "gold"
    return Reference(gold_text(bench, row), tuple(dict.fromkeys(aliases))), origin


def pool(question: Question) -> str:
    """ts (time-sensitive, with y*), non_ts, or ts_unanswered (time-sensitive without y*: left out of the
    aging metrics and counted, as chronokg's fix of the seed's "Not found" answers, quirk Q-W7)."""
    if not question.metadata.get("time_sensitive"):
        return "non_ts"
    return "ts" if up_to_date(question) is not None else "ts_unanswered"


def matches(question: Question, answer: str | None, reference: Reference) -> bool:
    """Exact/alias match of an answer (or a reference's text) against a reference."""
    if answer is None:
        return False
    if is_boolq(question):
        said = yes_no(answer)
        return said is not None and said == yes_no(reference.aliases[0] if reference.aliases else reference.text)
    return normalise(answer) in {normalise(a) for a in reference.aliases}


def overlap(question: Question, a: Reference, b: Reference) -> bool:
    """Whether two references share an accepted form (the exact-match stand-in for the judge's y = y*)."""
    if is_boolq(question):
        return yes_no(a.aliases[0]) == yes_no(b.aliases[0])
    return bool({normalise(x) for x in a.aliases} & {normalise(x) for x in b.aliases})


# --- the profile -------------------------------------------------------------------------------------------


class BenchAgeProfile(Profile):
    family = "benchage"

    def config(self, question: Question, protocol: str, sample: int) -> GenerateConfig:
        """OpenCompass's vLLM models decode greedily (temperature 0, max_tokens = the dataset's max_out_len)."""
        return GenerateConfig(temperature=0.0, max_tokens=MAX_OUT_LEN.get(str(question.metadata.get("dataset"))))

    def extract(self, question: Question, output: str, protocol: str) -> str | None:
        """BoolQ: the option label (A/B) by the seed judge's Yes/No rules; open QA: `first_answer`."""
        if is_boolq(question):
            said = yes_no(output)
            return None if said is None else ("A" if said else "B")
        return first_answer(output)

    def fields(self, question: Question, s_gold: int | None, s_search: int | None, gs: int | None,
               judge: str) -> dict[str, Any]:
        found = up_to_date(question)
        return {"dataset": question.metadata.get("dataset"), "pool": pool(question), "s_gold": s_gold,
                "s_search": s_search, "gs": gs, "uptodate_from": found[1] if found else None, "judge": judge,
                "release_date": question.metadata.get("release_date")}

    def score(self, question: Question, answer: str | None, protocol: str) -> tuple[bool | None, float | None,
                                                                                   dict[str, Any]]:
        """Without a judge: the seed's three comparisons by exact/alias match."""
        y = gold(question)
        s_gold = int(matches(question, answer, y))
        s_search = gs = None
        found = up_to_date(question)
        if pool(question) == "ts" and found is not None:
            s_search = int(matches(question, answer, found[0]))
            gs = int(overlap(question, y, found[0]))
        return bool(s_gold), float(s_gold), self.fields(question, s_gold, s_search, gs, EXACT)

    def render(self, question: Question, label: str) -> str:
        return label

    def chosen_fact(self, question: Question, answer: str | None) -> str | None:
        """The up-to-date fact when the answer matches y* (exact/alias), else the gold fact when it matches y."""
        m = question.metadata
        found = up_to_date(question)
        if m.get("up_to_date_fact") and found is not None and matches(question, answer, found[0]):
            return str(m["up_to_date_fact"])
        if m.get("gold_fact") and matches(question, answer, gold(question)):
            return str(m["gold_fact"])
        return None

    async def answer(self, client: ModelClient, question: Question, protocol: str, sample: int) -> Outcome:
        request = self.request(question, protocol, sample)
        start = time.perf_counter()
        completion = await client.generate(request)
        elapsed = time.perf_counter() - start
        judge = current_judge()
        if judge is None:
            return self.outcome(question, protocol, completion, elapsed, request_hash=request_hash(request))
        return await self._judged(judge, question, protocol, completion, elapsed, request_hash(request))

    async def _judged(self, judge: Judge, question: Question, protocol: str, completion: Completion,
                      elapsed: float, hashed: str) -> Outcome:
        output = completion.text
        y = gold(question)
        s_gold, step = await self.judge_pair(judge, question, "llm_vs_gold", y.text, output, protocol)
        steps = [step]
        s_search = gs = None
        found = up_to_date(question)
        if pool(question) == "ts" and found is not None:
            y_star = found[0].text
            s_search, step = await self.judge_pair(judge, question, "llm_vs_search", y_star, output, protocol)
            steps.append(step)
            (gs, shared), fresh = await judge.once(
                ("gold_vs_search", question.id),
                lambda: self.judge_pair(judge, question, "gold_vs_search", y.text, y_star, protocol))
            steps.append({**shared, "shared": True, "computed_here": fresh})
        return Outcome(output=output, answer=self.extract(question, output, protocol), correct=s_gold == 1,
                       score=None if s_gold is None else float(s_gold),
                       fields=self.fields(question, s_gold, s_search, gs, judge.spec), steps=steps,
                       prompt_tokens=completion.usage.prompt_tokens,
                       completion_tokens=completion.usage.completion_tokens,
                       latency_s=completion.latency_s or elapsed, retries=completion.retries,
                       cached=completion.cached, request_hash=hashed)

    async def judge_pair(self, judge: Judge, question: Question, pair: str, answer1: str, answer2: str,
                         protocol: str) -> tuple[int | None, dict[str, Any]]:
        """One judgement (evaluator.py:185-220): 1 if the judge's reply starts with "true", else 0. A failed
        call: under `seed` the seed's "ERROR" label and NaN score (None here: counted in the denominators, never
        as a match); under `chronokg` the error fails the sample, which a resumed run retries."""
        messages = judge_messages(judge_question(question), answer1, answer2, boolq=is_boolq(question))
        request = ModelRequest(messages=[ChatMessage(role=m["role"], content=m["content"]) for m in messages],
                               config=GenerateConfig(**JUDGE_SETTINGS),
                               metadata={"question_id": question.id, "family": question.family, "judge": pair})
        step: dict[str, Any] = {"step": "judge", "pair": pair, "judge": judge.spec, "prompt": messages[1]["content"],
                                "request_hash": request_hash(request)}
        try:
            completion = await judge.client.generate(request)
        except ModelConfigError:
            raise
        except ModelError as exc:
            if protocol != "seed":
                raise
            return None, {**step, "llm_output": "ERROR", "result": None, "error": f"{type(exc).__name__}: {exc}"}
        result = judge_score(completion.text)
        return int(result), {**step, "llm_output": completion.text, "result": result,
                             "prompt_tokens": completion.usage.prompt_tokens,
                             "completion_tokens": completion.usage.completion_tokens,
                             "latency_s": completion.latency_s, "cached": completion.cached}

    # --- the seed's result files ---------------------------------------------------------------------------

    def seed_result(self, question: Question, record: Any) -> tuple[str, dict[str, Any]] | None:
        """The model's predictions as OpenCompass writes them, which is what the seed's evaluator reads
        (`$MODEL_OUTPUT_BASE/<dataset lower>/<run>/predictions/<model>/<dataset lower>.json`, evaluator.py:47-53:
        `{origin_prompt, prediction, gold}` per sample, the question recovered from `origin_prompt`). The run
        folder is named `chronokg`. Under `OURS` (the side file, not the seed's record): its chronokg id, sample,
        whether it is time-sensitive, the up-to-date answer, fields and the judge's records (`{prompt,
        llm_output, result}` per pair, the seed's `results_full.pkl` entries)."""
        m = question.metadata
        dataset = str(m.get("dataset"))
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", record.model)
        judged = {s["pair"]: {"question": judge_question(question), "prompt": s.get("prompt"),
                              "llm_output": s.get("llm_output"), "result": s.get("result")}
                  for s in record.steps if s.get("step") == "judge"}
        found = up_to_date(question)
        return f"{dataset.lower()}/chronokg/predictions/{slug}/{dataset.lower()}.json", {
            "origin_prompt": [{"role": "HUMAN", "prompt": question.input}], "prediction": record.output,
            "gold": m.get("gold_text"),
            OURS: {"chronokg_ids": [question.id], "sample": record.sample, "time_sensitive": m.get("time_sensitive"),
                   "search_answer": found[0].text if found else None, "fields": record.fields, "judge": judged}}

    def seed_file(self, name: str, records: list[dict[str, Any]]) -> Any:
        """OpenCompass prediction files are JSON objects keyed by the sample's position ("0", "1", ...)."""
        return {str(i): r for i, r in enumerate(records)}


PROFILE = BenchAgeProfile()
