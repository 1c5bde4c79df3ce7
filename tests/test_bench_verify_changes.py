"""`bench verify` tells an answer that changed from evidence that grew: on the real TempoMed records loaded as two
releases the newer release adds versions after every key's date (evidence grows, no answer moves), and a newer
Wikidata revision that corrects a statement's start by years changes the answers of the years it no longer covers."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from chronokg.bench.question import read_jsonl
from chronokg.cli.app import app
from tests.test_loop import newer_wikidata_revision, split_tempomed

cli = CliRunner()


def run(store: Path, *args: str, code: int = 0) -> str:
    result = cli.invoke(app, ["--store", f"kglite://{store}", *args])
    assert result.exit_code == code, f"{' '.join(args)}: exit {result.exit_code}\n{result.output[-3000:]}"
    return result.output


def verdicts(store: Path, questions: Path) -> dict[str, object]:
    report: dict[str, object] = json.loads(run(store, "bench", "verify", str(questions), "--format", "json"))
    return report


def test_evidence_that_grew_is_not_an_answer_change(shared_data: Path, tmp_path: Path) -> None:
    r1, r2, _ = split_tempomed(shared_data, tmp_path)
    store = tmp_path / "s.kgl"
    run(store, "ingest", "tempomed", str(r1), "--release-date", "2024-01-01")
    run(store, "generate", "tempomed", "--out", str(tmp_path / "q1.jsonl"))
    run(store, "ingest", "tempomed", str(r2), "--release-date", "2025-06-01")
    report = verdicts(store, tmp_path / "q1.jsonl")
    changed = report["changed"]
    assert isinstance(changed, list) and changed
    questions = {q.id: q for q in read_jsonl(tmp_path / "q1.jsonl")}
    for row in changed:  # each verdict is what the row shows: same target and text, other evidence
        q = questions[row["id"]]
        assert row["evidence_changed"] and row["new_hash"] != q.answer_key.evidence_hash
        assert row["answer_changed"] == (row["new_target"] != q.target or row["new_answer"] != row["old_answer"])
    assert report["evidence_changed"] == len(changed)
    assert report["answers_changed"] == sum(r["answer_changed"] for r in changed) == 0
    out = " ".join(run(store, "bench", "verify", str(tmp_path / "q1.jsonl"), "--fail-on-change").split())
    assert f"0 answers changed, {len(changed):,} evidence only (same answer)" in out
    run(store, "bench", "verify", str(tmp_path / "q1.jsonl"), "--fail-on-evidence-change", code=1)


def test_a_corrected_statement_is_an_answer_change(shared_data: Path, tmp_path: Path) -> None:
    original = shared_data / "wikidata-entities" / "Q646148.json"
    revision = tmp_path / "Q646148.json"
    newer_wikidata_revision(original, revision)
    # the corrected start moves past the years the old questions ask about, and the undated statement goes
    entity = json.loads(revision.read_text().replace("+1978-05-01T", "+1981-05-01T"))
    body = entity["entities"]["Q646148"] if "entities" in entity else entity
    body["claims"]["P39"] = body["claims"]["P39"][1:]
    revision.write_text(json.dumps(entity))
    store = tmp_path / "s.kgl"
    entities = sorted((shared_data / "wikidata-entities").glob("Q*.json"))
    run(store, "ingest", "wikidata", *map(str, entities), "--properties", "timed")
    run(store, "generate", "chroknow", "--out", str(tmp_path / "w1.jsonl"))
    assert verdicts(store, tmp_path / "w1.jsonl")["changed"] == []
    run(store, "ingest", "wikidata", str(revision), "--properties", "timed")
    report = verdicts(store, tmp_path / "w1.jsonl")
    changed = report["changed"]
    assert isinstance(changed, list)
    moved = [r for r in changed if r["answer_changed"]]
    assert moved and all(r["new_target"] != r["old_target"] or r["new_answer"] != r["old_answer"] for r in moved)
    assert report["answers_changed"] == len(moved) and report["evidence_changed"] == len(changed)
    questions = {q.id: q for q in read_jsonl(tmp_path / "w1.jsonl")}  # only the corrected statement's answers
    assert {questions[r["id"]].metadata["fact_key"] for r in moved} == {"wd-Q646148-P39"}
    out = " ".join(run(store, "bench", "verify", str(tmp_path / "w1.jsonl"), "--fail-on-change", code=1).split())
    assert f"{len(moved):,} answers changed, {len(changed) - len(moved):,} evidence only" in out
