"""Runner throughput beside the bare model client, against a loopback server answering instantly.

The target: the evaluation runner (logging every sample, extraction, scoring, and the graph
write of the predictions) keeps >= 90 % of the bare model client's throughput at 64 concurrent requests.
Both send the same TempoMed-Bench questions (generated from ../shared/data/tempomed-bench) to
`openai-compat/...` served by `python -m chronokg.testing.openai_server --instant` in a separate process,
with the response cache off. Measured in one run, the median of `--repeats`:

- bare client: `client.generate(request)` for every question, 64 at a time, nothing else;
- runner: `runner.run` (samples.jsonl written and flushed per sample, extraction, scoring) plus
  `write_predictions` (one transaction into an embedded store), timed end to end.

    python benchmarks/bench_eval.py                  # 3,000 questions, concurrency 64
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from chronokg.bench import snapshot
from chronokg.bench.family import generate
from chronokg.bench.question import Question, write_jsonl
from chronokg.eval import runner
from chronokg.eval.graph import write_predictions
from chronokg.eval.log import latest
from chronokg.eval.profile import profile_for
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import tempomed
from chronokg.models import get_model

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "tempomed-bench"


def start_server() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-m", "chronokg.testing.openai_server", "--port", "0", "--instant"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


async def bare(url: str, questions: list[Question], concurrency: int) -> float:
    client = get_model("openai-compat/bench", base_url=url, cache=False, concurrency=concurrency)
    requests = [profile_for(q.family).request(q, "seed", 0) for q in questions]
    items = iter(requests)
    start = time.perf_counter()

    async def worker() -> None:
        for r in items:
            await client.generate(r)

    await asyncio.gather(*[worker() for _ in range(concurrency)])
    elapsed = time.perf_counter() - start
    await client.aclose()
    return len(questions) / elapsed


def through_runner(url: str, qfile: Path, questions: list[Question], concurrency: int, tmp: Path,
                   store_path: Path) -> tuple[float, float]:
    options = runner.RunOptions(concurrency=concurrency, cache=False)
    folder, info = runner.prepare(tmp / f"runs-{time.perf_counter_ns()}", [qfile],
                                  [runner.ModelEntry(spec="openai-compat/bench", base_url=url)], options)
    start = time.perf_counter()
    info, _ = runner.run(folder, info, questions)
    ran = time.perf_counter()
    with KgliteStore(store_path, durable="off") as store:
        write_predictions(store, info, questions, latest(folder / "samples.jsonl").values())
    done = time.perf_counter()
    return len(questions) / (ran - start), len(questions) / (done - start)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--questions", type=int, default=3000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if not DATA.is_dir():
        raise SystemExit(f"needs the TempoMed-Bench sample at {DATA}")
    tmp = Path(tempfile.mkdtemp(prefix="chronokg-bench-eval-"))
    store = KgliteStore(":memory:")
    tempomed.load(store, [DATA])
    questions = generate("tempomed", store, snapshot.current(store), {"probes": True})[0][: args.questions]
    qfile = tmp / "questions.jsonl"
    write_jsonl(qfile, questions)
    proc, url = start_server()
    try:
        bare_rates, run_rates, end_rates = [], [], []
        for i in range(args.repeats):
            bare_rates.append(asyncio.run(bare(url, questions, args.concurrency)))
            store_path = tmp / f"store-{i}.kgl"
            with KgliteStore(store_path, durable="off") as s:
                tempomed.load(s, [DATA])
            r, e = through_runner(url, qfile, questions, args.concurrency, tmp, store_path)
            run_rates.append(r)
            end_rates.append(e)
    finally:
        proc.terminate()
        proc.wait()
    b, r, e = (statistics.median(x) for x in (bare_rates, run_rates, end_rates))
    print(f"{len(questions):,} TempoMed questions, concurrency {args.concurrency}, median of {args.repeats}; "
          "loopback server answering instantly, cache off")
    print(f"{'measure':<52} {'questions/s':>12} {'x bare':>8}")
    print("-" * 74)
    print(f"{'bare model client (generate only)':<52} {b:>12,.0f} {1.0:>8.2f}")
    print(f"{'runner: log, extraction, scoring':<52} {r:>12,.0f} {r / b:>8.2f}")
    print(f"{'runner + predictions written to the graph':<52} {e:>12,.0f} {e / b:>8.2f}")
    print(f"target: runner (with the graph write) >= 0.90 x bare -> {'met' if e / b >= 0.9 else 'NOT met'}")


if __name__ == "__main__":
    main()
