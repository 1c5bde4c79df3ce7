"""`chronokg export lm-eval --out DIR`: one lm-evaluation-harness task per family, run as is with
`lm_eval --include_path DIR --tasks chronokg_<family> ...`.

Each task is `generate_until` over the family's canonical records (`<family>.jsonl` beside its YAML): the exact
prompt chronokg sends (`metadata.prompt`; the system message as the task's `description`, which lm-eval sends as
the system turn under `--apply_chat_template`), the profile's sampling settings under the chosen protocol, the
family's answer extraction as the filter and its scoring rule as `process_results` (both in `utils.py`, which
calls chronokg's own extractor and scorer, so chronokg must be installed where lm-eval runs). lm-eval's
`--log_samples` output goes back through `chronokg eval score`.

Every doc carries the item's dates (`chronokg.eval.item_dates`; read from the store's facts where the command has
the questions' store, else from their evidence rows), so a reader of lm-eval's samples can split by date. Given a
knowledge cutoff (`export lm-eval --cutoff DATE`), the task also reports the cutoff split as lm-eval metrics, with
chronokg's own sides (`chronokg.metrics.cutoff`): `acc_pre_cutoff` and `acc_post_cutoff` (the mean of `acc` over
the items on that side), `items_pre_cutoff`, `items_post_cutoff` and `stale_post_cutoff` (sums). An item on neither
side (no dated gold answer) returns none of those keys, and lm-eval aggregates each metric over the docs that
returned it, so it counts in `acc` alone.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError
from chronokg.eval.item_dates import Facts, iso, item_dates
from chronokg.eval.profile import profile_for

UTILS = '''"""chronokg's extraction (filter) and scoring (process_results) for lm-evaluation-harness; written by
`chronokg export lm-eval`. Needs chronokg installed."""
import datetime as dt
import json
from pathlib import Path

from chronokg.bench.question import Question
from chronokg.eval.profile import profile_for
from chronokg.metrics.cutoff import is_stale, side_of

PROTOCOL = {protocol!r}
CUTOFF = {cutoff!r}  # the knowledge cutoff the split is made at (ISO date), or None: no split
_BY_ID = {{}}


def _question(doc):
    """The question as written, read from questions.jsonl by the doc's id: the doc lm-eval hands over has been
    through datasets/arrow, which turns ISO dates into datetimes and gives every record every row's keys."""
    if not _BY_ID:
        with (Path(__file__).parent / "questions.jsonl").open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    record = json.loads(line)
                    _BY_ID[record["id"]] = Question.from_canonical(record)
    return _BY_ID[doc["id"]]


def extract(resps, docs):
    """The family's answer extraction, one filtered answer per response ("" where it finds none)."""
    out = []
    for responses, doc in zip(resps, docs):
        q = _question(doc)
        out.append([profile_for(q.family).extract(q, r, PROTOCOL) or "" for r in responses])
    return out


def process_results(doc, results):
    """The family's score of the extracted answer (chronokg's `correct`); under a cutoff, the same score again
    under the side of the cutoff the item is on (none for an item on neither side: it counts in `acc` alone)."""
    q = _question(doc)
    correct, _, fields = profile_for(q.family).score(q, results[0] or None, PROTOCOL)
    out = {{"acc": float(bool(correct))}}
    if CUTOFF is not None:
        day = dt.date.fromisoformat(CUTOFF)
        side = side_of(fields, day)
        if side in ("pre", "post"):
            out[f"acc_{{side}}_cutoff"] = float(bool(correct))
            out[f"items_{{side}}_cutoff"] = 1
        if side == "post":
            out["stale_post_cutoff"] = int(is_stale(fields, correct, day))
    return out


def total(items):
    """A count over the docs that returned the metric."""
    return sum(items)
