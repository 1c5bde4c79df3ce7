"""Dropping a release and deleting a run, on the real TempoMed sample split into two releases: the store's
content hash after equals the hash before the release (or run) was added, nothing else changes, a refused
step changes nothing, and kill -9 in the middle of either leaves the store as it was."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.graph.counts import content_digest
from chronokg.graph.kglite_store import KgliteStore
from tests.test_loop import split_tempomed

pytestmark = pytest.mark.slow  # processes killed mid-write


cli = CliRunner()


def step(store: Path, *args: str, code: int = 0) -> str:
    result = cli.invoke(app, ["--store", f"kglite://{store}", *args])
    assert result.exit_code == code, f"{' '.join(args)}: exit {result.exit_code}\n{result.output[-3000:]}"
    return " ".join(result.output.split())


def digest(path: Path) -> str:
    with KgliteStore(path, read_only=True) as reader:
        return content_digest(reader)


def copy_store(src: Path, dst: Path) -> Path:
    for f in src.parent.glob(src.name + "*"):
        if not f.name.endswith((".lock", ".lock-owner")):
            shutil.copy(f, dst.parent / f.name.replace(src.name, dst.name, 1))
    return dst


@pytest.fixture(scope="module")
def built(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """r1 loaded, its questions generated and evaluated (digest `one`); then r2, generated, evaluated."""
    tmp = tmp_path_factory.mktemp("lifecycle")
    r1, r2, _ = split_tempomed(shared_data, tmp)
    store = tmp / "store.kgl"
    step(store, "ingest", "tempomed", str(r1), "--release-date", "2024-01-01")
    only_r1 = digest(store)
    step(store, "generate", "tempomed", "--out", str(tmp / "q1.jsonl"))
    step(store, "eval", "run", str(tmp / "q1.jsonl"), "-m", "baseline/oracle", "--log-dir", str(tmp / "runs"))
    one = digest(store)
    step(store, "eval", "run", str(tmp / "q1.jsonl"), "-m", "baseline/frozen:2018", "--log-dir", str(tmp / "runs"))
    runs = {r["id"]: r for r in KgliteStore(store, read_only=True).run("MATCH (r:Run) RETURN r.id AS id, "
                                                                      "r.models AS models")}
    frozen = next(i for i, r in runs.items() if r["models"] == ["baseline/frozen:2018"])
    before_r2 = digest(store)
    step(store, "ingest", "tempomed", str(r2), "--release-date", "2025-06-01")
    r2_id = KgliteStore(store, read_only=True).run("MATCH (s:Source) RETURN s.id AS id ORDER BY s.release_date "
                                                   "DESC LIMIT 1")[0]["id"]
    loaded = copy_store(store, tmp / "loaded.kgl")  # r2 loaded, nothing derived from it yet
    step(store, "generate", "tempomed", "--out", str(tmp / "q2.jsonl"))
    step(store, "eval", "run", str(tmp / "q2.jsonl"), "-m", "baseline/oracle", "--log-dir", str(tmp / "runs"))
    return {"tmp": tmp, "store": store, "loaded": loaded, "only_r1": only_r1, "one": one, "frozen": frozen,
            "r2": r2_id, "before_r2": before_r2}


def test_dropping_a_release_removes_exactly_what_it_added(built: dict[str, Any], tmp_path: Path) -> None:
    store = copy_store(built["loaded"], tmp_path / "s.kgl")
    assert digest(store) != built["before_r2"]
    out = step(store, "releases", "drop", built["r2"])
    assert f"release {built['r2']}: removed" in out and "Fact" in out and "1 Source" in out
    # as if r2 had never been loaded: r1's facts and known times, its questions and both runs, nothing else
    assert digest(store) == built["before_r2"]
    step(store, "releases", "drop", built["r2"], code=2)  # a second drop: one clear error, nothing changes


def test_drop_is_refused_while_derived_things_depend_on_it_unless_told(built: dict[str, Any],
                                                                      tmp_path: Path) -> None:
    store = copy_store(built["store"], tmp_path / "s.kgl")
    before = digest(store)
    out = step(store, "releases", "drop", built["r2"], code=2)
    assert "depend on it" in out and "--derived" in out and "Traceback" not in out
    assert digest(store) == before
    out = step(store, "releases", "drop", built["r2"], "--derived")
    assert "Question" in out and "Snapshot" in out and "Prediction" in out


def test_drop_after_load_gives_the_store_before_the_load(shared_data: Path, tmp_path: Path) -> None:
    r1, r2, _ = split_tempomed(shared_data, tmp_path)
    store = tmp_path / "s.kgl"
    step(store, "ingest", "tempomed", str(r1), "--release-date", "2024-01-01")
    step(store, "generate", "tempomed", "--out", str(tmp_path / "q1.jsonl"))
    before = digest(store)
    step(store, "ingest", "tempomed", str(r2), "--release-date", "2025-06-01")
    step(store, "generate", "tempomed", "--out", str(tmp_path / "q2.jsonl"))
    with KgliteStore(store, read_only=True) as reader:
        r2_id = reader.run("MATCH (s:Source) RETURN s.id AS id ORDER BY s.release_date DESC LIMIT 1")[0]["id"]
    step(store, "releases", "drop", r2_id, code=2)
    step(store, "releases", "drop", r2_id, "--derived")
    assert digest(store) == before  # nothing else changed: facts, known times, questions of r1, snapshot 1


def test_deleting_a_run_leaves_the_store_as_before_the_run(built: dict[str, Any], tmp_path: Path) -> None:
    store = tmp_path / "s.kgl"
    step(store, "ingest", "tempomed", str(built["tmp"] / "r1.jsonl"), "--release-date", "2024-01-01")
    step(store, "generate", "tempomed", "--out", str(tmp_path / "q1.jsonl"))
    step(store, "eval", "run", str(tmp_path / "q1.jsonl"), "-m", "baseline/oracle", "--log-dir", str(tmp_path))
    before = digest(store)
    step(store, "eval", "run", str(tmp_path / "q1.jsonl"), "-m", "baseline/frozen:2018", "--log-dir", str(tmp_path))
    with KgliteStore(store, read_only=True) as reader:
        frozen = reader.run("MATCH (r:Run) WHERE r.models = ['baseline/frozen:2018'] RETURN r.id AS id")[0]["id"]
    assert digest(store) != before
    out = step(store, "eval", "runs", "delete", frozen)
    assert f"run {frozen}: removed" in out and "1 Run" in out
    assert digest(store) == before
    step(store, "eval", "runs", "delete", frozen, code=2)


KILLED = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.graph import lifecycle

    path, marker, what, target = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    write = KgliteStore.write

    def slow(self, statements):
        def paced():
            for n, statement in enumerate(statements):
                if n == 1:
                    marker.write_text("half")  # part of the step is in the transaction: now kill me
                    time.sleep(60)
                yield statement
        return write(self, paced())

    KgliteStore.write = slow
    with KgliteStore(path) as store:
        if what == "drop":
            lifecycle.drop_release(store, target, derived=True)
        else:
            lifecycle.delete_run(store, target)
""")


