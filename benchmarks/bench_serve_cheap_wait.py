"""How long one cheap caller waits while heavy callers load `chronokg serve http` (loopback only, bounded).

docs/serve.md says a heavy caller holds a light worker for at most one slice of its CPU. This measures what a
cheap caller sees instead: one caller sending cheap `timeline` calls one after another while `--heavy` callers
send calls that run long, for `--seconds`. Three kinds of heavy call: a catalog tool (`changed_between` over the
whole store: it runs in its read worker itself), guarded Cypher (`bench_serve.HEAVY`: it runs in a forked child of
its worker), each heavy caller with its own client id; and the same Cypher sent each time on a new connection
without a client id (`cypher-new`: every call is a caller the server does not know yet). Printed per kind: the
cheap calls, the first one's wait and the later ones' p50 and max, the heavy calls, the reads the server stopped
to make room (`/health`: reads_preempted), workers replaced and the machine's load average before and after.
`--baseline-repo` runs the same against another checkout of chronokg (its server, this script's clients), one after
the other on one store.

    python benchmarks/bench_serve_cheap_wait.py --facts 30000 --seconds 20
    python benchmarks/bench_serve_cheap_wait.py --baseline-repo /tmp/chronokg-before --kinds catalog
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_serve import HEAVY, build_store, start_server

HEAVY_CALLS = {"catalog": ("changed_between", {"from": "1990-01-01", "to": "2024-01-01"}),
               "cypher": ("cypher", {"query": HEAVY}), "cypher-new": ("cypher", {"query": HEAVY})}


async def load(url: str, kind: str, heavy: int, seconds: float, subjects: int) -> dict[str, Any]:
    """`heavy` callers sending the heavy call of `kind` and one cheap caller, for `seconds`: the cheap waits."""
    end = time.monotonic() + seconds
    cheap: list[float] = []
    heavy_done = [0, 0]  # calls answered, of them stopped by a limit (422)
    failures: list[str] = []
    rng = random.Random(7)

    async def heavy_caller(k: int) -> None:
        name, args = HEAVY_CALLS[kind]
        while time.monotonic() < end:  # cypher-new: each call on a new connection without an id (a new caller)
            headers = {} if kind == "cypher-new" else {"x-chronokg-client": f"heavy-{k}"}
            async with httpx.AsyncClient(base_url=url, timeout=120, headers=headers) as c:
                while time.monotonic() < end:
                    r = await c.post(f"/tools/{name}", json=args)
                    heavy_done[0] += 1
                    heavy_done[1] += r.status_code == 422
                    if r.status_code not in (200, 422):
                        failures.append(f"heavy {r.status_code}: {r.text[:120]}")
                    if kind == "cypher-new":
                        break

    async def cheap_caller() -> None:
        await asyncio.sleep(1.0)  # the heavy callers' first reads are running
        async with httpx.AsyncClient(base_url=url, timeout=120, headers={"x-chronokg-client": "cheap"}) as c:
            while time.monotonic() < end:
                start = time.monotonic()
                r = await c.post("/tools/timeline", json={"subject": f"e{rng.randrange(subjects):07d}"})
                cheap.append(time.monotonic() - start)
                if r.status_code != 200:
                    failures.append(f"cheap {r.status_code}: {r.text[:120]}")

    await asyncio.gather(cheap_caller(), *(heavy_caller(k) for k in range(heavy)))
    async with httpx.AsyncClient(base_url=url, timeout=30) as c:
        health = (await c.get("/health")).json()
    return {"cheap": cheap, "heavy": heavy_done, "failures": failures, "health": health}


def row(label: str, kind: str, got: dict[str, Any], before: float, after: float) -> str:
    """The cheap caller's first call (it waits its turn behind the heavy callers' first reads) apart from the
    later ones (by then the server knows who is heavy)."""
    waits = got["cheap"]
    later = sorted(waits[1:])
    first = f"{waits[0] * 1000:.0f}" if waits else "—"
    p50 = f"{statistics.median(later) * 1000:.0f}" if later else "—"
    worst = f"{later[-1] * 1000:.0f}" if later else "—"
    health = got["health"]
    return (f"| {label} | {kind} | {len(waits)} | {first} | {p50} | {worst} | {got['heavy'][0]} "
            f"({got['heavy'][1]} at a limit) | {health.get('reads_preempted')} | {health.get('worker_restarts')} | "
            f"{before:.1f} → {after:.1f} | {len(got['failures'])} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--facts", type=int, default=30_000, help="synthetic facts in the store (bench_serve's)")
    ap.add_argument("--heavy", type=int, default=8, help="heavy callers")
    ap.add_argument("--workers", type=int, default=2, help="the server's read workers")
    ap.add_argument("--seconds", type=float, default=20.0, help="length of each run (at most 120)")
    ap.add_argument("--timeout", type=float, default=10.0, help="the server's read time limit, seconds")
    ap.add_argument("--kinds", default="catalog,cypher,cypher-new", help="heavy calls, comma-separated: catalog, "
                    "cypher, cypher-new")
    ap.add_argument("--baseline-repo", type=Path, help="another chronokg checkout to run the same against")
    args = ap.parse_args()
    seconds = min(args.seconds, 120.0)
    env = {"CHRONOKG_READ_TIMEOUT_S": str(args.timeout)}
    with tempfile.TemporaryDirectory(prefix="chronokg-cheap-wait-") as tmp:
        store = Path(tmp) / "store.kgl"
        build_store(store, args.facts, seed=7)
        print(f"machine: {os.cpu_count()} CPUs; store: {args.facts:,} synthetic facts; {args.workers} read workers; "
              f"{args.heavy} heavy callers and 1 cheap caller for {seconds:g} s per run; read time limit "
              f"{args.timeout:g} s\n")
        print("| server | heavy call | cheap calls | first cheap call ms | later cheap calls p50 ms | later max ms | "
              "heavy calls | reads stopped to make room | workers replaced | load average | failures |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        repos = [("this checkout", None), *([("baseline", args.baseline_repo)] if args.baseline_repo else [])]
        for kind in args.kinds.split(","):
            for label, repo in repos:
                proc, url = start_server(store, args.workers, None, 0.0, extra_env=env, repo=repo)
                try:
                    before = os.getloadavg()[0]
                    got = asyncio.run(load(url, kind, args.heavy, seconds, max(1, args.facts // 10)))
                    after = os.getloadavg()[0]
                finally:
                    proc.terminate()
                    proc.wait(30)
                print(row(label, kind, got, before, after), flush=True)
                for failure in got["failures"][:3]:
                    print(f"  failure: {failure}")


if __name__ == "__main__":
    main()
