"""Store benchmark: bulk load and catalog latency on a synthetic store, beside plain Python and DuckDB.

Builds N synthetic facts (default 1,000,000: N/10 subjects, ten facts each over three
predicates, version chains over 1990-2024 with valid_to = the next valid_from, the
last version open-ended, so 30% are open; every object is another subject, so a
2-hop traversal always has somewhere to go) and loads them through the real load
path (`Fact` -> `GraphBatch` -> `writer.write_batch`) into a file-backed
`KgliteStore`. It then answers the same random questions with the query catalog
(as a user calls it, typed rows included), with the raw `store.run` of the same
Cypher, with a plain-Python interval index and with DuckDB SQL, checks that all of
them agree, and prints one table with the targets. Beside the bulk load it runs kglite's
own calls on the same frames in a process of their own (`kglite_alone.py`) and prints
the load's rate against theirs.

    python benchmarks/bench_store.py                 # 1M facts (a few minutes)
    python benchmarks/bench_store.py --quick         # 100k facts, smoke run
    python benchmarks/bench_store.py --out results.json

Peak RSS is `ru_maxrss`: the load figure is read right after the store is closed,
before the comparison structures are built; the facts are generated lazily, one
write batch at a time (100k facts by default, each its own transaction), so the
generator never holds the whole data set. Findings: benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import bisect
import csv
import datetime as dt
import gc
import json
import math
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, cast

import kglite

from chronokg.graph import interval_index
from chronokg.graph.batch import GraphBatch
from chronokg.graph.bulk import write_bulk
from chronokg.graph.facts import FactTable
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import Fact, Source
from chronokg.graph.store import GraphStore, Params, Row
from chronokg.graph.writer import write_batch
from chronokg.queries import catalog
from chronokg.queries.rows import ChangeRow, FactRow

FACTS_PER_SUBJECT = 10
VERSIONS = (4, 3, 3)  # versions per predicate of one subject: sums to FACTS_PER_SUBJECT
PREDICATES = tuple(f"p{i:02d}" for i in range(12))
FIRST_DAY = dt.date(1990, 1, 1).toordinal()
LAST_DAY = dt.date(2024, 12, 31).toordinal()
OPEN = 10**9  # stands for an open end (valid_to null) in the Python index: after every real day
RELEASE = dt.date(2025, 1, 1)
SOURCE = Source(id="bench-synthetic", kind="bench", caption="synthetic benchmark facts", release_date=RELEASE)

# Targets for the 2-core development machine (load and its peak RSS: at 1M facts; 80,000 and 4,096 at 10M).
TARGET_LOAD = 100_000.0  # facts/s
TARGET_LOAD_10M = 80_000.0
TARGET_VS_ENGINE = 0.8  # the load end to end against kglite's own calls on the same frames
TARGET_AS_OF_P50 = 0.2  # ms
TARGET_CHANGED = 1.0  # s, over the whole store
TARGET_RSS = 800.0  # MiB
TARGET_RSS_10M = 4096.0

SynthRow = tuple[str, str, str, dt.date, dt.date | None]  # subject, predicate, object, valid_from, valid_to


# --- synthetic data -------------------------------------------------------------------------------------


def entity(i: int) -> str:
    return f"e{i:07d}"


def synthetic_rows(n_facts: int, seed: int) -> Iterator[SynthRow]:
    """The same facts for the same (n_facts, seed), generated lazily subject by subject."""
    rng = random.Random(seed)
    n_subjects = max(1, n_facts // FACTS_PER_SUBJECT)
    emitted = 0
    for i in range(n_subjects):
        subject = entity(i)
        for predicate, k in zip(rng.sample(PREDICATES, len(VERSIONS)), VERSIONS, strict=True):
            days = sorted(rng.sample(range(FIRST_DAY, LAST_DAY), k))
            for j, day in enumerate(days):
                if emitted == n_facts:
                    return
                end = dt.date.fromordinal(days[j + 1]) if j + 1 < k else None
                yield subject, predicate, entity(rng.randrange(n_subjects)), dt.date.fromordinal(day), end
                emitted += 1


def chunked(rows: Iterator[SynthRow], size: int) -> Iterator[list[SynthRow]]:
    part: list[SynthRow] = []
    for row in rows:
        part.append(row)
        if len(part) == size:
            yield part
            part = []
    if part:
        yield part


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


# --- measurements ---------------------------------------------------------------------------------------


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def current_rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@dataclass
class LoadStats:
    facts: int
    batches: int
    gen_s: float = 0.0  # generating the synthetic rows (bulk loader; not part of the load)
    fact_s: float = 0.0  # pydantic Fact construction (bulk loader: FactTable staging)
    stage_s: float = 0.0  # GraphBatch staging
    write_s: float = 0.0  # writer.write_batch (reads of existing ids + one transaction per batch)
    close_s: float = 0.0  # checkpoint on close
    kgl_bytes: int = 0
    wal_bytes: int = 0
    peak_rss_mib: float = 0.0
    nodes_created: int = 0

    @property
    def write_rate(self) -> float:
        return self.facts / self.write_s

    @property
    def end_to_end_rate(self) -> float:
        return self.facts / (self.fact_s + self.stage_s + self.write_s + self.close_s)


def load_bulk(path: Path, n_facts: int, seed: int, batch_facts: int) -> LoadStats:
    """Load through the bulk path: rows -> `FactTable` (columnar staging) -> `bulk.write_bulk`, then close.

    All batches go into one staged copy published atomically at the end (one load);
    `gen_s` is generating the synthetic rows (not counted as load), `fact_s` the
    columnar staging (`FactTable.add_many`), `write_s` the bulk writer (validation,
    native loaders, index rebuild, the atomic save), `close_s` releasing the store.
    """
    stats = LoadStats(facts=n_facts, batches=0)
    store = KgliteStore(path, durable="off")  # as `chronokg ingest` opens it

    start = time.perf_counter()

    def parts() -> Iterator[FactTable]:
        rows = chunked(synthetic_rows(n_facts, seed), batch_facts)
        while True:
            if stats.batches:  # how far a long load got (a scale run that is stopped keeps its last line)
                print(f"  {stats.batches * batch_facts:,} facts staged and written after "
                      f"{time.perf_counter() - start:.0f} s (generation {stats.gen_s:.0f} s), RSS "
                      f"{current_rss_mib():,.0f} MiB, peak {peak_rss_mib():,.0f} MiB", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            part = next(rows, None)
            stats.gen_s += time.perf_counter() - t0
            if part is None:
                return
            t0 = time.perf_counter()
            subjects, predicates, objects, starts, ends = (list(c) for c in zip(*part, strict=True))
            del part
            table = FactTable()
            table.source(SOURCE)
            table.add_many(subjects, predicates, objects=objects, valid_from=starts, valid_to=ends,
                           known_from=RELEASE, source_id=SOURCE.id, source_kind=SOURCE.kind)
            del subjects, predicates, objects, starts, ends
            stats.fact_s += time.perf_counter() - t0
            stats.batches += 1
            yield table

    t0 = time.perf_counter()
    report = write_bulk(store, parts())
    stats.write_s = time.perf_counter() - t0 - stats.fact_s - stats.gen_s
    stats.nodes_created = report.nodes_created
    t0 = time.perf_counter()
    store.close()
    stats.close_s = time.perf_counter() - t0
    stats.peak_rss_mib = peak_rss_mib()
    stats.kgl_bytes = path.stat().st_size
    wal = path.with_name(path.name + "-wal")
    stats.wal_bytes = wal.stat().st_size if wal.exists() else 0
    return stats


def load(path: Path, n_facts: int, seed: int, batch_facts: int) -> LoadStats:
    """Load through the project's path: Fact -> GraphBatch -> write_batch, then close (checkpoint)."""
    stats = LoadStats(facts=n_facts, batches=0)
    store = KgliteStore(path)
    for part in chunked(synthetic_rows(n_facts, seed), batch_facts):
        t0 = time.perf_counter()
        facts = [
            Fact(subject=s, predicate=p, object=o, valid_from=vf, valid_to=vt, known_from=RELEASE,
                 source_id=SOURCE.id, source_kind=SOURCE.kind)
            for s, p, o, vf, vt in part
        ]
        t1 = time.perf_counter()
        batch = GraphBatch()
        batch.source(SOURCE)
        for fact in facts:
            batch.fact(fact)
        del facts, part
        t2 = time.perf_counter()
        report = write_batch(store, batch)
        t3 = time.perf_counter()
        del batch
        gc.collect()
        stats.fact_s += t1 - t0
        stats.stage_s += t2 - t1
        stats.write_s += t3 - t2
        stats.nodes_created += report.nodes_created
        stats.batches += 1
    t0 = time.perf_counter()
    store.close()
    stats.close_s = time.perf_counter() - t0
    stats.peak_rss_mib = peak_rss_mib()
    stats.kgl_bytes = path.stat().st_size
    wal = path.with_name(path.name + "-wal")
    stats.wal_bytes = wal.stat().st_size if wal.exists() else 0
    return stats


