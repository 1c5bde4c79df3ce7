"""A damaged write-ahead log: ingest, init and query say so in one line (no traceback) and point at
`chronokg store check`; `store check --repair` recovers every commit the log holds, keeps the damaged log
aside byte for byte, and a second repair changes nothing. A damaged checkpoint is refused, never touched.

The crashed writer is real: a child process commits through `KgliteStore` and dies (os._exit) before its
checkpoint, so its commits live only in the log, as after a kill -9.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chronokg.graph.kglite_store import KgliteStore
from tests.helpers import REPO

pytestmark = pytest.mark.slow  # writer processes killed mid-write

CRASHED_WRITER = textwrap.dedent("""
    import datetime as dt, os, sys
    from chronokg.demo.corpus import load_demo
    from chronokg.graph.batch import GraphBatch
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.graph.model import Fact, Source
    from chronokg.graph.writer import write_batch
    path = sys.argv[1]
    with KgliteStore(path) as store:
        load_demo(store)  # checkpointed at close
    store = KgliteStore(path)
    batch = GraphBatch()
    batch.source(Source(id="late", kind="test", caption="a release committed after the checkpoint"))
    for i in range(5):
        batch.fact(Fact(subject=f"late{i}", predicate="p", value=i, valid_from=dt.date(2001, 1, 1),
                        source_id="late", source_kind="test"))
    write_batch(store, batch)
    os._exit(0)  # killed before its checkpoint: the five facts are only in the log
""")


def cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{store}", *args],
                          capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "1000", "PYTHONPATH": str(REPO),
                               "CHRONOKG_QUERY_DAEMON_IDLE_S": "0"})  # no query process left behind
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    return done


def late_facts(store: Path) -> int:
    with KgliteStore(store, read_only=True) as reader:
        return int(reader.run("MATCH (f:Fact {source_id: 'late'}) RETURN count(f) AS n")[0]["n"])


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def damaged(tmp_path: Path) -> Path:
    """A store whose log holds five committed facts and whose log header is then damaged."""
    store = tmp_path / "s.kgl"
    subprocess.run([sys.executable, "-c", CRASHED_WRITER, str(store)], check=True, cwd=REPO, timeout=300)
    wal = Path(f"{store}-wal")
    assert wal.stat().st_size > 5 and late_facts(store) == 0  # committed, not checkpointed
    with wal.open("r+b") as log:
        log.write(b"XXXX")  # the header's magic
    return store


def test_commands_say_it_in_one_line_and_point_at_store_check(damaged: Path, shared_data: Path) -> None:
    before = sha(damaged), sha(Path(f"{damaged}-wal"))
    mcq = next((shared_data / "tempomed-bench").glob("*.jsonl"))
    for args in (["init"], ["ingest", "tempomed", str(mcq)]):
        done = cli(damaged, *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error:"), done.stderr
        assert "write-ahead log, cannot be read (not a kglite WAL file (bad magic))" in lines[0]
        assert "chronokg store check" in lines[0]
    query = cli(damaged, "query", "as-of", "--date", "2016-06-01", "--subject", "un-secretary-general")
    assert query.returncode == 0 and "ban-ki-moon" in query.stdout
    assert "chronokg store check" in query.stderr and "chronokg init" not in query.stderr
    assert (sha(damaged), sha(Path(f"{damaged}-wal"))) == before  # nothing was touched


def test_store_check_and_repair_lose_no_committed_data(damaged: Path) -> None:
    wal = Path(f"{damaged}-wal")
    damaged_log = wal.read_bytes()
    checked = cli(damaged, "store", "check", "--format", "json")
    assert checked.returncode == 1
    report = json.loads(checked.stdout)
    assert report["checkpoint"] == "ok" and report["log"] == "damaged" and not report["ok"]
    assert "bad magic" in report["log_problem"] and "--repair" in report["advice"]
    assert wal.read_bytes() == damaged_log  # a check changes nothing

    repaired = cli(damaged, "store", "check", "--repair")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert "repaired: the damaged log is kept as s.kgl-wal.damaged-" in repaired.stdout
    assert late_facts(damaged) == 5  # every commit the damaged log held, checkpointed
    (kept,) = damaged.parent.glob("s.kgl-wal.damaged-*")
    assert kept.read_bytes() == damaged_log  # the damaged log itself, byte for byte
    assert cli(damaged, "init").returncode == 0  # writers open it again
    query = cli(damaged, "query", "timeline", "--subject", "late3")
    assert query.returncode == 0 and "late3" in query.stdout and "note" not in query.stderr

    state = sha(damaged), sorted(p.name for p in damaged.parent.iterdir())
    again = cli(damaged, "store", "check", "--repair")
    assert again.returncode == 0 and "ok: nothing to do" in again.stdout
    assert (sha(damaged), sorted(p.name for p in damaged.parent.iterdir())) == state  # re-running changes nothing


def test_a_damaged_checkpoint_is_refused_and_left_alone(tmp_path: Path) -> None:
    store = tmp_path / "s.kgl"
    store.write_bytes(b"this is not a store")
    done = cli(store, "store", "check")
    assert done.returncode == 1 and "cannot be read: restore it from a backup" in done.stdout
    repair = cli(store, "store", "check", "--repair")
    assert repair.returncode == 2 and repair.stderr.startswith("error:") and "restore it from a backup" in repair.stderr
    assert store.read_bytes() == b"this is not a store"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.kgl"]
