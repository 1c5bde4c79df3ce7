"""Encoder start: CPU-seconds from a fresh process to its first sentence vector, per encoder backend.

Each run is a new `python -c` process that imports chronokg, builds the shared encoder for the backend
(`CHRONOKG_EMBEDDING_BACKEND`) and encodes one short text; its CPU time (user + system, with every process it
waited for: the sentence-transformers worker) is read with `resource.getrusage(RUSAGE_CHILDREN)` after it exits.

* `sentence-transformers`: torch and sentence-transformers in the worker process (the previous default, the
  baseline); it keeps no cache of its own, so it is measured once per run;
* `onnx`, cold cache: an empty `CHRONOKG_EMBEDDING_CACHE`, so the run hashes the weights and builds the graph;
* `onnx`, warm cache: the graph built by an earlier run.

The floor measured beside: a process that imports chronokg's settings (pydantic-settings) and reads them, as
every encoding process does first.

    python benchmarks/bench_encoder_start.py              # 5 runs each
    python benchmarks/bench_encoder_start.py --runs 3 --out start.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FLOOR = "from chronokg.settings import Settings; Settings()"  # what every chronokg process pays before encoding
FIRST_VECTOR = """
from chronokg.retrieval.embed import shared_embedder
vector = shared_embedder().encode(["chest compression depth for adults"])
assert vector.shape == (1, 384), vector.shape
"""


def run_once(code: str, env: dict[str, str]) -> tuple[float, float]:
    """CPU-seconds (the process and what it waited for) and wall seconds of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=REPO, capture_output=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def measure(label: str, cache: str, code: str, env: dict[str, str], runs: int,
            fresh_cache: bool = False) -> dict[str, Any]:
    cpu: list[float] = []
    wall: list[float] = []
    for _ in range(runs):
        folder = tempfile.mkdtemp(prefix="chronokg-encoders-") if fresh_cache else env.get("CHRONOKG_EMBEDDING_CACHE")
        try:
            c, w = run_once(code, {**env, "CHRONOKG_EMBEDDING_CACHE": folder or ""})
        finally:
            if fresh_cache and folder:
                shutil.rmtree(folder, ignore_errors=True)
        cpu.append(c)
        wall.append(w)
    return {"backend": label, "cache": cache, "cpu_s": statistics.median(cpu), "cpu_min": min(cpu),
            "cpu_max": max(cpu), "wall_s": statistics.median(wall), "runs": runs}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per row")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    warm_cache = tempfile.mkdtemp(prefix="chronokg-encoders-warm-")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("CHRONOKG_")}, "PYTHONPATH": str(REPO),
           "CHRONOKG_EMBEDDING_CACHE": warm_cache}
    try:
        rows = [measure("chronokg's settings only (floor)", "-", FLOOR, env, args.runs),
                measure("sentence-transformers (baseline)", "none",
                        FIRST_VECTOR, {**env, "CHRONOKG_EMBEDDING_BACKEND": "sentence-transformers"}, args.runs),
                measure("onnx", "cold (empty)", FIRST_VECTOR, env, args.runs, fresh_cache=True)]
        run_once(FIRST_VECTOR, env)  # fills the warm cache
        rows.append(measure("onnx", "warm", FIRST_VECTOR, env, args.runs))
    finally:
        shutil.rmtree(warm_cache, ignore_errors=True)
    base = rows[1]["cpu_s"]
    print(f"CPU-seconds to the first vector, fresh process each run (median of {args.runs}; "
          f"load average {os.getloadavg()[0]:.1f} at the end)")
    print("| backend | encoder cache | CPU-s (median) | CPU-s min-max | wall s (median) | CPU vs baseline |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['backend']} | {r['cache']} | {r['cpu_s']:.2f} | {r['cpu_min']:.2f}-{r['cpu_max']:.2f} | "
              f"{r['wall_s']:.2f} | {r['cpu_s'] / base:.2f}x |")
    warm = rows[-1]["cpu_s"]
    print(f"goal onnx warm start <= 0.5 CPU-s: {'met' if warm <= 0.5 else 'not met'} ({warm:.2f})")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
