"""What a finished run is worth: its metrics, its seed-format export, outputs scored from elsewhere, and
paired comparisons of two runs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from chronokg.bench.question import Question
from chronokg.errors import InputError
from chronokg.eval.log import RunInfo, SampleLog, SampleRecord, latest, read_info, write_info
from chronokg.eval.profile import profile_for
from chronokg.eval.runner import ModelEntry, RunOptions, file_hash, load_questions, run_id
from chronokg.graph.store import GraphStore
from chronokg.metrics.spec import MetricValue, for_family
from chronokg.metrics.stats import Paired, paired_comparison


def run_samples(folder: Path) -> tuple[RunInfo, list[SampleRecord]]:
    info = read_info(folder)
    return info, [r for r in latest(folder / "samples.jsonl").values() if r.ok]


def run_questions(info: RunInfo) -> list[Question]:
    return load_questions([Path(q["path"]) for q in info.questions], RunOptions.model_validate(info.options).limit)


def metrics(samples: Sequence[SampleRecord], models: Sequence[str] | None = None,
            store: GraphStore | None = None, run: str | None = None) -> list[MetricValue]:
    """Every metric of the families in `samples`, per model; from the graph's Prediction nodes when a store
    and run id are given and the metric has a Cypher form, else from the samples."""
    families = sorted({s.family for s in samples})
    out = []
    for model in models or sorted({s.model for s in samples}):
        for spec in for_family(families):
            if store is not None and run is not None and spec.cypher is not None:
                out.append(spec.from_graph(store, run, model))
            else:
                out.append(spec.compute(samples, model))
    return out


def export_seed(folder: Path, out: Path) -> dict[Path, int]:
    """The run's samples in each seed's own result format (a file per family and model, as the seed names them)."""
    info, samples = run_samples(folder)
    by_id = {q.id: q for q in run_questions(info)}
    files: dict[str, list[dict[str, Any]]] = {}
    for record in samples:
        question = by_id.get(record.question_id)
        if question is None:
            continue
        result = profile_for(question.family).seed_result(question, record)
        if result is not None:
            files.setdefault(f"{question.family}/{result[0]}", []).append(result[1])
    written = {}
    for name, records in files.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        family, _, inner = name.partition("/")
        content = profile_for(family).seed_file(inner, records)
        path.write_text(json.dumps(content, indent=2, ensure_ascii=False), encoding="utf-8")
        written[path] = len(records)
    return written


def score_outputs(questions: Path, predictions: Path, model: str, protocol: str, log_root: Path) -> Path:
    """A run folder for outputs produced elsewhere: `{id, output}` JSON lines (or a JSON list of records with
    `chronokg_id`/`id` and `model_answer`/`output`, such as a seed's result file of chronokg questions)."""
    qs = {q.id: q for q in load_questions([questions], None)}
    text = predictions.read_text(encoding="utf-8")
    try:
        loaded = json.loads(text)
        items = loaded if isinstance(loaded, list) else [loaded]
    except json.JSONDecodeError:
        items = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise InputError(predictions, f"line {n}", f"broken JSON: {exc.msg}") from None
    options = RunOptions(protocol=protocol)
    described = [{"path": str(questions), "sha256": file_hash(questions)},
                 {"path": str(predictions), "sha256": file_hash(predictions)}]
    rid = run_id([ModelEntry(spec=model)], described, options)
    folder = log_root / rid
    folder.mkdir(parents=True, exist_ok=True)
    info = RunInfo(run_id=rid, models=[{"spec": model, "base_url": None}], questions=described[:1],
                   protocol=protocol, samples=1, options=options.model_dump(), status="scored")
    log = SampleLog(folder / "samples.jsonl")
    done = set(latest(folder / "samples.jsonl"))
    try:
        for n, item in enumerate(items, start=1):
            if not isinstance(item, dict):
                raise InputError(predictions, n, "expected an object with id and output")
            qid = item.get("id") or item.get("chronokg_id")
            output = item.get("output", item.get("model_answer"))
            if qid not in qs or output is None:
                raise InputError(predictions, n, f"no question {qid!r} in {questions.name}, or no output")
            question = qs[str(qid)]
            sample = int(item.get("sample", 0))
            if (question.id, model, sample) in done:
                continue
            profile = profile_for(question.family)
            answer = profile.extract(question, str(output), protocol)
            correct, score, fields = profile.score(question, answer, protocol)
            log.write(SampleRecord(question_id=question.id, model=model, sample=sample, family=question.family,
                                   variant=question.variant, output=str(output), answer=answer, correct=correct,
                                   score=score, fields=fields))
    finally:
        log.close()
    write_info(folder, info)
    return folder


class Comparison(BaseModel):
    family: str
    a: str
    b: str
    n: int
    accuracy_a: float
    accuracy_b: float
    difference: float
    a_only: int
    b_only: int
    p_mcnemar: float
    ci95: tuple[float, float]


def compare(a: Sequence[SampleRecord], b: Sequence[SampleRecord], model_a: str, model_b: str) -> list[Comparison]:
    """Paired comparison on the questions both runs answered (sample 0), per family."""
    first = {(r.question_id): r for r in a if r.model == model_a and r.sample == 0}
    second = {(r.question_id): r for r in b if r.model == model_b and r.sample == 0}
    common = sorted(set(first) & set(second))
    out = []
    for family in sorted({first[q].family for q in common}):
        ids = [q for q in common if first[q].family == family]
        xa = [bool(first[q].correct) for q in ids]
        xb = [bool(second[q].correct) for q in ids]
        result: Paired = paired_comparison(xa, xb)
        out.append(Comparison(family=family, a=model_a, b=model_b, n=len(ids), accuracy_a=sum(xa) / len(ids),
                              accuracy_b=sum(xb) / len(ids), difference=result.difference, a_only=result.a_only,
                              b_only=result.b_only, p_mcnemar=result.p_mcnemar, ci95=result.ci))
    return out
