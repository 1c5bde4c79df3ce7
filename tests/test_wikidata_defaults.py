"""`chronokg ingest wikidata ENTITY.json` as a newcomer runs it: facts load, and what was left out is said."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from chronokg.cli.app import app


def test_default_loads_every_timed_property_and_names_what_it_left_out(shared_data: Path, tmp_path: Path) -> None:
    entity = shared_data / "wikidata-entities" / "Q2112.json"
    uri = f"kglite://{tmp_path}/s.kgl"
    result = CliRunner().invoke(app, ["--store", uri, "ingest", "wikidata", str(entity)])
    assert result.exit_code == 0, result.output
    loaded = int(result.output.split(" statements read as facts")[0].split()[-1])
    assert loaded > 0  # ChroKnowBench's eight properties alone gave 0 facts for this entity
    assert "not loaded:" in result.output and "--properties all" in result.output
    narrow = CliRunner().invoke(app, ["--store", f"kglite://{tmp_path}/t.kgl", "ingest", "wikidata", str(entity),
                                      "--properties", "temporal"])
    assert narrow.exit_code == 0 and "0 statements read as facts" in narrow.output
    assert "not loaded:" in narrow.output
