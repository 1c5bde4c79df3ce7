"""ConflictMedQA (DriftMed): how its scenarios are asked, extracted, followed up and scored.

Seed: the authors' `src/evaluation/predict_scenarios.py` (GitHub `wwyi1828/ConflictMed` at f9a08dd; no licence
file, so it is read and cited, never copied). One user message `f"{scenario}\\n\\n{task_prompt}"` (the question's
input; :133), no system prompt, temperature 0.1, top_p 0.9, max_tokens 200 (:135-142); `llm_api.py:19` strips
the reply. "YES" anywhere in the upper-cased reply is YES, else "NO" anywhere is NO (:144-148: substrings, so
"CANNOT" reads NO and "EYES" YES); else a second call asks the same model the clarification prompt (:16-34,
temperature 0.1, top_p 0.9, max_tokens 50), whose reply is YES when it contains "YES", else NO: the seed never
leaves a scenario unanswered. Under `--protocol chronokg` both replies are read by `fixed_label` (whole words),
and a reply that still names neither is INVALID instead of NO. docs/metrics/conflictmedqa.md lists every
difference.

The retrieval arm (`rag_query`, `rag_input`, `rag_request`, `knowledge_base`) builds the seed's RAG prompt
(:101-115) from passages a retriever found; choosing them (all-MiniLM-L6-v2, top 2) is the runner's job.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from chronokg.bench.families.conflictmedqa import FACTORS, factor
from chronokg.bench.families.conflictmedqa_prompts import fill
from chronokg.bench.family import OURS
from chronokg.bench.question import Question
from chronokg.errors import InputError
from chronokg.eval.extract import INVALID
from chronokg.eval.profile import Outcome, Profile, request_hash
from chronokg.models import ChatMessage, Completion, GenerateConfig, ModelClient, ModelRequest

YES, NO = "YES", "NO"
FAMILY = "conflictmedqa"
UP_TO_DATE, OUTDATED = "up_to_date", "outdated"
SEED_FILE = {UP_TO_DATE: "correct", OUTDATED: "wrong"}  # the seed's `<version>_scenarios.json` inputs


# --- extraction ------------------------------------------------------------------------------------------------


def seed_label(text: str | None) -> str:
    """predict_scenarios.py:144-151: "YES" anywhere in the upper-cased reply, else "NO" anywhere, else INVALID
    (where the seed asks its clarification prompt)."""
    upper = (text or "").upper()
    if "YES" in upper:
        return YES
    if "NO" in upper:
        return NO
    return INVALID


def seed_clarified(text: str | None) -> str:
    """`clarify_prediction` (:34): YES when the clarification reply contains "YES" (any case), else NO."""
    return YES if "YES" in (text or "").upper() else NO


_MARKED = re.compile(r"\[\s*(yes|no)\s*\]|\*\*\s*(yes|no)\s*\*\*|\banswer\s*(?:is)?\s*:?\s*[\[\*\"']*\s*(yes|no)\b",
                     re.IGNORECASE)
_LEAD = re.compile(r"^[\s\*\[\(\"'`_#>:\-]*(yes|no)\b", re.IGNORECASE)
_CAPS = re.compile(r"\b(YES|NO)\b")


def fixed_label(text: str | None) -> str:
    """chronokg's rule: whole words only. 1. the labels written as asked (`[YES]`, `**No**`, `Answer: yes`): exactly
    one distinct label wins, both is INVALID; 2. a reply that starts with yes or no; 3. exactly one distinct
    standalone capitalised YES/NO; else INVALID. So "CANNOT", "EYES", "no evidence" name nothing."""
    if not text or not text.strip():
        return INVALID
    marked = {next(g for g in m.groups() if g).upper() for m in _MARKED.finditer(text)}
    if len(marked) == 1:
        return marked.pop()
    if marked:
        return INVALID
    lead = _LEAD.match(text)
    if lead:
        return lead.group(1).upper()
    caps = set(_CAPS.findall(text))
    return caps.pop() if len(caps) == 1 else INVALID


# --- the profile -----------------------------------------------------------------------------------------------


def _seed(protocol: str) -> bool:
    return protocol == "seed"


def _sum_usage(completions: Sequence[Completion]) -> tuple[int, int]:
    return (sum(c.usage.prompt_tokens for c in completions), sum(c.usage.completion_tokens for c in completions))


class ConflictMedQAProfile(Profile):
    family = FAMILY

    def config(self, question: Question, protocol: str, sample: int) -> GenerateConfig:
        """The seed's settings under both protocols (predict_scenarios.py:135-142; README §4.2)."""
        return GenerateConfig(temperature=0.1, top_p=0.9, max_tokens=200)

    def clarify_config(self) -> GenerateConfig:
        return GenerateConfig(temperature=0.1, top_p=0.9, max_tokens=50)  # predict_scenarios.py:26-33

    def clarify_request(self, question: Question, protocol: str, sample: int, reply: str) -> ModelRequest:
        """The follow-up: the seed's clarification prompt around the first reply (stripped, as `call_llm` returns
        it), one user message, nothing of the scenario."""
        prompt = fill("CLARIFY_CODE", original_response=reply.strip())
        return ModelRequest(messages=[ChatMessage(role="user", content=prompt)], config=self.clarify_config(),
                            epoch=sample, metadata={"question_id": question.id, "family": question.family,
                                                    "step": "clarify"})

    def extract(self, question: Question, output: str, protocol: str) -> str:
        """The first reply's label, or INVALID where the seed would ask its clarification prompt. (Outputs scored
        from elsewhere, `chronokg eval score`, cannot be followed up: they keep INVALID.)"""
        return (seed_label if _seed(protocol) else fixed_label)(output)

    def clarified(self, output: str, protocol: str) -> str:
        return (seed_clarified if _seed(protocol) else fixed_label)(output)

    async def answer(self, client: ModelClient, question: Question, protocol: str, sample: int) -> Outcome:
        request = self.request(question, protocol, sample)
        start = time.perf_counter()
        first = await client.generate(request)
        elapsed = time.perf_counter() - start
        label = self.extract(question, first.text, protocol)
        completions = [first]
        steps: list[dict[str, Any]] = []
        if label == INVALID:
            follow = self.clarify_request(question, protocol, sample, first.text)
            t0 = time.perf_counter()
            second = await client.generate(follow)
            label = self.clarified(second.text, protocol)
            completions.append(second)
            steps.append({"step": "clarify", "request_hash": request_hash(follow), "output": second.text,
                          "answer": label, "prompt_tokens": second.usage.prompt_tokens,
                          "completion_tokens": second.usage.completion_tokens,
                          "latency_s": second.latency_s or (time.perf_counter() - t0), "cached": second.cached})
        correct, score, fields = self.score(question, label, protocol)
        fields["clarified"] = bool(steps)
        prompt_tokens, completion_tokens = _sum_usage(completions)
        return Outcome(output=first.text, answer=label, correct=correct, score=score, fields=fields, steps=steps,
                       prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                       latency_s=sum(c.latency_s for c in completions) or elapsed,
                       retries=sum(c.retries for c in completions), cached=all(c.cached for c in completions),
                       request_hash=request_hash(request))

    def score(self, question: Question, answer: str | None, protocol: str) -> tuple[bool | None, float | None,
                                                                                   dict[str, Any]]:
        """Correct = the paper's gold (YES for the up-to-date scenario, NO for the outdated one); the fields are the
        metrics' slices (factor, change category, disease group) and the IKCR pair (concept x factor)."""
        m = question.metadata
        correct = answer is not None and answer == question.target
        fields = {"version": m.get("version"), "factor": m.get("factor"), "change_category": m.get("change_category"),
                  "disease_group": m.get("disease_group"), "ikcr_pair": m.get("ikcr_pair"),
                  "concept": m.get("concept"), "source": m.get("source"), "endorsed": answer == YES,
                  "prediction": answer, "protocol": protocol}
        return correct, float(correct), fields

    def render(self, question: Question, label: str) -> str:
        """The answer as the task prompt asks for it ("[YES]"), which both extractors read."""
        return f"[{label}]"

    def chosen_fact(self, question: Question, answer: str | None) -> str | None:
        """A YES endorses the recommendation the scenario follows (the question's facts are current, prior)."""
        if answer != YES or len(question.facts) != 2:
            return None
        return question.facts[0 if question.metadata.get("version") == UP_TO_DATE else 1]

    # --- the seed's result files --------------------------------------------------------------------------------

    def seed_result(self, question: Question, record: Any) -> tuple[str, dict[str, Any]] | None:
        """One row of the seed's prediction CSV (`id` is filled by `seed_results`, which orders the rows)."""
        m = question.metadata
        name = SEED_FILE.get(str(m.get("version")))
        if name is None:
            return None
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", record.model)
        suffix = f"_sample{record.sample}" if record.sample else ""
        return f"{slug}/{FAMILY}_{name}_predictions{suffix}.csv", {
            "id": None, "bias_type": m.get("factor_name"), "scenario": m.get("scenario"), "prediction": record.answer,
            OURS: {"chronokg_ids": [question.id]}}

    def seed_results(self, items: Iterable[tuple[Question, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
        """The seed's `<input>_predictions.csv` per version and model (predict_scenarios.py:61-65, :123-166):
        rows factor by factor in the seed's order, then pair by pair (the order of the family's exported
        `conflictmedqa_<version>_scenarios.json`, which the seed reads), `id` running from 1 in each file."""
        rank = {f.key: n for n, f in enumerate(FACTORS)}
        rows = []
        for question, record in items:
            result = self.seed_result(question, record)
            if result is not None:
                key = (result[0], rank.get(str(question.metadata.get("factor")), len(rank)),
                       question.metadata.get("pair_index", 0), question.id)
                rows.append((key, result))
        counters: dict[str, int] = {}
        for _, (name, row) in sorted(rows, key=lambda r: r[0]):
            counters[name] = counters.get(name, 0) + 1
            yield name, {**row, "id": counters[name]}

    def seed_question_ids(self, source: Path, rows: Sequence[Mapping[str, Any]],
                          questions: Sequence[Question]) -> list[str | None]:
        """Rows of a prediction CSV the seed wrote for the family's exported scenario files (`id`, `bias_type`,
        `scenario`, `prediction`): its `id` numbers rows of that file only, so a row is found by its scenario
        text and factor, within the version the file name says (`…correct…` / `…wrong…`, as the seed names
        its output after its input); a row that matches no question, or several, stays None."""
        name = source.name.lower()
        version = UP_TO_DATE if "correct" in name else OUTDATED if "wrong" in name else None
        index: dict[tuple[str, str], list[str]] = {}
        for q in questions:
            m = q.metadata
            if version is None or m.get("version") == version:
                index.setdefault((str(m.get("factor_name")), str(m.get("scenario"))), []).append(q.id)
        found = [index.get((str(r.get("bias_type")), str(r.get("scenario"))), []) for r in rows]
        return [ids[0] if len(ids) == 1 else None for ids in found]

    # --- the retrieval arm ------------------------------------------------------------------------------------

    def rag_query(self, question: Question) -> str:
        """What the seed embeds to retrieve: the whole scenario, without the task prompt (:92-95)."""
        return str(question.metadata.get("scenario") or "")

    def rag_input(self, question: Question, passages: Sequence[tuple[Any, str]]) -> str:
        """The user message with retrieved `(id, advice)` passages, best first: the seed's prefix (`rag_code.txt`)
        with `Source {id}: {advice}` lines, the scenario, then "\\n\\n" and the question's own task prompt."""
        scenario = self.rag_query(question)
        if not scenario or not question.input.startswith(scenario + "\n\n"):
            raise InputError("questions", question.id, "the input does not start with the question's scenario "
                                                       "(metadata.scenario): nowhere to place retrieved passages")
        task = question.input[len(scenario) + 2:]
        context = "\n".join(f"Source {pid}: {text}" for pid, text in passages)
        return fill("RAG_CODE", context_text=context, original_scenario=scenario) + "\n\n" + task

    def rag_request(self, question: Question, protocol: str, sample: int,
                    passages: Sequence[tuple[Any, str]]) -> ModelRequest:
        """`request` with the retrieved passages in the user message (the same settings)."""
        base = self.request(question, protocol, sample)
        return base.model_copy(update={"messages": [ChatMessage(role="user", content=self.rag_input(question,
                                                                                                   passages))]})


def knowledge_base(questions: Iterable[Question]) -> list[tuple[int, str]]:
    """The seed's knowledge base: the up-to-date recommendations of the questions' pairs, each once, ids 1.. in
    pair order (the family's exported `advice_kb.csv`; the paper's "195 up-to-date clinical advice")."""
    seen: dict[Any, str] = {}
    ups = [q for q in questions if q.metadata.get("version") == UP_TO_DATE]
    for q in sorted(ups, key=lambda q: (q.metadata.get("pair_index", 0), q.id)):
        if q.metadata.get("scenario_source") != "released":
            seen.setdefault(q.metadata.get("pair"), str(q.metadata.get("advice")))
    return list(enumerate(seen.values(), start=1))


def factor_name(key: str | None) -> str | None:
    """The seed's `bias_type` of a factor key (None stays None)."""
    return factor(key).seed if key else None


PROFILE = ConflictMedQAProfile()