# --- the same questions, three ways -------------------------------------------------------------------------


class PythonIndex:
    """Plain-Python interval index: per subject and predicate, versions sorted by valid_from."""

    def __init__(self, rows: Iterator[SynthRow]) -> None:
        self.by_subject: dict[str, dict[str, list[tuple[int, int, str]]]] = {}
        days: list[int] = []
        keys: list[tuple[str, str]] = []
        for s, p, o, vf, vt in rows:
            start, end = vf.toordinal(), OPEN if vt is None else vt.toordinal()
            self.by_subject.setdefault(s, {}).setdefault(p, []).append((start, end, o))
            days.append(start)
            keys.append((s, p))
            if vt is not None:
                days.append(end)
                keys.append((s, p))
        for preds in self.by_subject.values():
            for versions in preds.values():
                versions.sort()
        order = sorted(range(len(days)), key=days.__getitem__)
        self.change_days = [days[i] for i in order]  # every valid_from and valid_to, sorted
        self.change_keys = [keys[i] for i in order]

    def valid(self, subject: str, t: int) -> list[tuple[str, str]]:
        """(predicate, object) of the subject's facts valid at day `t`."""
        out = []
        for p, versions in sorted(self.by_subject.get(subject, {}).items()):
            for _start, end, o in versions[: bisect.bisect_right(versions, (t, OPEN + 1, ""))]:
                if end > t:
                    out.append((p, o))
        return out

    def facts_as_of(self, subject: str, t: dt.date, predicate: str | None = None) -> list[tuple[str, str]]:
        return [(p, o) for p, o in self.valid(subject, t.toordinal()) if predicate is None or p == predicate]

    def timeline(self, subject: str) -> list[tuple[str, int, int, str]]:
        return [(p, start, end, o) for p, versions in sorted(self.by_subject.get(subject, {}).items())
                for start, end, o in versions]

    def values_at(self, subject: str, predicate: str, t: int) -> list[str]:
        return sorted({o for start, end, o in self.by_subject[subject][predicate] if start <= t < end})

    def changed_between(self, t1: dt.date, t2: dt.date) -> list[tuple[str, str, list[str], list[str]]]:
        a, b = t1.toordinal(), t2.toordinal()
        lo, hi = bisect.bisect_right(self.change_days, a), bisect.bisect_right(self.change_days, b)
        out = []
        for s, p in sorted(set(self.change_keys[lo:hi])):
            before, after = self.values_at(s, p, a), self.values_at(s, p, b)
            if before != after:
                out.append((s, p, before, after))
        return out

    def two_hop(self, subject: str, t: dt.date) -> list[tuple[str, str, str, str]]:
        day = t.toordinal()
        return sorted((p, m, p2, target) for p, m in self.valid(subject, day) for p2, target in self.valid(m, day))


VALID_SQL = "({v}.valid_from IS NULL OR {v}.valid_from <= {t}) AND ({v}.valid_to IS NULL OR {v}.valid_to > {t})"


# changed_between in SQL: the pairs with a version starting or ending in (t1, t2], then each pair's sorted
# distinct values on both days, kept where they differ.
CHANGED_SQL = f"""
        WITH changed AS (
            SELECT DISTINCT subject, predicate FROM facts
            WHERE known_to IS NULL
              AND ((valid_from > $t1 AND valid_from <= $t2) OR (valid_to > $t1 AND valid_to <= $t2))
        ), sets AS (
            SELECT f.subject, f.predicate,
                   coalesce(list_sort(list_distinct(list(f.object) FILTER (WHERE {VALID_SQL.format(v='f', t='$t1')}))),
                            []) AS before,
                   coalesce(list_sort(list_distinct(list(f.object) FILTER (WHERE {VALID_SQL.format(v='f', t='$t2')}))),
                            []) AS after
            FROM facts f JOIN changed c ON f.subject = c.subject AND f.predicate = c.predicate
            WHERE f.known_to IS NULL
            GROUP BY f.subject, f.predicate
        )
        SELECT subject, predicate, before, after FROM sets WHERE before <> after ORDER BY subject, predicate"""


