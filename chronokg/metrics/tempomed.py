"""TempoMed-Bench metrics, as the seed computes them, plus what no seed measures.

Seed scripts (GuanZihan/TempoMed-Bench, MIT; `P/` = `pubmed_trajectory/`):
- accuracy and option-group shares: the result records' `correct` / `prediction_group`
  (`P/evaluation/pubmed_evaluation_5_option.py:392-425`), INVALID counted wrong, all items in the denominator;
- Table 1: up-to-date-targeted items pooled over the three perturbations, accuracy over valid answers =
  up-to-date / (up-to-date + outdated + distractor)
  (`P/evaluation/pubmed_export_current_targeted_latex_table.py:90-105`);
- accuracy by up-to-date year: years up to the start year merged into one "Pre-" bucket (2010 in the seed's
  command; the bucket includes that year), Wilson 95 % intervals, an unweighted least-squares trend over the
  bucket means clipped to [0, 1], the Mann-Kendall test over the bucket means
  (`P/evaluation/pubmed_plot_current_year_accuracy.py:85-203`);
- historical / up-to-date accuracy ratio (paper abstract; from `pubmed_plot_target_variant_accuracy.py`);
- temporal-consistency patterns of the year-sweep probes (`chronokg.metrics.patterns`).
chronokg's own: the three-way score (correct now / stale / never), a knowledge-cutoff estimate, and
cluster-bootstrap intervals over the source MCQs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from chronokg.eval.cutoff import best_split
from chronokg.eval.log import SampleRecord
from chronokg.eval.profiles import tempomed_seed_rag as seed_rag
from chronokg.metrics import patterns
from chronokg.metrics.spec import MetricSpec, Rows, count_by, counted_by, prediction_match, register
from chronokg.metrics.stats import bootstrap_ci, mann_kendall, ols, wilson

FAMILY = "tempomed"
START_YEAR = 2010  # the seed's `--start_year 2010` (commented command in evaluate_5_option.sh)
GROUP_ORDER = ("current_guideline", "prior_guideline", "interference", "unknown", "invalid")
BASE = prediction_match() + " AND p.family = 'tempomed'"


def _is(kind: str, target: str | None = None) -> Any:
    return lambda s: s.fields.get("kind") == kind and (target is None or s.fields.get("target") == target)


def _rate(correct: float, n: float) -> float | None:
    return correct / n if n else None


# --- accuracy by target ----------------------------------------------------------------------------------


def _accuracy_count(samples: Sequence[SampleRecord]) -> Rows:
    return count_by(samples, ("kind", "target"), lambda s: True)


_accuracy_cypher = counted_by(BASE, ("kind", "target"))


def _accuracy_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    groups: dict[str, Any] = {}
    total = [0, 0]
    for r in rows:
        if r["kind"] not in ("mcq", "probe"):  # Table 3's items are counted by `tempomed.table3_seed`
            continue
        name = r["target"] if r["kind"] == "mcq" else "probe"
        cell = groups.setdefault(name, {"n": 0, "correct": 0})
        cell["n"] += r["n"]
        cell["correct"] += r["correct"]
        if r["kind"] == "mcq":
            total[0] += r["n"]
            total[1] += r["correct"]
    for cell in groups.values():
        cell["accuracy"] = _rate(cell["correct"], cell["n"])
        cell["wilson95"] = list(wilson(cell["correct"], cell["n"]))
    return _rate(total[1], total[0]), groups, {"n_mcq": total[0]}


ACCURACY = register(MetricSpec(
    "tempomed.accuracy", FAMILY, "Accuracy of the MCQ items (INVALID counts wrong), by target; probes apart.",
    True, _accuracy_count, _accuracy_finish, _accuracy_cypher, kind="accuracy"))


# --- option groups and Table 1 ---------------------------------------------------------------------------


def _groups_count(samples: Sequence[SampleRecord]) -> Rows:
    return count_by(samples, ("target", "group"), _is("mcq"))


_groups_cypher = counted_by(BASE + " AND p.f_kind = 'mcq'", ("target", "group"))


def _groups_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    by: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(GROUP_ORDER, 0))
    for r in rows:
        by[r["target"]][r["group"]] += r["n"]
    groups = {}
    for target, counts in by.items():
        n = sum(counts.values())
        groups[target] = {g: counts[g] / n for g in GROUP_ORDER} | {"n": n}
    return None, groups, {}


OPTION_GROUPS = register(MetricSpec(
    "tempomed.option_groups", FAMILY, "Share of answers choosing the up-to-date, outdated, distractor, unknown "
    "option (by its original label) or invalid, by target.", None, _groups_count, _groups_finish, _groups_cypher,
    kind="rate"))


def _table1_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    counts = dict.fromkeys(GROUP_ORDER, 0)
    for r in rows:
        if r["target"] == "up_to_date":
            counts[r["group"]] += r["n"]
    n = sum(counts.values())
    if not n:  # the seed's script refuses a model without up-to-date rows (its table prints N/A)
        return None, {"n": 0}, {}
    valid = counts["current_guideline"] + counts["prior_guideline"] + counts["interference"]
    # `load_current_targeted_summary`: no valid answer (all unknown/invalid) gives 0.0, not N/A
    groups = {"accuracy": counts["current_guideline"] / n,
              "accuracy_valid": counts["current_guideline"] / valid if valid else 0.0,
              **{f"share_{g}": counts[g] / n for g in GROUP_ORDER}, "n": n}
    return groups["accuracy"], groups, {}


TABLE1 = register(MetricSpec(
    "tempomed.table1", FAMILY, "Table 1: up-to-date-targeted items pooled over the perturbations; accuracy, "
    "accuracy over valid answers, option-group shares.", True, _groups_count, _table1_finish, _groups_cypher,
    kind="accuracy"))


# --- accuracy by up-to-date year, trend, Mann-Kendall, cutoff ----------------------------------------------


def _year_count(samples: Sequence[SampleRecord]) -> Rows:
    return count_by(samples, ("year_current",), _is("mcq", "up_to_date"))


_year_cypher = counted_by(BASE + " AND p.f_kind = 'mcq' AND p.f_target = 'up_to_date'", ("year_current",))


def buckets(rows: Rows, start_year: int = START_YEAR) -> list[dict[str, Any]]:
    """The seed's buckets: one `Pre-<start>` bucket for every year <= start (placed first), then single years."""
    pre = {"label": f"Pre-{start_year}", "n": 0, "correct": 0, "year_sum": 0}
    years: dict[int, dict[str, Any]] = {}
    for r in rows:
        y = int(r["year_current"])
        cell = pre if y <= start_year else years.setdefault(y, {"label": str(y), "n": 0, "correct": 0, "year_sum": 0})
        cell["n"] += r["n"]
        cell["correct"] += r["correct"]
        cell["year_sum"] += y * r["n"]
    out = ([pre] if pre["n"] else []) + [years[y] for y in sorted(years)]
    for b in out:
        b["accuracy"] = b["correct"] / b["n"]
        b["wilson95"] = list(wilson(b["correct"], b["n"]))
        b["x"] = b.pop("year_sum") / b["n"]  # the bucket's item-weighted mean year (the seed's regression x)
    return out