'''

def _yaml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def _metric(name: str, aggregation: str, higher: str) -> list[str]:
    return [f"  - metric: {name}", f"    aggregation: {aggregation}", f"    higher_is_better: {higher}"]


def task_yaml(name: str, data: Path, question: Question, protocol: str, cutoff: dt.date | None = None) -> str:
    """The task's YAML: the data file, the prompt and system templates, generation settings, filter, metrics."""
    config = profile_for(question.family).config(question, protocol, 0)
    gen: dict[str, Any] = {"until": list(config.stop or []), "do_sample": bool(config.temperature),
                           "temperature": config.temperature or 0.0}
    if config.top_p is not None:
        gen["top_p"] = config.top_p
    if config.max_tokens is not None:
        gen["max_gen_toks"] = config.max_tokens
    lines = [
        f"task: {name}",
        "dataset_path: json",
        "dataset_kwargs:",
        "  data_files:",
        f"    test: {_yaml_string(str(data.resolve()))}",
        "test_split: test",
        "output_type: generate_until",
        'doc_to_text: "{{metadata.prompt}}"',
        'doc_to_target: "{{metadata.target_label}}"',
        'description: "{{metadata.system or \'\'}}"',
        'target_delimiter: ""',
        "num_fewshot: 0",
        f"generation_kwargs: {json.dumps(gen)}",
        "filter_list:",
        "  - name: chronokg_extract",
        "    filter:",
        "      - function: custom",
        "        filter_fn: !function utils.extract",
        "      - function: take_first",
        "process_results: !function utils.process_results",
        "metric_list:",
        *_metric("acc", "mean", "true"),
    ]
    if cutoff is not None:
        lines += [*_metric("acc_pre_cutoff", "mean", "true"), *_metric("acc_post_cutoff", "mean", "true"),
                  *_metric("items_pre_cutoff", "!function utils.total", "null"),
                  *_metric("items_post_cutoff", "!function utils.total", "null"),
                  *_metric("stale_post_cutoff", "!function utils.total", "false")]
    lines += ["metadata:", "  version: 1.0", f"  chronokg_protocol: {protocol}"]
    if cutoff is not None:
        lines.append(f"  chronokg_cutoff: {cutoff.isoformat()}")
    return "\n".join(lines) + "\n"


def _tasks(questions: Iterable[Question], protocol: str) -> dict[str, list[Question]]:
    """Questions per task: one per family, split by variant where a family's settings differ between its questions
    (BenchAge's answer length per dataset), since a task has one set of generation settings."""
    groups: dict[tuple[str, str], list[Question]] = {}
    for q in questions:
        gen = profile_for(q.family).config(q, protocol, 0).model_dump_json()
        groups.setdefault((q.family, gen), []).append(q)
    families = [family for family, _ in groups]
    out: dict[str, list[Question]] = {}
    for (family, _), items in groups.items():
        name = f"chronokg_{family}"
        if families.count(family) > 1:
            name += "_" + "".join(ch if ch.isalnum() else "_" for ch in items[0].variant.split("/")[0])
        out.setdefault(name, []).extend(items)
    return out


def export_lm_eval(questions: Iterable[Question], out: Path, protocol: str = "seed",
                   cutoff: dt.date | None = None, facts: Facts | None = None) -> dict[str, int]:
    """Write a task folder per family under `out` (`chronokg_<family>/`: YAML, data, utils.py), each written
    whole under a temporary name and renamed into place; returns the questions per task. Each data line is the
    canonical record and the item's dates (`chronokg.eval.item_dates.DATE_FIELDS`, from the store's fact dates
    `facts` where given); `cutoff` adds the cutoff split's metrics."""
    if protocol not in ("seed", "chronokg"):
        raise ChronoKGError(f"--protocol {protocol!r}: give seed or chronokg")
    tasks = _tasks(questions, protocol)
    if not tasks:
        raise ChronoKGError("no questions to export")
    if out.exists() and not out.is_dir():
        raise ChronoKGError(f"--out {out}: a file, not a folder")
    out.mkdir(parents=True, exist_ok=True)
    for name, items in sorted(tasks.items()):
        final, tmp = out / name, out / f".{name}.part"
        if tmp.exists():
            _remove(tmp)
        tmp.mkdir()
        data = final / "questions.jsonl"
        with (tmp / data.name).open("w", encoding="utf-8") as fh:
            for q in items:
                fh.write(json.dumps(q.canonical() | iso(item_dates(q, facts)), ensure_ascii=False) + "\n")
        (tmp / f"{name}.yaml").write_text(task_yaml(name, data, items[0], protocol, cutoff), encoding="utf-8")
        (tmp / "utils.py").write_text(UTILS.format(protocol=protocol, cutoff=cutoff.isoformat() if cutoff else None),
                                      encoding="utf-8")
        if final.exists():
            _remove(final)
        tmp.rename(final)
    return {name: len(items) for name, items in sorted(tasks.items())}


def _remove(folder: Path) -> None:
    import shutil

    shutil.rmtree(folder)
