"""What a finished run is worth: its metrics, its seed-format export, outputs scored from elsewhere (paired
comparisons of two runs: `metrics.compare`)."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chronokg.bench.export import IDS_FILE
from chronokg.bench.family import OURS
from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError, InputError
from chronokg.eval import cutoff, outputs
from chronokg.eval.log import RunInfo, SampleLog, SampleRecord, latest, read_info, write_info
from chronokg.eval.profile import profile_for
from chronokg.eval.runner import PROTOCOLS, ModelEntry, RunOptions, file_hash, load_questions, run_id
from chronokg.graph.store import GraphStore
from chronokg.metrics import cutoff as split
from chronokg.metrics.spec import MetricValue, for_family


def run_samples(folder: Path) -> tuple[RunInfo, list[SampleRecord]]:
    info = read_info(folder)
    return info, [r for r in latest(folder / "samples.jsonl").values() if r.ok]


def run_questions(info: RunInfo) -> list[Question]:
    """The run's questions, from its files as run.json names them (a path as given, so relative to where the run
    was made) and only with the content they had: a changed file's questions are not the ones its samples answer."""
    paths = []
    for described in info.questions:
        path = Path(described["path"])
        if not path.is_file():
            raise ChronoKGError(f"run {info.run_id}: its question file {path} is not there (a path as given when "
                                "the run was made: give the run from the folder it was made in, or restore the "
                                "file)")
        if file_hash(path) != described["sha256"]:
            raise ChronoKGError(f"run {info.run_id}: its question file {path} changed since the run was made (its "
                                "samples answer the questions as they were)")
        paths.append(path)
    return load_questions(paths, RunOptions.model_validate(info.options).limit)


def metrics(samples: Sequence[SampleRecord], models: Sequence[str] | None = None,
            store: GraphStore | None = None, run: str | None = None, info: RunInfo | None = None
            ) -> list[MetricValue]:
    """Every metric of the families in `samples`, per model; from the graph's Prediction nodes when a store
    and run id are given and the metric has a Cypher form, else from the samples. With the run's `info`, each
    model's pre/post-cutoff block (`<family>.cutoff`) under the cutoff the run recorded."""
    families = sorted({s.family for s in samples})
    if store is not None and run is not None:
        _held(store, run, models or sorted({s.model for s in samples}))
    cutoffs = cutoff.of_run(info, samples) if info is not None else {}
    out = []
    for model in models or sorted({s.model for s in samples}):
        for spec in for_family(families):
            if store is not None and run is not None and spec.cypher is not None:
                out.append(spec.from_graph(store, run, model))
            else:
                out.append(spec.compute(samples, model))
        if model not in cutoffs:
            continue
        for family in split.dated_families(families):
            if store is not None and run is not None:
                out.append(split.from_graph(store, run, model, family, cutoffs[model]))
            else:
                out.append(split.compute(samples, model, family, cutoffs[model]))
    return out


def _held(store: GraphStore, run: str, models: Sequence[str]) -> None:
    """Refuse to count over predictions the store does not hold: an empty count would read as a run that
    scored nothing."""
    rows = store.run("MATCH (p:Prediction)-[:IN_RUN]->(:Run {id: $r}) RETURN p.model AS model, count(p) AS n",
                     {"r": run})
    held = {r["model"]: r["n"] for r in rows}
    if not held:
        raise ChronoKGError(f"run {run}: the store {store.uri} holds no predictions of it (deleted, or run with "
                            "--no-write; chronokg eval runs list shows the runs it holds); leave out --from-graph "
                            "to count the run's own samples")
    missing = [m for m in models if m not in held]
    if missing:
        raise ChronoKGError(f"run {run}: the store holds no predictions of {', '.join(missing)} (it holds "
                            f"{', '.join(sorted(held))})")


