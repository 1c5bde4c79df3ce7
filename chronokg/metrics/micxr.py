"""MI-CXR metrics: accuracy per question type, per task family (TEL / ICR / GTS), per Table 1 column and overall,
with Wilson 95 % intervals; the stage-wise protocol reported apart (`micxr.stagewise.*`).

Seed (paper only; no evaluation code is public): accuracy = correct / all questions, an output with no valid
option counted wrong (§4.1, E.5); reported per subtype (Table 1's six columns) and "Overall", whose
aggregation the paper does not state and which its columns do not reproduce (notes §3.1). chronokg reports
Overall as the micro accuracy over all items, and beside it the unweighted mean of the six columns and of
the three families. Chance is 1/5. Stage-wise results are only a figure in the paper (Fig. 3).
chronokg's own: answer-letter shares (position bias, invalid outputs, the null option E chosen when a change
exists: the paper's "abstention under uncertainty", App. G), a bootstrap interval that resamples patients
(their overlapping windows share studies), and the share of complete stage-1 outputs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from chronokg.bench.families.micxr import GROUP, TABLE1_COLUMN, QType
from chronokg.eval.extract import INVALID
from chronokg.eval.log import SampleRecord
from chronokg.metrics.spec import Cypher, MetricSpec, Rows, count_by, counted_by, prediction_match, register
from chronokg.metrics.stats import bootstrap_ci, wilson

FAMILY = "micxr"
MODES = ("single", "stagewise")
FAMILIES = ("TEL", "ICR", "GTS")
QTYPES = tuple(q.value for q in QType)
COLUMNS = tuple(dict.fromkeys(TABLE1_COLUMN.values()))
LETTERS = ("A", "B", "C", "D", "E")
NONE = "E"
BASE = prediction_match() + " AND p.family = 'micxr' AND p.f_mode = $mode"
Finish = Callable[[Rows], tuple[float | None, dict[str, Any], dict[str, Any]]]


def cell(correct: int, n: int) -> dict[str, Any]:
    """n, correct, accuracy (None when n = 0) and its Wilson 95 % interval (z = 1.96)."""
    return {"n": n, "correct": correct, "accuracy": correct / n if n else None, "wilson95": list(wilson(correct, n))}


def _sum(rows: Rows, key: str) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        out[str(r[key])][0] += int(r["correct"])
        out[str(r[key])][1] += int(r["n"])
    return out


def _mode(mode: str) -> Callable[[SampleRecord], bool]:
    return lambda s: s.fields.get("mode") == mode


# --- accuracy: overall, families, types, Table 1 columns -----------------------------------------------------

KEYS = ("task_family", "qtype", "table1_column")


def _count(mode: str, keys: Sequence[str]) -> Callable[[Sequence[SampleRecord]], Rows]:
    """The pure count: rows of (keys..., n, correct) over the samples of one protocol."""
    return lambda samples: count_by(samples, keys, _mode(mode))


def _cypher(mode: str, keys: Sequence[str]) -> Cypher:
    """The same rows from the run's Prediction nodes (field `k` is `p.f_k`)."""
    return counted_by(BASE, keys, {"mode": mode})


def _total(rows: Rows) -> dict[str, Any]:
    return cell(sum(int(r["correct"]) for r in rows), sum(int(r["n"]) for r in rows))


def _mean(cells: Sequence[dict[str, Any]]) -> float | None:
    values = [c["accuracy"] for c in cells if c["accuracy"] is not None]
    return sum(values) / len(values) if values else None


def accuracy_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    """Overall (micro) accuracy; groups TEL / ICR / GTS."""
    by = _sum(rows, "task_family")
    groups = {f: cell(by[f][0], by[f][1]) for f in FAMILIES if f in by}
    overall = _total(rows)
    return overall["accuracy"], groups, {"overall": overall, "chance": 1 / len(LETTERS)}


def by_type_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    """Accuracy per released `qtype`, in Table 9's order, each with its family."""
    by = _sum(rows, "qtype")
    groups = {q: {**cell(by[q][0], by[q][1]), "task_family": GROUP[QType(q)]} for q in QTYPES if q in by}
    return None, groups, {}


def table1_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    """The paper's Table 1 columns and Overall (micro); the unweighted means of the columns and of the families
    beside it (neither reproduces the paper's Overall, whose aggregation is unstated)."""
    by = _sum(rows, "table1_column")
    columns = {c: cell(by[c][0], by[c][1]) for c in COLUMNS if c in by}
    overall = _total(rows)
    fam = _sum(rows, "task_family")
    families = [cell(fam[f][0], fam[f][1]) for f in FAMILIES if f in fam]
    return overall["accuracy"], {**columns, "Overall": overall}, {
        "mean_of_columns": _mean(list(columns.values())), "mean_of_families": _mean(families),
        "note": "Overall = micro accuracy over all items; the paper's aggregation is not stated"}


# --- answer letters ---------------------------------------------------------------------------------------------


LETTER_KEYS = ("key", "predicted")