def cutoff_estimate(rows: Rows) -> int | None:
    """The year after which up-to-date accuracy drops most (`chronokg.eval.cutoff.best_split` over the rows)."""
    per: dict[int, tuple[int, int]] = {}
    for r in rows:
        n, k = per.get(int(r["year_current"]), (0, 0))
        per[int(r["year_current"])] = (n + r["n"], k + r["correct"])
    return best_split(per)


def _year_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    bs = buckets(rows)
    details: dict[str, Any] = {"start_year": START_YEAR, "cutoff_estimate": cutoff_estimate(rows)}
    if len(bs) >= 2:
        trend = ols([b["x"] for b in bs], [b["accuracy"] for b in bs])
        details["trend"] = {"slope_per_year": trend.slope, "intercept": trend.intercept,
                            "start": trend.at(bs[0]["x"]), "end": trend.at(bs[-1]["x"])}
        mk = mann_kendall([b["accuracy"] for b in bs])
        details["mann_kendall"] = {"s": mk.s, "var_s": mk.var_s, "z": mk.z, "p": mk.p, "trend": mk.trend}
    return None, {b["label"]: {k: v for k, v in b.items() if k != "label"} for b in bs}, details


ACCURACY_BY_YEAR = register(MetricSpec(
    "tempomed.accuracy_by_year", FAMILY, "Up-to-date accuracy by the current version's year (Pre-2010 merged), "
    "Wilson intervals, least-squares trend, Mann-Kendall test, knowledge-cutoff estimate.", True,
    _year_count, _year_finish, _year_cypher, kind="accuracy"))


