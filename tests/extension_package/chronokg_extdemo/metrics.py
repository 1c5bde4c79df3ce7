"""A metric: the share of extdemo answers that are right (registered when chronokg reads `chronokg.metrics`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chronokg.eval.log import SampleRecord
from chronokg.metrics.spec import MetricSpec, Rows, count_by, prediction_match, register


def _count(samples: Sequence[SampleRecord]) -> Rows:
    return count_by(samples, (), lambda s: True)


def _finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    n = sum(int(r["n"]) for r in rows)
    correct = sum(int(r["correct"]) for r in rows)
    return (correct / n if n else None), {}, {"n": n, "correct": correct}


def _cypher(run: str, model: str) -> tuple[str, dict[str, Any]]:
    return (prediction_match() + " AND p.family = 'extdemo' RETURN count(p) AS n, "
            "sum(CASE WHEN p.correct THEN 1 ELSE 0 END) AS correct", {"run": run, "model": model})


ACCURACY = register(MetricSpec("extdemo.accuracy", "extdemo", "Share of extdemo answers that are right.", True,
                               _count, _finish, _cypher, kind="accuracy"))
