"""How long `chronokg --help` takes beside the framework-import floor, measured side by side.

The floor is a process that imports typer, rich's console and pydantic's BaseModel (`import
pydantic` alone is lazy and imports almost nothing) and exits; `min-app --help` is a two-command
typer app printing its rich help (the floor plus typer's help rendering). Runs interleave, each a
fresh process; the table shows medians and chronokg's ratio to each (the target: within 1.5x
of the floor).

    python benchmarks/bench_cli.py            # 15 rounds
    python benchmarks/bench_cli.py --rounds 40
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET = 1.5
MIN_APP = """
import typer
app = typer.Typer(help="x")
@app.command()
def a() -> None: pass
@app.command()
def b() -> None: pass
app()
"""


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args(argv)
    py = sys.executable
    chronokg = str(Path(py).with_name("chronokg"))
    cases = {
        "floor: import typer, rich.console, pydantic.BaseModel": [py, "-c", "import typer, rich.console; "
                                                                          "from pydantic import BaseModel"],
        "min-app --help (typer + rich help)": [py, "-c", MIN_APP, "--help"],
        "chronokg --help": [chronokg, "--help"],
        "chronokg query --help": [chronokg, "query", "--help"],
        "chronokg ingest --help": [chronokg, "ingest", "--help"],
    }
    for cmd in cases.values():  # warm the file cache and the bytecode
        timed(cmd)
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, cmd in cases.items():
            times[name].append(timed(cmd))
    med = {name: statistics.median(v) for name, v in times.items()}
    floor = med["floor: import typer, rich.console, pydantic.BaseModel"]
    app = med["min-app --help (typer + rich help)"]
    print(f"CLI start: medians of {args.rounds} interleaved runs, fresh process each")
    print(f"{'command':56s} {'median s':>9s} {'x floor':>8s} {'x min-app':>9s}")
    for name, value in med.items():
        print(f"{name:56s} {value:9.3f} {value / floor:8.2f} {value / app:9.2f}")
    ratio = med["chronokg --help"] / floor
    print(f"\nchronokg --help within {TARGET}x of the floor: {'yes' if ratio <= TARGET else 'NO'} ({ratio:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
