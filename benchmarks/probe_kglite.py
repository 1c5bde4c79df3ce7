"""Two kglite facts behind issue 20's bulk-load decisions (stop 25), measured, not assumed.

    python benchmarks/probe_kglite.py gil 1000000          # do add_nodes / add_relationships / save release the GIL?
    python benchmarks/probe_kglite.py constraint 500000    # Fact.id: uniqueness constraint vs plain index vs none

`gil`: with `sys.setswitchinterval(1000)` a thread that holds the GIL keeps it until it blocks or releases it
itself; a counter thread that yields (`sleep(0)`) after each step advances during a call only while that call
has released the GIL. Baselines in the same run: `time.sleep` (releases) and a Python loop (holds: 0 steps).
`constraint`: N `Fact` nodes from `add_nodes`, then each option built on a fresh graph, and lookups by id.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import kglite
import pandas as pd


def gil(n: int) -> None:
    sys.setswitchinterval(1000)
    ids = pd.Series([f"f{i}" for i in range(n)], dtype="string[python]")
    ents = pd.Series([f"e{i % max(1, n // 10)}" for i in range(n)], dtype="string[python]")
    state: dict[str, Any] = {"stop": False, "n": 0}

    def counter() -> None:
        while not state["stop"]:
            state["n"] += 1
            time.sleep(0)

    def measure(name: str, fn: Callable[[], Any]) -> None:
        state["stop"], state["n"] = False, 0
        t = threading.Thread(target=counter)
        t.start()
        time.sleep(0.05)
        n0, w = state["n"], time.perf_counter()
        fn()
        w, n1 = time.perf_counter() - w, state["n"]
        state["stop"] = True
        t.join()
        print(f"{name:<28} {w:7.2f} s; counter steps during the call {n1 - n0:>9,} ({(n1 - n0) / w:>9,.0f}/s)",
              flush=True)

    def spin() -> None:
        x = 0
        for i in range(10_000_000):
            x += i

    g = kglite.KnowledgeGraph()
    measure("time.sleep 1 s (releases)", lambda: time.sleep(1.0))
    measure("python loop (holds)", spin)
    measure("add_nodes Entity", lambda: g.add_nodes(
        pd.DataFrame({"id": pd.Series(ents.unique(), dtype="string[python]")}), "Entity", "id", "id"))
    measure("add_nodes Fact", lambda: g.add_nodes(pd.DataFrame({"id": ids, "subject_id": ents}), "Fact", "id", "id"))
    measure("add_relationships", lambda: g.add_relationships(
        pd.DataFrame({"s": ids, "d": ents}), "SUBJECT", "Fact", "s", "Entity", "d"))
    with tempfile.TemporaryDirectory() as d:
        measure("save", lambda: g.save(os.path.join(d, "x.kgl")))
    measure("CREATE CONSTRAINT", lambda: g.cypher(
        "CREATE CONSTRAINT fact_id IF NOT EXISTS FOR (n:Fact) REQUIRE n.id IS UNIQUE", timeout_ms=0))


def constraint(n: int) -> None:
    ids = pd.Series([f"fact:{i:012x}{i * 2654435761 % 10**9:09d}" for i in range(n)], dtype="string[python]")
    frame = pd.DataFrame({"id": ids, "subject_id": pd.Series([f"s{i % 100000}" for i in range(n)],
                                                             dtype="string[python]")})
    ddl = {"none": None, "constraint": "CREATE CONSTRAINT fact_id IF NOT EXISTS FOR (n:Fact) REQUIRE n.id IS UNIQUE",
           "index": "CREATE INDEX fact_id_ix IF NOT EXISTS FOR (n:Fact) ON (n.id)"}
    for what in ("none", "constraint", "index", "constraint", "index"):
        g = kglite.KnowledgeGraph()
        g.add_nodes(frame, "Fact", "id", "id", on_invalid="error")
        w, c = time.perf_counter(), time.process_time()
        text = ddl[what]
        if text is not None:
            g.cypher(text, timeout_ms=0)
        w, c = time.perf_counter() - w, time.process_time() - c
        step = max(1, n // 200)
        t = time.perf_counter()
        for i in range(0, n, step):
            g.cypher("MATCH (f:Fact {id: $id}) RETURN f.subject_id AS s", params={"id": ids[i]})
        look = (time.perf_counter() - t) / len(range(0, n, step)) * 1000
        print(f"{what:<11} build {w:6.2f} s wall {c:6.2f} s CPU; lookup by id {look:.3f} ms", flush=True)


def main() -> int:
    what, n = sys.argv[1], int(sys.argv[2])
    {"gil": gil, "constraint": constraint}[what](n)
    print("load average", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
