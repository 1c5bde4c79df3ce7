"""The `chronokg` command as a user runs it, on a file store in a temporary folder."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from tests.demo_stores import DemoRun

runner = CliRunner()


def run(store: Path, *args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["--store", f"kglite://{store}", *args])
    return result.exit_code, result.output


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "cli.kgl"


def test_demo_runs_every_showcase_query(demo_command_copy: DemoRun) -> None:
    out = demo_command_copy.output
    for title in ("recommended_on", "trajectory", "timeline", "changed_between", "facts_as_of", "stats"):
        assert title in out
    assert "C-A-B" in out and "Guterres" in out and "Ban Ki-moon" in out
    flat = " ".join(out.split())  # the tables wrap
    assert re.search(r"bench verify: \d+ questions, \d+ answer keys re-run: 0 answers changed, 0 evidence only", flat)
    assert "eval run (reference baselines)" in flat and "generate tempomed" in flat
    # the agent tools: a read answered, a write and a file read refused by the guard
    # 34 facts of the demo corpus + 242 of the slice of the other sources (DriftMed, NQ, ChroKnow, UMLS, CFR, CXR)
    assert '"facts": 276' in flat and "refused: FOREACH" in flat and "refused: LOAD" in flat
    assert "generate (every family)" in flat
    code, again = run(demo_command_copy.store, "demo", "--keep")
    assert code == 0 and "store unchanged" in again and '"facts": 276' in " ".join(again.split())


def test_ingest_query_and_stats_as_json(store_path: Path, shared_data: Path) -> None:
    code, out = run(store_path, "ingest", "tempomed", str(shared_data / "tempomed-bench"))
    assert code == 0, out
    assert "559 records" in out
    code, out = run(store_path, "query", "recommended-on", "--date", "2016-06-01", "--guideline", "36739483",
                    "--format", "json")
    assert code == 0, out
    rows = json.loads(out)
    assert rows and {r["guideline"] for r in rows} == {"26103502"}
    assert all(r["valid_from"] == "2015-01-01" and r["valid_to"] == "2023-01-01" for r in rows)
    code, out = run(store_path, "query", "as-of", "--subject", "26103502", "--predicate", "superseded_by",
                    "--date", "2024", "--format", "json")
    assert code == 0 and [r["object"] for r in json.loads(out)] == ["36739483"]
    code, out = run(store_path, "query", "timeline", "--subject", rows[0]["decision_id"], "-f", "json")
    assert code == 0 and len(json.loads(out)) == 2
    code, out = run(store_path, "query", "trajectory", "--guideline", "26103502", "-f", "json")
    assert code == 0 and [v["pmid"] for v in json.loads(out)] == ["26103502", "36739483"]
    code, out = run(store_path, "query", "changed-between", "--from", "2014", "--to", "2024", "-f", "json")
    assert code == 0 and len(json.loads(out)) > 100
    code, out = run(store_path, "stats", "--format", "json")
    stats = {(r["kind"], r["name"]): r["count"] for r in json.loads(out)}
    assert stats[("label", "ChangePair")] == 559
    assert any(kind == "source" for kind, _ in stats)
    code, out = run(store_path, "stats")
    assert code == 0 and "facts per source release" in out


def test_bad_input_is_one_clear_line_and_exit_2(store_path: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"idx": 0, "PMID_current": "1", "Year_current": 2020, "PMID_prior": "2", "Year_prior": "x"}')
    code, out = run(store_path, "ingest", "tempomed", str(bad))
    assert code == 2
    assert "error:" in out and "bad.jsonl" in out and "Year_prior" in out and "Traceback" not in out


def test_bad_store_uri_and_bad_date(tmp_path: Path) -> None:
    result = runner.invoke(app, ["--store", "sqlite:///x.db", "stats"])
    assert result.exit_code == 2 and "unknown store scheme" in result.output
    result = runner.invoke(app, ["--store", f"kglite://{tmp_path}/s.kgl", "query", "as-of", "--date", "June"])
    assert result.exit_code != 0 and "not a date" in result.output


def test_init_creates_the_store(store_path: Path) -> None:
    code, out = run(store_path, "init")
    assert code == 0 and "ready" in out and store_path.exists()
