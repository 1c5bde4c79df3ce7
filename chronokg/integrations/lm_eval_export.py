"""`chronokg export lm-eval --out DIR`: one lm-evaluation-harness task per family, run as is with
`lm_eval --include_path DIR --tasks chronokg_<family> ...`.

Each task is `generate_until` over the family's canonical records (`<family>.jsonl` beside its YAML): the exact
prompt chronokg sends (`metadata.prompt`; the system message as the task's `description`, which lm-eval sends as
the system turn under `--apply_chat_template`), the profile's sampling settings under the chosen protocol, the
family's answer extraction as the filter and its scoring rule as `process_results` (both in `utils.py`, which
calls chronokg's own extractor and scorer, so chronokg must be installed where lm-eval runs). lm-eval's
`--log_samples` output goes back through `chronokg eval score`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError
from chronokg.eval.profile import profile_for

UTILS = '''"""chronokg's extraction (filter) and scoring (process_results) for lm-evaluation-harness; written by
`chronokg export lm-eval`. Needs chronokg installed."""
import json
from pathlib import Path

from chronokg.bench.question import Question
from chronokg.eval.profile import profile_for

PROTOCOL = {protocol!r}
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
    """The family's score of the extracted answer (chronokg's `correct`)."""
    q = _question(doc)
    correct, _, _ = profile_for(q.family).score(q, results[0] or None, PROTOCOL)
    return {{"acc": float(bool(correct))}}
'''


def _yaml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a YAML double-quoted scalar


def task_yaml(name: str, data: Path, question: Question, protocol: str) -> str:
    """The task's YAML: the data file, the prompt and system templates, generation settings, filter, metric."""
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
        "  - metric: acc",
        "    aggregation: mean",
        "    higher_is_better: true",
        "metadata:",
        "  version: 1.0",
        f"  chronokg_protocol: {protocol}",
    ]
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


def export_lm_eval(questions: Iterable[Question], out: Path, protocol: str = "seed") -> dict[str, int]:
    """Write a task folder per family under `out` (`chronokg_<family>/`: YAML, data, utils.py), each written
    whole under a temporary name and renamed into place; returns the questions per task."""
    if protocol not in ("seed", "chronokg"):
        raise ChronoKGError(f"--protocol {protocol!r}: give seed or chronokg")
    tasks = _tasks(questions, protocol)
    if not tasks:
        raise ChronoKGError("no questions to export")
    out.mkdir(parents=True, exist_ok=True)
    for name, items in sorted(tasks.items()):
        final, tmp = out / name, out / f".{name}.part"
        if tmp.exists():
            _remove(tmp)
        tmp.mkdir()
        data = final / "questions.jsonl"
        with (tmp / data.name).open("w", encoding="utf-8") as fh:
            for q in items:
                fh.write(json.dumps(q.canonical(), ensure_ascii=False) + "\n")
        (tmp / f"{name}.yaml").write_text(task_yaml(name, data, items[0], protocol), encoding="utf-8")
        (tmp / "utils.py").write_text(UTILS.format(protocol=protocol), encoding="utf-8")
        if final.exists():
            _remove(final)
        tmp.rename(final)
    return {name: len(items) for name, items in sorted(tasks.items())}


def _remove(folder: Path) -> None:
    import shutil

    shutil.rmtree(folder)