@pytest.mark.parametrize("what", ["drop", "delete"])
def test_kill_9_during_a_drop_or_a_delete_leaves_the_store_as_it_was(built: dict[str, Any], tmp_path: Path,
                                                                    what: str) -> None:
    store = copy_store(built["store"], tmp_path / "s.kgl")
    before = digest(store)
    target = built["r2"] if what == "drop" else built["frozen"]
    marker = tmp_path / "marker"
    child = subprocess.Popen([sys.executable, "-c", KILLED, str(store), str(marker), what, target],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not marker.exists():
        assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(30)
    assert digest(store) == before
    # the lease went with the process: the same step now runs whole
    args = ["releases", "drop", target, "--derived"] if what == "drop" else ["eval", "runs", "delete", target]
    step(store, *args)
    assert digest(store) != before


def test_deleting_a_generated_benchmark_removes_its_questions_only(tmp_path: Path) -> None:
    from chronokg.demo.loop import write_releases

    first, second = write_releases(tmp_path)
    store = tmp_path / "s.kgl"
    step(store, "ingest", "tempomed", str(first), "--release-date", "2024-01-01")
    step(store, "generate", "tempomed", "--out", str(tmp_path / "q1.jsonl"))
    step(store, "ingest", "tempomed", str(second), "--release-date", "2025-06-01")
    query = "MATCH (q:Question)-[:GENERATED_AT]->(s:Snapshot) RETURN s.id AS s, count(q) AS n ORDER BY s"
    with KgliteStore(store, read_only=True) as reader:
        (old,) = reader.run(query)
    before = digest(store)
    step(store, "generate", "tempomed", "--out", str(tmp_path / "q2.jsonl"))
    step(store, "eval", "run", str(tmp_path / "q2.jsonl"), "-m", "baseline/oracle", "--log-dir", str(tmp_path))
    with KgliteStore(store, read_only=True) as reader:
        snap = next(r["s"] for r in reader.run(query) if r["s"] != old["s"])
        run_id = reader.run("MATCH (r:Run) RETURN r.id AS id")[0]["id"]
    refused = digest(store)
    out = step(store, "bench", "delete", "tempomed", snap, code=2)
    assert "predictions answer these questions" in out and digest(store) == refused
    out = step(store, "bench", "delete", "tempomed", snap, "--derived")
    assert "Question" in out and "Prediction" in out
    with KgliteStore(store, read_only=True) as reader:
        assert reader.run(query) == [old]  # the old benchmark is whole, the new one gone
    step(store, "eval", "runs", "delete", run_id)
    with KgliteStore(store, read_only=True) as reader:  # what remains beyond the store before: the snapshot node,
        # kept so that --since SNAPSHOT still works
        assert reader.run("MATCH (n) WHERE n:Prediction OR n:Run RETURN n.id AS id") == []
        reader_digest = content_digest(reader)
    assert reader_digest != before


def test_dropping_a_newer_wikidata_revision_rolls_back_what_it_replaced(shared_data: Path, tmp_path: Path) -> None:
    """A newer revision replaces the entity's label ("latest wins"), corrects a statement's start and adds one;
    dropping it restores the older revision's label and facts: the store's hash is the one before it."""
    from tests.test_loop import newer_wikidata_revision

    original = shared_data / "wikidata-entities" / "Q646148.json"
    revision = tmp_path / "Q646148.json"
    newer_wikidata_revision(original, revision)
    entity = json.loads(revision.read_text())
    body = entity["entities"]["Q646148"] if "entities" in entity else entity
    body["labels"]["en"]["value"] = "Henning Christophersen (politician)"
    revision.write_text(json.dumps(entity))
    store = tmp_path / "s.kgl"
    step(store, "ingest", "wikidata", str(original), "--properties", "timed")
    before = digest(store)
    step(store, "ingest", "wikidata", str(revision), "--properties", "timed")
    with KgliteStore(store, read_only=True) as reader:
        assert reader.run("MATCH (e:Entity {id: 'Q646148'}) RETURN e.caption AS c")[0]["c"].endswith("(politician)")
        newer = reader.run("MATCH (s:Source) RETURN s.id AS id ORDER BY s.release_date DESC LIMIT 1")[0]["id"]
    out = step(store, "releases", "drop", newer)
    assert "restored" in out and "caption" in out
    assert digest(store) == before
    with KgliteStore(store, read_only=True) as reader:
        assert reader.run("MATCH (e:Entity {id: 'Q646148'}) RETURN e.caption AS c")[0]["c"] == "Henning Christophersen"
