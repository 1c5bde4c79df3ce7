"""A chronokg run folder as inspect_ai logs (`chronokg eval export --format inspect RUN --out DIR`): one log per
model and family, written with inspect's own models and writer, so `inspect view` opens it and `inspect score`
re-scores it with chronokg's scorer.

Each sample's score is the run's own (`samples.jsonl`: the family's score, its answer and fields), its metadata
what the inspect tasks give (family, variant, labels, the item's dates) and the stored outcome the scorer reads.
The results hold inspect's accuracy and stderr and, for a model with a knowledge cutoff in `run.json`, the cutoff
split (`cutoff_split`), all computed by inspect's metric functions over the epoch-reduced scores. A re-scored run
(`eval rescore`) says what it was re-scored from, as known when, and its flips (in the log's `eval.metadata`);
its samples whose key gives no answer now are there, unscored (inspect's NaN score) with the reason, and a
sample whose request failed is there with its error.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalMetric,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
    write_eval_log,
)
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    ModelOutput,
)
from inspect_ai.scorer import MetricProtocol, SampleScore, Score, accuracy, mean_score, stderr

from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError
from chronokg.eval import cutoff
from chronokg.eval.item_dates import Facts, stored_facts
from chronokg.eval.log import RunInfo, SampleRecord, latest, read_info
from chronokg.eval.rescore import FLIPS
from chronokg.eval.runner import load_questions
from chronokg.integrations.inspect_scoring import NOT_SCORABLE, OUTCOME, split_fields, split_values
from chronokg.integrations.inspect_tasks import sample_metadata
from chronokg.metrics.runs import run_questions

SCORER = "chronokg_scorer"
METRICS = ("accuracy", "stderr", "chronokg/cutoff_split")


def export_run(folder: Path, out: Path) -> list[Path]:
    """Write the run's logs into `out` (`<time>_chronokg-<family>_<run>-<model>.eval`, inspect's own naming:
    time, task, id); all or none: built in a temporary folder beside `out`, then moved in."""
    info = read_info(folder)
    records = list(latest(folder / "samples.jsonl").values())
    if not records:
        raise ChronoKGError(f"{folder}: the run has no samples to export")
    by_id = {q.id: q for q in run_questions(info)}
    files = {q.id: str(Path(f["path"]).resolve()) for f in info.questions
             for q in load_questions([Path(f["path"])], None)}  # the file each question is in, for re-scoring
    missing = sorted({r.question_id for r in records} - set(by_id))
    if missing:
        raise ChronoKGError(f"{folder}: {len(missing):,} samples answer questions its question files do not hold "
                            f"(first: {missing[0]})")
    flips = json.loads((folder / FLIPS).read_text(encoding="utf-8")) if (folder / FLIPS).is_file() else None
    cutoffs = cutoff.of_run(info, [r for r in records if r.ok])
    facts = stored_facts(info.store, list(by_id.values()), required=False)  # the items' dates, as the tasks read
    out = out.resolve()
    if out.exists() and not out.is_dir():
        raise ChronoKGError(f"--out {out}: a file, not a folder")
    if not out.name:
        raise ChronoKGError(f"--out {out}: give a folder below it (the logs are built in a folder beside --out)")
    part = out.with_name(out.name + ".part")
    if part.is_dir() and any(not (p.is_file() and p.suffix == ".eval") for p in part.iterdir()):
        raise ChronoKGError(f"{part}: holds other files than logs; the logs are built there (move it away)")
    shutil.rmtree(part, ignore_errors=True)  # a killed export's logs
    part.mkdir(parents=True)
    written = []
    models = [str(m["spec"]) for m in info.models]
    try:
        for model in models:
            for family in sorted({r.family for r in records if r.model == model}):
                mine = sorted((r for r in records if r.model == model and r.family == family),
                              key=lambda r: (r.question_id, r.sample))
                log = run_log(info, model, family, mine, {q: (by_id[q], files[q]) for q in by_id},
                              cutoffs.get(model), flips, facts)
                name = f"{_stamp(log.eval.created)}_chronokg-{family}_{info.run_id}-{_safe(model, models)}.eval"
                write_eval_log(log, str(part / name), format="eval")
                written.append(name)
        out.mkdir(parents=True, exist_ok=True)
        for name in written:
            (part / name).replace(out / name)
    finally:
        shutil.rmtree(part, ignore_errors=True)
    return [out / name for name in written]


def run_log(info: RunInfo, model: str, family: str, records: Sequence[SampleRecord],
            questions: dict[str, tuple[Question, str]], cut: cutoff.Cutoff | None,
            flips: list[dict[str, Any]] | None, facts: Facts | None = None) -> EvalLog:
    """One model's samples of one family as an inspect log (`questions`: each question and the file it is in)."""
    day = cut.date if cut is not None else None
    samples = [_sample(r, *questions[r.question_id], day, info.protocol, facts) for r in records]
    path = questions[records[0].question_id][1]
    options = {"questions": path, "family": family, "protocol": info.protocol,
               "cutoff": day.isoformat() if day else None}
    meta: dict[str, Any] = {"chronokg_run": info.run_id, "status": info.status, "snapshot": info.snapshot,
                            "store": info.store, "cutoff": cut.model_dump(mode="json") if cut else None}
    if info.rescored_from is not None:
        meta |= {"rescored_from": info.rescored_from, "known_at": info.known_at or "now",
                 "flips": [f for f in flips or [] if f.get("model") == model and f.get("family") == family]}
    started = _iso(info.started) or min(_iso(r.at) for r in records)
    finished = _iso(info.finished) or max(_iso(r.at) for r in records)
    name = _safe(model, [str(m["spec"]) for m in info.models])
    spec = EvalSpec(
        eval_id=f"{info.run_id}-{family}-{name}", run_id=info.run_id, created=started,
        task=f"chronokg/{family}", task_registry_name=f"chronokg/{family}", task_args=options,
        dataset=EvalDataset(name=f"chronokg-{family}", location=path, samples=len({r.question_id for r in records}),
                            sample_ids=sorted({r.question_id for r in records})),
        model=model, config=EvalConfig(epochs=max(r.sample for r in records) + 1, epochs_reducer=["mean"]),
        packages={"chronokg": info.chronokg} if info.chronokg else {}, metadata=meta,
        scorers=_scorers(options))
    return EvalLog(status="success", eval=spec, results=_results(samples), samples=samples,
                   stats=EvalStats(started_at=started, completed_at=max(started, finished)))


