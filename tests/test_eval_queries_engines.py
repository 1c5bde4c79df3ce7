"""The sequenced evaluation queries answer alike on both engines: the same two real TempoMed releases and the same
baseline run written into the embedded store and into a real Bolt server, then `accuracy-by-valid-year` and
`changed-verdicts` asked of each."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.graph.open import open_store
from chronokg.graph.store import GraphStore
from chronokg.ingest.common import read_json_blocks
from chronokg.queries.spec import all_queries
from chronokg.testing.bolt_server import BoltTarget

pytestmark = pytest.mark.slow


def _load_and_run(uri: str, tmp: Path, env: dict[str, str]) -> str:
    runner = CliRunner()
    for name, day in (("r1.jsonl", "2024-01-01"), ("r2.jsonl", "2025-06-01")):
        got = runner.invoke(app, ["--store", uri, "ingest", "tempomed", str(tmp / name), "--release-date", day],
                            env=env)
        assert got.exit_code == 0, got.output
    qfile = tmp / f"q-{len(list(tmp.glob('q-*')))}.jsonl"
    got = runner.invoke(app, ["--store", uri, "generate", "tempomed", "--out", str(qfile)], env=env)
    assert got.exit_code == 0, got.output
    runs = tmp / f"runs-{qfile.stem}"
    got = runner.invoke(app, ["--store", uri, "eval", "run", str(qfile), "-m", "baseline/oracle", "-m",
                              "baseline/frozen:2018", "--protocol", "chronokg", "--log-dir", str(runs)], env=env)
    assert got.exit_code == 0, got.output
    return next(runs.iterdir()).name


def _rows(store: GraphStore, run: str) -> dict[str, Any]:
    out = {}
    with store:
        for name, params in (("accuracy-by-valid-year", {"run": run, "first": 2010, "last": 2026}),
                             ("changed-verdicts", {"run": run, "a": "2024-06-01", "b": dt.date.today().isoformat()})):
            rows = [r.model_dump(mode="json") for r in all_queries().get(name).run(store, params)]
            out[name] = [{k: v for k, v in r.items() if k != "question_id"} for r in rows]
    return out


def test_both_engines_give_the_same_rows(bolt_target: BoltTarget, shared_data: Path, tmp_path: Path) -> None:
    records = [r for _, _, r in read_json_blocks(next((shared_data / "tempomed-bench").glob("*.jsonl")))][:10]
    for name, part in (("r1.jsonl", records[:5]), ("r2.jsonl", records[5:])):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in part), encoding="utf-8")
    from chronokg.graph.neo4j_store import Neo4jStore

    with Neo4jStore(bolt_target.uri, bolt_target.user, bolt_target.password, bolt_target.database) as bolt:
        bolt.write([("MATCH (n) DETACH DELETE n", {})])
    kg_uri = f"kglite://{tmp_path / 'store.kgl'}"
    kg_run = _load_and_run(kg_uri, tmp_path, {})
    kg = _rows(open_store(kg_uri, read_only=True), kg_run)
    run = _load_and_run(bolt_target.uri, tmp_path, bolt_target.env())
    bolt_rows = _rows(Neo4jStore(bolt_target.uri, bolt_target.user, bolt_target.password, bolt_target.database,
                                 read_only=True), run)
    assert kg["accuracy-by-valid-year"] and kg["changed-verdicts"]
    assert kg == bolt_rows