class DuckFacts:
    """The same facts as one DuckDB table (in memory), with an index on subject."""

    def __init__(self, rows: Iterator[SynthRow], workdir: Path) -> None:
        csv_path = workdir / "facts.csv"
        with csv_path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            for s, p, o, vf, vt in rows:
                writer.writerow((s, p, o, vf.isoformat(), "" if vt is None else vt.isoformat()))
        import duckdb  # imported here: its 14 MiB are not the load's peak

        self.con = duckdb.connect()
        self.con.execute(
            "CREATE TABLE facts AS SELECT *, CAST(NULL AS DATE) AS known_to FROM read_csv(?, header = false, "
            "columns = {'subject': 'VARCHAR', 'predicate': 'VARCHAR', 'object': 'VARCHAR', "
            "'valid_from': 'DATE', 'valid_to': 'DATE'}, nullstr = '')",
            [str(csv_path)],
        )
        self.con.execute("CREATE INDEX facts_subject ON facts (subject)")
        csv_path.unlink()

    def facts_as_of(self, subject: str, t: dt.date, predicate: str | None = None) -> list[tuple[Any, ...]]:
        params: dict[str, Any] = {"s": subject, "t": t}
        also = ""
        if predicate is not None:
            also, params["p"] = " AND predicate = $p", predicate
        return self.con.execute(
            "SELECT predicate, object, valid_from, valid_to FROM facts WHERE subject = $s AND known_to IS NULL AND "
            + VALID_SQL.format(v="facts", t="$t") + also + " ORDER BY predicate, valid_from, object",
            params,
        ).fetchall()

    def timeline(self, subject: str) -> list[tuple[Any, ...]]:
        return self.con.execute(
            "SELECT predicate, object, valid_from, valid_to FROM facts WHERE subject = $s AND known_to IS NULL "
            "ORDER BY predicate, valid_from NULLS FIRST, valid_to NULLS LAST, object",
            {"s": subject},
        ).fetchall()

    def changed_between(self, t1: dt.date, t2: dt.date) -> list[tuple[Any, ...]]:
        """Python tuples (subject, predicate, before list, after list) by `fetchall`: no typed rows."""
        return self.con.execute(CHANGED_SQL, {"t1": t1, "t2": t2}).fetchall()

    def two_hop(self, subject: str, t: dt.date) -> list[tuple[Any, ...]]:
        return self.con.execute(
            "SELECT f.predicate, f.object AS middle, g.predicate AS predicate2, g.object AS target "
            "FROM facts f JOIN facts g ON g.subject = f.object "
            "WHERE f.subject = $s AND f.known_to IS NULL AND g.known_to IS NULL AND "
            + VALID_SQL.format(v="f", t="$t") + " AND " + VALID_SQL.format(v="g", t="$t")
            + " ORDER BY 1, 2, 3, 4",
            {"s": subject, "t": t},
        ).fetchall()


def proposed_changed_between_cypher(t1: dt.date, t2: dt.date) -> str:
    """The faster shape of `catalog.changed_between` proposed for kglite (see benchmarks/README.md).

    Candidates come from two range conditions joined by UNION (the valid_from one uses the
    range index; UNION also does the DISTINCT) instead of one OR; each pair's versions are
    looked up in a subquery, which uses the subject_id index, where the catalog's plain
    `MATCH (g:Fact {subject_id: subject, ...})` after `WITH DISTINCT` scans all facts per pair.
    """
    known_f, known_g = catalog.known_clause("f", None), catalog.known_clause("g", None)
    value = "coalesce(g.object_id, toString(g.value))"
    return (
        "CALL {\n"
        f"  MATCH (f:Fact) WHERE f.valid_from > $t1 AND f.valid_from <= $t2 AND {known_f}\n"
        "  RETURN f.subject_id AS subject, f.predicate AS predicate\n"
        "  UNION\n"
        f"  MATCH (f:Fact) WHERE f.valid_to > $t1 AND f.valid_to <= $t2 AND {known_f}\n"
        "  RETURN f.subject_id AS subject, f.predicate AS predicate\n"
        "}\n"
        "CALL {\n"
        "  WITH subject, predicate\n"
        f"  MATCH (g:Fact {{subject_id: subject}}) WHERE g.predicate = predicate AND {known_g}\n"
        f"  RETURN collect(CASE WHEN {catalog.valid_clause('g', '$t1')} THEN {value} END) AS before,\n"
        f"         collect(CASE WHEN {catalog.valid_clause('g', '$t2')} THEN {value} END) AS after\n"
        "}\n"
        "RETURN subject, predicate, before, after\n"
        "ORDER BY subject, predicate"
    )


def proposed_changed_between(store: GraphStore, t1: dt.date, t2: dt.date) -> list[ChangeRow]:
    """What `catalog.changed_between` would do with the proposed Cypher, typed rows included."""
    out = []
    for r in store.run(proposed_changed_between_cypher(t1, t2), {"t1": t1, "t2": t2}):
        before, after = sorted(set(r["before"])), sorted(set(r["after"]))
        if before != after:
            out.append(ChangeRow(subject=r["subject"], predicate=r["predicate"], before=before, after=after))
    return out


def cypher_changed_between(store: GraphStore, t1: dt.date, t2: dt.date) -> list[ChangeRow]:
    """`catalog.changed_between` through its Cypher (as before the interval index), typed rows included."""
    spec = catalog.CHANGED_BETWEEN
    params = spec.validate({"from": t1, "to": t2})
    text, args = spec.cypher(params)
    rows = [ChangeRow.model_validate(r) for r in store.run(text, args)]
    return spec.post(rows, params) if spec.post is not None else rows


def proposed_facts_as_of(store: GraphStore, t: dt.date, subject: str, predicate: str) -> list[FactRow]:
    """`catalog.facts_as_of` with the predicate written `IN [..]` as proposed (see benchmarks/README.md)."""
    cypher, params = catalog.facts_as_of_cypher(t, subject=subject, predicate=predicate)
    cypher = cypher.replace("f.predicate = $predicate", "f.predicate IN [$predicate]")
    return [FactRow(**r) for r in store.run(cypher, params)]


class Capture:
    """Stands in for a store to learn the Cypher a catalog function sends (it answers nothing)."""

    def __init__(self) -> None:
        self.cypher = ""
        self.params: dict[str, Any] = {}
        self.quick = False

    def intervals(self) -> None:
        return None  # no interval index: the catalog sends its Cypher

    def ensure_indexes(self) -> None:
        return None

    def run(self, cypher: str, params: Params | None = None) -> list[Row]:
        self.cypher, self.params = cypher, dict(params or {})
        return []


def cypher_of(call: Callable[[GraphStore], object]) -> tuple[str, dict[str, Any]]:
    cap = Capture()
    call(cast(GraphStore, cap))
    return cap.cypher, cap.params


# --- timing -----------------------------------------------------------------------------------------------


@dataclass
class Timing:
    op: str
    impl: str
    n: int
    p50_ms: float
    p95_ms: float
    mean_rows: float
    first_ms: float
    error: str | None = None


