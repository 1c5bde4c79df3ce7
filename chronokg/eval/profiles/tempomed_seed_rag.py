"""TempoMed Table 3 as the seed's RAG evaluation scores and files it (`P/rag_evaluation/main.py`).

Seed: GuanZihan/TempoMed-Bench at commit 74b6f2246dd44df0612e3e1b24d56f6837d6428c (MIT). One seed run is one
model and one scope (`original_current_guideline`, or `counterpart_prior_guideline` with `--counterpart`); it
writes `rag_evaluation_results.json` (one row per item, `evaluate_one_item`'s keys in its order),
`rag_evaluation_summary.json` (`summarize_results`) and `rag_evaluation_summary.csv` (`write_outputs`). chronokg
writes the same three files per model and scope under `rag_evaluation/<model>/<scope>/`. The reader is
`chronokg.eval.extract.tempomed_rag_seed`; `prediction_group` groups the label itself (the items keep the
released A-D order, so A is the current recommendation and B the prior one in both scopes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from chronokg.bench.family import OURS
from chronokg.bench.question import Question
from chronokg.eval.extract import INVALID, UNKNOWN

GROUP_ORDER = ("current_guideline", "prior_guideline", "irrelevant", "unknown", "invalid")
GROUPS = {"A": "current_guideline", "B": "prior_guideline", "C": "irrelevant", "D": "irrelevant",
          UNKNOWN: "unknown"}
RESULTS_JSON = "rag_evaluation_results.json"
SUMMARY_JSON = "rag_evaluation_summary.json"
SUMMARY_CSV = "rag_evaluation_summary.csv"
PREVIEW_CHARS = 10_000  # the seed's `result_preview` (a chronokg log keeps fewer: RESULT_CHARS of the arms)


def temperature(spec: str) -> float:
    """The seed sends `temperature=0 if 'gpt-4' in model else 1` (`run_one_question`), on the model's name."""
    return 0.0 if "gpt-4" in spec else 1.0


def group(answer: str | None) -> str:
    """`prediction_group`: A current, B prior, C/D irrelevant, UNKNOWN unknown, anything else invalid."""
    return GROUPS.get(answer or "", "invalid")


def fields(question: Question, answer: str | None, protocol: str) -> dict[str, Any]:
    """What the Table 3 metrics group by."""
    m = question.metadata
    return {"kind": "table3", "target": m.get("target"), "scope": m.get("evaluation_scope"),
            "prediction": answer, "group": group(answer), "record": m.get("idx"),
            "year_current": m.get("year_current"), "year_prior": m.get("year_previous"),
            "target_year": m.get("target_guideline_year"), "protocol": protocol,
            "pair": next((r.split(":", 1)[1] for r in question.derived_from if r.startswith("ChangePair:")), None)}


def _trace(steps: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The seed's `tool_trace` from the agent arm's logged calls (none under --rag or no arm); a failed request's
    trace is its error alone, as `evaluate_one_item` writes it."""
    return [{"name": s.get("tool"), "arguments": s.get("arguments"),
             "result_preview": str(s.get("result", ""))[:PREVIEW_CHARS]} if s.get("step") == "tool_call"
            else {"error": s.get("error")} for s in steps if s.get("step") in ("tool_call", "request_error")]


def result_row(question: Question, record: Any, slug: str) -> tuple[str, dict[str, Any]]:
    """(file, row) of one sample: `evaluate_one_item`'s dictionary."""
    m = question.metadata
    prediction = record.answer or INVALID
    return f"rag_evaluation/{slug}/{m.get('evaluation_scope')}/{RESULTS_JSON}", {
        "idx": m.get("idx"), "PMID_current": m.get("PMID_current"), "PMID_prior": m.get("PMID_prior"),
        "Year_current": m.get("year_current"), "Year_prior": m.get("year_previous"),
        "question_variant": m.get("question_variant"), "target_guideline_year": m.get("target_guideline_year"),
        "opposite_original_option": m.get("opposite_original_option"), "question": m.get("question"),
        "gold": question.target, "prediction": prediction, "prediction_group": group(prediction),
        "correct": prediction == question.target, "model_answer": record.output, "tool_trace": _trace(record.steps),
        OURS: {"chronokg_ids": [question.id]}}


def summary(rows: Sequence[dict[str, Any]], model: str, scope: str) -> dict[str, Any]:
    """`summarize_results` of one run's result rows (accuracy and shares 0.0 for no rows)."""
    total = len(rows)
    correct = sum(1 for r in rows if r.get("correct"))
    groups = Counter(r.get("prediction_group", "invalid") for r in rows)
    return {
        "model": model, "evaluation_scope": scope, "total_questions": total, "correct": correct,
        "accuracy": correct / total if total else 0.0,
        "prediction_group_counts": {g: groups.get(g, 0) for g in GROUP_ORDER},
        "prediction_group_percentages": {g: (groups.get(g, 0) / total if total else 0.0) for g in GROUP_ORDER},
        "prediction_label_counts": dict(Counter(r.get("prediction", INVALID) for r in rows)),
        "question_variant_counts": dict(Counter(r.get("question_variant", "current_guideline") for r in rows)),
    }


def summary_files(results: str, model: str, rows: Sequence[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The summary JSON (one record) and CSV rows (`metric, count, percentage`) beside a results file."""
    folder = results.removesuffix(RESULTS_JSON)
    scope = folder.rstrip("/").rsplit("/", 1)[-1]
    s = summary(rows, model, scope)
    yield folder + SUMMARY_JSON, s
    yield folder + SUMMARY_CSV, {"metric": "accuracy", "count": s["correct"], "percentage": f"{s['accuracy']:.6f}"}
    for g in GROUP_ORDER:
        yield folder + SUMMARY_CSV, {"metric": g, "count": s["prediction_group_counts"][g],
                                     "percentage": f"{s['prediction_group_percentages'][g]:.6f}"}
