"""`chronokg serve http` says its address as soon as it listens; the search backend warms up after that, in the
background, and only a search waits for it.

A fake search backend whose warm-up takes seconds (registered beside `passages` in the server process): the ready
line must come before the warm-up ends, a query tool must answer meanwhile, and a search must answer only once the
warm-up is done (with what the warmed backend says).
"""

from __future__ import annotations

import datetime as dt
import os
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