def export_seed(folder: Path, out: Path) -> dict[Path, int]:
    """The run's samples in each seed's own result format (a file per family and model, as the seed names them):
    `.csv` names as CSV, others as JSON (the profile's `seed_file` content). A record holds only the seed's
    fields: what a profile adds under `OURS` (the chronokg question id, ...) goes to the side file
    `{family}/{family}_chronokg_ids.jsonl` (`file`, where the record landed, then those fields), as
    `bench export` does (listed with the files). Samples are taken in the run's question order (then model,
    sample), whatever order they were answered in; each file is written whole or not at all."""
    info, samples = run_samples(folder)
    _distinct_file_names(sorted({r.model for r in samples}))
    questions = run_questions(info)
    by_id = {q.id: q for q in questions}
    rank = {q.id: n for n, q in enumerate(questions)}
    by_family: dict[str, list[tuple[Question, SampleRecord]]] = {}
    for record in sorted(samples, key=lambda r: (rank.get(r.question_id, len(rank)), r.model, r.sample)):
        question = by_id.get(record.question_id)
        if question is not None:
            by_family.setdefault(question.family, []).append((question, record))
    files: dict[str, list[dict[str, Any]]] = {}
    for family, items in by_family.items():
        for name, row in profile_for(family).seed_results(items):
            files.setdefault(f"{family}/{name}", []).append(row)
    written = {}
    side: dict[str, list[dict[str, Any]]] = {}
    for name, records in files.items():
        family, _, inner = name.partition("/")
        profile = profile_for(family)
        positions = profile.seed_positions(inner, records)
        for row, position in zip(records, positions, strict=True):
            if OURS in row:
                side.setdefault(family, []).append({"file": inner, **position, **row.pop(OURS)})
        if name.endswith(".csv"):  # a header of every key in first-seen order, as pandas writes and reads it
            buffer = io.StringIO(newline="")
            writer = csv.DictWriter(buffer, fieldnames=list(dict.fromkeys(k for r in records for k in r)))
            writer.writeheader()
            writer.writerows(records)
            text = buffer.getvalue()
        else:
            text = json.dumps(profile.seed_file(inner, records), indent=2, ensure_ascii=False)
        written[_write_whole(out / name, text)] = len(records)
    for family, lines in side.items():
        ids = _write_whole(out / family / f"{family}_{IDS_FILE}", "".join(json.dumps(x) + "\n" for x in lines))
        written[ids] = len(lines)
    return written


def _distinct_file_names(models: Sequence[str]) -> None:
    """The seed files name a model as its spec with every other character than `A-Za-z0-9._-` made `_`: two
    models named alike would share one file, and `.` or `..` would name a folder."""
    seen: dict[str, str] = {}
    for model in models:
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", model)
        if name in (".", ".."):
            raise ChronoKGError(f"model {model!r} cannot name a seed file ({name!r} is a folder)")
        if name in seen:
            raise ChronoKGError(f"models {seen[name]!r} and {model!r} would share the seed files of {name!r}")
        seen[name] = model


def _write_whole(path: Path, text: str) -> Path:
    """`text` into `path` under a temporary name, renamed when whole (a failed export leaves no half file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    with tmp.open("w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    tmp.replace(path)
    return path


def _prediction_items(predictions: Path) -> list[Any]:
    """The records of a predictions file: an inspect_ai log, lm-eval's samples JSONL, CSV rows (a seed's result
    CSV), one JSON list, or JSON lines."""
    if outputs.is_inspect_log(predictions):
        return outputs.inspect_items(predictions)
    text = predictions.read_text(encoding="utf-8")
    if predictions.suffix.lower() == ".csv":
        return list(csv.DictReader(text.splitlines()))
    try:
        loaded = json.loads(text)
        items = loaded if isinstance(loaded, list) else [loaded]
    except json.JSONDecodeError:
        items = outputs.read_lines(predictions, text)
    return outputs.lm_eval_items(predictions, items) or items


def _question_ids(predictions: Path, items: Sequence[Any], qs: dict[str, Question]) -> list[str | None]:
    """The question of each record: its `chronokg_id` or `id` when that names one, else what a family's profile
    finds for the seed's own rows (`Profile.seed_question_ids`: e.g. a ConflictMedQA scenario and its factor)."""
    ids: list[str | None] = []
    for item in items:
        found = None
        if isinstance(item, dict):
            found = next((str(item[k]) for k in ("chronokg_id", "id") if str(item.get(k)) in qs), None)
        ids.append(found)
    missing = [n for n, qid in enumerate(ids) if qid is None and isinstance(items[n], dict)]
    if missing:
        for family in sorted({q.family for q in qs.values()}):
            members = [q for q in qs.values() if q.family == family]
            got = profile_for(family).seed_question_ids(predictions, [items[n] for n in missing], members)
            for n, qid in zip(missing, got, strict=True):
                ids[n] = ids[n] or qid
    return ids


