"""Tool server under bounded loopback load: 50 concurrent clients for 30 s, beside in-process baselines.

The target: under bounded loopback load (50 concurrent clients for 30 s), 0 errors, with p50/p99 printed.
One run measures, on the same store and the same mix of calls:

* in process, one caller, no workers (`ToolHost.call_tool`: the floor, the guard's fork included);
* in process, N concurrent callers through the forked read workers (no HTTP: the workers' own limit);
* `chronokg serve http` on loopback (a child process, started through the CLI, one bearer token per
  client, the per-token rate limit on), N concurrent HTTP clients with keep-alive;
* for comparison, why calls are serialised or sent to workers: 8 threads calling `guarded_read`
  directly on one store, unserialised; a read that takes milliseconds is sometimes reported as past
  its time limit (its forked child inherited an engine lock another thread held). Not counted as
  the server's errors.

The mix: facts_as_of, timeline, changed_between (one subject), recommended_on, trajectory, a
guarded `cypher` read, and a `cypher` write attempt that must come back refused (403). An error is
any other status, a transport failure, or a refused/failed call that should have answered. The
store's content hash and file are checked before and after.

The heavy-caller mix: 5 callers sending costly Cypher (`HEAVY`, which runs until a read limit stops
it) among 45 callers sending the cheap mix above, over HTTP, each caller with its own token and client id
header, for `--mix-seconds`; with the fair scheduling (per-caller queues, a heavy lane for reads past their
first slice of CPU, one memory budget for all reads; `chronokg.serve.fair`) twice: callers with their own token
and client id, and callers with neither against a server without tokens (the default local setup: callers told
apart by connection); then with the old first come, first served (`CHRONOKG_SERVE_SCHEDULING=fifo`) and with the
cheap callers alone (the machine's floor), on the same store in the same run. Printed: cheap p50/p99/max, heavy
p50, and the peak memory of the server, its workers and their reads together (PSS, sampled every 0.2 s).

    python benchmarks/bench_serve.py                      # 100,000 facts, 50 clients, 30 s; the mix 4 x 30 s
    python benchmarks/bench_serve.py --quick              # 10,000 facts, 20 clients, 5 s
    python benchmarks/bench_serve.py --mix-only           # only the heavy-caller mix
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from chronokg.demo.corpus import load_demo
from chronokg.errors import QueryLimitExceeded
from chronokg.graph.batch import GraphBatch
from chronokg.graph.counts import content_digest
from chronokg.graph.guard import ReadLimits, guarded_read
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import Fact, Source
from chronokg.graph.writer import write_batch
from chronokg.serve import ToolHost
from chronokg.serve.launch import default_workers

REPO = Path(__file__).resolve().parents[1]
PREDICATES = ("position_held", "employer", "residence")
TOPICS = ("resuscitation", "hypertension", "aspirin")


def build_store(path: Path, facts: int, seed: int) -> None:
    """The demo corpus plus `facts` synthetic facts: N/10 subjects, versions chained over 1990-2024."""
    rng = random.Random(seed)
    with KgliteStore(path, durable="off") as store:
        load_demo(store)
        subjects = max(1, facts // 10)
        batch = GraphBatch()
        batch.source(Source(id="bench", kind="bench", caption="bench release"))
        made = 0
        for s in range(subjects):
            for p, versions in zip(PREDICATES, (4, 3, 3), strict=True):
                years = sorted(rng.sample(range(1990, 2024), versions))
                for k, year in enumerate(years):
                    end = dt.date(years[k + 1], 1, 1) if k + 1 < len(years) else None
                    batch.fact(Fact(subject=f"e{s:07d}", predicate=p, object=f"e{rng.randrange(subjects):07d}",
                                    valid_from=dt.date(year, 1, 1), valid_to=end, source_id="bench",
                                    source_kind="bench"))
                    made += 1
            if made >= 100_000:
                write_batch(store, batch)
                batch, made = GraphBatch(), 0
                batch.source(Source(id="bench", kind="bench", caption="bench release"))
        write_batch(store, batch)


HEAVY = ("MATCH (a:Fact), (b:Fact) WHERE a.object_id = b.subject_id AND a.predicate <> b.predicate "
         "RETURN a.subject_id AS s, collect(b.object_id) AS reach ORDER BY size(reach) DESC LIMIT 10")


def workload(rng: random.Random, subjects: int) -> tuple[str, dict[str, Any], int]:
    """One call of the mix: (tool, arguments, expected HTTP status)."""
    subject = f"e{rng.randrange(subjects):07d}"
    day = dt.date(rng.randrange(1990, 2025), rng.randrange(1, 13), 1).isoformat()
    kind = rng.randrange(7)
    if kind == 0:
        return "facts_as_of", {"date": day, "subject": subject}, 200
    if kind == 1:
        return "timeline", {"subject": subject, "predicate": rng.choice(PREDICATES)}, 200
    if kind == 2:
        return "changed_between", {"from": "2000-01-01", "to": day, "subject": subject}, 200
    if kind == 3:
        return "recommended_on", {"date": f"{rng.randrange(2000, 2025)}-06-01", "topic": rng.choice(TOPICS)}, 200
    if kind == 4:
        return "trajectory", {"guideline": "aha-ecc-2015"}, 200
    if kind == 5:
        return "cypher", {"query": "MATCH (f:Fact {subject_id: $s}) RETURN f.predicate AS p, f.object_id AS o, "
                                   "f.valid_from AS since ORDER BY since", "params": {"s": subject}}, 200
    return "cypher", {"query": "MATCH (f:Fact {subject_id: $s}) DETACH DELETE f", "params": {"s": subject}}, 403


@dataclass
class Phase:
    name: str
    latencies: list[float] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    by_tool: dict[str, list[float]] = field(default_factory=dict)  # latencies per tool (cypher: read or write)
    notes: str = ""

    def row(self) -> str:
        lat = sorted(self.latencies)
        p50 = statistics.median(lat) * 1000 if lat else float("nan")
        p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000 if lat else float("nan")
        rate = len(lat) / self.seconds if self.seconds else 0.0
        return f"{self.name:<46} {len(lat):>8,} {rate:>9,.0f} {p50:>8.1f} {p99:>8.1f} {len(self.errors):>7}"


def check(phase: Phase, status: int, expected: int, body: dict[str, Any] | None, what: str) -> None:
    phase.statuses[status] += 1
    if status != expected:
        phase.errors.append(f"{what}: HTTP {status} (expected {expected}): {str(body)[:200]}")
    elif expected == 403 and (body or {}).get("error", {}).get("type") != "refused":
        phase.errors.append(f"{what}: 403 without a refusal: {str(body)[:200]}")


def status_of(result: Any) -> int:
    if result.ok:
        return 200
    return {"refused": 403, "limit_exceeded": 422, "invalid_arguments": 422, "unknown_tool": 404,
            "query_failed": 400, "unavailable": 503}.get(result.error.type, 500)


def in_process_serial(host: ToolHost, subjects: int, seconds: float, seed: int) -> Phase:
    phase = Phase("in process, 1 caller, no workers")
    rng = random.Random(seed)
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        name, args, expected = workload(rng, subjects)
        t0 = time.perf_counter()
        result = host.call_tool(name, args)
        phase.latencies.append(time.perf_counter() - t0)
        check(phase, status_of(result), expected, {"error": result.error.model_dump()} if result.error else None,
              name)
    phase.seconds = time.perf_counter() - start
    return phase


async def in_process_concurrent(host: ToolHost, subjects: int, clients: int, seconds: float, seed: int,
                                name: str) -> Phase:
    phase = Phase(name)
    end = time.perf_counter() + seconds

    async def one(k: int) -> None:
        rng = random.Random(seed + k)
        while time.perf_counter() < end:
            tool, args, expected = workload(rng, subjects)
            t0 = time.perf_counter()
            result = await host.acall_tool(tool, args)
            phase.latencies.append(time.perf_counter() - t0)
            check(phase, status_of(result), expected,
                  {"error": result.error.model_dump()} if result.error else None, tool)

    start = time.perf_counter()
    await asyncio.gather(*(one(k) for k in range(clients)))
    phase.seconds = time.perf_counter() - start
    return phase


async def caller_loop(url: str, headers: dict[str, str], end: float, phase: Phase,
                      next_call: Callable[[], tuple[str, dict[str, Any], int]], *, timeout: float,
                      limit_ok: bool = False) -> None:
    """One closed-loop HTTP caller (no think time) until `end`: each call timed into `phase` and checked; with
    `limit_ok`, a 422 limit_exceeded is counted apart (`statuses[422]`), not as an error."""
    async with httpx.AsyncClient(base_url=url, timeout=timeout, headers=headers) as http:
        while time.perf_counter() < end:
            tool, args, expected = next_call()
            t0 = time.perf_counter()
            try:
                response = await http.post(f"/tools/{tool}", json=args)
            except httpx.HTTPError as exc:
                phase.errors.append(f"{tool}: {type(exc).__name__}: {exc}")
                continue
            phase.latencies.append(time.perf_counter() - t0)
            label = tool if tool != "cypher" else "cypher (refused write)" if expected == 403 else "cypher (read)"
            phase.by_tool.setdefault(label, []).append(phase.latencies[-1])
            body = response.json()
            if limit_ok and response.status_code == 422 and body.get("error", {}).get("type") == "limit_exceeded":
                phase.statuses[422] += 1
                continue
            check(phase, response.status_code, expected, body, tool)


async def over_http(url: str, tokens: list[str], subjects: int, seconds: float, seed: int, name: str) -> Phase:
    phase = Phase(name)
    end = time.perf_counter() + seconds

    async def one(k: int) -> None:
        rng = random.Random(seed + k)
        await caller_loop(url, {"Authorization": f"Bearer {tokens[k]}"}, end, phase,
                          lambda: workload(rng, subjects), timeout=60)

    start = time.perf_counter()
    await asyncio.gather(*(one(k) for k in range(len(tokens))))
    phase.seconds = time.perf_counter() - start
    return phase


async def heavy_mix(url: str, tokens: list[str] | None, callers: int, heavy: int, subjects: int, seconds: float,
                    seed: int, name: str, memory_of: int) -> tuple[Phase, Phase, float]:
    """`heavy` callers sending `HEAVY` among the rest of `callers` sending the cheap mix: (cheap, heavy, peak MiB).
    With `tokens`, each caller sends its own token and client id; without, neither (local agents as they are:
    told apart by their connection). Each caller keeps its own connection."""
    cheap, costly = Phase(f"{name}: {callers - heavy} cheap callers"), Phase(f"{name}: {heavy} heavy callers")
    end = time.perf_counter() + seconds
    peak = [0.0]
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.2):
            peak[0] = max(peak[0], tree_memory(memory_of))

    async def one(k: int) -> None:
        rng = random.Random(seed + k)
        is_heavy = k < heavy
        phase = costly if is_heavy else cheap
        who = f"{'heavy' if is_heavy else 'cheap'}-{k}"
        headers = {} if tokens is None else {"Authorization": f"Bearer {tokens[k]}", "x-chronokg-client": who}
        heavy_call: tuple[str, dict[str, Any], int] = ("cypher", {"query": HEAVY}, 200)
        # a heavy read stopped by a read limit or the memory budget (422 limit_exceeded) is by design, not an error
        await caller_loop(url, headers, end, phase,
                          (lambda: heavy_call) if is_heavy else lambda: workload(rng, subjects),
                          timeout=120, limit_ok=is_heavy)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    try:
        await asyncio.gather(*(one(k) for k in range(callers)))
    finally:
        stop.set()
        sampler.join()
    cheap.seconds = costly.seconds = time.perf_counter() - start
    return cheap, costly, peak[0]


MIX_LABELS = {
    "fair": "fair, each caller its own token and client id",
    "fair-noid": "fair, no token, no client id (callers told apart by connection)",
    "fifo": "first come, first served (old)",
    "alone": "fair, the cheap callers alone (no heavy caller): the machine's floor",
}


def run_mix(path: Path, tmp: Path, args: argparse.Namespace, subjects: int) -> list[tuple[str, Phase, Phase, float]]:
    """The heavy-caller mix against a fresh server per row: fair with client ids, fair without any id (no tokens:
    the default local setup), first come first served, and the cheap callers alone."""
    clients = args.mix_clients
    tokens = [f"bench-mix-{k:03d}-{os.urandom(8).hex()}" for k in range(clients)]
    token_file = tmp / "mix-tokens.txt"
    token_file.write_text("\n".join(tokens))
    out = []
    modes = [m for m in args.scheduling.split(",") if m]
    runs: list[tuple[str, str, int, bool, Path | None]] = [
        (m, "fifo" if m == "fifo" else "fair", args.heavy, m != "fair-noid", None) for m in modes]
    if args.heavy and not args.no_cheap_alone:
        runs.append(("alone", "fair", 0, True, None))  # what the machine gives the cheap callers alone: the floor
    if args.baseline_repo is not None:  # the same mix against another checkout's server code, in the same run
        runs += [(f"baseline {m}", "fair", args.heavy, m == "fair", args.baseline_repo) for m in ("fair", "fair-noid")]
    for label, scheduling, heavy, ids, repo in runs:
        # without tokens every caller shares one rate-limit bucket: no limit there, as a local agent runs it
        proc, url = start_server(path, args.workers, token_file if ids else None, args.rate if ids else 0,
                                 {"CHRONOKG_SERVE_SCHEDULING": scheduling}, repo=repo)
        try:
            cheap, costly, peak = asyncio.run(heavy_mix(
                url, tokens[args.heavy - heavy:] if ids else None, clients - (args.heavy - heavy), heavy, subjects,
                args.mix_seconds, args.seed, label, proc.pid))
            health = httpx.get(f"{url}/health", timeout=30).json()
            cheap.notes = (f"reads past their first slice {health.get('reads_outgrown', '?')}, stopped and queued "
                           f"again {health.get('reads_preempted', '?')}, worker restarts {health['worker_restarts']}")
        finally:
            proc.terminate()
            proc.wait(30)
        out.append((label, cheap, costly, peak))
    return out


def _p(p: Phase, f: float) -> float:
    lat = sorted(p.latencies)
    return lat[min(len(lat) - 1, int(len(lat) * f))] * 1000 if lat else float("nan")


def print_mix(rows: list[tuple[str, Phase, Phase, float]], args: argparse.Namespace) -> None:
    print(f"\nheavy-caller mix: {args.heavy} heavy callers (cypher HEAVY) among {args.mix_clients - args.heavy} cheap "
          f"ones, {args.mix_seconds:g} s each, {args.workers} workers; load average {os.getloadavg()[0]:.1f}\n")
    print("| scheduling | cheap calls | cheap p50 ms | cheap p99 ms | cheap max ms | heavy calls | heavy p50 ms | "
          "heavy stopped by a limit | peak memory, server + workers + reads (PSS MiB) | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, cheap, costly, peak in rows:
        base = name.removeprefix("baseline ")
        label = MIX_LABELS[base] if base == name else f"baseline code ({args.baseline_repo}): {MIX_LABELS[base]}"
        print(f"| {label} | {len(cheap.latencies):,} | {_p(cheap, 0.5):,.0f} | {_p(cheap, 0.99):,.0f} | "
              f"{max(cheap.latencies, default=float('nan')) * 1000:,.0f} | {len(costly.latencies):,} | "
              f"{_p(costly, 0.5):,.0f} | {costly.statuses[422]:,} | {peak:,.0f} | "
              f"{len(cheap.errors) + len(costly.errors)} |")
    for name, cheap, _, _ in rows:  # where a cheap caller's tail is: per tool
        print(f"cheap calls by tool, {name}: " + "; ".join(
            f"{tool} {len(lat):,} calls p50 {statistics.median(lat) * 1000:,.0f} p99 "
            f"{sorted(lat)[min(len(lat) - 1, int(len(lat) * 0.99))] * 1000:,.0f} ms"
            for tool, lat in sorted(cheap.by_tool.items())) + (f"; server: {cheap.notes}" if cheap.notes else ""))
    for name, cheap, _, _ in rows:
        if name in ("fair", "fair-noid"):
            p99 = _p(cheap, 0.99)
            print(f"target: cheap p99 <= 1 s, {MIX_LABELS[name]}: {'met' if p99 <= 1000 else 'NOT met'} "
                  f"({p99:,.0f} ms)")


def unserialised(path: Path, subjects: int, seconds: float, threads: int) -> tuple[int, int, float]:
    """`guarded_read` from `threads` threads at once, no lock: (reads, spurious time-limit errors, worst s)."""
    limits = ReadLimits(timeout_s=3.0)
    query = "MATCH (f:Fact {subject_id: $s}) RETURN f.predicate AS p, f.valid_from AS v ORDER BY v"
    counts = Counter[str]()
    worst = [0.0]
    end = time.perf_counter() + seconds
    with KgliteStore(path, read_only=True) as store:
        def run(k: int) -> None:
            rng = random.Random(k)
            while time.perf_counter() < end:
                t0 = time.perf_counter()
                try:
                    guarded_read(store, query, {"s": f"e{rng.randrange(subjects):07d}"}, limits)
                    counts["ok"] += 1
                except QueryLimitExceeded:
                    counts["limit"] += 1
                    worst[0] = max(worst[0], time.perf_counter() - t0)

        pool = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    return counts["ok"] + counts["limit"], counts["limit"], worst[0]


def start_server(store: Path, workers: int, token_file: Path | None, rate: float,
                 extra_env: dict[str, str] | None = None,
                 repo: Path | None = None) -> tuple[subprocess.Popen[str], str]:
    """`chronokg serve http` on a free loopback port, from this checkout or `repo` (another one, to compare);
    without `token_file`, with no tokens (loopback: as a local agent uses it)."""
    cmd = [sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{store}", "serve", "http", "--port", "0",
           "--workers", str(workers), "--rate", str(rate), "--burst", str(max(1, int(rate * 2))),
           *(["--token-file", str(token_file)] if token_file is not None else [])]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOKG_")}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**env, "PYTHONPATH": str(repo or REPO), **(extra_env or {})}, cwd=repo or REPO)
    found: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            m = re.search(r"(http://127\.0\.0\.1:\d+)", line)
            if m and not ready.is_set():
                found.append(m.group(1))
                ready.set()
            elif not ready.is_set():
                sys.stderr.write(line)

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(120):
        proc.kill()
        raise SystemExit("the server did not start")
    return proc, found[0]


def pss_mib(pid: int) -> float:
    """Proportional set size: shared (copy-on-write) pages are split among the processes sharing them."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def server_memory(pid: int) -> tuple[float, int]:
    children = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return pss_mib(pid) + sum(pss_mib(c) for c in children), len(children)


