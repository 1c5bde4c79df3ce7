"""Every catalog query on kglite and on the LadybugDB prototype: same rows, in the same order?

    PYTHONPATH=. .venv-lb/bin/python benchmarks/ladybug_catalog.py

Both stores hold the conformance fixture graph (`chronokg.testing.engine_conformance.build`); each query's
Cypher is built once from the parameters below and run on both (no direct paths: the Cypher is what is
compared). Prints per query: alike (same rows, same order), differs (the first differing row), or fails on
ladybug (the engine's message), and how many rows kglite returned (0 rows compare little).
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.store import GraphStore
from chronokg.queries.spec import all_queries
from chronokg.testing.engine_conformance import build

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ladybug_store import LadybugStore

D = dt.date
# A value per parameter name, taken from the fixture graph; unnamed optional parameters keep their defaults.
PARAMS: dict[str, Any] = {
    "date": D(2016, 1, 1), "start": D(2001, 1, 1), "end": D(2022, 1, 1), "subject": "alice",
    "guideline": "g2015", "decision": "dose", "pair": "dose", "question": "q1", "patient": "p1",
    "first_study": "s1", "title": 21, "predicate": "employer",
}


def outcome(name: str, kg: GraphStore, lb: GraphStore) -> tuple[str, int, str]:
    spec = all_queries().get(name)
    fields = spec.params.model_fields
    params = {k: PARAMS[k] for k, f in fields.items() if f.is_required() or (k in PARAMS and k != "predicate")}
    text, args = spec.cypher(params)
    want = kg.run(text, args)
    try:
        got = lb.run(text, args)
    except Exception as exc:
        return "fails", len(want), str(exc).split("\n")[0].removeprefix(f"query failed on {lb.uri}: ")[:110]
    if got == want:
        return "alike", len(want), ""
    if sorted(map(repr, got)) == sorted(map(repr, want)):
        return "differs", len(want), "same rows, other order"
    first = next((i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b), min(len(want), len(got)))
    if len(got) != len(want):
        return "differs", len(want), f"{len(got)} rows vs {len(want)}"
    a, b = got[first], want[first]
    keys = [k for k in b if a.get(k) != b.get(k)]
    return "differs", len(want), f"row {first}: " + ", ".join(f"{k}={a.get(k)!r} vs {b.get(k)!r}" for k in keys)[:100]


def main() -> int:
    with KgliteStore(":memory:") as kg, LadybugStore(":memory:") as lb:
        build(kg)
        build(lb)
        counts = {"alike": 0, "differs": 0, "fails": 0}
        schema_only = 0
        for name in sorted(all_queries()):
            verdict, n, reason = outcome(name, kg, lb)
            counts[verdict] += 1
            # A property or rel type never written: a schemaless engine reads null, a typed one refuses.
            schema_only += verdict == "fails" and ("Cannot find property" in reason or ("does not exist." in reason
                                                   and "Table" in reason))
            print(f"{verdict:7} {name:24} kglite rows={n:<3} {reason}")
        print(f"catalog: {counts['alike']}/{sum(counts.values())} alike, {counts['differs']} differ, "
              f"{counts['fails']} fail on ladybug ({schema_only} only for an undeclared property or table)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