def score_outputs(questions: Path, predictions: Path, model: str, protocol: str, log_root: Path,
                  cutoffs: dict[str, str] | None = None) -> Path:
    """A run folder for outputs produced elsewhere: `{id, output}` JSON lines, or a JSON list or CSV of records
    with `chronokg_id`/`id` and `output`/`model_answer`/`prediction` (a seed's result file of chronokg
    questions, including rows that name only what the seed knows, which the family's profile resolves).
    `cutoffs`: the model's declared knowledge cutoff ({model: ISO date}, `eval run --cutoff`'s form), recorded in
    the run and part of its id as on `eval run`; without it the run gets the cutoff rule's answer."""
    if protocol not in PROTOCOLS:
        raise ChronoKGError(f"--protocol {protocol!r}: give {' or '.join(PROTOCOLS)}")
    other = sorted(set(cutoffs or {}) - {model})
    if other:
        raise ChronoKGError(f"--cutoff {other[0]}=...: no model {other[0]!r} in these outputs (they are scored as "
                            f"--model {model})")
    qs = {q.id: q for q in load_questions([questions], None)}
    items = _prediction_items(predictions)
    ids = _question_ids(predictions, items, qs)
    planned: list[tuple[Question, int, str]] = []  # checked whole before anything is written
    answered: dict[tuple[str, int], int] = {}  # (question, sample) -> the record answering it
    for n, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            raise InputError(predictions, n, "expected an object with id and output")
        qid = ids[n - 1]
        output = next((item[k] for k in ("output", "model_answer", "prediction") if item.get(k) is not None), None)
        if qid is None or output is None:
            named = item.get("chronokg_id", item.get("id"))
            raise InputError(predictions, n, f"no question {named!r} in {questions.name}, or no output")
        sample = item.get("sample") or 0
        if isinstance(sample, bool) or not isinstance(sample, int | str) or not str(sample).isdigit():
            raise InputError(predictions, n, f"sample must be a whole number from 0, got {sample!r}")
        if (qid, int(sample)) in answered:  # two outputs for one sample: which one counts is not ours to guess
            raise InputError(predictions, n, f"question {qid!r} sample {int(sample)} is answered by record "
                                             f"{answered[(qid, int(sample))]} already")
        answered[(qid, int(sample))] = n
        planned.append((qs[qid], int(sample), str(output)))
    options = RunOptions(protocol=protocol, cutoffs=dict(cutoffs or {}))
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
        for question, sample, output in planned:
            if (question.id, model, sample) in done:
                continue
            profile = profile_for(question.family)
            answer = profile.extract(question, output, protocol)
            correct, score, fields = profile.score(question, answer, protocol)
            log.write(SampleRecord(question_id=question.id, model=model, sample=sample, family=question.family,
                                   variant=question.variant, output=output, answer=answer, correct=correct,
                                   score=score, fields=fields))
    finally:
        log.close()
    info.cutoffs = {spec: c.model_dump(mode="json") for spec, c in cutoff.resolve(
        info.models, [r for r in latest(folder / "samples.jsonl").values() if r.ok], options.cutoffs).items()}
    write_info(folder, info)
    return folder
