"""The demo's last step: one `chronokg query` run three times from a shell, the later runs answered by the local
query process the first one started (chronokg.cli.query_client).

Who answered each run is read from the process's own count of the queries it answered, not guessed from times.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

from pydantic import BaseModel

from chronokg import environ
from chronokg.store_uri import StoreURI

SUBJECT = "hypertension-goal-older-adults"  # a subject of the demo corpus with several versions
READY_S = 30.0  # how long the demo waits for the process the first run started


class QueryRun(BaseModel):
    run: int
    answered_by: str
    seconds: float
    same_answer: bool


def _answered(store: str) -> int | None:
    """How many queries the live process for `store` has answered (None: no process answers for it)."""
    from chronokg.cli import query_client

    found = [p for p in query_client.processes("status") if p.get("store") == store]
    return int(found[0]["requests"]) if found else None


def _wait_for_process(store: str) -> int | None:
    deadline = time.monotonic() + READY_S
    while time.monotonic() < deadline:
        count = _answered(store)
        if count is not None:
            return count
        time.sleep(0.1)
    return None


def query_process_runs(uri: str, runs: int = 3, subject: str = SUBJECT) -> list[QueryRun]:
    """`chronokg --store URI query timeline --subject SUBJECT -f json`, `runs` times in fresh processes."""
    store = os.path.abspath(StoreURI.parse(uri).location)  # as the client names the store
    command = [sys.executable, "-m", "chronokg.cli", "--store", uri, "query", "timeline", "--subject", subject,
               "-f", "json"]
    out: list[QueryRun] = []
    first = None
    for i in range(1, runs + 1):
        before = _answered(store) if i == 1 else _wait_for_process(store)
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
        seconds = time.perf_counter() - start
        after = _answered(store)
        forwarded = before is not None and after is not None and after == before + 1
        first = done.stdout if first is None else first
        out.append(QueryRun(run=i, answered_by="the local query process" if forwarded else "in-process",
                            seconds=round(seconds, 3), same_answer=done.returncode == 0 and done.stdout == first))
    return out


def show_query_process(console: Any, uri: str) -> None:
    from chronokg.cli.render import Format, emit, heading

    if StoreURI.parse(uri).file is None:
        return
    heading(console, "chronokg query, three times from a shell")
    if environ.daemon_idle_s() <= 0:
        console.print("[dim]The local query process is off (CHRONOKG_QUERY_DAEMON_IDLE_S=0): each query runs "
                      "in-process.[/]")
        return
    console.print("[dim]The first run imports chronokg and opens the store, then starts a local query process; "
                  "the next runs hand it their arguments and terminal (README, 'The local query process').[/]")
    emit(console, query_process_runs(uri), Format.table)
    console.print(f"[dim]It exits after {environ.daemon_idle_s():g} s without a query; `chronokg query daemon "
                  "status` lists it, `chronokg query daemon stop` stops it.[/]")