def letters_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    """Shares of the predicted letters (and INVALID) beside the keys' shares; how often E ("no such change")
    is chosen when a change exists, and when it is the key."""
    predicted: dict[str, int] = dict.fromkeys((*LETTERS, INVALID), 0)
    keys: dict[str, int] = dict.fromkeys(LETTERS, 0)
    e_on_change = [0, 0]  # (chose E, questions) where the key is not E
    e_on_none = [0, 0]
    for r in rows:
        n, guess, key = int(r["n"]), str(r["predicted"] or INVALID), str(r["key"])
        predicted[guess if guess in predicted else INVALID] += n
        keys[key] = keys.get(key, 0) + n
        tally = e_on_none if key == NONE else e_on_change
        tally[0] += n if guess == NONE else 0
        tally[1] += n
    total = sum(predicted.values())
    groups = {"predicted": {k: v / total for k, v in predicted.items()} if total else {},
              "key": {k: v / total for k, v in keys.items()} if total else {}}
    return (predicted[INVALID] / total if total else None), groups, {
        "n": total, "invalid": predicted[INVALID],
        "e_when_change": e_on_change[0] / e_on_change[1] if e_on_change[1] else None,
        "e_when_none": e_on_none[0] / e_on_none[1] if e_on_none[1] else None}


# --- patient-cluster bootstrap ----------------------------------------------------------------------------------


CLUSTER_KEYS = ("task_family", "patient")


def _bootstrap(rows: Rows) -> dict[str, Any]:
    mine = sorted(rows, key=lambda r: (str(r["patient"]), str(r["task_family"])))
    values: list[float] = []
    clusters: list[str] = []
    for r in mine:
        values += [1.0] * int(r["correct"]) + [0.0] * (int(r["n"]) - int(r["correct"]))
        clusters += [str(r["patient"])] * int(r["n"])
    lo, hi = bootstrap_ci(values, clusters=clusters, iterations=1000, seed=0)
    return {"n": len(values), "accuracy": sum(values) / len(values) if values else None, "bootstrap95": [lo, hi],
            "patients": len(set(clusters))}


def bootstrap_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    """Overall and per-family accuracy with percentile-bootstrap 95 % intervals over patients."""
    groups = {f: _bootstrap([r for r in rows if r["task_family"] == f]) for f in FAMILIES
              if any(r["task_family"] == f for r in rows)}
    overall = _bootstrap(rows)
    return overall["accuracy"], {**groups, "Overall": overall}, {
        "method": "percentile bootstrap over patients (their windows overlap), 1000 draws, seed 0"}


# --- stage 1 of the stage-wise protocol ------------------------------------------------------------------------


def stage1_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    """Share of stage-1 outputs with a line for each of the four intervals; accuracy with and without one."""
    complete = [sum(int(r[k]) for r in rows if r["stage1_complete"] is True) for k in ("correct", "n")]
    other = [sum(int(r[k]) for r in rows if r["stage1_complete"] is not True) for k in ("correct", "n")]
    n = complete[1] + other[1]
    return (complete[1] / n if n else None), {"complete": cell(*complete), "incomplete": cell(*other)}, {"n": n}


# --- registration -----------------------------------------------------------------------------------------------


def _register(mode: str) -> list[MetricSpec]:
    prefix = "micxr." if mode == "single" else "micxr.stagewise."
    label = "" if mode == "single" else " (stage-wise protocol: interval descriptions, then the answer)"
    return [
        register(MetricSpec(f"{prefix}accuracy", FAMILY, "Accuracy (invalid outputs wrong), overall and per task "
                            f"family TEL / ICR / GTS, Wilson 95 %{label}.", True, _count(mode, KEYS),
                            accuracy_finish, _cypher(mode, KEYS), kind="accuracy")),
        register(MetricSpec(f"{prefix}accuracy_by_type", FAMILY, f"Accuracy per question type, Wilson 95 %{label}.",
                            True, _count(mode, KEYS), by_type_finish, _cypher(mode, KEYS), kind="accuracy")),
        register(MetricSpec(f"{prefix}table1", FAMILY, "The paper's Table 1 columns and Overall (micro), with the "
                            f"means of the columns and of the families{label}.", True, _count(mode, KEYS),
                            table1_finish, _cypher(mode, KEYS), kind="accuracy")),
        register(MetricSpec(f"{prefix}answers", FAMILY, "Shares of the chosen letters and of invalid outputs; E "
                            f"chosen when a change exists / when none does{label}.", None, _count(mode, LETTER_KEYS),
                            letters_finish, _cypher(mode, LETTER_KEYS), kind="rate")),
        register(MetricSpec(f"{prefix}accuracy_bootstrap", FAMILY, "Accuracy overall and per family with 95 % "
                            f"bootstrap intervals resampling patients{label}.", True, _count(mode, CLUSTER_KEYS),
                            bootstrap_finish, _cypher(mode, CLUSTER_KEYS), resamples=True,
                            kind="accuracy")),
    ]


SINGLE = _register("single")
STAGEWISE = _register("stagewise")
ACCURACY, ACCURACY_BY_TYPE, TABLE1, ANSWERS, ACCURACY_BOOTSTRAP = SINGLE
STAGE1 = register(MetricSpec(
    "micxr.stagewise.stage1", FAMILY, "Stage-wise protocol: share of stage-1 outputs with a description for each "
    "of the four intervals, and accuracy with and without one.", True, _count("stagewise", ("stage1_complete",)),
    stage1_finish, _cypher("stagewise", ("stage1_complete",)), kind="rate"))
