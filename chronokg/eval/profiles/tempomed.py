"""TempoMed-Bench: how its MCQs and year-sweep probes are asked, extracted and scored.

Seed (GuanZihan/TempoMed-Bench, MIT): generation `P/utils/model_utils.py:59-63` (vLLM: temperature 0,
top_p 0.9, max_tokens 4096; the system prompt is part of each question); MCQ extraction
`pubmed_evaluation_5_option.py:539-565`, option groups by original label `:392-414`; probe extraction
`heatmap_exp/pubmed_inspect_questions.py:1142-1155`. Under `--protocol chronokg` the fixed extractors of
`chronokg.eval.extract` are used.
"""

from __future__ import annotations

from typing import Any

from chronokg.bench.question import Question
from chronokg.eval import extract
from chronokg.eval.profile import Profile
from chronokg.models import GenerateConfig

GROUPS = {"A": "current_guideline", "B": "prior_guideline", "C": "interference", "D": "interference",
          "E": "unknown"}


def is_probe(question: Question) -> bool:
    return question.variant.startswith("probe/")


def when_correct(question: Question, answer: str | None) -> str:
    """Three-way (plus "later"): the chosen option's recommendation was in force on the target date (correct),
    only before it (stale), only after it (later), or never in this decision's history (never). Read from the
    intervals in the question's answer-key evidence (`decision-at`)."""
    chosen = next((c.text for c in question.choices if c.label == answer), None)
    day = question.target_date
    for row in question.answer_key.evidence:
        if row.get("kind") != "recommendation" or row.get("text") != chosen or day is None:
            continue
        start, end = row.get("valid_from"), row.get("valid_to")
        iso = day.isoformat()
        if (start is None or start <= iso) and (end is None or end > iso):
            return "correct"
        if end is not None and end <= iso:
            return "stale"
        return "later"
    return "never"


class TempoMedProfile(Profile):
    family = "tempomed"

    def config(self, question: Question, protocol: str, sample: int) -> GenerateConfig:
        return GenerateConfig(temperature=0.0, top_p=0.9, max_tokens=4096)

    def extract(self, question: Question, output: str, protocol: str) -> str | None:
        if is_probe(question):
            return (extract.tempomed_probe_seed if protocol == "seed" else extract.tempomed_probe_fixed)(output)
        labels = [c.label for c in question.choices]
        rule = extract.tempomed_mcq_seed if protocol == "seed" else extract.tempomed_mcq_fixed
        return rule(output, labels)

    def score(self, question: Question, answer: str | None, protocol: str) -> tuple[bool | None, float | None,
                                                                                   dict[str, Any]]:
        m = question.metadata
        correct = answer is not None and answer == question.target
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
                      "status": when_correct(question, answer),
                      "pair": next((r.split(":", 1)[1] for r in question.derived_from if r.startswith("ChangePair:")),
                                   None)}
        return correct, float(correct), fields

    def chosen_fact(self, question: Question, answer: str | None) -> str | None:
        """Option A states the current recommendation, B the prior one (the question's facts, in that order)."""
        if is_probe(question) or answer is None:
            return None
        original = (question.metadata.get("display_to_original_option") or {}).get(answer)
        index = {"A": 0, "B": 1}.get(original or "")
        return question.facts[index] if index is not None and index < len(question.facts) else None

    def render(self, question: Question, label: str) -> str:
        if is_probe(question):  # the seed's probe extractor reads C only from a first line that is "C"
            return f"{label}\n##Explanation: reference baseline"
        return f"##Explanation: reference baseline\n##Answer: {label}"


PROFILE = TempoMedProfile()
