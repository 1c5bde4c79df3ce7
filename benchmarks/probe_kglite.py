"""Two kglite facts the bulk load is built on (which calls release the GIL, what keying Fact.id costs), measured.

    python benchmarks/probe_kglite.py gil 1000000          # do add_nodes / add_relationships / save release the GIL?
    python benchmarks/probe_kglite.py constraint 500000    # Fact.id: uniqueness constraint vs plain index vs none

`gil`: with `sys.setswitchinterval(1000)` a thread that holds the GIL keeps it until it blocks or releases it
itself; a counter thread that yields (`sleep(0)`) after each step advances during a call only while that call
has released the GIL. Baselines in the same run: `time.sleep` (releases) and a Python loop (holds: 0 steps).
`constraint`: N `Fact` nodes from `add_nodes`, then each option built on a fresh graph, and lookups by id.

    python benchmarks/probe_kglite.py floor 10000000                # kglite's own graph of our schema: RSS, time
    python benchmarks/probe_kglite.py floor 1000000 --shape minimal  # the bare native path (speed floor)

`floor`: bench_store's synthetic facts, staged and framed exactly as `write_bulk` frames them
(`FactTable.add_many`, `bulk.table_frames`, `bulk.pandas_frame`), handed to kglite's calls alone, part by part: no
validation, no sidecar, no staged copy. Prints each stage's RSS after it, the highest RSS sampled during it
(a thread reads /proc every 20 ms: the engine's calls release the GIL), and the RSS after glibc
`malloc_trim(0)`; and the engine's facts/s (its calls' time only; generating and framing are apart).
`--trim engine`: the trim rows also call `kglite.trim_memory()` (the engine's mimalloc pages).
`--spill-mib M`: kglite's `set_memory_limit(M MiB)` (property columns over it spill to mapped files).
`--shape minimal`: each fact an `id` and a `subject_id` and one SUBJECT edge to its entity (no other property
or edge), no index, no save: the least the native path can be asked to do for a fact.
"""

from __future__ import annotations

import os
import shutil
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


class Rss:
    """The process's RSS now, and the highest sampled since `mark` (a 20 ms sampling thread)."""

    def __init__(self) -> None:
        self.high = 0.0
        self.stop = False
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    @staticmethod
    def now() -> float:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    def _sample(self) -> None:
        while not self.stop:
            self.high = max(self.high, self.now())
            time.sleep(0.02)

    def mark(self) -> None:
        self.high = self.now()


def trim() -> float:
    """glibc malloc_trim(0): give freed heap pages back; returns the RSS after it."""
    import ctypes

    ctypes.CDLL("libc.so.6").malloc_trim(0)
    if TRIM_ENGINE:
        kglite.trim_memory()  # the engine's allocator (mimalloc) keeps freed pages until asked
    return Rss.now()


TRIM_ENGINE = False


