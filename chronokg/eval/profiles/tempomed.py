"""TempoMed-Bench: how its MCQs and year-sweep probes are asked, extracted and scored.

Seed (GuanZihan/TempoMed-Bench, MIT): generation `P/utils/model_utils.py:59-63` (vLLM: temperature 0,
top_p 0.9, max_tokens 4096; the system prompt is part of each question); MCQ extraction
`pubmed_evaluation_5_option.py:539-565`, option groups by original label `:392-414`; probe extraction
`heatmap_exp/pubmed_inspect_questions.py:1142-1155`. Table 3's items (`generate tempomed --table3`) as
`P/rag_evaluation/main.py` asks and scores them: only a temperature is sent (0 when the model's name holds
"gpt-4", else 1), `extract_prediction` reads A-D or UNKNOWN, `prediction_group` groups the label, and its result
files are reproduced (`tempomed_seed_rag`). Under `--protocol chronokg` the fixed extractors of
`chronokg.eval.extract` are used (for Table 3's items: A-D or UNKNOWN after a last `##Answer:`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from chronokg.bench.families.tempomed import question_of
from chronokg.bench.families.tempomed_probe_rows import probe_row
from chronokg.bench.family import OURS
from chronokg.bench.question import Question
from chronokg.eval import extract
from chronokg.eval.profile import Outcome, Profile, request_hash
from chronokg.eval.profiles import tempomed_seed_rag as rag
from chronokg.models import GenerateConfig, ModelClient

GROUPS = {"A": "current_guideline", "B": "prior_guideline", "C": "interference", "D": "interference",
          "E": "unknown"}


def is_probe(question: Question) -> bool:
    return question.variant.startswith("probe/")


def is_table3(question: Question) -> bool:
    return question.variant.startswith("table3/")


def version_of(question: Question, label: str | None) -> dict[str, Any] | None:
    """The recommendation the option `label` states, with its valid time, from the question's answer-key
    evidence (`decision-at`); None for a distractor, the abstain option or no answer."""
    chosen = next((c.text for c in question.choices if c.label == label), None)
    if chosen is None:
        return None
    return next((row for row in question.answer_key.evidence
                 if row.get("kind") == "recommendation" and row.get("text") == chosen), None)


def when_correct(question: Question, answer: str | None) -> str:
    """Three-way (plus "later"): the chosen option's recommendation was in force on the target date (correct),
    only before it (stale), only after it (later), or never in this decision's history (never)."""
    row = version_of(question, answer)
    day = question.target_date
    if row is None or day is None:
        return "never"
    start, end = row.get("valid_from"), row.get("valid_to")
    iso = day.isoformat()
    if (start is None or start <= iso) and (end is None or end > iso):
        return "correct"
    if end is not None and end <= iso:
        return "stale"
    return "later"


def valid_times(question: Question, answer: str | None) -> dict[str, Any]:
    """What the knowledge-cutoff split reads (`chronokg.metrics.cutoff`): when the gold answer's recommendation
    became valid, and the valid time of the chosen one (None: no recommendation chosen). An item whose gold the
    graph disagrees with (`key_differs_from_graph`: the seed keys a same-year pair's historical item B while the
    update is in force all that year) has no dated gold: a miss there tells nothing of when a model's knowledge
    ends (the oracle, which answers from the graph, misses every one of them)."""
    gold, chosen = version_of(question, question.target), version_of(question, answer)
    if "key_differs_from_graph" in (question.metadata.get("quirks") or []):
        gold = None
    return {"gold_from": (gold or {}).get("valid_from"),
            "chosen_from": (chosen or {}).get("valid_from"), "chosen_to": (chosen or {}).get("valid_to")}


