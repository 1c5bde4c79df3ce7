"""The demo's notes on its reference baselines and its later-release section: the baselines' run, made on the
corpus's first release, re-scored against the corpus's later release (a newer guideline superseding a
recommendation the first release holds as still in force), asking no model: verdicts flip from right to wrong.

The later release is loaded into an in-memory copy of the corpus, so the demo store itself stays the first
release (and `chronokg demo --keep` changes nothing)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.console import Console

from chronokg.cli.render import Format, emit, load_summary, say

FROZEN = "baseline/frozen:2012"


def frozen_note(samples: Sequence[Any]) -> str:
    """Why the frozen baseline's cutoff is estimated where it is, and its probe patterns, from the corpus's
    guideline years and the run's own metrics."""
    from chronokg.demo.corpus import read_corpus
    from chronokg.metrics.tempomed import ACCURACY_BY_YEAR, CONSISTENCY

    freeze = int(FROZEN.rsplit(":", 1)[1])
    years = sorted({g.year for g in read_corpus().guidelines})
    known = [y for y in years if y <= freeze]
    later = [y for y in years if y > freeze]
    estimate = ACCURACY_BY_YEAR.compute(samples, FROZEN).details.get("cutoff_estimate")
    patterns = CONSISTENCY.compute(samples, FROZEN).groups
    changes = sum(int(g["count"]) for g in patterns.values())
    counts = ", ".join(f"{name} {int(g['count'])}" for name, g in patterns.items() if g["count"])
    newest = known[-1] if known else None
    gap = f" (none from {newest + 1} to {freeze})" if newest is not None and newest < freeze else ""
    after = f" and fails from {later[0]}" if later else ""
    return (f"{FROZEN} answers from the guideline versions issued by {freeze}: the newest in the corpus is from "
            f"{newest}{gap}, so its accuracy by guideline year holds up to {newest}{after}, and its cutoff is "
            f"estimated at {estimate}, the last year the data can show. Its probe patterns over the {changes} "
            f"changes probed: {counts}.")


class FlipRow(BaseModel):
    model: str
    now_wrong: int
    now_right: int
    not_scorable: int
    asked_about: str


def show_later_release(console: Console, show: Callable[[str, str], None], run: Path, tmp: Path) -> None:
    """Load the corpus's later release over an in-memory copy of the first and re-score `run` against it."""
    from chronokg.bench import snapshot
    from chronokg.bench.question import read_jsonl
    from chronokg.demo.corpus import load_demo, load_later_release, read_later
    from chronokg.eval.rescore import rescore
    from chronokg.graph.kglite_store import KgliteStore

    later = read_later()
    what = "; ".join(f"{v.guideline} supersedes the recommendation on {v.decision}" for v in later.versions)
    show(f"a later release of the corpus: {what}",
         f"Release {later.source.version} ({later.source.release_date}), over an in-memory copy of the first: the "
         "recommendation the first release holds as still in force is retracted as of the later release and "
         "restated as ended. The reference baselines' run above is re-scored against it, asking no model.")
    store = KgliteStore(":memory:")
    load_demo(store)
    load_summary(console, load_later_release(store))
    result = rescore(run, tmp / "rescored", store, snapshot.current(store))
    say(console, "eval rescore: ", result.summary())
    years: dict[str, Any] = {q.id: q.metadata.get("question_target_year") or q.target_date
                             for q in read_jsonl(Path(result.folder) / "questions.jsonl")}
    rows = []
    for model in sorted({f.model for f in result.flips}):
        flips = [f for f in result.flips if f.model == model]
        asked: dict[str, list[Any]] = {}
        for f in flips:
            asked.setdefault(f.variant, []).append(years.get(f.question_id))
        rows.append(FlipRow(
            model=model, now_wrong=sum(1 for f in flips if f.new_correct is False),
            now_right=sum(1 for f in flips if f.new_correct is True),
            not_scorable=sum(1 for f in flips if f.new_correct is None),
            asked_about="; ".join(f"{variant} {_span(ys)}" for variant, ys in sorted(asked.items()))))
    emit(console, rows, Format.table, title="verdicts flipped by the later release, per model")


def _span(values: list[Any]) -> str:
    years = sorted({str(v) for v in values if v is not None})
    if not years:
        return ""
    return years[0] if len(years) == 1 else f"{years[0]}–{years[-1]}"