# --- historical / up-to-date ----------------------------------------------------------------------------------


def _ratio_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    _, groups, _ = _accuracy_finish(rows)
    up = (groups.get("up_to_date") or {}).get("accuracy")
    hist = (groups.get("historical") or {}).get("accuracy")
    ratio = hist / up if up and hist is not None else None
    return ratio, {"up_to_date": up, "historical": hist}, {}


HIST_RATIO = register(MetricSpec(
    "tempomed.historical_ratio", FAMILY, "Historical-targeted accuracy divided by up-to-date accuracy.", True,
    _accuracy_count, _ratio_finish, _accuracy_cypher, kind="score"))


# --- cluster bootstrap interval of the accuracies ------------------------------------------------------------


def _cluster_count(samples: Sequence[SampleRecord]) -> Rows:
    return count_by(samples, ("target", "record"), _is("mcq"))


_cluster_cypher = counted_by(BASE + " AND p.f_kind = 'mcq'", ("target", "record"))


def _cluster_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    groups: dict[str, Any] = {}
    for target in sorted({r["target"] for r in rows}):
        mine = sorted((r for r in rows if r["target"] == target), key=lambda r: str(r["record"]))
        values = [1.0] * sum(r["correct"] for r in mine) + [0.0] * sum(r["n"] - r["correct"] for r in mine)
        clusters = [r["record"] for r in mine for _ in range(r["correct"])] + [
            r["record"] for r in mine for _ in range(r["n"] - r["correct"])]
        lo, hi = bootstrap_ci(values, clusters=clusters, iterations=1000, seed=0)
        groups[target] = {"accuracy": sum(values) / len(values) if values else None, "bootstrap95": [lo, hi],
                          "clusters": len(mine)}
    return None, groups, {"method": "percentile bootstrap over source MCQs, 1000 draws, seed 0"}


ACCURACY_CI = register(MetricSpec(
    "tempomed.accuracy_bootstrap", FAMILY, "Accuracy by target with 95 % bootstrap intervals that resample whole "
    "source MCQs (their perturbed items are not independent).", True, _cluster_count, _cluster_finish,
    _cluster_cypher, resamples=True, kind="accuracy"))


# --- three-way score --------------------------------------------------------------------------------------------


def _when_count(samples: Sequence[SampleRecord]) -> Rows:
    return count_by(samples, ("target", "status"), _is("mcq"))


# From the graph: the fact the chosen option states, against the question's target date.
_when_cypher = counted_by(
    BASE + " AND p.f_kind = 'mcq'"
    " OPTIONAL MATCH (p)-[:CHOSE]->(f:Fact)"
    " WITH p, CASE WHEN f IS NULL THEN 'never'"
    " WHEN (f.valid_from IS NULL OR f.valid_from <= p.target_date) AND (f.valid_to IS NULL OR f.valid_to >"
    " p.target_date) THEN 'correct'"
    " WHEN f.valid_to IS NOT NULL AND f.valid_to <= p.target_date THEN 'stale' ELSE 'later' END AS status",
    ("target", "status"), status="status")


def _when_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    groups: dict[str, Any] = {}
    for r in rows:
        if r["status"] is None:  # a sample scored before this field existed
            continue
        cell = groups.setdefault(r["target"], {"correct": 0, "stale": 0, "later": 0, "never": 0})
        cell[r["status"]] += r["n"]
    for cell in groups.values():
        n = sum(cell.values())
        cell.update({f"share_{k}": v / n for k, v in list(cell.items())}, n=n)
    return None, groups, {"note": "later (correct only after the target date) is reported beside the three ways"}