class TempoMedProfile(Profile):
    family = "tempomed"
    # an item of `--format seed`'s items.json, copied into the seed's result records (`run_choice_mode`)
    seed_keys = ("idx", "shuffle_method", "question_variant")
    dated_gold = True  # its MCQs' options are versions of one recommendation, each with its valid time

    def config(self, question: Question, protocol: str, sample: int) -> GenerateConfig:
        if is_table3(question) and protocol == "seed":  # `answer` sets the seed's temperature for the model
            return GenerateConfig(temperature=0.0)
        return GenerateConfig(temperature=0.0, top_p=0.9, max_tokens=4096)

    async def answer(self, client: ModelClient, question: Question, protocol: str, sample: int) -> Outcome:
        if not (is_table3(question) and protocol == "seed"):
            return await super().answer(client, question, protocol, sample)
        request = self.request(question, protocol, sample).with_config(temperature=rag.temperature(client.spec))
        start = time.perf_counter()
        completion = await client.generate(request)
        return self.outcome(question, protocol, completion, time.perf_counter() - start,
                            request_hash=request_hash(request))

    def failed(self, question: Question, protocol: str, error: str) -> Outcome | None:
        """Table 3 under `--protocol seed`: the seed's `evaluate_one_item` catches a failed request and scores it,
        its `model_answer` "INVALID: <exception>", its `tool_trace` the error, its prediction INVALID: in the
        denominator, wrong. (The seed's reader would read a lone letter or UNKNOWN in the exception's text; this
        counts INVALID whatever the error says, as the seed's exceptions do.) Other items: a failed sample."""
        if not (is_table3(question) and protocol == "seed"):
            return None
        correct, score, fields = self.score(question, extract.INVALID, protocol)
        return Outcome(output=f"INVALID: {error}", answer=extract.INVALID, correct=correct, score=score,
                       fields={**fields, "request_error": error},
                       steps=[{"step": "request_error", "error": error}])

    def extract(self, question: Question, output: str, protocol: str) -> str | None:
        if is_table3(question):
            return extract.tempomed_rag_seed(output) if protocol == "seed" else \
                extract.tempomed_mcq_fixed(output, (*extract.RAG_LABELS, extract.UNKNOWN))
        if is_probe(question):
            return (extract.tempomed_probe_seed if protocol == "seed" else extract.tempomed_probe_fixed)(output)
        labels = [c.label for c in question.choices]
        rule = extract.tempomed_mcq_seed if protocol == "seed" else extract.tempomed_mcq_fixed
        return rule(output, labels)

    def score(self, question: Question, answer: str | None, protocol: str) -> tuple[bool | None, float | None,
                                                                                   dict[str, Any]]:
        m = question.metadata
        correct = answer is not None and answer == question.target
        if is_table3(question):
            return correct, float(correct), rag.fields(question, answer, protocol)
        if is_probe(question):
            fields = {"kind": "probe", "pair": m.get("pair_id"), "statement_source": m.get("statement_source"),
                      "statement_year": m.get("statement_guideline_year"), "target_year": m.get("target_year"),
                      "prediction": answer, "protocol": protocol}
        else:
            original = (m.get("display_to_original_option") or {}).get(answer or "")
            fields = {"kind": "mcq", "target": m.get("target"), "year_current": m.get("year_current"),
                      "year_prior": m.get("year_previous"), "target_year": m.get("target_guideline_year"),
                      "perturbation": m.get("shuffle_method"), "record": m.get("idx"),
                      "original": original, "group": GROUPS.get(original or "", "invalid"),
                      "status": when_correct(question, answer), **valid_times(question, answer),
                      "pair": next((r.split(":", 1)[1] for r in question.derived_from if r.startswith("ChangePair:")),
                                   None)}
        return correct, float(correct), fields

    def context_fields(self, question: Question, given: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Under `--rag` (Table 3): the mode, and whether the passages given hold the item's own guideline
        version (`target_passage`) and the other version of its change pair (`counterpart_passage`). Under
        `--agent tools`, for Table 3's items: `agent` (the seed's own arm is a tool loop)."""
        step = next((s for s in given if s.get("step") == "retrieval"), None)
        agent = {"agent": "tools"} if is_table3(question) and any(s.get("step") == "agent_answer" for s in given) \
            else {}
        if step is None or is_probe(question) or len(question.facts) < 2:
            return agent
        facts = {str(p.get("id", "")).split("#", 1)[0] for p in step.get("passages") or []}
        own, other = (question.facts[0], question.facts[1])
        if question.metadata.get("target") == "historical":
            own, other = other, own
        return {"rag": step.get("mode"), "target_passage": own in facts, "counterpart_passage": other in facts,
                **agent}

    def chosen_fact(self, question: Question, answer: str | None) -> str | None:
        """Option A states the current recommendation, B the prior one (the question's facts, in that order)."""
        if is_probe(question) or answer is None:
            return None
        original = (question.metadata.get("display_to_original_option") or {}).get(answer)
        index = {"A": 0, "B": 1}.get(original or "")
        return question.facts[index] if index is not None and index < len(question.facts) else None

    def seed_result(self, question: Question, record: Any) -> tuple[str, dict[str, Any]] | None:
        """The seed's result records: `evaluation_results_5_option_<model>_augmented.json` (MCQs, the keys of
        `pubmed_evaluation_5_option.py:339-408`) and `<model>/evaluation_results.json` (probes)."""
        m = question.metadata
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", record.model)
        if is_table3(question):
            return rag.result_row(question, record, slug)
        if is_probe(question):  # `evaluate_questions`: the generated row, then the model's fields
            row = probe_row(question, 0, question_of(question))  # `idx` numbered by `seed_results`
            ours = row.pop(OURS)
            backend, _, name = record.model.partition("/")
            return f"{slug}/evaluation_results.json", {
                **row, "model_spec": record.model, "model_backend": backend, "model_name": name or backend,
                "prompt": question.input, "model_answer": record.output, "prediction": record.answer,
                "correct": record.answer == question.target, OURS: ours}
        original = (m.get("display_to_original_option") or {}).get(record.answer or "")
        return f"evaluation_results_{len(question.choices)}_option_{slug}_augmented.json", {
            "year_previous": m.get("year_previous"), "year_current": m.get("year_current"),
            "target_guideline_year": m.get("target_guideline_year"), "question_variant": m.get("question_variant"),
            "question": question_of(question),
            "choices": {c.label: c.text for c in question.choices}, "option_order": m.get("option_order"),
            "gold": question.target, "shuffle_method": m.get("shuffle_method"),
            "variant_sub_idx": m.get("variant_sub_idx"),
            "display_to_original_option": m.get("display_to_original_option"),
            "original_to_display_option": m.get("original_to_display_option"),
            "current_guideline_option": m.get("current_guideline_option"),
            "prior_guideline_option": m.get("prior_guideline_option"),
            "interference_options": m.get("interference_options"), "unknown_option": m.get("unknown_option"),
            "idx": m.get("idx"), "model_answer": record.output, "prediction": record.answer,
            "prediction_original_option": original, "prediction_group": GROUPS.get(original or "", "invalid"),
            "correct": record.answer == question.target, OURS: {"chronokg_ids": [question.id]}}

    def seed_results(self, items: Iterable[tuple[Question, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
        """`seed_result` of each, probe rows' `idx` numbered 0.. per file in the run's question order (as
        `--format seed` numbers the probe file the run read)."""
        counters: dict[str, int] = {}
        table3: dict[str, tuple[str, list[dict[str, Any]]]] = {}
        for question, record in items:
            result = self.seed_result(question, record)
            if result is None:
                continue
            name, row = result
            if is_probe(question):
                counters[name] = counters.get(name, 0) + 1
                row["idx"] = counters[name] - 1
            if is_table3(question):
                table3.setdefault(name, (record.model, []))[1].append(row)
            yield name, row
        for name, (model, rows) in table3.items():  # then each Table 3 run's summary files, from its results
            yield from rag.summary_files(name, model, rows)

    def seed_file(self, name: str, records: list[dict[str, Any]]) -> Any:
        """The seed's RAG summary is one object; every other file a list of records."""
        return records[0] if name.endswith(rag.SUMMARY_JSON) else records

    def seed_question_ids(self, source: Path, rows: Sequence[Mapping[str, Any]],
                          questions: Sequence[Question]) -> list[str | None]:
        """Probe result rows by the probe's own keys (change pair, statement, year); Table 3's result rows (they
        hold `opposite_original_option`) by `idx` and `question_variant`; item rows as `seed_keys`."""
        keys = ("pair_id", "difference_idx", "statement_source", "question_target_year")
        probes = {tuple(str(q.metadata.get(k)) for k in keys): q.id for q in questions if is_probe(q)}
        table3 = {(str(q.metadata.get("idx")), q.metadata.get("question_variant")): q.id for q in questions
                  if is_table3(q)}
        found = super().seed_question_ids(source, rows, [q for q in questions if not (is_probe(q) or is_table3(q))])
        return [probes.get(tuple(str(r.get(k)) for k in keys)) if "statement_source" in r
                else table3.get((str(r.get("idx")), r.get("question_variant"))) if "opposite_original_option" in r
                else qid for r, qid in zip(rows, found, strict=True)]

    def render(self, question: Question, label: str) -> str:
        if is_probe(question):  # the seed's probe extractor reads C only from a first line that is "C"
            return f"{label}\n##Explanation: reference baseline"
        return f"##Explanation: reference baseline\n##Answer: {label}"


PROFILE = TempoMedProfile()
