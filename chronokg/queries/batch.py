"""Many named queries per store open: `chronokg query batch FILE.jsonl`.

Opening a large store costs seconds; a batch pays it once. Every line is
`{"query": NAME, "params": {...}, "id": optional}`. The whole file is checked
(JSON, known query, valid parameters) before the store is opened, so a bad line
is reported with its file and line number and nothing runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chronokg.errors import ChronoKGError, InputError
from chronokg.graph.store import GraphStore
from chronokg.queries.spec import QuerySpec, all_queries


@dataclass(frozen=True)
class Question:
    line: int
    id: Any
    spec: QuerySpec[Any, Any]
    params: Any


def read_batch(path: Path) -> list[Question]:
    """Every line of `path` as a validated question; `InputError(path, "line N", ...)` on the first bad one."""
    queries = all_queries()
    out: list[Question] = []
    ids: dict[str, tuple[int, bool]] = {}  # an answer's id -> (its line, given there): answers are told apart by id
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror}") from None
    for n, text in enumerate(lines, 1):
        if not text.strip():
            continue
        where = f"line {n}"
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(path, where, f"not JSON: {exc.msg}") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("query"), str):
            raise InputError(path, where, 'expected an object {"query": NAME, "params": {...}}')
        unknown = set(obj) - {"query", "params", "id"}
        if unknown:
            raise InputError(path, where, f"unknown keys {sorted(unknown)} (allowed: query, params, id)")
        if obj["query"] not in queries:
            raise InputError(path, where, f"unknown query {obj['query']!r} (chronokg query list)")
        spec = queries.get(obj["query"])
        params = obj.get("params") or {}
        if not isinstance(params, dict):
            raise InputError(path, where, "params must be a JSON object")
        try:
            checked = spec.validate(params)
        except ChronoKGError as exc:
            raise InputError(path, where, str(exc)) from None
        qid = obj.get("id", n)
        if isinstance(qid, bool) or not isinstance(qid, str | int):
            raise InputError(path, where, f"id must be a string or an integer, got {json.dumps(qid)[:40]}")
        first, given = ids.setdefault(json.dumps(qid), (n, "id" in obj))
        if first != n:
            shown = json.dumps(qid)
            raise InputError(path, where, f"id {shown if len(shown) <= 40 else shown[:39] + '…'} is also the id of "
                                          f"line {first}{'' if given else ' (its line number: it gives no id)'}: "
                                          "each answer is named by its id, so ids must differ")
        out.append(Question(line=n, id=qid, spec=spec, params=checked))
    if not out:
        raise InputError(path, None, "the file has no questions")
    return out


def answer(store: GraphStore, questions: list[Question]) -> Iterator[dict[str, Any]]:
    """One JSON-ready answer per question, in order, all from the one open `store`."""
    for q in questions:
        rows = q.spec.run(store, q.params)
        yield {"id": q.id, "query": q.spec.name, "rows": [r.model_dump(mode="json") for r in rows]}


__all__ = ["Question", "answer", "read_batch"]