THREE_WAY = register(MetricSpec(
    "tempomed.three_way", FAMILY, "Per MCQ item: the chosen answer holds on the target date (correct), held "
    "only before it (stale), only after it (later), or never.", None, _when_count, _when_finish, _when_cypher,
    kind="rate"))


# --- temporal consistency of the probes ---------------------------------------------------------------------------


def _probe_count(samples: Sequence[SampleRecord]) -> Rows:
    keys = ("pair", "statement_source", "statement_year", "target_year", "prediction", "protocol")
    return count_by(samples, keys, _is("probe"))


_probe_cypher = counted_by(BASE + " AND p.f_kind = 'probe'", ("pair", "statement_source", "statement_year",
                                                              "target_year", "prediction", "protocol"))


def _probe_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    by_pair: dict[str, list[patterns.Answer]] = defaultdict(list)
    current_year: dict[str, int] = {}
    fixed = any(r.get("protocol") == "chronokg" for r in rows)
    for r in rows:
        for _ in range(r["n"]):
            by_pair[r["pair"]].append(patterns.Answer(r["statement_source"], int(r["target_year"]),
                                                      r["prediction"] or "INVALID"))
        if r["statement_source"] == "current" and r["statement_year"] is not None:
            current_year[r["pair"]] = int(r["statement_year"])
    classify = patterns.classify_fixed if fixed else patterns.classify_seed
    counts = dict.fromkeys(patterns.ORDER, 0)
    per: dict[str, str] = {}
    for pair, answers in sorted(by_pair.items()):
        name = classify(answers, current_year.get(pair)).name
        counts[name] += 1
        per[pair] = name
    total = sum(counts.values())
    groups = {name: {"count": c, "share": c / total if total else None} for name, c in counts.items()}
    return (counts[patterns.CORRECT] / total if total else None), groups, {
        "rule": "chronokg (best split)" if fixed else "seed (first split)", "differences": total, "per_pair": per}


CONSISTENCY = register(MetricSpec(
    "tempomed.consistency", FAMILY, "Temporal-consistency pattern of each probed difference (correct transition, "
    "wrong transition, only prior, only latest, all true, all false, inconsistent).", True,
    _probe_count, _probe_finish, _probe_cypher, kind="rate"))


# --- Table 3: accuracy with retrieved passages -------------------------------------------------------------------

# `P/rag_evaluation/main.py`: one run per scope, `original_current_guideline` (the released, up-to-date-targeted
# questions) or `--counterpart` (`counterpart_prior_guideline`: the historical rewrites); `summarize_results`
# reports accuracy (0.0 for an empty scope) and the shares of five prediction groups (C/D are "irrelevant" there).
RAG_SCOPES = {"up_to_date": "original_current_guideline", "historical": "counterpart_prior_guideline"}
RAG_GROUPS = ("current_guideline", "prior_guideline", "irrelevant", "unknown", "invalid")
RAG_SPLITS = {"all": None, "with_counterpart": True, "without_counterpart": False}


def _rag_count(samples: Sequence[SampleRecord]) -> Rows:
    return count_by(samples, ("rag", "target", "group", "counterpart_passage"), _is("mcq"))


_rag_cypher = counted_by(BASE + " AND p.f_kind = 'mcq'", ("rag", "target", "group", "counterpart_passage"))