def timed(op: str, impl: str, fn: Callable[[Any], Sequence[Any]], queries: Sequence[Any]) -> Timing:
    """Latencies of `fn` over `queries`, the cyclic GC paused.

    The reference structures hold millions of objects; a collection during a timed call
    would walk them all and charge the call for it, which no user of the store pays.
    """
    gc.collect()
    gc.disable()
    try:
        return _timed(op, impl, fn, queries)
    finally:
        gc.enable()


def _timed(op: str, impl: str, fn: Callable[[Any], Sequence[Any]], queries: Sequence[Any]) -> Timing:
    times: list[float] = []
    rows = 0
    for q in queries:
        t0 = time.perf_counter_ns()
        try:
            out = fn(q)
        except Exception as exc:  # a timeout on the engine: report it instead of a latency
            elapsed = (time.perf_counter_ns() - t0) / 1e6
            return Timing(op, impl, len(times) + 1, math.nan, math.nan, math.nan, elapsed, f"{type(exc).__name__}: "
                          f"{str(exc)[:120]} after {elapsed / 1000:.0f} s")
        times.append((time.perf_counter_ns() - t0) / 1e6)
        rows += len(out)
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return Timing(op, impl, len(times), statistics.median(times), p95, rows / len(times), times[0])


def day(rng: random.Random) -> dt.date:
    return dt.date.fromordinal(rng.randrange(FIRST_DAY, LAST_DAY))


@dataclass
class Results:
    facts: int
    seed: int
    machine: dict[str, Any]
    load: dict[str, Any]
    open_s: float = 0.0
    open_variants: dict[str, float] = field(default_factory=dict)
    rss_after_open_mib: float = 0.0
    reference_build_s: dict[str, float] = field(default_factory=dict)
    timings: list[dict[str, Any]] = field(default_factory=list)
    agreement: dict[str, str] = field(default_factory=dict)
    changed_rows: list[int] = field(default_factory=list)
    peak_rss_run_mib: float = 0.0
    cli_s: dict[str, float] = field(default_factory=dict)  # `chronokg query` processes end to end, and a floor
    sidecar: dict[str, float] = field(default_factory=dict)  # the interval index: build s, size MiB
    load_avg: tuple[float, ...] = ()
    kgl_bytes_reopened: int = 0  # the .kgl after the query phase closed it again


OPS = ("facts_as_of", "facts_as_of_pred", "timeline", "changed_between", "two_hop_as_of")
IMPLS = ("catalog", "raw", "cypher", "proposed", "py", "duckdb")


def run_queries(store: KgliteStore, py: PythonIndex | None, duck: DuckFacts | None, n_subjects: int,
                n_queries: int, n_changed: int, seed: int, res: Results, only_ops: Sequence[str] = OPS,
                only_impls: Sequence[str] = IMPLS) -> list[Timing]:
    """Time `only_ops` with `only_impls` (a reference not built is None; its impls must not be asked for).
    The questions are drawn the same way whatever is selected, so a subset asks what a full run asks."""
    rng = random.Random(seed + 1)

    def subject_dates(n: int) -> list[tuple[str, dt.date]]:
        return [(entity(rng.randrange(n_subjects)), day(rng)) for _ in range(n)]

    as_of_q, timeline_q, hop_q = subject_dates(n_queries), subject_dates(n_queries), subject_dates(n_queries)
    def with_predicate(qs: list[tuple[str, dt.date]]) -> list[tuple[str, dt.date, str]]:
        """Each subject with one of its own predicates: the catalog's filtered form (read from the store, the
        same sorted set the Python index holds, so no reference structure is needed to draw them)."""
        def predicates(s: str) -> list[str]:
            return sorted(py.by_subject[s]) if py is not None else sorted({r.predicate
                                                                           for r in catalog.timeline(store, s)})
        return [(s, t, rng.choice(predicates(s))) for s, t in qs]

    pred_q = with_predicate(subject_dates(n_queries))
    warm_q = subject_dates(50)
    warm_pred_q = with_predicate(subject_dates(50))
    windows = []
    for _ in range(n_changed):
        start = dt.date(rng.randrange(1992, 2020), rng.randrange(1, 13), 1)
        windows.append((start, start.replace(year=start.year + 3)))

    # What a user calls, and the raw store.run of the same Cypher text.
    py_, duck_ = cast(PythonIndex, py), cast(DuckFacts, duck)  # only called where built (see the filter below)
    ops: dict[str, dict[str, Callable[[Any], Sequence[Any]]]] = {
        "facts_as_of": {
            "catalog": lambda q: catalog.facts_as_of(store, q[1], subject=q[0]),
            "py": lambda q: py_.facts_as_of(q[0], q[1]),
            "duckdb": lambda q: duck_.facts_as_of(q[0], q[1]),
        },
        "facts_as_of_pred": {
            "catalog": lambda q: catalog.facts_as_of(store, q[1], subject=q[0], predicate=q[2]),
            "proposed": lambda q: proposed_facts_as_of(store, q[1], q[0], q[2]),
            "py": lambda q: py_.facts_as_of(q[0], q[1], q[2]),
            "duckdb": lambda q: duck_.facts_as_of(q[0], q[1], q[2]),
        },
        "timeline": {
            "catalog": lambda q: catalog.timeline(store, q[0]),
            "py": lambda q: py_.timeline(q[0]),
            "duckdb": lambda q: duck_.timeline(q[0]),
        },
        "changed_between": {
            "catalog": lambda q: catalog.changed_between(store, q[0], q[1]),
            "cypher": lambda q: cypher_changed_between(store, q[0], q[1]),
            "py": lambda q: py_.changed_between(q[0], q[1]),
            "duckdb": lambda q: duck_.changed_between(q[0], q[1]),
        },
        "two_hop_as_of": {
            "catalog": lambda q: catalog.two_hop_as_of(store, q[0], q[1]),
            "py": lambda q: py_.two_hop(q[0], q[1]),
            "duckdb": lambda q: duck_.two_hop(q[0], q[1]),
        },
    }
    cyphers: dict[str, Callable[[Any], tuple[str, dict[str, Any]]]] = {
        "facts_as_of": lambda q: catalog.facts_as_of_cypher(q[1], subject=q[0]),
        "facts_as_of_pred": lambda q: catalog.facts_as_of_cypher(q[1], subject=q[0], predicate=q[2]),
        "timeline": lambda q: cypher_of(lambda s: catalog.timeline(s, q[0])),
        "changed_between": lambda q: cypher_of(lambda s: catalog.changed_between(s, q[0], q[1])),
        "two_hop_as_of": lambda q: cypher_of(lambda s: catalog.two_hop_as_of(s, q[0], q[1])),
    }
    queries: dict[str, list[Any]] = {"facts_as_of": as_of_q, "facts_as_of_pred": pred_q, "timeline": timeline_q,
                                     "changed_between": windows, "two_hop_as_of": hop_q}
    ops = {op: {impl: fn for impl, fn in impls.items() if impl in only_impls} for op, impls in ops.items()
           if op in only_ops}
    timed_raw = "raw" in only_impls

    timings = []
    for op, impls in ops.items():
        qs = queries[op]
        warm = {"changed_between": [], "facts_as_of_pred": warm_pred_q}.get(op, warm_q)
        for impl, fn in impls.items():
            for q in warm:  # first calls after open build caches; they are not what a user waits for later
                fn(q)
            timings.append(timed(op, impl, fn, qs))
            print(f"  {op:16s} {impl:8s} p50 {timings[-1].p50_ms:9.3f} ms", file=sys.stderr, flush=True)
            if impl == "catalog" and timed_raw:
                if timings[-1].error is None:
                    statements = [cyphers[op](q) for q in qs]
                    timings.append(timed(op, "raw", lambda st: store.run(st[0], st[1]), statements))
                else:
                    timings.append(Timing(op, "raw", 0, math.nan, math.nan, math.nan, math.nan, "not run"))
    failed = {(t.op, t.impl) for t in timings if t.error is not None}
    check_agreement({op: {i: fn for i, fn in impls.items() if (op, i) not in failed} for op, impls in ops.items()},
                    queries, res)
    for op, impls in ops.items():
        for impl in impls:
            if (op, impl) in failed:
                res.agreement[op] += f" ({impl} not checked: failed)"
    counted = next((fn for impl, fn in ops.get("changed_between", {}).items() if impl in ("catalog", "py")), None)
    res.changed_rows = [len(counted(w)) for w in windows] if counted is not None else []
    return timings