def _scorers(options: dict[str, Any]) -> Any:
    """chronokg's scorer and its metrics as the log records them (validated into inspect's `EvalScorer`, which
    inspect_ai.log does not export), so `inspect score LOG` re-creates it."""
    return [{"name": f"chronokg/{SCORER}", "options": options, "metrics": [{"name": n} for n in METRICS]}]


def _sample(record: SampleRecord, question: Question, path: str, day: dt.date | None, protocol: str,
            facts: Facts | None) -> EvalSample:
    at = f"{question.id}-{record.sample + 1}"  # message ids made from the sample: exporting again reads the same
    messages: list[ChatMessage] = [ChatMessageSystem(id=f"{at}-system", content=question.system)
                                   ] if question.system else []
    messages.append(ChatMessageUser(id=f"{at}-user", content=question.input))
    output = record.output or ""
    answer = ChatMessageAssistant(id=f"{at}-assistant", content=output, model=record.model, source="generate")
    outcome = {"answer": record.answer, "correct": record.correct, "score": record.score, "fields": record.fields,
               "steps": record.steps, "questions": path, "protocol": protocol}
    error, scores = None, None
    if record.error is not None and record.error.startswith(NOT_SCORABLE):
        scores = {SCORER: Score.unscored(reason=NOT_SCORABLE, answer=record.answer, explanation=record.error,
                                         metadata=record.fields or None)}
    elif record.error is not None:
        error = EvalError(message=record.error, traceback="", traceback_ansi="")
    else:
        fields = dict(record.fields)
        value = float(record.score) if record.score is not None else 0.0
        if day is not None:
            fields |= split_fields(fields, day, value == 1.0)
        scores = {SCORER: Score(value=value, answer=record.answer, explanation=output, metadata=fields or None)}
    return EvalSample(id=question.id, epoch=record.sample + 1, input=list(messages), target=question.target,
                      choices=[c.text for c in question.choices] or None,
                      messages=[*messages, answer],
                      output=ModelOutput(model=record.model,
                                         choices=[ChatCompletionChoice(message=answer, stop_reason="stop")]),
                      scores=scores,
                      metadata={**sample_metadata(question, facts),
                                OUTCOME: json.loads(json.dumps(outcome, default=str))},
                      error=error)


def _results(samples: Sequence[EvalSample]) -> EvalResults:
    """inspect's accuracy, stderr and chronokg's cutoff split over the scores reduced per sample by their mean
    (inspect's own reducer), as `inspect eval` computes them."""
    by_id: dict[str, list[Score]] = {}
    meta: dict[str, dict[str, Any]] = {}
    for s in samples:
        score = (s.scores or {}).get(SCORER)
        if score is not None and not _nan(score):
            by_id.setdefault(str(s.id), []).append(score)
            meta[str(s.id)] = s.metadata
    reduce = mean_score()
    reduced = [SampleScore(score=reduce(scores), sample_id=sid, sample_metadata=meta[sid], scorer=SCORER)
               for sid, scores in by_id.items()]
    values: dict[str, Any] = {}
    if reduced:
        values = {name: cast(MetricProtocol, make())(reduced) for name, make in (("accuracy", accuracy),
                                                                                  ("stderr", stderr))}
        extra = split_values(reduced)
        values |= extra if isinstance(extra, dict) else {}
    metrics = {name: EvalMetric(name=name, value=float(v)) for name, v in values.items()}
    unscored = sum(1 for s in samples if s.scores and _nan(s.scores[SCORER]))
    total = EvalScore(name=SCORER, scorer=SCORER, reducer="mean", scored_samples=len(reduced),
                      unscored_samples=unscored, metrics=metrics)
    completed = sum(1 for s in samples if s.error is None)
    return EvalResults(total_samples=len(samples), completed_samples=completed, scores=[total])


def _nan(score: Score) -> bool:
    return isinstance(score.value, float) and score.value != score.value


def _iso(text: str | None) -> str:
    """A run.json time as inspect's UTC ISO time ('' when the run recorded none)."""
    if not text:
        return ""
    when = dt.datetime.fromisoformat(text)
    return (when if when.tzinfo else when.replace(tzinfo=dt.UTC)).isoformat(timespec="seconds")


def _stamp(created: str) -> str:
    """inspect's file-name time (`2026-05-12T10-00-00+00-00`), from the run's start (else its first sample): the
    same run exports to the same names."""
    return created.replace(":", "-")


def _plain(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "-", model).strip("-") or "model"


def _safe(model: str, models: Sequence[str]) -> str:
    """The model's name as a file name's part; where another model of the run reads the same (`gpt/4`, `gpt-4`),
    a digest of the whole name is added, so each model keeps its own log."""
    plain = _plain(model)
    if sum(1 for m in models if _plain(m) == plain) > 1:
        plain += "-" + hashlib.sha256(model.encode("utf-8")).hexdigest()[:8]
    return plain