def _rag_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    """Per arm (`none` without --rag) and scope: the seed's summary, and chronokg's split by whether the passages
    given held the counterpart version (the other recommendation of the item's change pair)."""
    groups: dict[str, Any] = {}
    for r in rows:
        scope = RAG_SCOPES.get(str(r["target"]))
        if scope is None:
            continue
        arm = groups.setdefault(str(r["rag"] or "none"), {})
        for split, wanted in RAG_SPLITS.items():
            if wanted is not None and bool(r["counterpart_passage"]) is not wanted:
                continue
            cell = arm.setdefault(scope, {}).setdefault(split, {"n": 0, "correct": 0,
                                                                "counts": dict.fromkeys(RAG_GROUPS, 0)})
            cell["n"] += r["n"]
            cell["correct"] += r["correct"]
            group = "irrelevant" if r["group"] == "interference" else str(r["group"])
            cell["counts"][group if group in RAG_GROUPS else "invalid"] += r["n"]
    flat: dict[str, Any] = {}  # "arm · scope · split": accuracy and n; "... · shares": the five groups' shares
    for arm_name, arm in sorted(groups.items()):
        for scope_name in RAG_SCOPES.values():
            for split, cell in (arm.get(scope_name) or {}).items():
                n = cell["n"]
                name = f"{arm_name} · {scope_name} · {split}"
                flat[name] = {"accuracy": cell["correct"] / n if n else 0.0, "n": n, "correct": cell["correct"]}
                flat[f"{name} · shares"] = {g: (c / n if n else 0.0) for g, c in cell["counts"].items()}
    return None, flat, {"scopes": RAG_SCOPES, "source": "P/rag_evaluation/main.py summarize_results"}


TABLE3 = register(MetricSpec(
    "tempomed.table3", FAMILY, "Table 3: accuracy on up-to-date and historical items with retrieved passages "
    "(--rag), as the seed's RAG evaluation summarises a scope, split by whether the counterpart version's passage "
    "was retrieved.", True, _rag_count, _rag_finish, _rag_cypher, kind="accuracy"))


# `--protocol seed`, Table 3's own items (`generate tempomed --table3`): the released 4-option items in A-D order,
# asked with the seed's RAG prompt and read by its `extract_prediction` (UNKNOWN an answer of its own), summarised
# as `summarize_results` does, per arm and scope. Its result files: `eval export --format seed`.
SEED_KEYS = ("rag", "agent", "target", "prediction")


def _seed_rag_count(samples: Sequence[SampleRecord]) -> Rows:
    return count_by(samples, SEED_KEYS, _is("table3"))


_seed_rag_cypher = counted_by(BASE + " AND p.f_kind = 'table3'", SEED_KEYS)


def _seed_rag_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    """Per arm (`none`, the --rag mode, `tools` for --agent, joined by "+") and scope: accuracy, n, correct, and
    the seed's summary (`… · shares` and `… · counts` of the five groups, `… · labels` of the labels read)."""
    cells: dict[str, dict[str, Any]] = {}
    for r in sorted(rows, key=lambda r: [str(r[k]) for k in SEED_KEYS]):
        scope = RAG_SCOPES.get(str(r["target"]))
        if scope is None:
            continue
        arm = "+".join(str(r[k]) for k in ("rag", "agent") if r[k]) or "none"
        cell = cells.setdefault(f"{arm} · {scope}", {"n": 0, "correct": 0, "counts": dict.fromkeys(RAG_GROUPS, 0),
                                                     "labels": {}})
        label = str(r["prediction"] or "INVALID")
        cell["n"] += r["n"]
        cell["correct"] += r["correct"]
        cell["counts"][seed_rag.group(label)] += r["n"]  # on the label read: the items keep the released order
        cell["labels"][label] = cell["labels"].get(label, 0) + r["n"]
    flat: dict[str, Any] = {}
    for name, cell in sorted(cells.items()):
        n = cell["n"]
        flat[name] = {"accuracy": cell["correct"] / n if n else 0.0, "n": n, "correct": cell["correct"]}
        flat[f"{name} · shares"] = {g: (c / n if n else 0.0) for g, c in cell["counts"].items()}
        flat[f"{name} · counts"] = cell["counts"]
        flat[f"{name} · labels"] = dict(sorted(cell["labels"].items()))
    return None, flat, {"scopes": RAG_SCOPES, "source": "P/rag_evaluation/main.py extract_prediction, "
                                                        "prediction_group, summarize_results (74b6f224)"}


TABLE3_SEED = register(MetricSpec(
    "tempomed.table3_seed", FAMILY, "Table 3 as the seed's RAG evaluation asks and scores it (generate --table3, "
    "--protocol seed): the released 4-option items in A-D order, accuracy and the five prediction groups per arm "
    "and scope, UNKNOWN a group of its own.", True, _seed_rag_count, _seed_rag_finish, _seed_rag_cypher,
    kind="accuracy"))

