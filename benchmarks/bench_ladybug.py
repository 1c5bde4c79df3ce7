"""LadybugDB beside kglite on `bench_store.py`'s synthetic facts: load rate, peak RSS, point as-of reads.

    PYTHONPATH=. .venv-lb/bin/python benchmarks/bench_ladybug.py --facts 100000 1000000

Each (engine, size) runs in its own process, so peak RSS (`ru_maxrss`, read right after the load and
close, before any read) is that load's. Both loads stage the same facts the same way (`FactTable.add_many`:
same ids, same checks), then kglite writes through the project's bulk path (`bulk.write_bulk`) and ladybug
writes the columns to Parquet and runs `COPY FROM` (its native loader: the fastest way in). Generation of
the synthetic rows is not counted, as in `bench_store.py`. Reads: a random (subject, day) point as-of,
through the catalog (`catalog.facts_as_of`, typed rows) on both, and on ladybug also the same question
anchored on the subject's primary key and its SUBJECT edges (ladybug has no secondary property index, so
the catalog's `f.subject_id = $subject` scans every fact).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import RELEASE, SOURCE, chunked, day, entity, load_bulk, peak_rss_mib, synthetic_rows

from chronokg.graph.facts import COLUMNS, FactTable
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.store import GraphStore
from chronokg.queries import catalog

SEED = 7
BATCH = 100_000
READ_BUDGET_S = 20.0  # per read kind: as many reads as fit, at most `--reads`
NATIVE_START = "MATCH (:Entity {id: $subject})<-[:SUBJECT]-(f:Fact)\nWHERE"


def time_reads(n_facts: int, reads: int, ask: Callable[[str, Any], list[Any]]) -> dict[str, float]:
    rng = random.Random(SEED + 1)
    n_subjects = max(1, n_facts // 10)
    questions = [(entity(rng.randrange(n_subjects)), day(rng)) for _ in range(reads)]
    ask(*questions[0])  # warm
    times: list[float] = []
    rows = 0
    start = time.perf_counter()
    for subject, when in questions:
        t0 = time.perf_counter()
        rows += len(ask(subject, when))
        times.append((time.perf_counter() - t0) * 1000)
        if time.perf_counter() - start > READ_BUDGET_S:
            break
    return {"mean_ms": statistics.fmean(times), "p50_ms": statistics.median(times), "n": len(times), "rows": rows}


def as_of(store: GraphStore) -> Callable[[str, Any], list[Any]]:
    return lambda subject, when: catalog.facts_as_of(store, when, subject=subject)


def child_kglite(n_facts: int, reads: int, work: Path) -> dict[str, Any]:
    path = work / "bench.kgl"
    stats = load_bulk(path, n_facts, SEED, BATCH)
    out: dict[str, Any] = {"load_s": stats.fact_s + stats.write_s + stats.close_s, "peak_rss_mib": stats.peak_rss_mib,
                           "disk_mib": stats.kgl_bytes / 2**20}
    with KgliteStore(path, read_only=True) as store:
        out["catalog"] = time_reads(n_facts, reads, as_of(store))
    return out


def _parquet(table: FactTable, work: Path, part: int, entities: set[str]) -> None:
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    date_cols = {"valid_from", "valid_to", "known_from", "known_to"}
    cols: dict[str, Any] = {"id": pa.array(table.ids, pa.string())}
    for c in COLUMNS:
        cols[c] = pa.array(table.columns[c], pa.date32() if c in date_cols else pa.string())
    pq.write_table(pa.table(cols), work / f"fact-{part:04d}.parquet")
    ids = cols["id"]
    for rel, target in (("SUBJECT", "subject_id"), ("OBJECT", "object_id"), ("ASSERTED_IN", "source_id")):
        pq.write_table(pa.table({"from": ids, "to": cols[target]}), work / f"{rel}-{part:04d}.parquet")
    entities.update(table.entities)


def child_ladybug(n_facts: int, reads: int, work: Path) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from ladybug_store import LadybugStore

    db = work / "bench.lbdb"
    stage_s = gen_s = 0.0
    start = time.perf_counter()
    store = LadybugStore(db)
    schema_s = time.perf_counter() - start
    parquet_s = 0.0
    entities: set[str] = set()
    rows = chunked(synthetic_rows(n_facts, SEED), BATCH)
    for part in range(10**6):
        t0 = time.perf_counter()
        batch = next(rows, None)
        gen_s += time.perf_counter() - t0
        if batch is None:
            break
        t0 = time.perf_counter()
        subjects, predicates, objects, starts, ends = (list(c) for c in zip(*batch, strict=True))
        table = FactTable()
        table.source(SOURCE)
        table.add_many(subjects, predicates, objects=objects, valid_from=starts, valid_to=ends,
                       known_from=RELEASE, source_id=SOURCE.id, source_kind=SOURCE.kind)
        stage_s += time.perf_counter() - t0
        t0 = time.perf_counter()
        _parquet(table, work, part, entities)
        parquet_s += time.perf_counter() - t0
        del table, batch
    pq.write_table(pa.table({"id": sorted(entities), "kind": pa.nulls(len(entities), pa.string()),
                             "caption": pa.nulls(len(entities), pa.string())}), work / "entity.parquet")
    del entities
    store.write([("UNWIND $rows AS r CREATE (n:Source {id: r.id, kind: r.kind, caption: r.caption})",
                  {"rows": [{"id": SOURCE.id, "kind": SOURCE.kind, "caption": SOURCE.caption}]})])
    conn = store._conn
    t_copy = time.perf_counter()
    conn.execute(f"COPY Entity FROM '{work}/entity.parquet'")
    conn.execute(f"COPY Fact FROM '{work}/fact-*.parquet'")
    for rel in ("SUBJECT", "OBJECT", "ASSERTED_IN"):
        conn.execute(f"COPY {rel} FROM '{work}/{rel}-*.parquet'")
    copy_s = time.perf_counter() - t_copy
    store.close()
    load_s = time.perf_counter() - start - gen_s
    out: dict[str, Any] = {"load_s": load_s, "stage_s": stage_s, "schema_s": schema_s, "parquet_s": parquet_s,
                           "copy_s": copy_s, "peak_rss_mib": peak_rss_mib(),
                           "disk_mib": sum(p.stat().st_size for p in db.parent.glob("bench.lbdb*")) / 2**20}
    with LadybugStore(db, read_only=True) as reader:
        out["catalog"] = time_reads(n_facts, reads, as_of(reader))

        def native(subject: str, when: Any) -> list[Any]:
            text, args = catalog.facts_as_of_cypher(when, subject=subject)
            return reader.run(text.replace("MATCH (f:Fact)\nWHERE f.subject_id = $subject\n  AND", NATIVE_START),
                              args)

        out["native"] = time_reads(n_facts, reads, native)
        subject = entity(3)
        when = RELEASE
        text, args = catalog.facts_as_of_cypher(when, subject=subject)
        assert [r["id"] for r in native(subject, when)] == [r["id"] for r in reader.run(text, args)]
    return out


def run_child(engine: str, n_facts: int, reads: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", engine, "--facts", str(n_facts), "--reads", str(reads)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"rc {done.returncode}"}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--facts", type=int, nargs="+", default=[100_000, 1_000_000])
    ap.add_argument("--reads", type=int, default=300)
    ap.add_argument("--engines", nargs="+", default=["kglite", "ladybug"])
    ap.add_argument("--child", choices=("kglite", "ladybug"))
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if args.child:
        with tempfile.TemporaryDirectory(prefix="bench-lb-") as tmp:
            fn = child_kglite if args.child == "kglite" else child_ladybug
            print(json.dumps(fn(args.facts[0], args.reads, Path(tmp))))
        return 0
    results: list[dict[str, Any]] = []
    print("| engine | facts | load s | facts/s | peak RSS MiB | disk MiB | as-of catalog mean / p50 ms | "
          "as-of by PK+edge ms | load avg |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for n in args.facts:
        for engine in args.engines:
            before = load_average()
            r = run_child(engine, n, args.reads)
            r.update(engine=engine, facts=n, load_avg=f"{before} -> {load_average()}")
            results.append(r)
            if "error" in r:
                print(f"| {engine} | {n:,} | failed: {r['error'][:80]} | | | | | | {r['load_avg']} |")
                continue
            cat, nat = r["catalog"], r.get("native")
            native = f"{nat['mean_ms']:.3f} (n={nat['n']})" if nat else "-"
            print(f"| {engine} | {n:,} | {r['load_s']:.1f} | {n / r['load_s']:,.0f} | {r['peak_rss_mib']:,.0f} | "
                  f"{r['disk_mib']:,.0f} | {cat['mean_ms']:.3f} / {cat['p50_ms']:.3f} (n={cat['n']}) | "
                  f"{native} | {r['load_avg']} |", flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
