"""`chronokg demo` loads a slice of every source, and `generate` works for every family on the demo store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from chronokg.bench import snapshot
from chronokg.bench.export import write_seed
from chronokg.bench.family import FAMILIES, OURS, generate
from chronokg.bench.question import Question, read_jsonl
from chronokg.cli.app import app
from chronokg.demo.corpus import load_demo
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.store import GraphStore
from chronokg.ingest.sources import SOURCES
from tests.demo_stores import DemoRun

runner = CliRunner()


@pytest.fixture
def demo_uri(demo_command_copy: DemoRun) -> str:
    assert "generate (every family)" in demo_command_copy.output
    return demo_command_copy.uri


def counts(store: GraphStore) -> dict[str, int]:
    return {r["label"]: r["n"] for r in store.run("MATCH (n) RETURN labels(n)[0] AS label, count(*) AS n")}


def test_generate_works_for_every_family_on_the_demo_store(demo_uri: str, tmp_path: Path) -> None:
    """Every family of FAMILIES: a family generating nothing from the demo needs its source's slice in the demo."""
    for family in FAMILIES.names():
        out = tmp_path / f"{family}.jsonl"
        done = runner.invoke(app, ["--store", demo_uri, "generate", family, "--out", str(out)])
        assert done.exit_code == 0, (f"generate {family} on the demo store: add a slice of what it builds from to "
                                     f"the demo (chronokg/demo/sources.py)\n{done.output[-2000:]}")
        rows: list[Question] = list(read_jsonl(out))
        assert rows and {q.family for q in rows} == {family}, family
        if family == "conflictmedqa":  # the demo's guideline pairs use their own categories: skipped, counted
            assert "11 change pair(s) skipped: their category is none of the paper's five" in done.output
            assert {q.metadata["change_category"] for q in rows} == {
                "Diagnostic & Threshold", "Recommendation Intensity", "Implementation Approach"}
        if family == "chroknow":  # ChroKnowBench rows and the CFR editions' cloze items
            assert {q.variant.split("/")[0] for q in rows} == {"general", "legal"}
        if family == "benchage":  # the updated answers are the keys now
            keys = {str(q.metadata.get("question")): q.answer_key.answer for q in rows if q.answer_key}
            assert keys["who is the secretary-general of the united nations"] == "António Guterres", keys
        if FAMILIES.get(family).seed_format is not None:  # a family that reproduces no seed benchmark has none
            check_seed_files(family, rows, tmp_path / "seed" / family)


def check_seed_files(family: str, rows: list[Question], folder: Path) -> None:
    """`--format seed` on the demo: no seed file holds a field of chronokg's; the side file names every question."""
    files = write_seed(family, rows, folder)
    side = folder / f"{family}_chronokg_ids.jsonl"
    for path in files:
        if path == side or path.name.endswith("_scenario_ids.json"):
            continue
        text = path.read_text(encoding="utf-8")
        assert "chronokg_id" not in text and OURS not in text, path.name
        assert not any(q.id in text for q in rows), path.name  # no chronokg id leaks into a seed file
    mapped = {i for line in side.read_text().splitlines() for i in json.loads(line)["chronokg_ids"]}
    assert mapped == {q.id for q in rows}, family


def test_demo_sources_load_once(demo_uri: str) -> None:
    """Re-running the demo's loads on its store changes nothing."""
    from chronokg.demo.sources import load_sources

    with KgliteStore(demo_uri.removeprefix("kglite://")) as store:
        before = counts(store)
        assert {"Patient", "Study", "SourceQuestion", "ChangePair"} <= set(before)
        umls = store.run("MATCH (f:Fact {subject_id: 'C9000001', predicate: 'may_prevent'}) WHERE f.known_to IS NULL "
                         "RETURN f.valid_to AS valid_to")
        assert [str(r["valid_to"]) for r in umls] == ["2022-05-01"]  # dropped in the second release
        load_demo(store)
        load_sources(store)
        assert counts(store) == before


def test_a_family_without_its_sources_says_which_loader_fills_them(tmp_path: Path) -> None:
    uri = f"kglite://{tmp_path / 'empty.kgl'}"
    assert runner.invoke(app, ["--store", uri, "init"]).exit_code == 0
    for family in FAMILIES.names():
        loaders = [f"chronokg ingest {source}" for source in SOURCES.names()
                   if f"chronokg ingest {source} " in FAMILIES.get(family).needs]
        assert loaders, (f"family {family!r} names no `chronokg ingest <source>` of SOURCES in its `needs`: say there "
                         "what it builds from and which loader fills it (Family(needs=...))")
        loader = loaders[0]
        done = runner.invoke(app, ["--store", uri, "generate", family, "--out", str(tmp_path / f"{family}.jsonl")])
        assert done.exit_code == 2, done.output  # an error: nothing to generate from, nothing written
        text = " ".join(done.output.split())  # rich wraps long lines
        assert f"{family} builds from" in text and loader in text, text
        assert not (tmp_path / f"{family}.jsonl").exists()


def test_out_of_category_pairs_are_skipped_with_a_count_not_an_error() -> None:
    with KgliteStore(":memory:") as store:
        load_demo(store)  # guideline pairs only, none in the paper's five categories
        questions, ctx = generate("conflictmedqa", store, snapshot.current(store), {})
        assert questions == []
        assert any(n.startswith("11 change pair(s) skipped") and "'dose/threshold change' (5)" in n
                   for n in ctx.notes)
