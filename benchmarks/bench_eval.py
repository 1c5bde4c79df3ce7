"""The evaluation runner beside a bare `openai.AsyncOpenAI` client sending the same requests, and its fixed work.

Against `python -m chronokg.testing.openai_server --instant` (a loopback OpenAI-compatible server answering at
once, in its own process), with the response cache off, the same TempoMed-Bench questions (generated from
../shared/data/tempomed-bench, stored in the graph as `bench generate` does) are sent, 64 at a time, by:

- bare AsyncOpenAI: `openai.AsyncOpenAI(...).chat.completions.create(**params)` with the very parameters the
  runner sends (model, messages, temperature, top_p, max_tokens), the SDK's defaults otherwise;
- chronokg client: `get_model("openai-compat/...").generate(request)` alone;
- chronokg runner: what `chronokg eval run` does: the store opened read-only, the run folder prepared, then
  (timed) `runner.run` (every sample extracted, scored, appended to samples.jsonl; run.json), the store opened as
  a writer, the predictions written in one transaction, the store closed.

Each is a fresh process (an installed package's bytecode cache, warmed first), so its peak RSS is its own; its
requests/s counts from its first request to its last (the runner: to the graph write's end), its inputs read
beforehand. The rows are interleaved, `--repeats` times; the table gives the medians. Last, `chronokg eval run
--limit 1` as a user types it, whole command: its wall time, CPU time and peak RSS (the one request costs ~1 ms).

    python benchmarks/bench_eval.py                  # 3,000 questions, concurrency 64, median of 3
"""

from __future__ import annotations

import argparse
import asyncio
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

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "tempomed-bench"
SPEC = "openai-compat/bench"


def peak_rss_mib() -> float:
    """This process's peak RSS (VmHWM: its own address space's, not inherited from the parent at the fork)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _drive(calls: list[Any], send: Any, concurrency: int) -> float:
    items = iter(calls)

    async def worker() -> None:
        for item in items:
            await send(item)

    start = time.perf_counter()
    await asyncio.gather(*[worker() for _ in range(concurrency)])
    return time.perf_counter() - start


def child_bare(url: str, work: Path, concurrency: int) -> dict[str, Any]:
    import openai

    params = [json.loads(line) for line in (work / "params.jsonl").read_text().splitlines()]

    async def main() -> float:
        client = openai.AsyncOpenAI(base_url=url, api_key="bench")
        elapsed = await _drive(params, lambda p: client.chat.completions.create(**p), concurrency)
        await client.close()
        return elapsed

    elapsed = asyncio.run(main())
    return {"n": len(params), "elapsed": elapsed}


def child_client(url: str, work: Path, concurrency: int) -> dict[str, Any]:
    from chronokg.bench.question import read_jsonl
    from chronokg.eval.profile import profile_for
    from chronokg.models import get_model

    requests = [profile_for(q.family).request(q, "seed", 0) for q in read_jsonl(work / "questions.jsonl")]

    async def main() -> float:
        client = get_model(SPEC, base_url=url, cache=False, concurrency=concurrency)
        elapsed = await _drive(requests, client.generate, concurrency)
        await client.aclose()
        return elapsed

    return {"n": len(requests), "elapsed": asyncio.run(main())}


def child_runner(url: str, work: Path, concurrency: int) -> dict[str, Any]:
    from chronokg.bench import snapshot
    from chronokg.eval import runner
    from chronokg.eval.graph import write_predictions
    from chronokg.graph.open import open_store

    uri = f"kglite://{work / 'store' / 'store.kgl'}"
    qfile = work / "questions.jsonl"
    options = runner.RunOptions(concurrency=concurrency, cache=False)
    entries = [runner.ModelEntry(spec=SPEC, base_url=url)]
    questions = runner.load_questions([qfile], None)
    reader = open_store(uri, read_only=True)
    folder, info = runner.prepare(work / "runs", [qfile], entries, options, snapshot=snapshot.current(reader),
                                  store_uri=uri)
    start = time.perf_counter()
    info, tally = runner.run(folder, info, questions, reader)
    ran = time.perf_counter()
    reader.close()
    with open_store(uri) as store:
        report = write_predictions(store, info, questions, tally.records.values())
    done = time.perf_counter()
    assert tally.done == len(questions) and report.created.get("Prediction") == len(questions), (tally, report)
    return {"n": len(questions), "elapsed": done - start, "run_only": ran - start}


CHILDREN = {"bare": child_bare, "client": child_client, "runner": child_runner}


def child_env(tmp: Path, store: Path | None = None) -> dict[str, str]:
    """A child's environment: this checkout first on the path, bytecode cached (outside the tree) as an
    installed package has it."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
               PYTHONPYCACHEPREFIX=str(tmp / "pycache"), HOME=str(tmp / "home"))
    if store is not None:
        env["CHRONOKG_STORE"] = f"kglite://{store}"
    return env


