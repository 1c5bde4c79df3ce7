"""Where a `chronokg query as-of` process spends its time, step by step, on a store you give.

Each round is a fresh process that does what `chronokg --store S query as-of --subject E --date D -f json`
does, in the same order, store opened in line (chronokg.cli.early_open moves the load beside the imports),
timing each step; the table shows the median of each step and its share of the whole, beside `python -c
pass` (interpreter start, measured the same way). Issue 20 item 4: the whole process within 0.5 s at 1M.

    python benchmarks/profile_cli.py --store /tmp/bench_store_x/bench.kgl --rounds 7
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

STEPS = r"""
import json, sys, time
t = time.perf_counter()
out = {}
def mark(name):
    global t
    now = time.perf_counter()
    out[name] = now - t
    t = now
import typer
mark("import typer")
from chronokg.cli.queries import query_app, spec_command
from chronokg.cli.root import root_app
mark("import the CLI's query modules (pydantic, chronokg.cli)")
from chronokg.queries.spec import all_queries
all_queries()
mark("the query catalog (every module of chronokg.queries)")
app = root_app()
app.add_typer(query_app, name="query")
command = spec_command("as-of")
mark("typer: the root and the as-of command")
root = typer.main.get_command(app)
root.make_context("chronokg", ["--store", "kglite://" + sys.argv[1], "query"])
command.make_context("as-of", ["--subject", sys.argv[2], "--date", sys.argv[3], "-f", "json"])
mark("typer: parse the options (a pydantic TypeAdapter each)")
from chronokg.settings import Settings
settings = Settings()
mark("chronokg.settings (pydantic_settings) + Settings()")
from chronokg.graph.open import open_store
import chronokg.graph.kglite_store
mark("import the store (kglite, numpy, graph)")
store = open_store("kglite://" + sys.argv[1], settings, read_only=True, quick_open=True)
mark("quick open (kglite.load mapped, deferred)")
spec = all_queries().get("as-of")
params = spec.validate({"subject": sys.argv[2], "date": sys.argv[3]})
mark("parameters")
rows = spec.run(store, params)
mark("the query and its typed rows")
text = json.dumps([r.model_dump(mode="json") for r in rows], ensure_ascii=False, indent=2)
store.close()
mark("JSON and close")
print(json.dumps(out))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--store", required=True, help="path of a kglite store (bench_store.py --keep)")
    ap.add_argument("--subject", default="e0000001")
    ap.add_argument("--date", default="2000-01-01")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    steps: dict[str, list[float]] = {}
    start: list[float] = []
    whole: list[float] = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        start.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", STEPS, args.store, args.subject, args.date], check=True,
                              capture_output=True, text=True)
        whole.append(time.perf_counter() - t0)
        for name, seconds in json.loads(done.stdout.strip().splitlines()[-1]).items():
            steps.setdefault(name, []).append(seconds)
    total = statistics.median(whole)
    print(f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}; median of {args.rounds} rounds")
    print(f"{'step':58s} {'ms':>8s} {'share':>6s}")
    print("-" * 74)
    rows = [("interpreter start (python -c pass)", statistics.median(start))]
    rows += [(name, statistics.median(v)) for name, v in steps.items()]
    for name, seconds in rows:
        print(f"{name:58s} {seconds * 1000:8.1f} {seconds / total:6.0%}")
    print(f"{'whole process':58s} {total * 1000:8.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
