"""DriftMed ingest on self-authored fixtures in its schema (JSONL, CSV, JSON list, parquet) and its download."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.errors import InputError
from chronokg.graph.counts import graph_counts
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import driftmed
from chronokg.queries import catalog
from tests.helpers import serve_folder

FIXTURES = Path(__file__).parent / "fixtures" / "driftmed"
JSONL = FIXTURES / "driftmed.jsonl"
RELEASE = driftmed.DEFAULT_RELEASE
D = dt.date


def raw() -> list[dict[str, Any]]:
    return [json.loads(line) for line in JSONL.read_text().splitlines() if line.strip()]


def facts(store: KgliteStore) -> set[tuple[Any, ...]]:
    return {tuple(r.values()) for r in store.run(
        "MATCH (f:Fact) RETURN f.subject_id AS s, f.value AS v, f.valid_from AS a, f.valid_to AS b, "
        "f.known_from AS k, f.driftmed_label AS l, f.bias_type AS t, f.change_category AS c, f.disease AS d, "
        "f.factor AS x")}


@pytest.fixture(scope="module")
def loaded() -> KgliteStore:
    store = KgliteStore(":memory:")
    driftmed.load(store, [JSONL])
    return store


def test_one_change_pair_per_correct_wrong_pair(loaded: KgliteStore) -> None:
    rows = raw()
    correct = {r["id"] for r in rows if r["label"] == "correct"}
    assert {r["id"] for r in rows if r["label"] == "wrong"} == {i + 2145 for i in correct}
    counts = graph_counts(loaded)
    assert counts["ChangePair"] == len(correct) and counts["Fact"] == 2 * len(correct)
    assert counts["SourceQuestion"] == len(rows)
    pairs = loaded.run("MATCH (c:ChangePair)-[:CURRENT]->(cur:Fact) MATCH (c)-[:PRIOR]->(old:Fact) "
                       "RETURN cur.value AS cur, old.value AS old, c.category AS cat, c.clinical_focus AS disease")
    by_text = {r["text"]: r for r in rows}
    for p in pairs:
        cur, old = by_text[p["cur"]], by_text[p["old"]]
        assert (cur["label"], old["label"], old["id"] - cur["id"]) == ("correct", "wrong", 2145)
        assert (p["cat"], p["disease"]) == (cur["change_category"], cur["disease"])


def test_as_of_now_only_the_current_recommendation(loaded: KgliteStore) -> None:
    rows = raw()
    for cur in (r for r in rows if r["label"] == "correct"):
        old = next(r for r in rows if r["id"] == cur["id"] + 2145)
        subject = f"driftmed:{cur['id']}"
        # DriftMed gives no dates: before its release both versions may have held.
        before = catalog.facts_as_of(loaded, D(2019, 1, 1), subject=subject)
        assert {f.value for f in before} == {cur["text"], old["text"]}
        assert [f.value for f in catalog.facts_as_of(loaded, RELEASE, subject=subject)] == [cur["text"]]
        assert [f.value for f in catalog.facts_as_of(loaded, D(2030, 1, 1), subject=subject)] == [cur["text"]]
        assert catalog.facts_as_of(loaded, D(2030, 1, 1), subject=subject, known_at=D(2025, 5, 11)) == []
        history = catalog.timeline(loaded, subject)
        assert [(f.value, f.valid_from, f.valid_to) for f in history] == [
            (old["text"], None, RELEASE), (cur["text"], None, None)]


def test_facts_carry_the_row_attributes(loaded: KgliteStore) -> None:
    got = facts(loaded)
    for r in raw():
        cid = r["id"] if r["label"] == "correct" else r["id"] - 2145
        valid_to = None if r["label"] == "correct" else RELEASE
        assert (f"driftmed:{cid}", r["text"], None, valid_to, RELEASE, r["label"], r["bias_type"],
                r["change_category"], r["disease"], r["bias_type"]) in got
    (entity,) = loaded.run("MATCH (e:Entity {id: 'driftmed:2'}) RETURN e.caption AS c, e.kind AS k")
    assert entity == {"c": "Hypertension — Diagnostic & Threshold — Confirmation Bias", "k": "clinical_decision"}


def test_csv_json_list_and_parquet_give_the_same_facts(tmp_path: Path, loaded: KgliteStore) -> None:
    expected = facts(loaded)
    as_list = tmp_path / "rows.json"
    as_list.write_text(json.dumps(raw()))
    formats = [FIXTURES / "driftmed.csv", as_list]
    try:
        import duckdb
    except ImportError:  # parquet support is optional
        duckdb = None
    if duckdb is not None:
        parquet = tmp_path / "rows.parquet"
        duckdb.sql(f"COPY (SELECT * FROM read_json_auto('{JSONL}')) TO '{parquet}' (FORMAT parquet)")
        formats.append(parquet)
    for path in formats:
        store = KgliteStore(":memory:")
        summary = driftmed.load(store, [path])
        assert summary.records == len(raw()) and facts(store) == expected, path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def bad_inputs(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    rows = raw()
    no_wrong = [r for r in rows if r["id"] != 2147]  # drops the wrong partner of id 2 (line 2)
    no_correct = [r for r in rows if r["id"] != 3]  # the wrong row 2148 (line 5 after the drop) is orphaned
    unknown = [dict(r, label="outdated") if r["id"] == 2146 else r for r in rows]
    both_correct = [dict(r, label="correct") if r["id"] == 2146 else r for r in rows]
    clash = [*rows, dict(rows[0], text="another text")]
    bad_factor = [dict(r, bias_type="Authority Bias") if r["id"] == 2147 else r for r in rows]
    bad_own_factor = [dict(r, factor="authority") if r["id"] == 3 else r for r in rows]
    text = JSONL.read_text()
    csv_text = (FIXTURES / "driftmed.csv").read_text()
    truncated_csv = tmp_path / "truncated.csv"
    truncated_csv.write_text(csv_text[: csv_text.index("Diagnostic & Threshold") + 3] + ',"never closed')
    missing = tmp_path / "missing.csv"
    with missing.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "text", "label", "bias_type", "change_category", "disease"])
        w.writerow([1, "text", "correct", "none", "reversal"])
    return {
        "no_wrong": (write_jsonl(tmp_path / "a.jsonl", no_wrong), "record 2 (line 2): correct scenario 2 has no wrong"),
        "no_correct": (write_jsonl(tmp_path / "b.jsonl", no_correct), "record 5 (line 5): wrong scenario 2148 has no"),
        "unknown_label": (write_jsonl(tmp_path / "c.jsonl", unknown), "record 4 (line 4): unknown label 'outdated'"),
        "both_correct": (write_jsonl(tmp_path / "d.jsonl", both_correct), "record 4 (line 4): id 2146 pairs"),
        "id_clash": (write_jsonl(tmp_path / "e.jsonl", clash), "record 7 (line 7): id 1 also names"),
        "unknown_bias_type": (write_jsonl(tmp_path / "f.jsonl", bad_factor),
                              "record 5 (line 5): unknown bias_type 'Authority Bias' (expected one of the paper's 11"),
        "unknown_factor": (write_jsonl(tmp_path / "g.jsonl", bad_own_factor), "record 3 (line 3): unknown factor"),
        "truncated_jsonl": (_truncated(tmp_path, text), "record 3 (line 3): broken JSON"),
        "truncated_csv": (truncated_csv, "record row 2 (line 3): broken CSV"),
        "short_csv_row": (missing, "record row 1 (line 2): row ends early: no 'disease'"),
    }


def _truncated(tmp_path: Path, text: str) -> Path:
    lines = text.splitlines(keepends=True)
    path = tmp_path / "truncated.jsonl"
    path.write_text("".join(lines[:2]) + lines[2][:40])
    return path


@pytest.mark.parametrize("kind", ["no_wrong", "no_correct", "unknown_label", "both_correct", "id_clash",
                                  "unknown_bias_type", "unknown_factor", "truncated_jsonl", "truncated_csv",
                                  "short_csv_row"])
def test_bad_input_names_file_and_row_and_changes_nothing(tmp_path: Path, kind: str) -> None:
    path, words = bad_inputs(tmp_path)[kind]
    with KgliteStore(tmp_path / "s.kgl") as store:
        driftmed.load(store, [JSONL])
        before = graph_counts(store)
        with pytest.raises(InputError) as info:
            driftmed.load(store, [path])
        assert graph_counts(store) == before
    assert f"{path}, {words}" in str(info.value)
    with KgliteStore(tmp_path / "s.kgl") as reopened:
        assert graph_counts(reopened) == before


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A real HTTP server on loopback standing in for Hugging Face (the public internet is not used in tests)."""
    root = tmp_path / "mirror"
    (root / "data").mkdir(parents=True)
    (root / "data" / "driftmed.jsonl").write_bytes(JSONL.read_bytes())
    with serve_folder(root) as base:
        yield base, root