def check_agreement(ops: dict[str, dict[str, Callable[[Any], Sequence[Any]]]], queries: dict[str, list[Any]],
                    res: Results, sample: int = 50) -> None:
    """The implementations must give the same answers, or the timings compare nothing."""
    def as_of_norm(rows: Sequence[Any], impl: str) -> list[tuple[Any, ...]]:
        if impl in ("catalog", "proposed"):
            return sorted((r.predicate, r.object) for r in rows)
        if impl == "duckdb":
            return sorted((r[0], r[1]) for r in rows)
        return sorted(rows)

    def timeline_norm(rows: Sequence[Any], impl: str) -> list[tuple[Any, ...]]:
        if impl == "catalog":
            return [(r.predicate, r.object, r.valid_from, r.valid_to) for r in rows]
        if impl == "duckdb":
            return [tuple(r) for r in rows]
        return [(p, o, dt.date.fromordinal(a), None if b == OPEN else dt.date.fromordinal(b)) for p, a, b, o in rows]

    def changed_norm(rows: Sequence[Any], impl: str) -> list[tuple[Any, ...]]:
        if impl in ("catalog", "proposed", "cypher"):
            return [(r.subject, r.predicate, r.before, r.after) for r in rows]
        return [(r[0], r[1], list(r[2]), list(r[3])) for r in rows]

    def hop_norm(rows: Sequence[Any], impl: str) -> list[tuple[Any, ...]]:
        if impl == "catalog":
            return sorted((r.predicate, r.middle, r.predicate2, r.target) for r in rows)
        return sorted(tuple(r) for r in rows)

    norms = {"facts_as_of": as_of_norm, "facts_as_of_pred": as_of_norm, "timeline": timeline_norm,
             "changed_between": changed_norm, "two_hop_as_of": hop_norm}
    for op, impls in ops.items():
        checked = queries[op][: (2 if op == "changed_between" else sample)]
        bad = 0
        for q in checked:
            answers = [norms[op](fn(q), impl) for impl, fn in impls.items()]
            bad += any(a != answers[0] for a in answers[1:])
        res.agreement[op] = f"{len(checked) - bad}/{len(checked)} agree ({', '.join(impls)})"
        if bad:
            print(f"WARNING: {op}: {bad} of {len(checked)} answers differ between implementations", file=sys.stderr)


# --- report -------------------------------------------------------------------------------------------------