def tree_memory(pid: int) -> float:
    """PSS MiB of a process, its children and theirs (the server, its read workers, their forked reads)."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += pss_mib(p)
        with contextlib.suppress(OSError):
            todo += [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--facts", type=int, default=100_000)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--seconds", type=float, default=30.0, help="length of the HTTP phase")
    ap.add_argument("--baseline-seconds", type=float, default=10.0, help="length of each in-process phase")
    ap.add_argument("--workers", type=int, default=default_workers())
    ap.add_argument("--rate", type=float, default=100.0, help="per-token rate limit of the server (requests/s)")
    ap.add_argument("--store", type=Path, help="reuse a store built by an earlier run (--keep)")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--unsafe-seconds", type=float, default=10.0, help="length of the unserialised comparison "
                    "(0: skip)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--mix-only", action="store_true", help="only the heavy-caller mix")
    ap.add_argument("--mix-seconds", type=float, default=30.0, help="length of the heavy-caller mix, per scheduling "
                    "(0: skip it)")
    ap.add_argument("--mix-clients", type=int, default=50)
    ap.add_argument("--heavy", type=int, default=5, help="heavy callers among --mix-clients")
    ap.add_argument("--scheduling", default="fair,fair-noid,fifo",
                    help="which rows the mix runs: fair (client ids), fair-noid (no token, no id), fifo")
    ap.add_argument("--no-cheap-alone", action="store_true", help="skip the run of the cheap callers alone")
    ap.add_argument("--baseline-repo", type=Path, help="also run the mix (fair, with and without ids) against "
                    "the server code of this checkout (e.g. `git archive main | tar -x -C DIR`), beside this one's")
    args = ap.parse_args()
    if args.quick:
        args.facts, args.clients, args.seconds, args.baseline_seconds, args.unsafe_seconds = 10_000, 20, 5.0, 3.0, 3.0
        args.mix_seconds = min(args.mix_seconds, 10.0)

    tmp = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    path = args.store or tmp / "store.kgl"
    try:
        if args.store is None:
            t0 = time.perf_counter()
            build_store(path, args.facts, args.seed)
            print(f"store: {args.facts:,} facts + the demo corpus, built in {time.perf_counter() - t0:.1f} s")
        with KgliteStore(path, read_only=True) as store:
            before = content_digest(store)
            subjects = len(store.run("MATCH (f:Fact {source_id: 'bench'}) RETURN DISTINCT f.subject_id AS s"))
        stamp = path.stat().st_mtime_ns

        if args.mix_only:
            rows = run_mix(path, tmp, args, subjects)
            print_mix(rows, args)
            with KgliteStore(path, read_only=True) as store:
                unchanged = content_digest(store) == before and path.stat().st_mtime_ns == stamp
            print(f"store content hash and file unchanged: {'yes' if unchanged else 'NO'}")
            errors = [e for _, c, h, _ in rows for e in (*c.errors, *h.errors)]
            for e in errors[:10]:
                print("  error:", e)
            if errors or not unchanged:
                raise SystemExit(1)
            return

        phases: list[Phase] = []
        limits = ReadLimits()
        with ToolHost(KgliteStore(path, read_only=True), limits=limits, close_store=True) as host:
            phases.append(in_process_serial(host, subjects, args.baseline_seconds, args.seed))
        with ToolHost(KgliteStore(path, read_only=True), limits=limits, close_store=True) as host:
            host.start_workers(args.workers)
            phases.append(asyncio.run(in_process_concurrent(
                host, subjects, args.clients, args.baseline_seconds, args.seed,
                f"in process, {args.clients} callers, {args.workers} workers")))

        token_file = tmp / "tokens.txt"
        tokens = [f"bench-client-{k:03d}-{os.urandom(8).hex()}" for k in range(args.clients)]
        token_file.write_text("\n".join(tokens))
        proc, url = start_server(path, args.workers, token_file, args.rate)
        try:
            phase = asyncio.run(over_http(url, tokens, subjects, args.seconds, args.seed,
                                          f"HTTP loopback, {args.clients} clients, {args.workers} workers"))
            phases.append(phase)
            memory, children = server_memory(proc.pid)
            health = httpx.get(f"{url}/health", timeout=10).json()
        finally:
            proc.terminate()
            proc.wait(30)

        mix = run_mix(path, tmp, args, subjects) if args.mix_seconds > 0 else []
        unsafe = unserialised(path, subjects, args.unsafe_seconds, 8) if args.unsafe_seconds > 0 else None
        with KgliteStore(path, read_only=True) as store:
            unchanged = content_digest(store) == before and path.stat().st_mtime_ns == stamp

        print(f"\nmachine: {os.cpu_count()} CPUs; store {path.stat().st_size / 2**20:.1f} MiB; "
              f"read limits: {limits.timeout_s:g} s, {limits.max_rows:,} rows; mix: 7 calls (1 in 7 a refused "
              "write)\n")
        print(f"{'phase':<46} {'calls':>8} {'calls/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}")
        print("-" * 90)
        for p in phases:
            print(p.row())
        http = phases[-1]
        print(f"\nHTTP statuses: {dict(sorted(http.statuses.items()))} (403 = the refused write attempts, expected)")
        print(f"server memory (PSS, server + {children} workers): {memory:,.0f} MiB; health: {health['status']}, "
              f"workers alive {health['workers_alive']}/{health['workers']}, restarts {health['worker_restarts']}")
        if unsafe is not None:
            print(f"for comparison, guarded_read from 8 threads without the lock: {unsafe[0]:,} reads, {unsafe[1]} "
                  f"wrongly stopped at the 3 s time limit (worst {unsafe[2]:.1f} s)")
        if mix:
            print_mix(mix, args)
        print(f"store content hash and file unchanged: {'yes' if unchanged else 'NO'}")
        errors = [e for p in phases for e in p.errors] + [e for _, c, h, _ in mix for e in (*c.errors, *h.errors)]
        print(f"target: 0 errors over HTTP: {'met' if not http.errors else 'NOT met'}")
        for e in errors[:10]:
            print("  error:", e)
        if errors or not unchanged:
            raise SystemExit(1)
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept {tmp}")


if __name__ == "__main__":
    main()
