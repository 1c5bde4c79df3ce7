"""Model client throughput and CPU overhead against a loopback server answering instantly.

The server (chronokg.testing.openai_server --instant) runs in a separate process and answers
every chat request with one fixed, pre-serialized reply, so what is measured is the client side.
At each concurrency the same number of chat requests goes through:

- raw httpx:  a minimal `httpx.AsyncClient` load generator (POST the JSON, parse the reply JSON);
- raw httpx2: the same with `httpx2.AsyncClient`, the transport the installed openai SDK uses
  (skipped when the SDK is built on httpx);
- chronokg:   `get_model("openai-compat/...").generate(...)` with the cache off (retries on);
- +cache:     the same with the response cache on, every request a miss (one SQLite write each).

requests/s is wall-clock; CPU ms/request is this process's user+system CPU time divided by the
requests. The ratio is chronokg over the faster raw generator; the overhead is chronokg's CPU per
request minus that generator's.

    python benchmarks/bench_models.py                 # concurrency 1, 8, 64, 256
    python benchmarks/bench_models.py --requests 1000 --repeats 1   # quick
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from chronokg.models import ModelRequest, get_model

BODY = {"model": "bench", "messages": [{"role": "user", "content": "Say OK."}]}


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def drive(one: Callable[[int], Awaitable[Any]], concurrency: int, total: int) -> None:
    """`total` calls of `one(i)`, `concurrency` at a time, from that many worker tasks."""
    counter = iter(range(total))

    async def worker() -> None:
        for i in counter:
            await one(i)

    await asyncio.gather(*[worker() for _ in range(concurrency)])


async def measure(make: Callable[[int], Any], concurrency: int, total: int, warmup: int) -> tuple[float, float]:
    """(requests/s, CPU ms per request) for the client `make(concurrency)` returns."""
    one, close = make(concurrency)
    await drive(one, concurrency, warmup)
    started, cpu = time.perf_counter(), cpu_seconds()
    await drive(lambda i: one(warmup + i), concurrency, total)
    elapsed, cpu_used = time.perf_counter() - started, cpu_seconds() - cpu
    await close()
    return total / elapsed, cpu_used / total * 1000


def raw_generator(module: Any, url: str) -> Callable[[int], Any]:
    def make(concurrency: int) -> Any:
        limits = module.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        client = module.AsyncClient(base_url=url, limits=limits, timeout=60)

        async def one(i: int) -> None:
            response = await client.post("/chat/completions", json=BODY)
            response.raise_for_status()
            response.json()

        return one, client.aclose
    return make


def chronokg_client(url: str, cache: Path | None) -> Callable[[int], Any]:
    def make(concurrency: int) -> Any:
        client = get_model("openai-compat/bench", base_url=url, concurrency=concurrency,
                           cache=cache if cache is not None else False)

        async def one(i: int) -> None:
            # Distinct prompts, so that with the cache on every request is a miss and a write.
            completion = await client.generate(ModelRequest.chat(f"Say OK. ({i})"))
            assert completion.text == "ok"

        return one, client.aclose
    return make


def start_server() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "chronokg.testing.openai_server", "--port", "0", "--instant"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 64, 256])
    parser.add_argument("--requests", type=int, default=3000, help="timed requests per measurement")
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3, help="median of this many measurements")
    args = parser.parse_args()
    proc, url = start_server()
    tmp = Path(tempfile.mkdtemp(prefix="chronokg-bench-"))
    try:
        impls: dict[str, Callable[[int], Any]] = {"raw httpx": raw_generator(httpx, url)}
        import openai

        sdk_transport = type(openai.DEFAULT_CONNECTION_LIMITS).__module__
        if importlib.util.find_spec("httpx2") is not None and sdk_transport.startswith("httpx2"):
            import httpx2

            impls["raw httpx2"] = raw_generator(httpx2, url)
        run = 0

        def chronokg_cached(concurrency: int) -> Any:
            nonlocal run
            run += 1
            return chronokg_client(url, tmp / f"cache-{run}.sqlite")(concurrency)

        impls["chronokg"] = chronokg_client(url, None)
        impls["chronokg+cache"] = chronokg_cached
        print(f"openai {openai.__version__}, httpx {httpx.__version__}, python {sys.version.split()[0]}, "
              f"{args.requests} requests per measurement, median of {args.repeats}; server in another process")
        results: dict[tuple[str, int], tuple[float, float]] = {}
        for concurrency in args.concurrency:
            samples: dict[str, list[tuple[float, float]]] = {name: [] for name in impls}
            for _ in range(args.repeats):  # interleaved, so drift hits every client alike
                for name, make in impls.items():
                    samples[name].append(asyncio.run(measure(make, concurrency, args.requests, args.warmup)))
            for name, values in samples.items():
                results[(name, concurrency)] = (statistics.median(v[0] for v in values),
                                                statistics.median(v[1] for v in values))
        print_table(results, list(impls), args.concurrency)
    finally:
        proc.terminate()
        proc.wait(10)


def print_table(results: dict[tuple[str, int], tuple[float, float]], names: list[str], levels: list[int]) -> None:
    raws = [n for n in names if n.startswith("raw")]
    head = "".join(f"{n + ' req/s':>22}" for n in names)
    print(f"\n{'conc':>5}{head}{'ratio':>9}{'+cache ratio':>14}")
    for c in levels:
        best = max(raws, key=lambda n: results[(n, c)][0])
        ratio = results[("chronokg", c)][0] / results[(best, c)][0]
        cached = results[("chronokg+cache", c)][0] / results[(best, c)][0]
        row = "".join(f"{results[(n, c)][0]:>22,.0f}" for n in names)
        print(f"{c:>5}{row}{ratio:>9.2f}{cached:>14.2f}   (vs {best})")
    print(f"\n{'conc':>5}" + "".join(f"{n + ' CPU ms':>22}" for n in names) + f"{'overhead ms':>14}")
    for c in levels:
        best = max(raws, key=lambda n: results[(n, c)][0])
        row = "".join(f"{results[(n, c)][1]:>22.3f}" for n in names)
        print(f"{c:>5}{row}{results[('chronokg', c)][1] - results[(best, c)][1]:>14.3f}   (vs {best})")


if __name__ == "__main__":
    main()