def fmt_bytes(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def ratio(a: float, b: float) -> str:
    if math.isnan(a) or math.isnan(b) or b == 0:
        return "-"
    return f"{a / b:.3g}"


def table(res: Results, timings: list[Timing]) -> str:
    ld = res.load
    lines = [
        f"chronokg store benchmark: {res.facts:,} facts, seed {res.seed}, {res.machine['cpus']} CPUs, "
        f"kglite {res.machine['kglite']}, duckdb {res.machine['duckdb']}, {res.machine['date']}",
        "",
        f"{'measure':44s} {'value':>16s} {'target':>12s} {'met?':>5s}",
        "-" * 98,
    ]

    def row(name: str, value: str, target: str = "", met: bool | None = None) -> None:
        lines.append(f"{name:62s} {value:>16s} {target:>12s} {'' if met is None else ('yes' if met else 'NO'):>5s}")

    if ld:
        write_rate = ld["facts"] / ld["write_s"]
        e2e = ld["facts"] / (ld["fact_s"] + ld["stage_s"] + ld["write_s"] + ld["close_s"])
        bulk = ld.get("loader") == "bulk"
        writer = "write_bulk" if bulk else "write_batch"
        row(f"load ({ld.get('loader', 'batch')}): {writer} facts/s ({ld['batches']} part(s))", f"{write_rate:,.0f}",
            f">= {TARGET_LOAD:,.0f}", write_rate >= TARGET_LOAD)
        want, want_rss = (TARGET_LOAD_10M, TARGET_RSS_10M) if ld["facts"] >= 10_000_000 else (TARGET_LOAD, TARGET_RSS)
        row("load: end-to-end facts/s (stage+write+close)", f"{e2e:,.0f}", f">= {want:,.0f}", e2e >= want)
        alone = ld.get("kglite_alone")
        if alone:
            engine = alone["facts"] / alone["wall_s"]
            row("  kglite's own calls on the same frames, facts/s (wall)", f"{engine:,.0f}")
            row("    their CPU s / peak RSS MiB (own process)", f"{alone['cpu_s']:.1f} / {alone['peak_rss_mib']:,.0f}")
            row("  load end to end / kglite's own calls (facts/s)", f"{e2e / engine:.2f}x",
                f">= {TARGET_VS_ENGINE}x", e2e / engine >= TARGET_VS_ENGINE)
        row("  FactTable staging s" if bulk else "  Fact construction (pydantic) s", f"{ld['fact_s']:.1f}")
        if not bulk:
            row("  GraphBatch staging s", f"{ld['stage_s']:.1f}")
        row(f"  {writer} s" + (" (validate, native loaders, indexes, atomic save)" if bulk else ""),
            f"{ld['write_s']:.1f}")
        row("  close (checkpoint) s", f"{ld['close_s']:.1f}")
        row("on disk: .kgl + WAL", fmt_bytes(ld["kgl_bytes"] + ld["wal_bytes"]))
        row("  .kgl / WAL", f"{fmt_bytes(ld['kgl_bytes'])} / {ld['wal_bytes']} B")
        row("peak RSS during load", f"{ld['peak_rss_mib']:,.0f} MiB", f"<= {want_rss:,.0f}",
            ld["peak_rss_mib"] <= want_rss)
    else:
        row("load", "not measured (--reuse)")
    row(".kgl after a reopen + close (steady size)", fmt_bytes(res.kgl_bytes_reopened))
    row("open the loaded store read-only s (as queries do)", f"{res.open_s:.2f}")
    for name, value in res.open_variants.items():
        row(name, f"{value:.3f}")
    for name, value in res.cli_s.items():
        target = "" if name.startswith(("floor", "  ")) else "<= 0.5"
        row(f"{name[:60]}", f"{value:.3f} s", target, None if not target else value <= 0.5)
    for name, value in res.sidecar.items():
        row(name, f"{value:.2f}")
    row("load average (1, 5, 15 min) before the queries", ", ".join(f"{x:.1f}" for x in res.load_avg))
    row("RSS after reopening the store", f"{res.rss_after_open_mib:,.0f} MiB")
    row("peak RSS whole run (+ Python index, DuckDB)", f"{res.peak_rss_run_mib:,.0f} MiB")
    lines.append("")
    lines.append(f"{'latency (ms)':22s} {'impl':8s} {'n':>5s} {'p50':>9s} {'p95':>9s} {'rows':>8s} "
                 f"{'x py':>7s} {'x duck':>7s} {'target':>8s} {'met?':>5s}")
    lines.append("-" * 96)
    by = {(t.op, t.impl): t for t in timings}
    for op in ("facts_as_of", "facts_as_of_pred", "timeline", "changed_between", "two_hop_as_of"):
        for impl in ("catalog", "raw", "cypher", "proposed", "py", "duckdb"):
            if (op, impl) not in by:
                continue
            t = by[op, impl]
            missing = Timing(op, "-", 0, math.nan, math.nan, math.nan, math.nan)  # a reference not run (--impls)
            py, duck = by.get((op, "py"), missing), by.get((op, "duckdb"), missing)
            if t.error is not None:
                missed = "  (target missed)" if op in ("facts_as_of", "changed_between") and impl == "catalog" else ""
                lines.append(f"{op if impl == 'catalog' else '':22s} {impl:8s} {t.error}{missed}")
                continue
            target, met = "", ""
            if op == "changed_between" and impl == "catalog":  # the target: p50 no slower than DuckDB's
                target, met = "<=duck", "yes" if t.p50_ms <= duck.p50_ms else ("NO" if duck.n else "-")
            if op == "facts_as_of" and impl == "catalog":  # the target: within 6x the plain-Python floor
                target, met = "<=6x py", "yes" if t.p50_ms <= 6 * py.p50_ms else ("NO" if py.n else "-")
            lines.append(
                f"{op if impl == 'catalog' else '':22s} {impl:8s} {t.n:5d} {t.p50_ms:9.3f} {t.p95_ms:9.3f} "
                f"{t.mean_rows:8.1f} {ratio(t.p50_ms, py.p50_ms):>7s} {ratio(t.p50_ms, duck.p50_ms):>7s} "
                f"{target:>8s} {met:>5s}"
            )
    lines.append("")
    lines.append("catalog = the catalog function as a user calls it (typed rows); raw = store.run of the same Cypher;")
    lines.append("proposed = the catalog function in the Cypher shape proposed in benchmarks/README.md (typed rows);")
    lines.append("cypher = changed_between through its Cypher with typed rows (the catalog's path before the index);")
    lines.append("catalog changed_between on a reader with a current sidecar answers from the interval index;")
    lines.append("py = plain-Python interval index; duckdb = SQL on one in-memory table; x = p50 / that p50.")
    lines.append("facts_as_of = subject + date; facts_as_of_pred = subject + one of its predicates + date.")
    lines.append(f"changed_between rows per window: {res.changed_rows}")
    lines.append("answers checked: " + ", ".join(f"{k} {v}" for k, v in res.agreement.items()))
    lines.append("reference build s: " + ", ".join(f"{k} {v:.1f}" for k, v in res.reference_build_s.items()))
    return "\n".join(lines)


def measure_opens(path: Path) -> dict[str, float]:
    """Seconds to open the store each way (each in a fresh child process, so no cache of this one helps),
    and for the read-only ones the first point query after it (an index built lazily shows there)."""
    import subprocess

    code = (
        "import sys, time, warnings, kglite\n"
        "warnings.simplefilter('ignore')\n"
        "from chronokg.graph.kglite_store import KgliteStore\n"
        "p, how = sys.argv[1], sys.argv[2]\n"
        "t = time.perf_counter()\n"
        "if how == 'writer': s = KgliteStore(p, durable='off')\n"
        "elif how == 'reader': s = KgliteStore(p, read_only=True)\n"
        "elif how == 'quick': s = KgliteStore(p, read_only=True, quick_open=True)\n"
        "elif how == 'open_store':\n"
        "    import datetime as dt\n"
        "    from chronokg.graph.open import open_store\n"
        "    from chronokg.queries import catalog\n"
        "    s = open_store('kglite://' + p, read_only=True)\n"
        "else: g = kglite.load(p, storage='mapped', defer_index_rebuild=True)\n"
        "opened = time.perf_counter() - t\n"
        "q = \"MATCH (f:Fact {subject_id: 'e0000001'}) RETURN count(f) AS c\"\n"
        "t = time.perf_counter()\n"
        "if how == 'open_store': catalog.facts_as_of(s, dt.date(2010, 1, 1), subject='e0000001')\n"
        "else: (s.run(q) if how != 'mapped-deferred' else g.cypher(q).to_list())\n"
        "print(opened, time.perf_counter() - t)\n"
    )
    out: dict[str, float] = {}
    for how in ("open_store", "reader", "quick", "mapped-deferred", "writer"):
        done = subprocess.run([sys.executable, "-c", code, str(path), how], capture_output=True, text=True,
                              check=True)
        opened, first = (float(x) for x in done.stdout.split())
        out[f"open {how} s"] = opened
        out[f"  first point query after it s ({how})"] = first
        if how == "open_store":  # target: open_store(read_only=True) to its first answer (catalog.facts_as_of)
            out["open_store read-only to its first answer s (target <= 0.5)"] = opened + first
    return out


@contextmanager
def private_query_processes() -> Iterator[dict[str, str]]:
    """The environment of `chronokg query` calls that use the local query process, in a socket folder of this
    run's own (so no user's process answers, and this run's are all stopped and removed at the end)."""
    from chronokg.cli import query_client

    runtime = tempfile.mkdtemp(prefix="ckq", dir="/tmp")
    saved = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = runtime  # query_client.processes() looks there
    try:
        yield {**os.environ, "CHRONOKG_QUERY_DAEMON_IDLE_S": "600"}
    finally:
        query_client.processes("stop")
        if saved is None:
            del os.environ["XDG_RUNTIME_DIR"]
        else:
            os.environ["XDG_RUNTIME_DIR"] = saved
        shutil.rmtree(runtime, ignore_errors=True)


def indexed_process_ready() -> None:
    """Wait until the local query process answers from its indexed open (seconds on a large store), or says it
    makes none (a store over CHRONOKG_QUERY_DAEMON_INDEXED_MAX_MB)."""
    from chronokg.cli import query_client

    while not [p for p in query_client.processes("status") if p.get("indexed") or not p.get("indexing", True)]:
        time.sleep(0.05)


def measure_cli(path: Path, rounds: int) -> dict[str, float]:
    """Seconds, end to end, of real `chronokg query ...` processes on the store (median of `rounds`, each a
    fresh process, interleaved), beside floors measured the same way: `python -c pass`, a process that imports
    kglite, opens the store the fastest way kglite offers (mapped, indexes deferred) and runs the same point
    query, and one that imports the query-process client alone.

    In-process rows run with the local query process off (CHRONOKG_QUERY_DAEMON_IDLE_S=0), as `python -m
    chronokg.cli` and as the `chronokg` console script; as-of also with the store opened in line instead of on
    a thread (chronokg.cli.early_open). Each round then stops the query process, times the first call (in
    process, and it starts the process), the seconds until the process answers from its indexed open, and the
    forwarded calls (chronokg.cli.query_client): what a user's second and later queries cost."""
    import subprocess

    from chronokg.cli import query_client

    store = f"kglite://{path}"
    script = Path(sys.executable).with_name("chronokg")  # the console script pip installed beside this python
    floor = (
        "import sys, warnings, kglite\n"
        "warnings.simplefilter('ignore')\n"
        "g = kglite.load(sys.argv[1], storage='mapped', defer_index_rebuild=True)\n"
        "print(g.begin_read().cypher(\"MATCH (f:Fact {subject_id: 'e0000001'}) RETURN f.predicate AS p, "
        "f.object_id AS o, f.valid_from AS a, f.valid_to AS b\").to_list())\n"
    )
    queries = {
        "as-of json": ["as-of", "--subject", "e0000001", "--date", "2000-01-01", "-f", "json"],
        "as-of table": ["as-of", "--subject", "e0000001", "--date", "2000-01-01"],
        "timeline table": ["timeline", "--subject", "e0000001"],
        "two-hop json": ["two-hop", "--subject", "e0000001", "--date", "2000-01-01", "-f", "json"],
    }
    launchers = {"python -m": [sys.executable, "-m", "chronokg.cli"]}
    if script.exists():
        launchers["chronokg"] = [str(script)]
    no_early = ("import sys; sys.argv = ['chronokg', *sys.argv[1:]]\n"  # the same command, store opened in line
                "from chronokg.cli import early_open, main\n"
                "early_open.start = lambda args: None\n"
                "main()\n")
    off = {**os.environ, "CHRONOKG_QUERY_DAEMON_IDLE_S": "0"}
    first_call = [sys.executable, "-m", "chronokg.cli", "--store", store, "query", *queries["as-of json"]]
    first, ready = "first call (python -m): in-process, starts the process: as-of json", "  then until the " \
        "indexed open answers s"
    with private_query_processes() as on:
        cases: dict[str, tuple[list[str], dict[str, str]]] = {
            "floor: python -c pass": ([sys.executable, "-c", "pass"], off),
            "floor: python+kglite+mapped open+1 query": ([sys.executable, "-c", floor, str(path)], off),
            "floor: python + the client's imports": ([sys.executable, "-c", "import chronokg.cli.query_client"],
                                                     off),
            **{f"in-process ({how}): {name}": ([*launcher, "--store", store, "query", *args], off)
               for how, launcher in launchers.items() for name, args in queries.items()},
            "in-process (python -m), no early open: as-of json": (
                [sys.executable, "-c", no_early, "--store", store, "query", *queries["as-of json"]], off),
            **{f"forwarded ({how}): {name}": ([*launcher, "--store", store, "query", *args], on)
               for how, launcher in launchers.items() for name, args in queries.items()},
        }
        times: dict[str, list[float]] = {name: [] for name in [first, ready, *cases]}
        for cmd, _ in cases.values():  # warm the file cache and the bytecode (in-process: the process is off)
            subprocess.run(cmd, capture_output=True, check=True, env=off)
        for _ in range(rounds):
            query_client.processes("stop")
            while query_client.processes("status"):
                time.sleep(0.05)
            t0 = time.perf_counter()
            subprocess.run(first_call, capture_output=True, check=True, env=on)
            times[first].append(time.perf_counter() - t0)
            indexed_process_ready()
            times[ready].append(time.perf_counter() - t0)
            for name, (cmd, env) in cases.items():
                t0 = time.perf_counter()
                subprocess.run(cmd, capture_output=True, check=True, env=env)
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(v) for name, v in times.items()}


