"""`chronokg serve http` says its address as soon as it listens; the search backend warms up after that, in the
background, and only a search waits for it.

A fake search backend whose warm-up takes seconds (registered beside `passages` in the server process): the ready
line must come before the warm-up ends, a query tool must answer meanwhile, and a search must answer only once the
warm-up is done (with what the warmed backend says).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from chronokg.graph.store import GraphStore
from chronokg.settings import Settings
from tests.serve_helpers import serve, server_env

pytestmark = pytest.mark.slow  # server processes


WARM_S = 8.0
SERVER = """
import runpy, sys
from chronokg.serve.search import SEARCH
SEARCH.register("slow", "tests.test_serve_ready:slow_search")
sys.argv = ["chronokg", *sys.argv[1:]]
runpy.run_module("chronokg.cli", run_name="__main__")
"""


class SlowSearch:
    """A backend whose `warm()` takes `WARM_S` and writes the time it ended into `$WARMED_FILE`."""

    def __init__(self) -> None:
        self.warmed = False

    def warm(self) -> None:
        time.sleep(WARM_S)
        self.warmed = True
        Path(os.environ["WARMED_FILE"]).write_text(repr(time.time()))

    def search(self, query: str, as_of: dt.date | None, k: int) -> Sequence[BaseModel | Mapping[str, Any]]:
        return [{"text": "warm" if self.warmed else "cold", "query": query}]


def slow_search(store: GraphStore, settings: Settings) -> SlowSearch:
    return SlowSearch()


def test_the_ready_line_comes_before_the_warm_up_and_only_search_waits(served: tuple[Path, str],
                                                                        tmp_path: Path) -> None:
    warmed = tmp_path / "warmed"
    env = {**server_env(), "WARMED_FILE": str(warmed)}
    with serve(served[0], "http", "--workers", "1", env=env, launcher=[sys.executable, "-c", SERVER]) as url:
        at_ready = time.time()
        assert not warmed.exists(), "the ready line waited for the warm-up"
        with httpx.Client(base_url=url, timeout=60) as http:
            assert "search" in [t["function"]["name"] for t in http.get("/tools").json()]
            cheap = http.post("/tools/timeline", json={"subject": "un-secretary-general"})
            answered = time.time()
            assert cheap.status_code == 200 and cheap.json()["rows"]
            assert not warmed.exists() or answered < float(warmed.read_text()), "a query waited for the warm-up"
            found = http.post("/tools/search", json={"query": "anything", "k": 1})
            searched = time.time()
    assert found.status_code == 200 and found.json()["rows"][0]["text"] == "warm", found.text
    done = float(warmed.read_text())
    assert at_ready < done <= searched  # the search waited for the warm-up, which ended after the ready line
    assert done - at_ready > WARM_S / 2  # most of the warm-up was still ahead when the address was printed


def test_serve_http_with_runs_says_each_step_then_names_the_explorer(tmp_path: Path) -> None:
    """`--runs` builds the runs' report before the port opens: progress lines on stderr until the ready line, which
    names the explorer's address (/) beside the API docs (/docs)."""
    import subprocess
    import threading

    from tests.report_helpers import demo_run

    run = demo_run(tmp_path, ["baseline/oracle", "baseline/random"])
    cmd = [sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{tmp_path / 'demo.kgl'}", "serve", "http",
           "--runs", str(run), "--workers", "1", "--port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=server_env())
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if "http://" in line:
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert ready.wait(120), lines
        before, said = lines[:-1], lines[-1]
        steps = [line.split(":")[0] for line in before]
        for step in ("reading the run folders", "computing the metrics of each model column",
                     "drawing the plots of each metric", "rendering the plots as PNG and SVG"):
            assert step in steps, before
        assert all(re.search(r": (\d[\d,]* of [\d,]+|started|[\d,]+ so far) \(\d+ s\)$", line) for line in before)
        url = re.search(r"(http://127\.0\.0\.1:\d+)", said)
        assert url is not None and f"the explorer at {url.group(1)}/," in said and f"{url.group(1)}/docs" in said
        page = httpx.get(url.group(1) + "/", timeout=30)
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def test_eval_report_in_a_pipe_says_each_step_on_stderr(tmp_path: Path) -> None:
    """In a pipe no bar is drawn: each step of the report is a line on stderr; stdout holds the answer alone."""
    import subprocess

    from tests.report_helpers import demo_run

    run = demo_run(tmp_path, ["baseline/oracle"])
    done = subprocess.run([sys.executable, "-m", "chronokg.cli", "eval", "report", str(run), "--out",
                           str(tmp_path / "report")], capture_output=True, text=True, env=server_env(), timeout=300)
    assert done.returncode == 0, done.stderr
    steps = [line.split(":")[0] for line in done.stderr.splitlines()]
    assert steps[:2] == ["reading the run folders", "computing the metrics of each model column"], done.stderr
    assert "writing the report's files" in steps and "\x1b" not in done.stderr
    assert done.stdout.startswith("wrote ") and "reading" not in done.stdout