def floor(n: int, shape: str = "schema", parts_of: int = 100_000, spill_mib: int = 0) -> None:
    import gc

    from bench_store import RELEASE, SOURCE, chunked, synthetic_rows

    from chronokg.graph import bulk, schema
    from chronokg.graph.facts import FactTable

    rss = Rss()
    rows: list[tuple[str, float, float, float, float, float]] = []  # stage, wall, cpu, rss after, high, trimmed
    engine = {"wall": 0.0, "cpu": 0.0}

    def run(name: str, fn: Callable[[], Any], count: bool = True) -> None:
        rss.mark()
        w, c = time.perf_counter(), time.process_time()
        fn()
        w, c = time.perf_counter() - w, time.process_time() - c
        if count:
            engine["wall"] += w
            engine["cpu"] += c
        for i, row in enumerate(rows):
            if row[0] == name:  # one row per stage, summed over parts
                rows[i] = (name, row[1] + w, row[2] + c, rss.now(), max(row[4], rss.high), 0.0)
                return
        rows.append((name, w, c, rss.now(), rss.high, 0.0))

    g = kglite.KnowledgeGraph()
    spill_dir = tempfile.mkdtemp(prefix="probe_spill_", dir=os.environ.get("TMPDIR"))
    if spill_mib:  # kglite's own knob: property columns over the limit spill to files it maps
        g.set_memory_limit(spill_mib * 2**20, spill_dir)
    seen: set[str] = set()
    prep = {"wall": 0.0}
    for part in chunked(synthetic_rows(n, 42), parts_of):
        w = time.perf_counter()
        table = FactTable()
        table.source(SOURCE)
        subjects, predicates, objects, starts, ends = (list(c) for c in zip(*part, strict=True))
        table.add_many(subjects, predicates, objects=objects, valid_from=starts, valid_to=ends,
                       known_from=RELEASE, source_id=SOURCE.id, source_kind=SOURCE.kind)
        del part, subjects, predicates, objects, starts, ends
        frames, edges = bulk.table_frames(table)
        del table
        for f in frames:  # what plan_part keeps of an entity or source named by an earlier part: nothing
            if f.label != schema.FACT:
                keep = [i for i, x in enumerate(f.ids) if x not in seen]
                f.ids = [f.ids[i] for i in keep]
                f.columns = {k: [c[i] for i in keep] for k, c in f.columns.items()}
                seen.update(f.ids)
        if shape == "minimal":
            fact = next(f for f in frames if f.label == schema.FACT)
            frames = [bulk.Frame(fact.label, fact.ids, {"subject_id": fact.columns["subject_id"]}),
                      *(bulk.Frame(f.label, f.ids, {}) for f in frames if f.label == schema.ENTITY)]
            edges = [e for e in edges if e.rel == schema.SUBJECT]
        node_frames = [(f.label, bulk.pandas_frame({"id": f.ids, **{k: v for k, v in f.columns.items()
                                                                if bulk.native(v)}})) for f in frames if f.ids]
        edge_frames = [(e, bulk.pandas_frame({bulk.SRC: e.columns[0], bulk.DST: e.columns[1]}))  # type: ignore[index]
                       for e in edges]
        del frames, edges
        prep["wall"] += time.perf_counter() - w
        for label, frame in node_frames:
            run("add_nodes (every part)",
                lambda f=frame, lb=label: g.add_nodes(f, lb, "id", "id", on_invalid="error"))  # type: ignore[misc]
        for e, frame in edge_frames:
            run("add_relationships (every part)", lambda f=frame, e=e: g.add_relationships(  # type: ignore[misc]
                f, e.rel, e.src_label, bulk.SRC, e.dst_label, bulk.DST, on_invalid="error"))
        del node_frames, edge_frames
    gc.collect()
    rows.append(("(all parts in; malloc_trim)", 0.0, 0.0, rss.now(), rss.now(), trim()))
    if shape != "minimal":
        for ddl in [*schema.constraint_ddl(), *schema.index_ddl()]:
            run("index + constraint builds", lambda d=ddl: g.cypher(d, timeout_ms=0))  # type: ignore[misc]
        rows.append(("(indexes built; malloc_trim)", 0.0, 0.0, rss.now(), rss.now(), trim()))
        with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as d:
            path = os.path.join(d, "floor.kgl")
            run("save", lambda: g.save(path))
            size = os.path.getsize(path) / 2**20
        rows.append((f"(saved: {size:,.0f} MiB on disk; malloc_trim)", 0.0, 0.0, rss.now(), rss.now(), trim()))
    rss.stop = True
    counts = g.node_type_counts()
    print(f"{n:,} facts, shape {shape}, parts of {parts_of:,}, "
          f"{f'set_memory_limit {spill_mib} MiB' if spill_mib else 'no memory limit'}; nodes {dict(counts)}; "
          f"generating + staging + framing (not counted) {prep['wall']:.1f} s")
    print(f"kglite's calls alone: {engine['wall']:.1f} s wall ({n / engine['wall']:,.0f} facts/s), "
          f"{engine['cpu']:.1f} s CPU ({n / max(engine['cpu'], 1e-9):,.0f} facts/s of CPU)")
    print(f"{'stage':<44} {'wall s':>8} {'CPU s':>8} {'RSS after':>11} {'RSS high':>11} {'trimmed':>9}")
    for name, w, c, after, high, trimmed in rows:
        t = f"{trimmed:,.0f}" if trimmed else ""
        print(f"{name:<44} {w:8.2f} {c:8.2f} {after:>9,.0f} M {high:>9,.0f} M {t:>9}")
    shutil.rmtree(spill_dir, ignore_errors=True)


def main() -> int:
    what, n = sys.argv[1], int(sys.argv[2])
    if what == "floor":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        opts = dict(zip(sys.argv[3::2], sys.argv[4::2], strict=False))  # --shape minimal, --spill-mib 64
        global TRIM_ENGINE
        TRIM_ENGINE = opts.get("--trim") == "engine"
        floor(n, opts.get("--shape", "schema"), spill_mib=int(opts.get("--spill-mib", 0)))
    else:
        {"gil": gil, "constraint": constraint}[what](n)
    print("load average", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
