"""Retrieval on the demo store: recall@k of time-aware vs atemporal retrieval, and `retrieve search` cold vs warm.

The demo store (`chronokg demo`'s corpus and sources: 276 passages) and its TempoMed questions (`generate
tempomed`); the historical-targeted questions of one perturbation (`mcq5/historical/reorder_only`, one per change
pair: the other perturbations share stem and key). For each passage format, in the same run with the same model:

* `heading`: the current format: a recommendation is embedded after its heading (the clinical decision's caption,
  the guideline's organisation, title, year and topic);
* `text only`: the previous format, the baseline: the recommendation's sentence alone.

Three arms per format: time-aware (passages valid on the question's date), atemporal (the runner's `--rag
atemporal`: every version, ranked by similarity alone) and today (only passages valid today). recall@k = share of
questions with the recommendation in force on their date among the top k (`chronokg.retrieval.evaluate`).

Part 2 (with `--cli`): wall time of `chronokg retrieve search` on the demo index from a shell, the first call (it
starts the local search process, which loads the encoder and answers it) and the calls after it (answered by the
warm process), with that process's own count of calls answered.

    python benchmarks/bench_retrieval_demo.py              # recall table
    python benchmarks/bench_retrieval_demo.py --cli 5      # and five CLI calls after the first
    python benchmarks/bench_retrieval_demo.py --backend both   # onnx and sentence-transformers: same rankings?
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
KS = (1, 2, 3, 5)
TODAY = dt.date(2026, 11, 23)
VARIANT = "mcq5/historical/reorder_only"


def demo_store(path: Path) -> None:
    from chronokg.demo.corpus import load_demo
    from chronokg.demo.sources import load_sources
    from chronokg.graph.kglite_store import KgliteStore

    with KgliteStore(path) as store:
        load_demo(store)
        load_sources(store)


def recall(work: Path, backend: str = "onnx") -> dict[str, Any]:
    """recall@k per passage format and arm, on the demo's historical questions, with the encoder `backend`; and
    every question's top-k passage ids per format and arm (`rankings`), for comparing backends."""
    from chronokg.bench.family import generate
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.retrieval.embed import shared_embedder
    from chronokg.retrieval.evaluate import evaluate
    from chronokg.retrieval.index import PassageIndex, build
    from chronokg.retrieval.passages import store_passages
    from chronokg.retrieval.rag import Retriever
    from chronokg.settings import Settings

    work.mkdir(parents=True, exist_ok=True)
    store_path = work / "demo.kgl"
    demo_store(store_path)
    with KgliteStore(store_path, read_only=True) as store:
        passages = list(store_passages(store))
        questions, _ = generate("tempomed", store, "bench", {})
    historical = [q for q in questions if q.variant == VARIANT]
    embedder = shared_embedder(Settings(embedding_backend=backend))  # type: ignore[arg-type]
    embedder.encode(["warm-up"])  # the model loads outside the timed builds
    formats = {"heading": passages, "text only": [p.model_copy(update={"heading": None}) for p in passages]}
    out: dict[str, Any] = {"backend": backend, "passages": len(passages), "questions": len(historical), "rows": [],
                           "rankings": {}}
    for name, items in formats.items():
        t = time.perf_counter()
        index, _ = build(work / f"{name.replace(' ', '-')}.rag", items, embedder)
        index.close()
        build_s = time.perf_counter() - t
        retriever = Retriever(PassageIndex.open(work / f"{name.replace(' ', '-')}.rag"), embedder, today=TODAY)
        for arm, label in (("time-aware", "time-aware"), ("atemporal", "atemporal (every version)"),
                           ("today", "today's passages")):
            row: dict[str, Any] = {"format": name, "arm": label, "build_s": build_s}
            for k in KS:
                report = evaluate(retriever, historical, arm, k)  # type: ignore[arg-type]
                row[f"recall@{k}"] = report.recall_at_k
                row["questions"] = report.questions
            out["rows"].append(row)
            for q in evaluate(retriever, questions, arm, max(KS)).per_question:  # type: ignore[arg-type]
                out["rankings"][f"{name} | {label} | {q.id}"] = q.hits
    return out


def _recalls(run: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k != "build_s"} for row in run["rows"]]


