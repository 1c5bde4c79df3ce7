"""Where a cheap tool call's time goes in a read worker, and what the worker's cheap path saves.

Two tables, one run, one store (bench_serve's synthetic store, built here or reused with --store):

1. the stages of one cheap call of bench_serve's mix, timed one by one in this process: argument validation,
   the query text, the guard's text check, its EXPLAIN + plan check, the guard's forked read (`run_limited`),
   typed rows + JSON values, the JSON answer; and, apart, a bare fork + exit + wait of this process;
2. bench_serve's cheap mix through one forked read worker (`WorkerPool`, no HTTP), per tool: the old path (the
   guard in full for every call: its checks and a fork per read) beside the worker's cheap path
   (`chronokg.serve.reads`: remembered verdicts, catalog reads in the worker itself).

    python benchmarks/profile_serve_call.py --facts 100000
    python benchmarks/profile_serve_call.py --store /tmp/bench-serve-x/store.kgl
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_serve import build_store, workload

from chronokg.errors import ChronoKGError
from chronokg.graph.guard import ReadLimits, check_plan, check_text
from chronokg.graph.kglite_store import KgliteStore
from chronokg.queries.spec import QUERIES
from chronokg.serve.host import ToolHost, run_tool
from chronokg.serve.tools import CypherParams, jsonable
from chronokg.serve.workers import WorkerPool


def ms(values: list[float]) -> str:
    return f"{statistics.mean(values) * 1000:8.2f} | {statistics.median(values) * 1000:8.2f}" if values else "n/a"


def stages(host: ToolHost, subjects: int, calls: int, seed: int) -> dict[str, list[float]]:
    store, limits = host.store, host.limits
    out: dict[str, list[float]] = {k: [] for k in (
        "validate the arguments", "build the query text", "guard: text check", "guard: EXPLAIN + plan check",
        "guard: forked read (run_limited)", "typed rows + JSON values", "the JSON answer",
        "the whole call (run_tool, old path)")}
    rng = random.Random(seed)
    for _ in range(calls):
        name, args, _ = workload(rng, subjects)
        tool = host.tool(name)
        t0 = time.perf_counter()
        checked_args = tool.validate(args)
        out["validate the arguments"].append(time.perf_counter() - t0)
        if tool.kind == "query":
            spec = QUERIES.get(str(tool.query))
            t0 = time.perf_counter()
            text, params = spec.build(checked_args)
            out["build the query text"].append(time.perf_counter() - t0)
        else:
            cypher = checked_args
            assert isinstance(cypher, CypherParams)
            text, params = cypher.query, cypher.params
        try:
            t0 = time.perf_counter()
            checked = check_text(text)
            out["guard: text check"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            check_plan(store.explain(checked.statement, params), store.capabilities.read_operators)
            out["guard: EXPLAIN + plan check"].append(time.perf_counter() - t0)
        except ChronoKGError:
            continue  # the refused write of the mix: refused by the text check, nothing more to time
        t0 = time.perf_counter()
        result = store.run_limited(text, params, limits)
        out["guard: forked read (run_limited)"].append(time.perf_counter() - t0)
        if tool.kind == "query":
            t0 = time.perf_counter()
            typed = [spec.row.model_validate(r) for r in result.rows]
            jsonable(spec.post(typed, checked_args) if spec.post is not None else typed)
            out["typed rows + JSON values"].append(time.perf_counter() - t0)
        answer = run_tool(store, tool, checked_args, limits)
        out["the whole call (run_tool, old path)"].append(answer.elapsed_s)
        t0 = time.perf_counter()
        answer.model_dump_json()
        out["the JSON answer"].append(time.perf_counter() - t0)
    return out


def bare_fork(n: int) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os._exit(0)
        os.waitpid(pid, 0)
        times.append(time.perf_counter() - t0)
    return times


def through_worker(host: ToolHost, run: Callable[[str, Any], Any], subjects: int, calls: int,
                   seed: int) -> tuple[float, dict[str, list[float]]]:
    pool = WorkerPool(run, 1, call_timeout_s=120, fork_lock=threading.Lock())
    per: dict[str, list[float]] = {}
    rng = random.Random(seed)
    start = time.perf_counter()
    try:
        for _ in range(calls):
            name, args, _ = workload(rng, subjects)
            label = name if name != "cypher" else "cypher (write, refused)" if "DELETE" in args["query"] else \
                "cypher (read)"
            tool = host.tool(name)
            t0 = time.perf_counter()
            pool.call(name, tool.validate(args), "bench", host.limits.timeout_s + 2 if tool.kind == "query" else None)
            per.setdefault(label, []).append(time.perf_counter() - t0)
    finally:
        pool.close()
    return time.perf_counter() - start, per


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--facts", type=int, default=100_000)
    ap.add_argument("--store", type=Path, help="a store built by bench_serve or an earlier run (--keep)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="profile-serve-"))
    path = args.store or tmp / "store.kgl"
    try:
        if args.store is None:
            build_store(path, args.facts, 7)
        host = ToolHost(KgliteStore(path, read_only=True), limits=ReadLimits(), close_store=True)
        subjects = len(host.store.run("MATCH (f:Fact {source_id: 'bench'}) RETURN DISTINCT f.subject_id AS s"))
        store, limits = host.store, host.limits

        def old(name: str, call_args: Any) -> Any:
            return run_tool(store, host.tool(name), call_args, limits)

        # the workers fork first (as a server does), before anything here may start a thread
        old_s, old_per = through_worker(host, old, subjects, args.calls, args.seed)
        new_s, new_per = through_worker(host, host._run_local, subjects, args.calls, args.seed)
        parts = stages(host, subjects, min(args.calls, 300), args.seed)
        fork = bare_fork(50)
        print(f"store: {path} ({path.stat().st_size / 2**20:.0f} MiB), {subjects:,} subjects; load average "
              f"{os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs\n")
        print("| stage of one cheap call (in process, one at a time) | mean ms | p50 ms |\n|---|---:|---:|")
        for name, values in parts.items():
            print(f"| {name} | {ms(values)} |")
        print(f"| (apart) a bare fork + exit + wait of this process | {ms(fork)} |")
        print(f"\nthe cheap mix through one read worker, {args.calls} calls one at a time (no HTTP):\n")
        print("| tool | calls | old path p50 ms (guard in full, fork per read) | cheap path p50 ms (remembered "
              "verdicts, catalog reads in the worker) |\n|---|---:|---:|---:|")
        for label in sorted(old_per):
            print(f"| {label} | {len(old_per[label])} | {statistics.median(old_per[label]) * 1000:.2f} | "
                  f"{statistics.median(new_per.get(label, [float('nan')])) * 1000:.2f} |")
        print(f"| all, ms per call (wall) | {args.calls} | {old_s / args.calls * 1000:.2f} | "
              f"{new_s / args.calls * 1000:.2f} |")
        host.close()
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
