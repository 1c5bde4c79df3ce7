"""`--out /dev/stdout`: the data alone on standard output, what was written said on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import wikidata

pytestmark = pytest.mark.slow  # starts the CLI as a process, so that its stdout is a real pipe


def cli(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{store}", *args],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "80"})


def test_generate_to_stdout_writes_only_questions_there(demo_store: Path) -> None:
    done = cli(demo_store, "generate", "tempomed", "--no-write", "--limit", "2", "--out", "/dev/stdout")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines and all(isinstance(json.loads(line)["id"], str) for line in lines)
    assert f"wrote {len(lines):,} questions to /dev/stdout" in " ".join(done.stderr.split())


def test_export_rdf_to_stdout_writes_only_triples_there(shared_data: Path, tmp_path: Path) -> None:
    store = tmp_path / "wd.kgl"
    with KgliteStore(store) as writer:
        wikidata.load(writer, sorted((shared_data / "wikidata-entities").glob("*.json")))
    done = cli(store, "export", "rdf", "--out", "/dev/stdout")
    assert done.returncode == 0, done.stderr
    triples = [line for line in done.stdout.splitlines() if line.strip()]
    assert triples and all(line.rstrip().endswith(" .") for line in triples)
    assert f"wrote {len(triples)} triples to /dev/stdout" in " ".join(done.stderr.split())
