"""`eval run` writes the predictions from the records it just counted, not from a second read of the log: after a
resume, every sample of the run (those of before the interruption too) is one prediction, once, and the summary
counts them all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.graph.kglite_store import KgliteStore
from tests.demo_stores import copy_store

cli = CliRunner()


def step(store: Path, *args: str) -> str:
    result = cli.invoke(app, ["--store", f"kglite://{store}", *args])
    assert result.exit_code == 0, result.output[-3000:]
    return " ".join(result.output.split())


def test_a_resumed_run_writes_each_sample_once_and_counts_the_earlier_ones(demo_store: Path, tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    step(demo_store, "generate", "tempomed", "--limit", "6", "--out", str(questions))
    other = copy_store(demo_store.parent, tmp_path / "other") / demo_store.name  # the questions, no predictions
    runs = tmp_path / "runs"
    step(demo_store, "eval", "run", str(questions), "-m", "baseline/oracle", "--log-dir", str(runs))
    (folder,) = list(runs.iterdir())
    log = folder / "samples.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    n = len(lines)
    assert n >= 4
    # interrupted after half the samples, the last one torn mid-line
    log.write_text("".join(lines[: n // 2]) + lines[n // 2][:40], encoding="utf-8")
    info = json.loads((folder / "run.json").read_text(encoding="utf-8"))
    (folder / "run.json").write_text(json.dumps({**info, "status": "running", "totals": {}}), encoding="utf-8")
    out = step(other, "eval", "run", "--resume", str(folder))
    assert f"resuming: {n // 2:,} samples already done" in out and "complete" in out
    assert f"baseline/oracle {n:,} {n:,} 100.0%" in out  # the summary counts the samples of before the resume
    assert f"predictions in the graph: {n:,} new, 0 already there" in out
    with KgliteStore(other, read_only=True) as store:
        rows = store.run("MATCH (p:Prediction) WHERE p.run_id = $run RETURN p.question_id AS q",
                         {"run": info["run_id"]})
    assert sorted(r["q"] for r in rows) == sorted(json.loads(line)["question_id"] for line in lines)
    again = step(other, "eval", "run", "--resume", str(folder))
    assert f"predictions in the graph: 0 new, {n:,} already there" in again


def test_an_edge_to_a_node_neither_staged_nor_stored_is_refused_and_nothing_is_written() -> None:
    """The writer checks edge endpoints by id alone (a prediction's question is looked up, not read whole)."""
    from chronokg.errors import StoreError
    from chronokg.graph import schema
    from chronokg.graph.batch import GraphBatch
    from chronokg.graph.writer import write_batch

    store = KgliteStore(":memory:")
    first = GraphBatch()
    first.node(schema.QUESTION, "q-1", input="a long question text " * 100)
    write_batch(store, first)
    good = GraphBatch()
    good.node(schema.RUN, "run-1")
    good.edge(schema.IN_RUN, schema.QUESTION, "q-1", schema.RUN, "run-1")
    assert write_batch(store, good).edges_created == {schema.IN_RUN: 1}
    bad = GraphBatch()
    bad.node(schema.RUN, "run-2")
    bad.edge(schema.IN_RUN, schema.QUESTION, "q-gone", schema.RUN, "run-2")
    with pytest.raises(StoreError, match=r"1 Question node.*'q-gone'"):
        write_batch(store, bad)
    assert store.run("MATCH (r:Run) RETURN r.id AS id ORDER BY id") == [{"id": "run-1"}]
