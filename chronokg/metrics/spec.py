"""A metric, declared once: a pure function over a run's samples, and the same metric as Cypher over the
`Prediction` nodes of the run in the graph (tests check that both give the same value).

Each metric splits into per-group *counts* (what Cypher can compute: `cypher(run, model)` returns rows
of group keys and counts) and `finish(rows)`, which turns counts into the reported values (rates,
intervals, trend tests). The pure path computes the same rows in Python from the samples
(`count(samples)`), so the two paths differ only in where the counting happens. Metrics whose inputs
cannot be counted by Cypher (a classifier over a sequence of answers) declare `cypher=None` and say why.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, Field

from chronokg.eval.log import SampleRecord
from chronokg.graph.store import GraphStore
from chronokg.registry import Registry

Rows = list[dict[str, Any]]
MetricKind = Literal["accuracy", "rate", "score"]


class MetricValue(BaseModel):
    """A metric's result for one model: one value or a table of values by group, with details."""

    metric: str
    model: str
    value: float | None = None
    groups: dict[str, Any] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class MetricSpec:
    name: str
    family: str | None  # None: any family
    help: str
    higher_is_better: bool | None
    count: Callable[[Sequence[SampleRecord]], Rows]
    finish: Callable[[Rows], tuple[float | None, dict[str, Any], dict[str, Any]]]
    cypher: Callable[[str, str], tuple[str, dict[str, Any]]] | None = None
    resamples: bool = False  # finish draws its own bootstrap: too dear to redo inside `eval compare`'s draws
    # What `value` is, so a report draws it on the right axis: "accuracy" (a share of answers that are right, in
    # [0, 1]), "rate" (another share in [0, 1]: invalid outputs, endorsed pairs...), "score" (anything else: a
    # ratio, a difference, kappa, percentage points). An accuracy axis shows accuracies only.
    kind: MetricKind = "score"

    def compute(self, samples: Sequence[SampleRecord], model: str) -> MetricValue:
        """The pure path: count in Python, then finish."""
        mine = [s for s in samples if s.model == model and s.ok and (self.family is None or s.family == self.family)]
        value, groups, details = self.finish(self.count(mine))
        return MetricValue(metric=self.name, model=model, value=value, groups=groups, details=details)

    def from_graph(self, store: GraphStore, run_id: str, model: str) -> MetricValue:
        """The Cypher path: count over the run's Prediction nodes, then the same finish."""
        if self.cypher is None:
            raise ValueError(f"metric {self.name} has no Cypher form")
        text, params = self.cypher(run_id, model)
        rows = store.run(text, params)
        value, groups, details = self.finish(rows)
        return MetricValue(metric=self.name, model=model, value=value, groups=groups, details=details)


METRICS: Registry[MetricSpec] = Registry("metric", group="metrics")


def register(spec: MetricSpec) -> MetricSpec:
    METRICS.register(spec.name, spec)
    return spec


@functools.cache
def all_metrics() -> Registry[MetricSpec]:
    """Every metric (importing every module of the package once registers them)."""
    import importlib
    import pkgutil

    import chronokg.metrics as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name not in {"spec", "stats", "patterns"}:
            importlib.import_module(f"chronokg.metrics.{info.name}")
    return METRICS


def for_family(families: Iterable[str]) -> list[MetricSpec]:
    wanted = set(families)
    return [m for _, m in all_metrics().items() if m.family is None or m.family in wanted]


def count_by(samples: Sequence[SampleRecord], keys: Sequence[str], where: Callable[[SampleRecord], bool]) -> Rows:
    """Rows of (group keys..., n, correct) over the samples that pass `where` (the pure twin of a GROUP BY)."""
    table: dict[tuple[Any, ...], list[int]] = {}
    for s in samples:
        if not where(s):
            continue
        key = tuple(s.fields.get(k) for k in keys)
        cell = table.setdefault(key, [0, 0])
        cell[0] += 1
        cell[1] += bool(s.correct)
    return [{**dict(zip(keys, key, strict=True)), "n": n, "correct": c} for key, (n, c) in table.items()]


def prediction_match(run_param: str = "$run", model_param: str = "$model") -> str:
    return f"MATCH (p:Prediction) WHERE p.run_id = {run_param} AND p.model = {model_param}"


COUNTED = "count(*) AS n, sum(CASE WHEN p.correct THEN 1 ELSE 0 END) AS correct"  # count_by's n and correct
Cypher = Callable[[str, str], tuple[str, dict[str, Any]]]


def counted_by(match: str, keys: Sequence[str], params: dict[str, Any] | None = None, **exprs: str) -> Cypher:
    """The Cypher twin of `count_by(samples, keys, where)`: the predictions `match` finds (its WHERE is the
    `where`), grouped by their fields `p.f_<key>` (or the expression `exprs[key]`), each group's n and correct;
    `$run`, `$model` and `params` its parameters. One builder, so no metric spells the GROUP BY out again."""
    columns = {k: exprs.get(k, f"p.f_{k}") for k in keys}
    returns = ", ".join(k if e == k else f"{e} AS {k}" for k, e in columns.items())

    def query(run: str, model: str) -> tuple[str, dict[str, Any]]:
        return f"{match} RETURN {returns}, {COUNTED}", {"run": run, "model": model, **(params or {})}
    return query
