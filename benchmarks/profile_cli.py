"""Where a `chronokg query as-of` process spends its time, step by step, on a store you give.

Each round is a fresh process that does what `chronokg --store S query as-of --subject E --date D -f json`
does, in the same order, store opened in line (chronokg.cli.early_open moves the load beside the imports),
timing each step; the table shows the median of each step and its share of the whole, beside `python -c
pass` (interpreter start, measured the same way). The target: the whole process within 0.5 s at 1M.

    python benchmarks/profile_cli.py --store /tmp/bench_store_x/bench.kgl --rounds 7

The second table (skip it with --no-forwarded) does the same for a call the local query process answers
(chronokg.cli.query_client, chronokg.cli.query_daemon): the client's steps, timed in the calling process,
after one in-process call started the process and its indexed open answers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store import indexed_process_ready, private_query_processes

PRELUDE = r"""
import json, os, socket, sys, time
t = time.perf_counter()
out = {}
def mark(name):
    global t
    now = time.perf_counter()
    out[name] = now - t
    t = now
"""

STEPS = PRELUDE + r"""
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


FORWARD = PRELUDE + r"""
from chronokg import environ
from chronokg.cli import query_client as qc
mark("import the client (socket, json, hashlib, chronokg.environ)")
args = ["--store", "kglite://" + sys.argv[1], "query", "as-of", "--subject", sys.argv[2], "--date", sys.argv[3],
        "-f", "json"]
path = qc.socket_path(qc.runtime_dir(), qc.forwardable(args), environ.fingerprint())
mark("find the socket (store path, settings digest)")
sock = qc._connect(path)
mark("connect")
request = {"op": "query", "protocol": qc.PROTOCOL, "argv": args, "prog": "chronokg", "cwd": os.getcwd(),
           "env": environ.snapshot(), "fingerprint": environ.fingerprint()}
socket.send_fds(sock, [b"Q"], [0, 1, 2])
sock.sendall(json.dumps(request).encode() + b"\n")
replies = sock.makefile("rb")
mark("send argv, cwd, environment and the three streams")
assert json.loads(replies.readline())["accepted"]
mark("the process: check the request, stat the store's files")
assert json.loads(replies.readline())["code"] == 0
mark("the process: typer parse, the query, rows, JSON on the caller's stdout")
print(json.dumps(out))
"""


def rounds_of(script: str, args: argparse.Namespace, env: dict[str, str]) -> tuple[dict[str, list[float]],
                                                                                 list[float], list[float]]:
    """Per step, per round: the seconds `script` reports, beside `python -c pass` and the whole process."""
    steps: dict[str, list[float]] = {}
    start: list[float] = []
    whole: list[float] = []
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        start.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", script, args.store, args.subject, args.date], check=True,
                              capture_output=True, text=True, env=env)
        whole.append(time.perf_counter() - t0)
        for name, seconds in json.loads(done.stdout.strip().splitlines()[-1]).items():
            steps.setdefault(name, []).append(seconds)
    return steps, start, whole


def show(title: str, steps: dict[str, list[float]], start: list[float], whole: list[float]) -> None:
    total = statistics.median(whole)
    print(f"\n{title}")
    print(f"{'step':66s} {'ms':>8s} {'share':>6s}")
    print("-" * 82)
    rows = [("interpreter start (python -c pass)", statistics.median(start))]
    rows += [(name, statistics.median(v)) for name, v in steps.items()]
    for name, seconds in rows:
        print(f"{name:66s} {seconds * 1000:8.1f} {seconds / total:6.0%}")
    print(f"{'whole process':66s} {total * 1000:8.1f}")


def forwarded(args: argparse.Namespace) -> None:
    """Start the query process (one in-process call, in a private socket folder), wait for its indexed open,
    profile the forwarded calls, stop it."""
    with private_query_processes() as env:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{args.store}", "query", "as-of",
                        "--subject", args.subject, "--date", args.date, "-f", "json"], check=True,
                       capture_output=True, env=env)
        first = time.perf_counter() - t0
        indexed_process_ready()
        ready = time.perf_counter() - t0
        steps, start, whole = rounds_of(FORWARD, args, env)
        show(f"forwarded to the local query process (first call, in-process, that started it: {first * 1000:.0f} "
             f"ms; its indexed open answered {ready:.1f} s after that call began)", steps, start, whole)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--store", required=True, help="path of a kglite store (bench_store.py --keep)")
    ap.add_argument("--subject", default="e0000001")
    ap.add_argument("--date", default="2000-01-01")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-forwarded", action="store_true", help="skip the forwarded call's table")
    args = ap.parse_args()
    off = {**os.environ, "CHRONOKG_QUERY_DAEMON_IDLE_S": "0"}
    print(f"load average {', '.join(f'{x:.1f}' for x in os.getloadavg())}; median of {args.rounds} rounds")
    show("in-process (the query process off), store opened in line", *rounds_of(STEPS, args, off))
    if not args.no_forwarded:
        forwarded(args)
    print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
