"""A probe corpus, command-line experience: one error style, "did you mean" in every group, an empty
CHRONOKG_STORE, messages that match what was given, progress that stays within its total, whole model names
at 80 columns, `generate` help that fits a screen."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronokg.bench.family import FAMILIES
from chronokg.cli.app import app
from chronokg.ingest import cxr, cxr_synth
from chronokg.settings import Settings, default_store_uri
from chronokg.testing.openai_server import OpenAIServer


def cli(*args: str, **env: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env=env or None)
    return result.exit_code, result.output


@pytest.mark.parametrize(("args", "says"), [
    (["injest"], "error: No such command 'injest'. Did you mean 'ingest', 'init'?"),
    (["ingest", "tempmed"], "error: No such command 'tempmed'. Did you mean 'tempomed'?"),  # a lazy group
    (["generate", "conflictmedq"], "error: No such command 'conflictmedq'. Did you mean 'conflictmedqa'?"),
    (["eval", "run", "--protocl", "x"], "error: No such option: --protocl (Possible options: --protocol, --tools)"),
    (["query", "cyper"], "error: No such command 'cyper'. Did you mean 'cypher'?"),
])
def test_every_error_is_one_lower_case_line_with_suggestions(args: list[str], says: str) -> None:
    code, output = cli(*args)
    assert code == 2, output
    assert "Error:" not in output  # click's own style is gone: one style for the whole CLI
    assert [line for line in output.splitlines() if line.startswith("error:")] == [says], output


def test_an_empty_chronokg_store_means_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHRONOKG_STORE", "")
    assert Settings().store == default_store_uri()
    monkeypatch.setenv("CHRONOKG_STORE", "  ")
    assert Settings().store == default_store_uri()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The demo corpus in a file store, and two TempoMed questions generated from it."""
    from chronokg.bench import snapshot
    from chronokg.bench.family import generate
    from chronokg.bench.question import write_jsonl
    from chronokg.demo.corpus import load_demo
    from chronokg.graph.kglite_store import KgliteStore

    root = tmp_path_factory.mktemp("cli-probes")
    with KgliteStore(root / "s.kgl") as store:
        load_demo(store)
        questions, _ = generate("tempomed", store, snapshot.current(store), {})
    write_jsonl(root / "q.jsonl", questions[:2])
    return root / "s.kgl", root / "q.jsonl"


def test_refresh_with_questions_naming_no_items_says_so(demo: tuple[Path, Path]) -> None:
    store, questions = demo  # TempoMed questions: no Wikidata subject
    code, output = cli("--store", f"kglite://{store}", "retrieve", "refresh", "--questions", str(questions))
    assert code == 2, output
    assert "names no Wikidata items" in output and "or give --questions" not in output, output


class Recorder:
    def __init__(self) -> None:
        self.total = 0
        self.done = 0

    def start(self, total: int, description: str) -> None:
        self.total, self.done = total, 0

    def advance(self, n: int) -> None:
        self.done += n


def test_cxr_progress_counts_in_the_unit_of_its_total(tmp_path: Path, file_store: object) -> None:
    cxr_synth.generate(tmp_path / "c", patients=3, visits=3, seed=1)
    progress = Recorder()
    cxr.load(file_store, [tmp_path / "c"], chunk_studies=2, progress=progress)  # type: ignore[arg-type]
    assert progress.total > 0 and progress.done == progress.total


def test_model_names_are_not_cut_to_one_prefix_at_80_columns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            demo: tuple[Path, Path]) -> None:
    monkeypatch.setenv("CHRONOKG_RESPONSE_CACHE", str(tmp_path / "cache.sqlite"))
    store, questions = demo
    specs = ["openai-compat/loopback-model-small", "openai-compat/loopback-model-large"]
    with OpenAIServer() as server:
        code, output = cli("--store", f"kglite://{store}", "eval", "run", str(questions),
                           "-m", specs[0], "-m", specs[1], "--base-url", server.url, "--log-dir",
                           str(tmp_path / "runs"), "--no-write")
    assert code == 0, output
    assert max(len(line) for line in output.splitlines()) <= 80
    for spec in specs:
        assert spec in output, output


@pytest.mark.parametrize("family", FAMILIES.names())
def test_generate_help_fits_a_screen_at_80_columns(family: str) -> None:
    code, output = cli("generate", family, "--help", COLUMNS="80")
    assert code == 0, output
    lines = output.splitlines()
    assert len(lines) <= 60, len(lines)
    assert max(len(line) for line in lines) <= 80
    assert re.search(r"--out", output)


def test_the_traceback_guard_fails_a_test() -> None:
    """The autouse fixture in conftest.py fails any CLI test whose output holds a traceback."""
    from tests.conftest import _no_traceback

    with pytest.raises(pytest.fail.Exception, match="printed a Python traceback"):
        _no_traceback("chronokg x", "ok\nTraceback (most recent call last):\n  boom")
    _no_traceback("chronokg x", json.dumps({"fine": True}))
