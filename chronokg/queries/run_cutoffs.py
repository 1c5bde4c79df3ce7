"""`run-cutoffs`: every stored run's answers split at each model's knowledge cutoff (the explorer's Runs view).

The graph form of `chronokg.metrics.cutoff`, over all runs at once: a prediction is pre-cutoff when its gold
answer's fact became valid (`f_gold_from`) on or before the cutoff its run recorded for its model (`cutoff`, written
by `eval run`), post-cutoff otherwise, and stale when it is a wrong post-cutoff answer whose chosen fact (`CHOSE`)
was in force on the cutoff date. Only predictions with a dated gold answer are counted.
"""

from __future__ import annotations

from typing import Any

from chronokg.queries.explorer import NoParams
from chronokg.queries.rows import Row
from chronokg.queries.spec import QuerySpec, register


class RunCutoffRow(Row):
    run: str
    model: str | None = None
    family: str | None = None
    cutoff: str | None = None
    estimated: bool | None = None
    pre_n: int
    pre_correct: int
    post_n: int
    post_correct: int
    stale: int


def _run_cutoffs(_: NoParams) -> tuple[str, dict[str, Any]]:
    return (
        "MATCH (r:Run)<-[:IN_RUN]-(p:Prediction) WHERE p.f_gold_from IS NOT NULL"
        "\nOPTIONAL MATCH (p)-[:CHOSE]->(f:Fact)"
        "\nWITH r, p, f, CASE WHEN p.cutoff IS NULL THEN 'undated'"
        " WHEN p.f_gold_from <= toString(p.cutoff) THEN 'pre' ELSE 'post' END AS side"
        "\nWITH r, p, side, CASE WHEN side = 'post' AND (p.correct IS NULL OR p.correct = false) AND f IS NOT NULL"
        " AND f.valid_from IS NOT NULL AND f.valid_from <= p.cutoff AND (f.valid_to IS NULL OR f.valid_to > p.cutoff)"
        " THEN 1 ELSE 0 END AS stale"
        "\nRETURN r.id AS run, p.model AS model, p.family AS family, toString(p.cutoff) AS cutoff,"
        " p.cutoff_estimated AS estimated,"
        " sum(CASE WHEN side = 'pre' THEN 1 ELSE 0 END) AS pre_n,"
        " sum(CASE WHEN side = 'pre' AND p.correct = true THEN 1 ELSE 0 END) AS pre_correct,"
        " sum(CASE WHEN side = 'post' THEN 1 ELSE 0 END) AS post_n,"
        " sum(CASE WHEN side = 'post' AND p.correct = true THEN 1 ELSE 0 END) AS post_correct, sum(stale) AS stale"
        "\nORDER BY run, model, family"
    ), {}


RUN_CUTOFFS = register(QuerySpec(
    "run-cutoffs", "Every stored run's answers split at each model's knowledge cutoff: pre- and post-cutoff "
    "answered and correct, and stale answers (right at the cutoff, wrong now), per model and family.", NoParams,
    RunCutoffRow, _run_cutoffs, tags=frozenset({"cli", "explorer"}),
))
