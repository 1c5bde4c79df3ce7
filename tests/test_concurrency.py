"""Reads that share the store and never rewrite it, with real processes.

Readers load the last checkpoint without the writer lease; a writer holds the lease and
checkpoints atomically at close. So readers never fail because of each other or of a
writer, and each sees the store either before or after a write, never part of it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chronokg.errors import StoreBusy, StoreError
from chronokg.graph.counts import content_digest
from chronokg.graph.kglite_store import KgliteStore
from tests.helpers import REPO

pytestmark = pytest.mark.slow  # reader and writer processes

WRITER = """
import sys, time
from chronokg.graph.batch import GraphBatch
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import Fact, Source
from chronokg.graph.writer import write_batch
path, release, n, hold = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
with KgliteStore(path, durable="off", lock_timeout=60) as store:
    batch = GraphBatch()
    batch.source(Source(id=release, kind="test", caption=release))
    for i in range(n):
        batch.fact(Fact(subject=f"{release}-s{i}", predicate="p", value=i, source_id=release, source_kind="test"))
    write_batch(store, batch)
    print("holding", flush=True)  # the lease is this process's now
    time.sleep(hold)  # keep the lease a while: readers start meanwhile
print("written", release)
"""

READER = """
import json, sys
from chronokg.graph.kglite_store import KgliteStore

with KgliteStore(sys.argv[1], read_only=True) as store:
    rows = store.run("MATCH (f:Fact)-[:ASSERTED_IN]->(s:Source) RETURN s.id AS release, count(f) AS n")
    edges = store.run("MATCH (:Fact)-[e:SUBJECT]->(:Entity) RETURN count(e) AS n")[0]["n"]
print(json.dumps({"releases": {r["release"]: r["n"] for r in rows}, "subject_edges": edges}))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def _start(script: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=_env())


def _seed(path: Path) -> None:
    proc = _start(WRITER, path, "r0", 200, 0)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err


@pytest.mark.parametrize("rounds", [4])
def test_two_readers_and_a_writer_started_together(tmp_path: Path, rounds: int) -> None:
    path = tmp_path / "shared.kgl"
    _seed(path)
    n = 3000
    for k in range(1, rounds + 1):
        release = f"r{k}"
        writer = _start(WRITER, path, release, n, 0.3)
        readers = [_start(READER, path) for _ in range(2)]
        time.sleep(0.2)
        readers += [_start(READER, path) for _ in range(2)]  # some start while the writer holds the lease
        _, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        for reader in readers:
            out, err = reader.communicate(timeout=120)
            assert reader.returncode == 0, err  # no reader ever fails
            seen = json.loads(out)
            releases = seen["releases"]
            # Before or after the write, never part of it: the new release is absent or whole.
            assert releases.get(release, n) == n
            assert releases == {f"r{j}": (200 if j == 0 else n) for j in range(k + (release in releases))}
            assert seen["subject_edges"] == sum(releases.values())
    final = _start(READER, path)
    out, _ = final.communicate(timeout=120)
    assert json.loads(out)["releases"] == {"r0": 200, **{f"r{j}": n for j in range(1, rounds + 1)}}  # no lost write


def test_a_second_writer_waits_then_fails_naming_the_first(tmp_path: Path) -> None:
    path = tmp_path / "busy.kgl"
    _seed(path)
    holder = _start(WRITER, path, "long", 10, 4.0)
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "holding"  # the first writer holds the lease now (no fixed wait)
    waited: list[str] = []
    start = time.monotonic()
    with pytest.raises(StoreBusy, match=rf"being written by process {holder.pid} .*after waiting 1 s"):
        KgliteStore(path, lock_timeout=1.0, on_wait=waited.append)
    assert time.monotonic() - start >= 1.0 and waited and f"process {holder.pid}" in waited[0]
    with KgliteStore(path, durable="off", lock_timeout=30) as store:  # waits for the holder, then writes
        assert store.run("MATCH (s:Source {id: 'long'}) RETURN count(s) AS n") == [{"n": 1}]
    holder.communicate(timeout=60)


def test_a_reader_never_writes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "quiet.kgl"
    _seed(path)
    before = (path.stat().st_size, path.stat().st_mtime_ns)
    files = sorted(p.name for p in tmp_path.iterdir())
    with KgliteStore(path, read_only=True) as store:
        digest = content_digest(store)
        with pytest.raises(StoreError, match="read-only"):
            store.write([("CREATE (:Entity {id: 'x'})", {})])
        assert store.run("MATCH (e:Entity {id: 'x'}) RETURN count(e) AS n") == [{"n": 0}]
    assert (path.stat().st_size, path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == files
    with KgliteStore(path, read_only=True) as store:
        assert content_digest(store) == digest


def test_a_writer_that_changes_nothing_does_not_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "same.kgl"
    _seed(path)
    before = path.stat().st_mtime_ns
    with KgliteStore(path) as store:
        store.run("MATCH (n) RETURN count(n) AS n")
    assert path.stat().st_mtime_ns == before


def test_reading_a_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"no store at .*nothing\.kgl: load data first"):
        KgliteStore(tmp_path / "nothing.kgl", read_only=True)
    assert not (tmp_path / "nothing.kgl").exists()


def test_cli_queries_run_side_by_side_without_touching_the_file(tmp_path: Path, shared_data: Path) -> None:
    path = tmp_path / "cli.kgl"
    uri = f"kglite://{path}"
    cli = [sys.executable, "-m", "chronokg.cli", "--store", uri]
    load = subprocess.run([*cli, "ingest", "tempomed", str(shared_data / "tempomed-bench")], capture_output=True,
                          text=True, env=_env(), timeout=300)
    assert load.returncode == 0, load.stderr
    stamp = (path.stat().st_size, path.stat().st_mtime_ns)
    query = [*cli, "query", "recommended-on", "--date", "2016-06-01", "--guideline", "36739483", "--format", "json"]
    procs = [subprocess.Popen(query, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
             for _ in range(6)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), [e for _, e in outputs]
    assert len({o for o, _ in outputs}) == 1 and json.loads(outputs[0][0])
    assert (path.stat().st_size, path.stat().st_mtime_ns) == stamp