def test_download_then_ingest(mirror: tuple[str, Path], tmp_path: Path) -> None:
    base, _root = mirror
    runner = CliRunner()
    out = tmp_path / "got"
    digest = hashlib.sha256(JSONL.read_bytes()).hexdigest()
    result = runner.invoke(app, ["download", "driftmed", "--base-url", base, "--file", "data/driftmed.jsonl",
                                 "--out", str(out), "--sha256", digest])
    assert result.exit_code == 0, result.output
    saved = out / "driftmed.jsonl"
    assert saved.read_bytes() == JSONL.read_bytes()
    uri = f"kglite://{tmp_path}/s.kgl"
    result = runner.invoke(app, ["--store", uri, "ingest", "driftmed", str(saved)])
    assert result.exit_code == 0, result.output
    assert "6 records from 1 file\n" in result.output
    result = runner.invoke(app, ["--store", uri, "query", "as-of", "--date", "2026-01-01",
                                 "--subject", "driftmed:1", "-f", "json"])
    assert [r["value"] for r in json.loads(result.output)] == [raw()[0]["text"]]
    # A wrong checksum or a missing file saves nothing and exits 2.
    result = runner.invoke(app, ["download", "driftmed", "--base-url", base, "--file", "data/driftmed.jsonl",
                                 "--out", str(tmp_path / "bad"), "--sha256", "0" * 64])
    assert result.exit_code == 2 and "checksum mismatch" in result.output
    assert not (tmp_path / "bad" / "driftmed.jsonl").exists()
    result = runner.invoke(app, ["download", "driftmed", "--base-url", base, "--file", "nope.parquet",
                                 "--out", str(tmp_path / "bad")])
    assert result.exit_code == 2 and "404" in result.output


def test_cli_bad_input_exit_2(tmp_path: Path) -> None:
    bad = write_jsonl(tmp_path / "bad.jsonl", [r for r in raw() if r["id"] != 2146])
    result = CliRunner().invoke(app, ["--store", f"kglite://{tmp_path}/s.kgl", "ingest", "driftmed", str(bad)])
    assert result.exit_code == 2 and "bad.jsonl" in result.output and "no wrong partner" in result.output
