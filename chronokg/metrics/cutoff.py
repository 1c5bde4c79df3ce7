"""Pre- and post-cutoff answers: how much of a model's score is on facts it could have seen, and which of its
errors are stale knowledge (right at its cutoff) rather than wrong knowledge.

An item is pre-cutoff when its gold answer's fact became valid (valid time) on or before the model's cutoff,
post-cutoff otherwise. A post-cutoff answer is `stale` when it is wrong and the fact it chose was in force on
the cutoff date: the version the model could have learnt, superseded since. Items whose gold fact has no
valid-from date (or a model without a cutoff) are counted apart (`undated`).

Reported per model and family (`<family>.cutoff`), for the families whose profile declares dated gold answers
(`Profile.dated_gold`), as `{"cutoff", "estimated", "source", "pre": {n, accuracy}, "post": {n, accuracy,
stale}}`. The same counts come from the samples (`count`) or from the graph (`cypher`: the predictions' gold
valid-from, and the valid time of the fact each `CHOSE`), then one `finish`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from chronokg.eval.cutoff import Cutoff
from chronokg.eval.log import SampleRecord
from chronokg.eval.profile import profile_for
from chronokg.graph.store import GraphStore
from chronokg.metrics.spec import COUNTED, MetricValue, Rows, prediction_match

SUFFIX = ".cutoff"
RULE = ("pre: the gold answer's fact valid from on or before the cutoff; post: after it; stale: a wrong "
        "post-cutoff answer whose fact was in force on the cutoff date")


def dated_families(families: Sequence[str]) -> list[str]:
    return [f for f in sorted(set(families)) if profile_for(f).dated_gold]


def side(record: SampleRecord, cutoff: dt.date | None) -> str:
    """pre, post, or undated (no cutoff, or no valid-from of the gold answer's fact)."""
    return side_of(record.fields, cutoff)


def side_of(fields: Mapping[str, Any], cutoff: dt.date | None) -> str:
    """`side` over a sample's scored fields (what the lm-eval export's `process_results` holds)."""
    gold = fields.get("gold_from")
    if cutoff is None or not gold:
        return "undated"
    return "pre" if str(gold)[:10] <= cutoff.isoformat() else "post"


def in_force(record: SampleRecord, day: dt.date) -> bool:
    """The chosen answer's fact was valid on `day` (a chosen fact without a valid-from date is undated)."""
    return in_force_of(record.fields, day)


def in_force_of(fields: Mapping[str, Any], day: dt.date) -> bool:
    """`in_force` over a sample's scored fields."""
    start, end = fields.get("chosen_from"), fields.get("chosen_to")
    iso = day.isoformat()
    return bool(start) and str(start)[:10] <= iso and (not end or str(end)[:10] > iso)


def is_stale(fields: Mapping[str, Any], correct: bool | None, cutoff: dt.date | None) -> bool:
    """A wrong post-cutoff answer whose chosen fact was in force on the cutoff date."""
    return cutoff is not None and side_of(fields, cutoff) == "post" and not correct and in_force_of(fields, cutoff)


def count(samples: Sequence[SampleRecord], cutoff: dt.date | None) -> Rows:
    """Rows of (side, stale, n, correct): the pure twin of `cypher`."""
    table: dict[tuple[str, bool], list[int]] = {}
    for s in samples:
        where = side(s, cutoff)
        stale = is_stale(s.fields, s.correct, cutoff)
        cell = table.setdefault((where, stale), [0, 0])
        cell[0] += 1
        cell[1] += bool(s.correct)
    return [{"side": w, "stale": st, "n": n, "correct": c} for (w, st), (n, c) in table.items()]


def cypher(run: str, model: str, family: str, cutoff: dt.date | None) -> tuple[str, dict[str, Any]]:
    """The predictions of one model and family, each on its side of the cutoff; stale read from the valid time
    of the fact the prediction `CHOSE` in the graph."""
    if cutoff is None:
        text = (f"{prediction_match()} AND p.family = $family "
                f"RETURN 'undated' AS side, false AS stale, {COUNTED}")
        return text, {"run": run, "model": model, "family": family}
    text = (
        f"{prediction_match()} AND p.family = $family"
        " OPTIONAL MATCH (p)-[:CHOSE]->(f:Fact)"
        " WITH p, f, CASE WHEN p.f_gold_from IS NULL THEN 'undated' WHEN p.f_gold_from <= $cutoff THEN 'pre'"
        " ELSE 'post' END AS side"
        " WITH p, side, CASE WHEN side = 'post' AND (p.correct IS NULL OR p.correct = false) AND f IS NOT NULL"
        " AND f.valid_from IS NOT NULL AND f.valid_from <= $day AND (f.valid_to IS NULL OR f.valid_to > $day)"
        f" THEN true ELSE false END AS stale RETURN side, stale, {COUNTED}")
    return text, {"run": run, "model": model, "family": family, "cutoff": cutoff.isoformat(), "day": cutoff}


def finish(rows: Rows, cutoff: Cutoff) -> tuple[dict[str, Any], dict[str, Any]]:
    """The block and its details from the counted rows."""
    cells = {name: {"n": 0, "correct": 0, "stale": 0} for name in ("pre", "post", "undated")}
    for r in rows:
        cell = cells[str(r["side"])]
        cell["n"] += int(r["n"])
        cell["correct"] += int(r["correct"] or 0)
        cell["stale"] += int(r["n"]) if r["stale"] else 0
    pre, post = cells["pre"], cells["post"]
    block = {"cutoff": cutoff.date.isoformat() if cutoff.date else None, "estimated": cutoff.estimated,
             "source": cutoff.source,
             "pre": {"n": pre["n"], "accuracy": pre["correct"] / pre["n"] if pre["n"] else None},
             "post": {"n": post["n"], "accuracy": post["correct"] / post["n"] if post["n"] else None,
                      "stale": post["stale"]}}
    wrong = post["n"] - post["correct"]
    details = {"stale": post["stale"], "stale_of_post_errors": post["stale"] / wrong if wrong else None,
               "undated": cells["undated"]["n"], "rule": RULE}
    return block, details


def _value(family: str, model: str, rows: Rows, cutoff: Cutoff) -> MetricValue:
    block, details = finish(rows, cutoff)
    return MetricValue(metric=family + SUFFIX, model=model, groups=block, details=details)


def compute(samples: Sequence[SampleRecord], model: str, family: str, cutoff: Cutoff) -> MetricValue:
    """The pure path: one model's block for one family."""
    mine = [s for s in samples if s.model == model and s.ok and s.family == family]
    return _value(family, model, count(mine, cutoff.date), cutoff)


def from_graph(store: GraphStore, run: str, model: str, family: str, cutoff: Cutoff) -> MetricValue:
    """The graph path: the same block counted over the run's Prediction nodes."""
    text, params = cypher(run, model, family, cutoff.date)
    return _value(family, model, store.run(text, params), cutoff)
