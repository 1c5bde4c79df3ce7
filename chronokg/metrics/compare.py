"""Two runs (or two models, or one config before and after a newer release) side by side on the questions both
answered: every metric of each family, its difference and a paired test and interval.

Accuracy keeps its exact test (McNemar on sample 0, `metrics.stats.paired_comparison`). Every other metric is
the family's own definition (`metrics.spec`, computed as `eval metrics` does) re-computed on paired draws of
the shared questions (`metrics.stats.paired_draws`): a sign-flip permutation test and a paired bootstrap
interval. A metric reported as a table compares each group's scalar (or its `accuracy`), as `metric[group]`.
Metrics whose own computation resamples (`MetricSpec.resamples`) are compared on their point value only, and so
is the pre/post-cutoff split (`metrics.cutoff`): each side is split at its own model's cutoff, so its questions
are not paired across the sides.

Each row counts the questions behind each of its two values (`n_a`, `n_b`; `n` when they are the same): a
question is behind a quantity when the metric computed on that question alone yields it (`accuracy_by_year[2019]`:
the up-to-date items of 2019); a quantity no single question yields (a ratio of two groups) has behind it every
question that yields any quantity of the metric.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from chronokg.eval.cutoff import Cutoff
from chronokg.eval.log import SampleRecord
from chronokg.metrics import cutoff as split
from chronokg.metrics.spec import MetricSpec, MetricValue, for_family
from chronokg.metrics.stats import paired_comparison, paired_draws
from chronokg.progress import Progress

_A, _B = "run A", "run B"  # the two sides' model names while a metric is computed


class MetricComparison(BaseModel):
    """One quantity of one family, run A against run B."""

    family: str
    metric: str
    a: str
    b: str
    n: int | None  # the questions behind both values (None: the two differ, see n_a and n_b)
    n_a: int  # the questions behind value_a
    n_b: int  # the questions behind value_b
    value_a: float | None
    value_b: float | None
    difference: float | None
    test: str  # mcnemar | paired permutation | none
    p: float | None
    ci95: tuple[float, float] | None
    a_only: int | None = None  # accuracy: questions A got right and B wrong
    b_only: int | None = None


def _number(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) else None


def quantities(value: MetricValue) -> dict[str, float]:
    """The scalars of a metric's result: its value, else each group's number (or the group's `accuracy`)."""
    if (v := _number(value.value)) is not None:
        return {value.metric: v}
    out = {}
    for group, cell in value.groups.items():
        x = _number(cell.get("accuracy") if isinstance(cell, dict) else cell)
        if x is not None:
            out[f"{value.metric}[{group}]"] = x
    return out


def _counted(n_a: int, n_b: int) -> dict[str, int | None]:
    return {"n": n_a if n_a == n_b else None, "n_a": n_a, "n_b": n_b}


def behind(spec: MetricSpec, ids: Sequence[str], records: dict[str, list[SampleRecord]]) -> dict[str, int]:
    """The questions behind each quantity of `spec` over `ids` (see the module docstring). The metric is finished
    once per distinct count of a single question, not once per question."""
    finished: dict[str, set[str]] = {}
    per: list[set[str]] = []
    with_rows = 0
    for q in ids:
        mine = [r for r in records[q] if r.ok and (spec.family is None or r.family == spec.family)]
        rows = spec.count(mine)
        with_rows += bool(rows)
        key = json.dumps(rows, sort_keys=True, default=str)
        if key not in finished:
            value, groups, _ = spec.finish(rows) if rows else (None, {}, {})
            finished[key] = set(quantities(MetricValue(metric=spec.name, model="", value=value, groups=groups)))
        per.append(finished[key])
    out: dict[str, int] = {}
    # the questions the metric counts: those giving a value alone; where none does (ECDA_all needs both kinds of
    # question, IKCR a pair), those it has rows of
    counted = sum(1 for keys in per if keys) or with_rows
    for keys in per:
        for k in keys:
            out[k] = out.get(k, 0) + 1
    return out | {"": counted}


def _n(found: dict[str, int], key: str) -> int:
    """The questions behind `key`; a quantity no single question yields: every question the metric counts."""
    return found.get(key, found[""])


def _as(records: Sequence[SampleRecord], model: str) -> list[SampleRecord]:
    return [r.model_copy(update={"model": model}) for r in records]


def _accuracy(family: str, ids: list[str], a: dict[str, list[SampleRecord]], b: dict[str, list[SampleRecord]],
              model_a: str, model_b: str) -> MetricComparison | None:
    first = [next((r for r in a[q] if r.sample == 0), None) for q in ids]
    second = [next((r for r in b[q] if r.sample == 0), None) for q in ids]
    both = [(x, y) for x, y in zip(first, second, strict=True) if x is not None and y is not None]
    if not both:
        return None
    xa, xb = [bool(x.correct) for x, _ in both], [bool(y.correct) for _, y in both]
    result = paired_comparison(xa, xb)
    return MetricComparison(family=family, metric="accuracy", a=model_a, b=model_b, **_counted(len(both), len(both)),
                            value_a=sum(xa) / len(xa), value_b=sum(xb) / len(xb), difference=result.difference,
                            test="mcnemar", p=result.p_mcnemar, ci95=result.ci, a_only=result.a_only,
                            b_only=result.b_only)


def _values(specs: Sequence[MetricSpec], records: list[SampleRecord], model: str) -> dict[str, float]:
    """What `spec.compute` gives for each spec, on records of one family and model: the records filtered once,
    and counted once per count function (metrics of one count share its rows: accuracy and the historical ratio,
    option groups and Table 1); a finish reads its rows and never changes them."""
    mine = [r for r in records if r.ok]
    counted: dict[Callable[..., Any], Any] = {}
    out: dict[str, float] = {}
    for spec in specs:
        if spec.count not in counted:
            counted[spec.count] = spec.count(mine)
        value, groups, _ = spec.finish(counted[spec.count])
        out |= quantities(MetricValue(metric=spec.name, model=model, value=value, groups=groups))
    return out


def _metrics(family: str, ids: list[str], a: dict[str, list[SampleRecord]], b: dict[str, list[SampleRecord]],
             model_a: str, model_b: str, iterations: int, tick: Callable[[], None]) -> list[MetricComparison]:
    specs = [s for s in for_family([family]) if s.family == family]
    a_as_a, b_as_b = {q: _as(a[q], _A) for q in ids}, {q: _as(b[q], _B) for q in ids}
    a_as_b, b_as_a = {q: _as(a[q], _B) for q in ids}, {q: _as(b[q], _A) for q in ids}

    def values(specs: Sequence[MetricSpec], idx: Sequence[int], swapped: Sequence[bool]) -> tuple[
            dict[str, float], dict[str, float]]:
        side_a: list[SampleRecord] = []
        side_b: list[SampleRecord] = []
        for i, swap in zip(idx, swapped, strict=True):
            q = ids[i]
            side_a += b_as_a[q] if swap else a_as_a[q]
            side_b += a_as_b[q] if swap else b_as_b[q]
        return _values(specs, side_a, _A), _values(specs, side_b, _B)

    def differences(idx: Sequence[int], swapped: Sequence[bool]) -> dict[str, float]:
        va, vb = values(drawn, idx, swapped)
        tick()
        return {k: va[k] - vb[k] for k in va if k in vb}

    every = list(range(len(ids)))
    point_a, point_b = values(specs, every, [False] * len(ids))
    behind_a: dict[str, int] = {}
    behind_b: dict[str, int] = {}
    for spec in specs:
        found_a, found_b = behind(spec, ids, a), behind(spec, ids, b)
        behind_a |= {k: _n(found_a, k) for k in point_a if k == spec.name or k.startswith(spec.name + "[")}
        behind_b |= {k: _n(found_b, k) for k in point_b if k == spec.name or k.startswith(spec.name + "[")}
    drawn = [s for s in specs if not s.resamples]
    tested = paired_draws(len(ids), differences, iterations=iterations) if iterations > 0 else {}
    if iterations <= 0:
        tick()
    out = []
    for key in sorted(point_a.keys() | point_b.keys()):
        va, vb, t = point_a.get(key), point_b.get(key), tested.get(key)
        out.append(MetricComparison(
            family=family, metric=key, a=model_a, b=model_b,
            **_counted(behind_a.get(key, 0) if va is not None else 0, behind_b.get(key, 0) if vb is not None else 0),
            value_a=va, value_b=vb,
            difference=None if va is None or vb is None else va - vb, test="paired permutation" if t else "none",
            p=t.p if t else None, ci95=t.ci if t else None))
    return out


def _cutoff_rows(family: str, ids: list[str], a: dict[str, list[SampleRecord]], b: dict[str, list[SampleRecord]],
                 model_a: str, model_b: str, cutoffs: tuple[Cutoff, Cutoff]) -> list[MetricComparison]:
    """The split of each side at its own cutoff, on the shared questions: point values (see the docstring)."""
    va = split.compute([r for q in ids for r in a[q]], model_a, family, cutoffs[0]).groups
    vb = split.compute([r for q in ids for r in b[q]], model_b, family, cutoffs[1]).groups
    out = []
    for name, side, key in (("pre", "pre", "accuracy"), ("post", "post", "accuracy"), ("post stale", "post", "stale"),
                            ("pre n", "pre", "n"), ("post n", "post", "n")):
        x, y = _number(va[side][key]), _number(vb[side][key])
        counted = _counted(_questions(ids, a, side, cutoffs[0]) if x is not None else 0,
                           _questions(ids, b, side, cutoffs[1]) if y is not None else 0)
        out.append(MetricComparison(family=family, metric=f"{family}{split.SUFFIX}[{name}]", a=model_a, b=model_b,
                                    **counted,
                                    value_a=x, value_b=y,
                                    difference=None if x is None or y is None else x - y, test="none", p=None,
                                    ci95=None))
    return out


def _questions(ids: Sequence[str], records: dict[str, list[SampleRecord]], side: str, cut: Cutoff) -> int:
    """The questions on `side` of the cutoff (a question's samples share its gold answer, so its side)."""
    return sum(1 for q in ids if any(r.ok and split.side(r, cut.date) == side for r in records[q]))


def compare_runs(a: Sequence[SampleRecord], b: Sequence[SampleRecord], model_a: str, model_b: str,
                 iterations: int = 200, cutoffs: tuple[Cutoff, Cutoff] | None = None,
                 progress: Progress | None = None) -> list[MetricComparison]:
    """Per family of the questions both runs answered: accuracy (McNemar), then every metric of the family, then
    (given each side's cutoff) the pre/post-cutoff split of the families with dated gold answers. `progress`
    counts the families' draws (each one every metric of the family on both sides)."""
    mine_a: dict[str, list[SampleRecord]] = {}
    mine_b: dict[str, list[SampleRecord]] = {}
    for r in a:
        if r.model == model_a:
            mine_a.setdefault(r.question_id, []).append(r)
    for r in b:
        if r.model == model_b:
            mine_b.setdefault(r.question_id, []).append(r)
    common = sorted(mine_a.keys() & mine_b.keys())
    out: list[MetricComparison] = []
    families = sorted({mine_a[q][0].family for q in common})
    per_family = 1 + 2 * iterations if iterations > 0 else 1  # the point values, then each permutation and resample
    if progress is not None:
        progress.start(len(families) * per_family, f"comparing {len(common):,} questions ({len(families)} "
                                                    f"{'family' if len(families) == 1 else 'families'}): draws")

    def tick() -> None:
        if progress is not None:
            progress.advance(1)

    for family in families:
        ids = [q for q in common if mine_a[q][0].family == family]
        accuracy = _accuracy(family, ids, mine_a, mine_b, model_a, model_b)
        out += [accuracy] if accuracy else []
        out += _metrics(family, ids, mine_a, mine_b, model_a, model_b, iterations, tick)
        if cutoffs is not None and split.dated_families([family]):
            out += _cutoff_rows(family, ids, mine_a, mine_b, model_a, model_b, cutoffs)
    return out
