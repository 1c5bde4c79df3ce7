"""Benchmark-aging metrics ("When Benchmarks Age", BenchAge), as its code and paper define them.

Per sample the BenchAge profile stores three judge decisions (`chronokg.eval.profiles.benchage`):
s_gold = [model = gold at release y], s_search = [model = up-to-date answer y*] and gs = [y = y*] (the last
two for time-sensitive questions only), and the pool the sample belongs to (`ts`, `non_ts`,
`ts_unanswered`). Over the time-sensitive pool D_ts (N = |D_ts|) of one model:

- BF  = sum s_gold / N                                (evaluator.py:404-409 `acc_ts`; paper App. D.2)
- TA  = sum s_search / N                              (evaluator.py:405-410 `acc_search_ts`; Table 4)
- TAG = TA - BF                                       (evaluator.py:427 `accuracy_diff`; eqs 3-5)
- EMR = #(s_search = 1 and s_gold = 0) / N            (paper eq. 2; not in the seed's code)
- DDS = #(gs = 0) / #questions with a gs decision     (paper eq. 1; not in the seed's code; per question)
- a_o = (sum s_gold over non-TS and TS) / (N_non + N) (evaluator.py:411-415 `acc_overall`)
- a_TAG = a_o + TAG * N / (N_non + N), a_EMR = a_o + EMR * N / (N_non + N)  (App. D.4 eqs 6-7; not in code)
- kappa: Cohen's kappa between the binary judge vectors, k1 = k(s_gold, s_search), k2 = k(gs, s_gold),
  k3 = k(gs, s_search) (evaluator.py:416-422, sklearn `cohen_kappa_score`); the seed saves only their
  nan-mean (`avg_kappa.csv`, :428), which is this metric's value; k1, k2, k3 are reported too.

A judge error (only under `--protocol seed`, where the seed scores it NaN) stays in N and never counts as a
match, as `np.nansum` over N does; the kappas leave such samples out (sklearn would refuse NaN). Every
metric is reported per dataset (the seed evaluates each benchmark on its own) and pooled over the run's
datasets (the value). All of them are counts, so every one has a Cypher form.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chronokg.eval.log import SampleRecord
from chronokg.metrics.spec import MetricKind, MetricSpec, Rows, prediction_match, register

FAMILY = "benchage"
BASE = prediction_match() + " AND p.family = 'benchage'"
KEYS = ("dataset", "pool", "s_gold", "s_search", "gs")
ALL = "all"


def _params(run: str, model: str) -> dict[str, Any]:
    return {"run": run, "model": model}


# --- counting -----------------------------------------------------------------------------------------------


def _count(samples: Sequence[SampleRecord]) -> Rows:
    """(dataset, pool, s_gold, s_search, gs, n): the pure twin of the Cypher GROUP BY."""
    table: dict[tuple[Any, ...], int] = {}
    for s in samples:
        key = tuple(s.fields.get(k) for k in KEYS)
        table[key] = table.get(key, 0) + 1
    return [{**dict(zip(KEYS, key, strict=True)), "n": n} for key, n in table.items()]


def _cypher(run: str, model: str) -> tuple[str, dict[str, Any]]:
    return (BASE + " RETURN p.f_dataset AS dataset, p.f_pool AS pool, p.f_s_gold AS s_gold, "
            "p.f_s_search AS s_search, p.f_gs AS gs, count(*) AS n", _params(run, model))


def _count_questions(samples: Sequence[SampleRecord]) -> Rows:
    """(dataset, gs, n) over distinct time-sensitive questions: DDS is a property of the benchmark."""
    seen = {(s.question_id, s.fields.get("dataset"), s.fields.get("gs")) for s in samples
            if s.fields.get("pool") == "ts"}
    table: dict[tuple[Any, Any], int] = {}
    for _, dataset, gs in seen:
        table[(dataset, gs)] = table.get((dataset, gs), 0) + 1
    return [{"dataset": d, "gs": g, "n": n} for (d, g), n in table.items()]


def _cypher_questions(run: str, model: str) -> tuple[str, dict[str, Any]]:
    return (BASE + " AND p.f_pool = 'ts' WITH DISTINCT p.question_id AS question, p.f_dataset AS dataset, "
            "p.f_gs AS gs RETURN dataset, gs, count(*) AS n", _params(run, model))


# --- the arithmetic (shared by both paths) --------------------------------------------------------------------


def kappa(table: dict[tuple[int, int], int]) -> float | None:
    """Cohen's kappa of two binary raters from their joint counts {(a, b): n}, as sklearn's
    `cohen_kappa_score` computes it: (p_o - p_e) / (1 - p_e); None (sklearn: NaN) when p_e = 1, i.e. both
    raters gave one and the same label throughout, or when there is nothing to count."""
    n = sum(table.values())
    if n == 0:
        return None
    agree = sum(v for (a, b), v in table.items() if a == b)
    a1 = sum(v for (a, _), v in table.items() if a == 1)
    b1 = sum(v for (_, b), v in table.items() if b == 1)
    p_o = agree / n
    p_e = (a1 * b1 + (n - a1) * (n - b1)) / (n * n)
    if p_e == 1:
        return None
    return (p_o - p_e) / (1 - p_e)


def nanmean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def _ratio(k: float, n: float) -> float | None:
    return k / n if n else None


def aging(rows: Rows) -> dict[str, Any]:
    """Every aging number of one group of count rows (see the module docstring)."""
    n_ts = n_non = g = s = emr = stale = g_non = errors = unanswered = 0
    joint: dict[tuple[int, int, int], int] = {}
    for r in rows:
        n, pool = int(r["n"]), r["pool"]
        if pool == "non_ts":
            n_non += n
            g_non += n if r["s_gold"] == 1 else 0
            continue
        if pool != "ts":
            unanswered += n
            continue
        n_ts += n
        gold, search, gs = r["s_gold"], r["s_search"], r["gs"]
        g += n if gold == 1 else 0
        s += n if search == 1 else 0
        emr += n if search == 1 and gold == 0 else 0
        stale += n if gold == 1 and search == 0 else 0
        if gold is None or search is None or gs is None:
            errors += n
        else:
            key = (int(gold), int(search), int(gs))
            joint[key] = joint.get(key, 0) + n
    bf, ta, emr_rate = _ratio(g, n_ts), _ratio(s, n_ts), _ratio(emr, n_ts)
    tag = ta - bf if ta is not None and bf is not None else None
    total = n_ts + n_non
    a_o = _ratio(g + g_non, total)
    share = _ratio(n_ts, total)
    a_tag = a_o + tag * share if a_o is not None and tag is not None and share is not None else None
    a_emr = a_o + emr_rate * share if a_o is not None and emr_rate is not None and share is not None else None

    def pair(i: int, j: int) -> float | None:
        table: dict[tuple[int, int], int] = {}
        for key, v in joint.items():
            table[(key[i], key[j])] = table.get((key[i], key[j]), 0) + v
        return kappa(table)

    k1, k2, k3 = pair(0, 1), pair(2, 0), pair(2, 1)
    return {"bf": bf, "ta": ta, "tag": tag, "emr": emr_rate, "a_o": a_o, "a_tag": a_tag, "a_emr": a_emr,
            "kappa": nanmean([k1, k2, k3]), "k1_gold_search": k1, "k2_gs_gold": k2, "k3_gs_search": k3,
            "n_ts": n_ts, "n_non_ts": n_non, "n_ts_unanswered": unanswered, "n_judge_errors": errors,
            "n_kappa": sum(joint.values()), "right_then_stale": stale}


def _by_dataset(rows: Rows) -> dict[str, Rows]:
    out: dict[str, Rows] = {ALL: list(rows)}
    for r in rows:
        out.setdefault(str(r["dataset"]), []).append(r)
    return out


def _finisher(key: str, extra: Sequence[str] = ()) -> Any:
    """A finish taking one number of `aging` (pooled as the value, per dataset as groups, with the sizes)."""
    counts = ("n_ts", "n_non_ts", "n_ts_unanswered", "n_judge_errors")

    def finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
        tables = {name: aging(part) for name, part in _by_dataset(rows).items()}
        groups = {name: {key: t[key], **{e: t[e] for e in extra}, "n_ts": t["n_ts"], "n_non_ts": t["n_non_ts"]}
                  for name, t in sorted(tables.items()) if name != ALL}
        pooled = tables[ALL]
        return pooled[key], groups, {c: pooled[c] for c in (*extra, *counts)}

    return finish


def _dds_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    def dds(part: Rows) -> dict[str, Any]:
        decided = sum(int(r["n"]) for r in part if r["gs"] is not None)
        outdated = sum(int(r["n"]) for r in part if r["gs"] == 0)
        errors = sum(int(r["n"]) for r in part if r["gs"] is None)
        return {"dds": _ratio(outdated, decided), "questions": decided, "outdated": outdated,
                "judge_errors": errors}

    parts = _by_dataset(rows)
    pooled = dds(parts.pop(ALL))
    return pooled["dds"], {name: dds(part) for name, part in sorted(parts.items())}, pooled


def _spec(name: str, key: str, help_: str, higher: bool | None, extra: Sequence[str] = (),
          kind: MetricKind = "score") -> MetricSpec:
    return register(MetricSpec(f"benchage.{name}", FAMILY, help_, higher, _count, _finisher(key, extra), _cypher,
                               kind=kind))


BF = _spec("bf", "bf", "Benchmark Fidelity: share of time-sensitive questions where the model matches the gold at "
                       "release (seed acc_ts).", None, kind="accuracy")
TA = _spec("ta", "ta", "Temporal Accuracy: share of time-sensitive questions where the model matches the "
                       "up-to-date answer (seed acc_search_ts).", True, kind="accuracy")
TAG = _spec("tag", "tag", "Temporal Accuracy Gap TA - BF (seed accuracy_diff).", True, extra=("right_then_stale",))
EMR = _spec("emr", "emr", "Evaluation Misleading Rate: share of time-sensitive questions where the model matches "
                          "the up-to-date answer but not the gold (paper eq. 2).", None, kind="rate")
A_O = _spec("a_o", "a_o", "Accuracy against the gold over the whole benchmark, time-sensitive or not (seed "
                          "acc_overall).", True, kind="accuracy")
A_TAG = _spec("a_tag", "a_tag", "a_o adjusted by TAG: a_o + TAG |D_ts|/|D| (paper eq. 6).", True)
A_EMR = _spec("a_emr", "a_emr", "a_o adjusted by EMR: a_o + EMR |D_ts|/|D| (paper eq. 7).", True)
KAPPA = _spec("kappa", "kappa", "Cohen's kappa between the judge vectors (model~gold, model~up-to-date, "
                                "gold~up-to-date): their mean, as the seed saves it, and each pair.", None,
              extra=("k1_gold_search", "k2_gs_gold", "k3_gs_search", "n_kappa"))
DDS = register(MetricSpec(
    "benchage.dds", FAMILY, "Dataset Drift Score: share of time-sensitive questions whose gold at release no "
    "longer matches the up-to-date answer (paper eq. 1).", None, _count_questions, _dds_finish, _cypher_questions,
    kind="rate"))
