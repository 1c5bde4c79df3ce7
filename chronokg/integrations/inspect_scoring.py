"""chronokg's inspect scorer and its cutoff metric: the family's own score, split by a knowledge cutoff, and
re-scored against the store without asking the model again.

* `cutoff=DATE`: every score carries the cutoff, its side and whether a wrong answer is stale
  (`chronokg.metrics.cutoff`: pre when the gold answer's fact became valid on or before the cutoff, post
  after it, stale a wrong post-cutoff answer whose chosen fact was in force on the cutoff date), and the metric
  `cutoff_split` reports accuracy on each side, the items on each side and the stale count from them.
* `store=URI` and/or `known_at=now|DATE`: each question's answer key is re-run against the store (as known now,
  or as the releases known on DATE said it) by `chronokg.eval.rescore.new_targets`, the derivation `chronokg eval
  rescore` makes, and the stored answer is scored against the target it gives; a question whose key gives no
  answer among its options is unscored (inspect's NaN score, which no metric counts), as `eval rescore` marks it
  failed. `inspect score LOG` re-creates the scorer with the same arguments, so after a newer release is loaded
  it flips what `eval rescore` flips.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    Value,
    accuracy,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState
from inspect_ai.util import registry_info

from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError
from chronokg.eval.cutoff import Cutoff
from chronokg.eval.log import SampleRecord
from chronokg.graph.dates import parse_date
from chronokg.metrics import cutoff as split

OUTCOME = "chronokg"  # the key of the sample's outcome in the task state's metadata
CUTOFF = "cutoff"  # the keys a score's metadata carries under `cutoff=`
SIDE = "cutoff_side"
STALE = "stale"
NOT_SCORABLE = "not scorable"  # the reason of an unscored sample (its key gives no answer among the options)

F = TypeVar("F", bound=Callable[..., Any])


def ours(register: Callable[..., Any], **kwargs: Any) -> Callable[[F], F]:
    """inspect's `register` decorator (`task`, `scorer`, `metric`) with `kwargs`, the object always named
    "chronokg/<name>". inspect namespaces a package's objects only when it takes the package for an installed one;
    with a checkout's root on sys.path the `chronokg.egg-info` the editable install leaves there hides the install's
    record, and the names would be bare: `chronokg/tempomed`, and the scorer a log records, not found again."""

    def named(func: F) -> F:
        made: F = register(**kwargs)(func) if kwargs else register(func)
        if registry_info(made).name.startswith("chronokg/"):
            return made
        again: F = register(name=f"chronokg/{func.__name__}", **kwargs)(func)
        return again

    return named


def day(text: str, what: str) -> dt.date:
    try:
        return parse_date(text)[0]
    except ValueError as exc:
        raise ChronoKGError(f"{what}={text!r}: {exc}") from None


def split_fields(fields: dict[str, Any], cutoff: dt.date, correct: bool) -> dict[str, Any]:
    """The cutoff, the side of the sample and whether it is stale, beside the family's fields."""
    record = SampleRecord(question_id="", model="", fields=fields, correct=correct)
    rows = split.count([record], cutoff)
    return {CUTOFF: cutoff.isoformat(), SIDE: rows[0]["side"], STALE: bool(rows[0]["stale"])}


def split_values(scores: list[SampleScore]) -> Value:
    """Accuracy before and after the cutoff the scores carry, the items on each side, the stale and the undated
    answers; nothing when no score carries a cutoff."""
    metas = [s.score.metadata or {} for s in scores]
    cut = next((m[CUTOFF] for m in metas if m.get(CUTOFF)), None)
    if cut is None:
        return {}
    records = [SampleRecord(question_id=str(s.sample_id), model="", fields=s.score.metadata or {},
                            correct=s.score.as_float() == 1.0)
               for s in scores if not _unscored(s.score)]
    date = dt.date.fromisoformat(str(cut))
    block, details = split.finish(split.count(records, date), Cutoff(date=date, estimated=False, source="cutoff="))
    pre, post = block["pre"], block["post"]
    return {"pre_cutoff_accuracy": _num(pre["accuracy"]), "post_cutoff_accuracy": _num(post["accuracy"]),
            "stale_n": post["stale"], "pre_cutoff_n": pre["n"], "post_cutoff_n": post["n"],
            "undated_n": details["undated"]}


