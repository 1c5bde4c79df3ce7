"""Outputs produced by other tools, as `{id, output, sample}` records for `chronokg eval score`.

An inspect_ai log (`.eval` or `.json`, read with inspect's own `read_eval_log`, so inspect is imported only
here and only for such a file) and lm-evaluation-harness's `--log_samples` output (`samples_<task>_<date>.jsonl`:
`doc`, the canonical record, and `resps`, the raw generations). Anything else is left to the generic reader.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chronokg.errors import InputError


def is_inspect_log(path: Path) -> bool:
    if path.suffix.lower() == ".eval":
        return True
    if path.suffix.lower() != ".json":
        return False
    with path.open("rb") as fh:
        head = fh.read(4096).decode("utf-8", "replace")
    return '"eval"' in head and '"version"' in head and head.lstrip().startswith("{")


def inspect_items(path: Path) -> list[dict[str, Any]]:
    """One record per sample and epoch of an inspect log: the sample id, its final output, the epoch (0-based)."""
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise InputError(path, None, "an inspect_ai log: install inspect_ai to read it "
                                     "(pip install 'chronokg[integrations]')") from None
    try:
        log = read_eval_log(str(path))
    except Exception as exc:  # inspect raises its own and zip/JSON errors on a damaged log
        raise InputError(path, None, f"not a readable inspect_ai log: {exc}") from None
    if log.status != "success":
        raise InputError(path, None, f"the inspect run did not finish (status {log.status})")
    return [{"id": str(s.id), "output": s.output.completion, "sample": s.epoch - 1} for s in log.samples or []]


def lm_eval_items(path: Path, records: list[Any]) -> list[dict[str, Any]] | None:
    """lm-eval's samples lines (`doc_id`, `doc`, `resps`) as records, or None when they are something else."""
    if not records or not all(isinstance(r, dict) and "doc" in r and "resps" in r for r in records):
        return None
    out = []
    for n, r in enumerate(records, start=1):
        doc, resps = r["doc"], r["resps"]
        if not isinstance(doc, dict) or "id" not in doc or not resps or not resps[0]:
            raise InputError(path, f"line {n}", "an lm-eval sample without its document's id or a response")
        out.append({"id": str(doc["id"]), "output": str(resps[0][0]), "sample": 0})
    return out


def read_lines(path: Path, text: str) -> list[Any]:
    items = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InputError(path, f"line {n}", f"broken JSON: {exc.msg}") from None
    return items