def compare(runs: list[dict[str, Any]]) -> str:
    """How many questions' top-k lists (every format and arm) are the same under each backend."""
    first, *others = runs
    lines = []
    for other in others:
        keys = sorted(first["rankings"])
        same = sum(first["rankings"][key] == other["rankings"].get(key) for key in keys)
        lines.append(f"top-{max(KS)} passage lists identical, {first['backend']} vs {other['backend']}: {same} of "
                     f"{len(keys)} (every generated question with a target passage x 2 formats x 3 arms); "
                     f"recall tables identical: {_recalls(first) == _recalls(other)}")
    return "\n".join(lines)


def cli_calls(work: Path, calls: int) -> dict[str, Any]:
    """`chronokg retrieve search` from a shell: the first call, then `calls` more (the warm process)."""
    store = work / "cli" / "demo.kgl"
    store.parent.mkdir(parents=True)
    demo_store(store)
    runtime = Path(tempfile.mkdtemp(prefix="chronokg-bench-rt-"))
    runtime.chmod(0o700)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CHRONOKG_")}, "PYTHONPATH": str(REPO),
           "CHRONOKG_STORE": f"kglite://{store}", "XDG_RUNTIME_DIR": str(runtime),
           "CHRONOKG_QUERY_DAEMON_IDLE_S": "60"}
    cli = [sys.executable, "-m", "chronokg.cli"]
    t = time.perf_counter()
    subprocess.run([*cli, "index", "build"], check=True, env=env, capture_output=True)
    build_s = time.perf_counter() - t
    times: list[float] = []
    outputs: list[str] = []
    for _ in range(calls + 1):
        t = time.perf_counter()
        done = subprocess.run([*cli, "retrieve", "search", "chest compression depth", "--as-of", "2012-06-01", "-k",
                               "3"], check=True, env=env, capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        outputs.append(done.stdout)
    status = subprocess.run([*cli, "query", "daemon", "status", "--format", "json"], env=env, capture_output=True,
                            text=True)
    subprocess.run([*cli, "query", "daemon", "stop"], env=env, capture_output=True)
    answered = [p["requests"] for p in json.loads(status.stdout or "[]") if p.get("kind") == "search"]
    return {"build_s": build_s, "times": times, "same_output": len(set(outputs)) == 1, "answered": answered}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", type=int, default=0, help="CLI calls after the first (0: none)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--backend", default="onnx", help="the encoder: onnx, sentence-transformers, or both "
                        "(then the rankings of the two are compared)")
    args = parser.parse_args()
    backends = ["onnx", "sentence-transformers"] if args.backend == "both" else [args.backend]
    with tempfile.TemporaryDirectory(prefix="chronokg-bench-demo-") as tmp:
        work = Path(tmp)
        runs = []
        for backend in backends:
            r = recall(work / backend, backend)
            runs.append(r)
            print(f"\nencoder backend {backend}: demo store {r['passages']} passages, {r['questions']} historical "
                  f"questions ({VARIANT})")
            print("| passage format | arm | " + " | ".join(f"recall@{k}" for k in KS) + " | index build s |")
            print("|---|---|" + "---:|" * (len(KS) + 1))
            for row in r["rows"]:
                print(f"| {row['format']} | {row['arm']} | " + " | ".join(f"{row[f'recall@{k}']:.2f}" for k in KS)
                      + f" | {row['build_s']:.2f} |")
            aware = next(x for x in r["rows"] if x["format"] == "heading" and x["arm"] == "time-aware")
            print(f"goal time-aware recall@2 >= 0.8: {'met' if aware['recall@2'] >= 0.8 else 'not met'} "
                  f"({aware['recall@2']:.2f})")
        result: dict[str, Any] = {"recall": runs[0], "runs": runs}
        if len(runs) > 1:
            print("\n" + compare(runs))
        if args.cli:
            c = cli_calls(work, args.cli)
            result["cli"] = c
            later = sorted(c["times"][1:])
            print(f"\n`chronokg index build` on the demo store: {c['build_s']:.1f} s")
            print(f"`chronokg retrieve search`: first call {c['times'][0]:.2f} s; later calls (warm process) "
                  f"p50 {later[len(later) // 2]:.2f} s, max {later[-1]:.2f} s; same output every call: "
                  f"{c['same_output']}; calls the search process answered: {c['answered']}")
            print(f"goal second call <= 1 s: {'met' if c['times'][1] <= 1.0 else 'not met'} ({c['times'][1]:.2f} s)")
        if args.out:
            args.out.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()