def _num(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def _unscored(score: Score) -> bool:
    return isinstance(score.value, float) and math.isnan(score.value)


@ours(metric)
def cutoff_split() -> Metric:
    """chronokg's pre/post-cutoff split over the scores (see the module docstring)."""

    def compute(scores: list[SampleScore]) -> Value:
        return split_values(scores)

    return compute


class Rederived:
    """Questions with their answer keys re-run against the store, per questions file and family: the first score
    asks, for every question of its file and family at once, as `eval rescore` runs a run's questions."""

    def __init__(self, store: str | None, known_at: str) -> None:
        self.store = store
        self.known_at = None if known_at == "now" else day(known_at, "known_at")
        self.done: dict[tuple[str, str | None], dict[str, Question]] = {}

    def get(self, path: str, family: str | None, question_id: str) -> Question | None:
        if (path, family) not in self.done:
            self.done[(path, family)] = {q.id: q for q in self._run(Path(path), family)}
        return self.done[(path, family)].get(question_id)

    def _run(self, path: Path, family: str | None) -> Sequence[Question]:
        from chronokg.eval.rescore import new_targets
        from chronokg.eval.runner import load_questions

        chosen = [q for q in load_questions([path], None) if family in (None, q.family)]
        with open_reader(self.store) as store:
            return new_targets(store, chosen, self.known_at)[0]

    def when(self) -> str:
        return f"as known at {self.known_at}" if self.known_at else "now"


def open_reader(uri: str | None) -> Any:
    """The store `uri` (default: the settings' store), read-only; one clear error when its file is not there."""
    from chronokg.graph.open import open_store
    from chronokg.settings import Settings
    from chronokg.store_uri import StoreURI

    settings = Settings()
    file = StoreURI.parse(uri or settings.store).file
    if file is not None and not Path(file).exists():
        raise ChronoKGError(f"store {uri or settings.store}: no such store file (give -T store=URI)")
    return open_store(uri, settings, read_only=True)


@ours(scorer, metrics=[accuracy(), stderr(), cutoff_split()])
def chronokg_scorer(questions: str | None = None, family: str | None = None, protocol: str | None = None,
                    store: str | None = None, known_at: str | None = None, cutoff: str | None = None) -> Scorer:
    """The family's own score of the sample (computed by the solver, which knows every call's output); with
    `store` or `known_at`, re-scored against the answer key re-run on the store; with `cutoff`, split by it.
    `questions`, `family` and `protocol` default to what the sample's stored outcome names (so `inspect score LOG
    --scorer chronokg/chronokg_scorer -S known_at=now` needs nothing else)."""
    cut = day(cutoff, "cutoff") if cutoff else None
    again = Rederived(store, known_at or "now") if store is not None or known_at is not None else None

    async def score(state: TaskState, target: Target) -> Score:
        got = state.metadata.get(OUTCOME) or {}
        answer, value, fields = got.get("answer"), got.get("score"), dict(got.get("fields") or {})
        if again is not None:
            path = questions or got.get("questions")
            if not path or OUTCOME not in state.metadata:
                return Score.unscored(reason=NOT_SCORABLE, answer=answer, explanation="no stored chronokg answer "
                                      "and questions file: not a sample of a chronokg task (give -S questions=FILE)")
            question = again.get(str(path), family or state.metadata.get("family"), str(state.sample_id))
            if question is None:
                return Score.unscored(reason=NOT_SCORABLE, answer=answer,
                                      explanation=f"no question {state.sample_id} in {path}")
            if question.metadata.get("rescored_target") is None:
                return Score.unscored(reason=NOT_SCORABLE, answer=answer, metadata=fields,
                                      explanation=f"not scorable: its answer key gives no answer among the options "
                                                  f"{again.when()}")
            from chronokg.eval.profile import profile_for

            how = protocol or got.get("protocol") or "seed"
            _, value, fields = profile_for(question.family).score(question, answer, how)
            fields = {**fields, "rescored_target": question.target, "known_at": again.when()}
        number = float(value) if value is not None else 0.0
        if cut is not None:
            fields |= split_fields(fields, cut, number == 1.0)
        return Score(value=number, answer=answer, explanation=state.output.completion, metadata=fields or None)

    return score
