"""Rows of the TempoMed seed's probe file (`generated_questions.jsonl`, `P/heatmap_exp/pubmed_inspect_questions.py`
`build_matrix_questions`), kept apart from the family so `tempomed.py` stays one module's worth."""

from __future__ import annotations

from typing import Any

from chronokg.bench.family import OURS
from chronokg.bench.question import Question


def _pmid(value: Any) -> Any:
    """A PMID as the seed's `GuidelinePaper.pmid` holds it (`Optional[int]`, `build_year_states`)."""
    return int(value) if isinstance(value, str) and value.isdigit() else value


def probe_row(q: Question, idx: int, question: str) -> dict[str, Any]:
    """One row of the seed's `generated_questions.jsonl` (`pubmed_inspect_questions.py` `build_matrix_questions`),
    in its key order and field set; the fields the store cannot know (`experiment_index`, the PMCIDs, the target
    paper's title, role and status: see docs/benchmarks.md) are `None`, so a reader of the seed's rows finds every
    key it expects. `target_year` is the statement's paper year, as the seed's
    (`statement_entry["target_year"]`), not the probed year (`question_target_year`). The explanation is the
    sentence `build_answer_payload` writes; the seed appends its generator's explanation, which chronokg has not.
    `question`: the probe's question text inside its prompt."""
    m = q.metadata
    pmid = _pmid(m.get("statement_guideline_pmid"))
    year, latest = m.get("question_target_year"), m.get("latest_guideline_year")
    if q.target == "C":
        sentence = f"For year {year}, there is no guideline available on or before that year, so Choice_C is correct."
    else:
        agrees = "agrees" if q.target == "A" else "does not agree"
        origin = f"{m.get('statement_source')} guideline ({m.get('statement_guideline_year')})"
        sentence = (f"For year {year}, the latest available guideline is from {latest}, and it {agrees} with the "
                    f"statement drawn from the {origin}, so Choice_{q.target} is correct.")
    return {
        "idx": idx, "experiment_index": None, "current_pmcid": None, "prior_pmcid": None,
        "pair_id": m.get("pair_id"), "difference_idx": m.get("difference_idx"), "topic": m.get("topic"),
        "organization": m.get("organization"), "clinical_focus": m.get("clinical_focus"),
        "target_pmcid": None, "target_title": None, "target_year": m.get("statement_guideline_year"),
        "target_role": None, "target_status": None, "target_pmid": pmid,
        "statement_source": m.get("statement_source"), "statement_guideline_year": m.get("statement_guideline_year"),
        "statement_guideline_pmid": pmid, "statement_text": m.get("statement_text"),
        "question_target_year": year, "latest_guideline_year": latest,
        "latest_guideline_pmid": _pmid(m.get("latest_guideline_pmid")),
        "recommendation_source": m.get("recommendation_source"), "available": True, "Question": question,
        "Answer": {"Choice_A": "Yes", "Choice_B": "No", "Choice_C": "I do not know", "Correct": q.target,
                   "Explanation": sentence},
        OURS: {"chronokg_ids": [q.id]},
    }
