"""`chronokg --help` imports no engine, no heavy library and no source module (speed: benchmarks/bench_cli.py)."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("kglite", "neo4j", "rdflib", "pandas", "numpy", "duckdb", "torch", "faiss", "sentence_transformers",
         "onnxruntime", "onnx", "tokenizers", "safetensors",
         "vllm", "openai", "matplotlib", "SPARQLWrapper", "pydantic_settings", "httpx", "inspect_ai", "lm_eval",
         "litellm", "datasets")

PROBE = """
import json, sys
sys.argv = ["chronokg", *sys.argv[1:]]
from chronokg.cli import main
try:
    main()
except SystemExit:
    pass
print("\\n" + json.dumps(sorted(sys.modules)))
"""


def modules_after(*args: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_help_loads_no_engine_no_heavy_package_and_no_source() -> None:
    loaded = modules_after("--help")
    assert "chronokg.cli.app" in loaded and "typer" in loaded  # the probe did run the command
    assert not [m for m in HEAVY if m in loaded]
    assert not sorted(m for m in loaded if m.startswith(("chronokg.ingest.", "chronokg.graph.", "chronokg.queries.",
                                                           "chronokg.bench.", "chronokg.models.")))


def test_a_group_lists_its_commands_without_importing_the_engine() -> None:
    loaded = modules_after("query", "--help")
    assert "chronokg.queries.catalog" in loaded  # the query commands are listed from their specs
    assert "kglite" not in loaded and "chronokg.ingest.wikidata" not in loaded
    assert "kglite" not in modules_after("ingest", "--help")
