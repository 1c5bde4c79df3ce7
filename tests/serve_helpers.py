"""Shared by the tool-server tests: the store they serve, the hostile corpus, and real servers on loopback."""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from chronokg.demo.corpus import load_demo
from chronokg.graph.batch import GraphBatch
from chronokg.graph.counts import content_digest
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import Fact, Source
from chronokg.graph.writer import write_batch
from tests.helpers import REPO
from tests.test_guard import ADMIN, DDL, FILES, PROCEDURES, TRICKS, WRITES

# Beyond tests/test_guard.py's corpus: more spellings of the same attempts, as an agent might send them.
EXTRA = [
    "Match (n) Detach Delete n",
    "match (n) set n.`caption` = 'x'",
    "MATCH (n) SET n.x = 1 RETURN n /* SET is fine here? */",
    "FOREACH (x IN [1, 2] | CREATE (:Entity {id: toString(x)}))",
    "UNWIND [1] AS i MERGE (:Entity {id: toString(i)})",
    "OPTIONAL MATCH (n:Fact) REMOVE n.value RETURN count(*)",
    "CALL { RETURN 1 AS x UNION CREATE (n:Entity {id: 'u'}) RETURN 2 AS x } RETURN x",
    "MATCH (f:Fact) CALL (f) { DETACH DELETE f } IN CONCURRENT TRANSACTIONS",
    "WITH 1 AS x CALL { CREATE (:Entity {id: 'w'}) } RETURN x",
    "CREATE CONSTRAINT k FOR (n:Entity) REQUIRE (n.id, n.kind) IS NODE KEY",
    "CREATE LOOKUP INDEX lk FOR (n) ON EACH labels(n)",
    "CREATE TEXT INDEX tx FOR (n:Entity) ON (n.caption)",
    "DROP DATABASE neo4j",
    "CREATE DATABASE other",
    "SHOW PROCEDURES",
    "SHOW FUNCTIONS",
    "CALL dbms.listConfig()",
    "call DBMS.components() yield name call dbms.killQueries(['q']) return name",
    "CALL apoc.cypher.runWrite('CREATE (n)', {})",
    "RETURN apoc.cypher.runFirstColumnSingle('MATCH (n) DETACH DELETE n', {}) AS x",
    "CALL apoc.export.csv.all('/tmp/chronokg-out.csv', {})",
    "CALL db.index.fulltext.createNodeIndex('ft', ['Entity'], ['caption'])",
    "LOAD\tCSV FROM 'file:///etc/passwd' AS l RETURN l",
    "/*/ MATCH (n) RETURN n /*/ CREATE (n:Entity {id: 'comment-trick'})",
    "MATCH (n) RETURN n // \n; DETACH DELETE n",
    "CREATE\u00a0(n:Entity {id: 'nbsp'})",
    "MATCH (n) DЕTACH DELETE n",  # a Cyrillic Е
    "\ufeffCREATE (n:Entity {id: 'bom'})",
    "RETURN 1 AS x;;",
]
HOSTILE = [*WRITES, *DDL, *ADMIN, *PROCEDURES, *FILES, *TRICKS, *EXTRA]
CARTESIAN = "MATCH (a), (b), (c), (d) RETURN count(*) AS n"  # the whole store, four times over
READ_TIMEOUT_S = 2.0


def build_store(path: Path, facts: int = 300) -> str:
    """The demo corpus plus `facts` facts (for the expensive reads); returns the store's content digest."""
    with KgliteStore(path, durable="off") as store:
        load_demo(store)
        batch = GraphBatch()
        batch.source(Source(id="r", kind="test", caption="a release"))
        for i in range(facts):
            batch.fact(Fact(subject=f"s{i}", predicate="p", value=i, valid_from=dt.date(2000 + i % 20, 1, 1),
                            source_id="r", source_kind="test"))
        write_batch(store, batch)
    with KgliteStore(path, read_only=True) as store:
        return content_digest(store)


def digest(path: Path) -> str:
    with KgliteStore(path, read_only=True) as store:
        return content_digest(store)


def hostile(secret_file: Path) -> list[str]:
    return [q.replace("{secret}", str(secret_file)) for q in HOSTILE]


def server_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOKG_")}
    # a work budget so large that the time limit is what stops the cartesian product; 2048 MB as the servers
    # default (at 1024 MB the cartesian read ran out of memory before its 2 s in CI, as in test_serve_tools)
    return {**env, "PYTHONPATH": str(REPO), "CHRONOKG_READ_TIMEOUT_S": str(READ_TIMEOUT_S),
            "CHRONOKG_READ_MAX_WORK": str(10**12), "CHRONOKG_READ_MEMORY_MB": "2048",
            "CHRONOKG_READ_MAX_RESULT_MB": "1", "CHRONOKG_READ_MAX_ROWS": "1000", **extra}


@contextmanager
def serve(store: Path, *args: str, env: dict[str, str] | None = None,
          launcher: list[str] | None = None) -> Iterator[str]:
    """`chronokg serve ARGS` in a child process on a free loopback port; yields its base URL as soon as the ready
    line names it. `launcher`: the command that runs the CLI (default `python -m chronokg.cli`)."""
    cmd = [*(launcher or [sys.executable, "-m", "chronokg.cli"]), "--store", f"kglite://{store}", "serve", *args,
           "--port", "0"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=env or server_env(), cwd=REPO)
    lines: list[str] = []
    found = threading.Event()
    url: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line)
            m = re.search(r"(http://(?:127\.0\.0\.1|\[::1\]):\d+)", line)
            if m and not found.is_set():
                url.append(m.group(1))
                found.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + 90
    while not found.wait(0.1):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"server did not start: {''.join(lines)}")
    try:
        yield url[0]
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
