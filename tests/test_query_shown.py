"""What `query` shows is what the store holds: `latest` names each fact's object (an entity without a caption
shows its id), and an undated Wikidata statement has precision `none`, not a day it never gave; on the real
entity files."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.graph.kglite_store import KgliteStore

cli = CliRunner()


def run(store: Path, *args: str) -> str:
    result = cli.invoke(app, ["--store", f"kglite://{store}", *args], terminal_width=200)
    assert result.exit_code == 0, f"{' '.join(args)}: exit {result.exit_code}\n{result.output[-3000:]}"
    return result.output


def test_latest_shows_the_object_and_undated_statements_have_no_precision(shared_data: Path,
                                                                          tmp_path: Path) -> None:
    store = tmp_path / "s.kgl"
    entities = sorted((shared_data / "wikidata-entities").glob("Q*.json"))
    run(store, "ingest", "wikidata", *map(str, entities), "--properties", "all")
    with KgliteStore(store, read_only=True) as reader:
        facts = reader.run("MATCH (f:Fact) RETURN f.subject_id AS s, f.object_id AS o, f.valid_from AS a, "
                           "f.valid_to AS b, f.precision AS p")
    undated = [f for f in facts if f["a"] is None and f["b"] is None]
    assert undated and {f["p"] for f in undated} == {"none"}
    assert "none" not in {f["p"] for f in facts if f["a"] is not None or f["b"] is not None}
    subject = "Q646148"
    rows = json.loads(run(store, "query", "latest", "--subject", subject, "--format", "json"))
    held = [f for f in facts if f["s"] == subject and f["o"] is not None]
    assert rows and {r["object"] for r in rows if r["object"]} <= {f["o"] for f in held}
    table = run(store, "query", "latest", "--subject", subject)
    for row in rows:  # every object (or literal) the rows hold is in the table
        assert (row["object_caption"] or row["object"] or str(row["value"])).split()[0][:8] in table, row
        if row["valid_from"] is None and row["valid_to"] is None:
            assert row["precision"] == "none"
    timeline = json.loads(run(store, "query", "timeline", "--subject", subject, "--format", "json"))
    assert {r["precision"] for r in timeline if r["valid_from"] is None and r["valid_to"] is None} == {"none"}