def timed_child(cmd: list[str], env: dict[str, str]) -> tuple[str, float, float, float]:
    """(stdout, wall s, CPU s, peak RSS MiB) of a child process, from the kernel's accounting of it alone."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stderr is not None
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:5])} ... failed ({proc.returncode}):\n{err[-2000:]}")
    return out, wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def child_prepare(count: int, base: Path) -> None:
    """questions.jsonl, params.jsonl (the wire parameters of each request) and a store holding the TempoMed
    sample and the questions (in a child, so that this process stays small: a child's peak RSS as the kernel
    counts it starts from its parent's at the fork)."""
    from chronokg.bench import snapshot
    from chronokg.bench.family import generate
    from chronokg.bench.graph import store_questions
    from chronokg.bench.question import write_jsonl
    from chronokg.eval.profile import profile_for
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.ingest import tempomed
    from chronokg.models.openai_compat import OpenAICompatClient
    from chronokg.models.spec import resolve_options

    (base / "store").mkdir(parents=True)
    with KgliteStore(base / "store" / "store.kgl") as store:
        tempomed.load(store, [DATA])
        snapshot.record(store)
        questions = generate("tempomed", store, snapshot.current(store), {"probes": True})[0][:count]
        store_questions(store, questions)
    write_jsonl(base / "questions.jsonl", questions)
    wire = OpenAICompatClient(resolve_options(SPEC, base_url="http://127.0.0.1:1/v1"))
    with (base / "params.jsonl").open("w") as fh:
        for q in questions:
            fh.write(json.dumps(wire._chat_params(profile_for(q.family).request(q, "seed", 0), 1)) + "\n")


def fresh(base: Path, tmp: Path, name: str) -> Path:
    """A copy of the prepared inputs and store for one measurement (every run writes a new run's predictions)."""
    work = tmp / name
    shutil.copytree(base, work, ignore=shutil.ignore_patterns("*.lock*", "*.bind"))
    return work


def load() -> str:
    return "load average {:.2f}, {:.2f}, {:.2f}".format(*os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--questions", type=int, default=3000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--child", choices=[*sorted(CHILDREN), "prepare"], help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    ap.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "prepare":
        child_prepare(args.questions, args.work)
        return
    if args.child:
        result = CHILDREN[args.child](args.url, args.work, args.concurrency)
        print(json.dumps({**result, "cpu": cpu_s(), "rss": peak_rss_mib()}))
        return
    if not DATA.is_dir():
        raise SystemExit(f"needs the TempoMed-Bench sample at {DATA}")
    tmp = Path(tempfile.mkdtemp(prefix="chronokg-bench-eval-"))
    print(f"{load()} at the start")
    base = tmp / "base"
    timed_child([sys.executable, str(Path(__file__).resolve()), "--child", "prepare", "--questions",
                 str(args.questions), "--work", str(base)], child_env(tmp))
    server = subprocess.Popen([sys.executable, "-m", "chronokg.testing.openai_server", "--port", "0", "--instant"],
                              stdout=subprocess.PIPE, text=True, env=child_env(tmp))
    assert server.stdout is not None
    url = server.stdout.readline().strip()
    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in CHILDREN}
    fixed: list[tuple[float, float, float]] = []
    try:
        for i in range(args.repeats + 1):  # the first round warms the bytecode cache and is not counted
            for name in CHILDREN:
                work = fresh(base, tmp, f"{name}-{i}")
                out, _, _, peak = timed_child([sys.executable, str(Path(__file__).resolve()), "--child", name,
                                              "--url", url, "--work", str(work),
                                              "--concurrency", str(args.concurrency)], child_env(tmp))
                if i:
                    rows[name].append({**json.loads(out.strip().splitlines()[-1]), "rss": peak})
            work = fresh(base, tmp, f"cli-{i}")
            cmd = [sys.executable, "-m", "chronokg.cli", "eval", "run", str(work / "questions.jsonl"), "--model", SPEC,
                   "--base-url", url, "--no-cache", "--limit", "1", "--log-dir", str(work / "runs")]
            _, wall, cpu, peak = timed_child(cmd, child_env(tmp, work / "store" / "store.kgl"))
            if i:
                fixed.append((wall, cpu, peak))
    finally:
        server.terminate()
        server.wait()

    def rate(name: str, key: str = "elapsed") -> float:
        return float(statistics.median(r["n"] / r[key] for r in rows[name]))

    def rss(name: str) -> float:
        return float(statistics.median(r["rss"] for r in rows[name]))

    bare = rate("bare")
    print(f"{args.questions:,} TempoMed questions, concurrency {args.concurrency}, median of {args.repeats}; "
          f"loopback server answering instantly, cache off; {load()} at the end")
    print(f"{'measure':<50} {'requests/s':>10} {'x bare':>7} {'peak RSS':>10} {'x bare':>7}")
    print("-" * 88)
    table = [("bare openai.AsyncOpenAI (chat.completions.create)", bare, rss("bare")),
             ("chronokg model client (generate only)", rate("client"), rss("client")),
             ("chronokg runner (log, extraction, scoring)", rate("runner", "run_only"), rss("runner")),
             ("chronokg runner + predictions into the graph", rate("runner"), rss("runner"))]
    for label, r, m in table:
        print(f"{label:<50} {r:>10,.0f} {r / bare:>7.2f} {m:>7,.0f} MiB {m / rss('bare'):>7.2f}")
    wall, cpu, peak = (statistics.median(x) for x in zip(*fixed, strict=True))
    print(f"`eval run --limit 1` (whole command, store opened twice, 1 request): wall {wall:.2f} s, "
          f"CPU {cpu:.2f} s, peak RSS {peak:,.0f} MiB")
    end, end_rss = rate("runner") / bare, rss("runner") / rss("bare")
    verdict = {"throughput >= 0.90x bare": end >= 0.9, "RSS <= 2x bare": end_rss <= 2.0,
               "--limit 1 CPU <= 1 s": cpu <= 1.0}
    print("targets: " + "; ".join(f"{k} -> {'met' if v else 'NOT met'}" for k, v in verdict.items()))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
