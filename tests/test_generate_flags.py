"""`chronokg generate` passes on the flags a user gave, so a family can tell a flag it would ignore."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronokg.bench import snapshot
from chronokg.bench.family import generate
from chronokg.cli.app import app
from chronokg.errors import ChronoKGError
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import tempomed

runner = CliRunner()


def test_options_with_table3_and_no_mcq_is_refused_not_ignored(demo_store: Path) -> None:
    with KgliteStore(demo_store, read_only=True) as store, \
            pytest.raises(ChronoKGError, match=r"--options 5 with --table3 --no-mcq: Table 3 asks each released "
                                               r"MCQ's 4 options"):
        generate("tempomed", store, snapshot.current(store), {"table3": True, "mcq": False, "options": 5,
                                                              "protocol": "seed"})


@pytest.mark.slow
def test_the_cli_passes_only_the_flags_given(shared_data: Path, tmp_path: Path) -> None:
    store = tmp_path / "tempomed.kgl"
    with KgliteStore(store) as writer:
        tempomed.load(writer, [shared_data / "tempomed-bench"])
    base = ["--store", f"kglite://{store}", "generate", "tempomed", "--protocol", "seed", "--table3",
            "--no-mcq", "--no-write"]
    plain = runner.invoke(app, [*base, "--out", str(tmp_path / "t3.jsonl")])
    assert plain.exit_code == 0, plain.output
    asked = runner.invoke(app, [*base, "--options", "5", "--out", str(tmp_path / "t3-5.jsonl")])
    assert asked.exit_code != 0 and "--options 5 with --table3 --no-mcq" in " ".join(asked.output.split())
    assert not (tmp_path / "t3-5.jsonl").exists()