def kglite_alone(n_facts: int, seed: int, batch_facts: int) -> dict[str, Any]:
    """`kglite_alone.py` in its own process: the engine's calls alone on the frames the load hands it."""
    out = subprocess.run([sys.executable, str(Path(__file__).with_name("kglite_alone.py")), "--facts", str(n_facts),
                          "--seed", str(seed), "--batch-facts", str(batch_facts)],
                         capture_output=True, text=True, check=True)
    got: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    got["load_avg"] = os.getloadavg()
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--facts", type=int, default=1_000_000)
    ap.add_argument("--quick", action="store_true", help="100k facts, 200 queries: a smoke run")
    ap.add_argument("--queries", type=int, default=1000, help="random queries per operation")
    ap.add_argument("--changed", type=int, default=5, help="changed_between windows (3 years each)")
    ap.add_argument("--batch-facts", type=int, default=100_000,
                    help="facts per GraphBatch/write_batch call, each one transaction (0: all in one)")
    ap.add_argument("--loader", choices=("bulk", "batch"), default="bulk",
                    help="bulk: FactTable + write_bulk (native loaders, one staged copy); batch: Fact + GraphBatch + "
                         "write_batch per batch (the transactional Cypher path)")
    ap.add_argument("--reuse", type=Path, default=None,
                    help="query an existing store built by this script with the same --facts/--seed (no load)")
    ap.add_argument("--timeout-s", type=int, default=120, help="engine deadline per query (kglite default 180)")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--dir", type=Path, default=None, help="where the store goes (default: a temporary directory)")
    ap.add_argument("--keep", action="store_true", help="keep the store afterwards")
    ap.add_argument("--load-only", action="store_true", help="measure the load, skip the queries")
    ap.add_argument("--cypher-sidecar-up-to", type=int, default=1_000_000,
                    help="time the sidecar's Cypher fallback build only up to this size (it holds every fact)")
    ap.add_argument("--out", type=Path, default=None, help="write all measurements as JSON")
    ap.add_argument("--cli-only", action="store_true", help="with --reuse: only the `chronokg query` rows (in "
                    "process, first call, forwarded to the local query process)")
    ap.add_argument("--cli-rounds", type=int, default=5, help="fresh `chronokg query` processes per command")
    ap.add_argument("--ops", default=",".join(OPS),
                    help=f"operations to time, comma-separated, of {','.join(OPS)} (default all); a subset also "
                         "skips the open, CLI and sidecar-build measures (e.g. a 10M changed_between check)")
    ap.add_argument("--impls", default=",".join(IMPLS),
                    help=f"implementations to time, of {','.join(IMPLS)} (default all); the Python index and "
                         "DuckDB are built only when asked for (e.g. catalog,duckdb)")
    args = ap.parse_args(argv)
    only_ops, only_impls = args.ops.split(","), args.impls.split(",")
    for given, known, flag in ((only_ops, OPS, "--ops"), (only_impls, IMPLS, "--impls")):
        if not set(given) <= set(known):
            ap.error(f"{flag}: unknown {', '.join(sorted(set(given) - set(known)))} (known: {', '.join(known)})")
    subset = set(only_ops) != set(OPS)
    # Every checkpoint of a fresh store announces which columns it cannot memory-map; not our measure.
    warnings.filterwarnings("ignore", category=kglite.MappedFallbackWarning)
    if args.quick:
        args.facts, args.queries, args.changed = 100_000, 200, 3
    n_facts: int = args.facts
    n_subjects = max(1, n_facts // FACTS_PER_SUBJECT)

    workdir = Path(tempfile.mkdtemp(prefix="bench_store_", dir=args.dir))
    path = args.reuse or workdir / "bench.kgl"
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "kglite": kglite.__version__
               if hasattr(kglite, "__version__") else "?", "duckdb": _version("duckdb"),
               "platform": platform.platform(), "date": dt.date.today().isoformat()}
    try:
        res = Results(facts=n_facts, seed=args.seed, machine=machine, load={})
        if args.reuse is None:
            print(f"loading {n_facts:,} facts into {path} ...", file=sys.stderr, flush=True)
            loader = load_bulk if args.loader == "bulk" else load
            stats = loader(path, n_facts, args.seed, args.batch_facts or n_facts)
            res.load = {**asdict(stats), "write_rate": stats.write_rate, "end_to_end_rate": stats.end_to_end_rate,
                        "loader": args.loader}
            print(f"  write_batch {stats.write_rate:,.0f} facts/s, peak RSS {stats.peak_rss_mib:,.0f} MiB",
                  file=sys.stderr, flush=True)
            if args.loader == "bulk":
                print("kglite's own calls on the same frames ...", file=sys.stderr, flush=True)
                res.load["kglite_alone"] = kglite_alone(n_facts, args.seed, args.batch_facts or n_facts)

        if args.load_only:
            print(json.dumps(res.load, indent=2))
            if args.out:
                args.out.write_text(json.dumps(asdict(res), indent=2, default=str))
            return 0
        if args.cli_only:
            res.cli_s = measure_cli(path, args.cli_rounds)
            avg = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            print(f"`chronokg query` end to end on {n_facts:,} facts, median of {args.cli_rounds} rounds "
                  f"(load average after: {avg})")
            for name, value in res.cli_s.items():
                target = "" if name.startswith(("floor", "  ")) else "<= 0.5"
                met = "" if not target else ("yes" if value <= 0.5 else "NO")
                print(f"{name:62s} {value:8.3f} s {target:>8s} {met:>4s}")
            if args.out:
                args.out.write_text(json.dumps(asdict(res), indent=2, default=str))
            return 0
        if not subset:
            res.open_variants = measure_opens(path)
            res.cli_s = measure_cli(path, args.cli_rounds)
        res.load_avg = os.getloadavg()
        t0 = time.perf_counter()
        store = KgliteStore(path, read_only=True)  # as `chronokg query` opens it
        store.raw().set_default_timeout(args.timeout_s * 1000)
        res.open_s = time.perf_counter() - t0
        res.rss_after_open_mib = current_rss_mib()
        if n_facts <= args.cypher_sidecar_up_to and not subset:
            # The Cypher build is the fallback a checkpoint uses when the bulk load's own columns cannot be
            # merged exactly (graph/interval_feed.py); it holds every current fact at once (~1.5 GB at 1M).
            t0 = time.perf_counter()
            interval_index.build_columns(store.raw())
            res.sidecar["interval index: Cypher build s (the fallback)"] = time.perf_counter() - t0
        side = interval_index.sidecar(path)
        res.sidecar["interval index: sidecar MiB"] = side.stat().st_size / 2**20 if side.exists() else math.nan
        res.sidecar["interval index: used by the reader (1 = yes)"] = float(store.intervals() is not None)
        py = duck = None
        if "py" in only_impls:
            t0 = time.perf_counter()
            py = PythonIndex(synthetic_rows(n_facts, args.seed))
            res.reference_build_s["python_index"] = time.perf_counter() - t0
        if "duckdb" in only_impls:
            t0 = time.perf_counter()
            duck = DuckFacts(synthetic_rows(n_facts, args.seed), workdir)
            res.reference_build_s["duckdb"] = time.perf_counter() - t0
        print("querying ...", file=sys.stderr, flush=True)
        timings = run_queries(store, py, duck, n_subjects, args.queries, args.changed, args.seed, res, only_ops,
                              only_impls)
        store.close()
        res.kgl_bytes_reopened = path.stat().st_size
        res.peak_rss_run_mib = peak_rss_mib()
        if duck is not None:
            duck.con.close()
        res.timings = [asdict(t) for t in timings]
        print(table(res, timings))
        if args.out:
            args.out.write_text(json.dumps(asdict(res), indent=2, default=str))
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"store kept at {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
