"""`chronokg bench export --format hf`: a dated dataset folder of the canonical questions.

Every family of the demo store (both protocols for TempoMed) goes into one folder: its rows are the canonical
records, field for field, plus the dates, which are checked against the answer keys' own evidence; the card's YAML
names the configs, features, licences, citations, snapshot and releases; the same questions give the same bytes,
also after the store has loaded a newer release; bad input is one line naming file and record and writes nothing.
The real `datasets`, inspect_ai and lm-eval reading the folder are in tests/test_bench_hf_readers.py.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench import snapshot
from chronokg.bench.family import generate
from chronokg.bench.hf import COLUMNS, folder_rows
from chronokg.bench.question import Question, write_jsonl
from chronokg.cli.app import app
from chronokg.graph.kglite_store import KgliteStore

FIXTURES = Path(__file__).parent / "fixtures"
pytest.importorskip("pyarrow", reason="pyarrow (installed with datasets, the integrations extra) is missing")


def every_family(store: KgliteStore) -> list[Question]:
    out: list[Question] = []
    for family in ("tempomed", "conflictmedqa", "chroknow", "micxr", "benchage"):
        out += generate(family, store, snapshot.current(store), {})[0]
    out += generate("tempomed", store, snapshot.current(store), {"protocol": "chronokg"})[0]
    return out


@pytest.fixture(scope="module")
def questions_file(demo_built: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Canonical questions of every family, generated from the shared demo store (read only)."""
    with KgliteStore(demo_built, read_only=True) as store:
        qs = every_family(store)
    path = tmp_path_factory.mktemp("hf") / "questions.jsonl"
    write_jsonl(path, qs)
    return path


def export(store: Path, questions: Path, out: Path) -> Any:
    return CliRunner().invoke(app, ["--store", f"kglite://{store}", "bench", "export", "--format", "hf",
                                    str(questions), "--out", str(out)])


@pytest.fixture(scope="module")
def folder(demo_built: Path, questions_file: Path) -> Path:
    out = questions_file.parent / "dataset"
    done = export(demo_built, questions_file, out)
    assert done.exit_code == 0, done.output
    return out


def canonical(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def front_matter(folder: Path) -> dict[str, Any]:
    import yaml

    text = (folder / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    meta = yaml.safe_load(text.split("\n---\n", 1)[0][4:])
    assert isinstance(meta, dict)
    return meta


def config_of(record: dict[str, Any]) -> str:
    return f"{record['metadata']['family']}-{record['metadata']['generator']['options']['protocol']}"


def test_rows_are_the_canonical_records_with_their_dates(folder: Path, questions_file: Path) -> None:
    records = canonical(questions_file)
    configs = sorted(p.name for p in folder.iterdir() if p.is_dir())
    assert configs == ["benchage-seed", "chroknow-seed", "conflictmedqa-seed", "micxr-seed", "tempomed-chronokg",
                       "tempomed-seed"]
    n = 0
    for config in configs:
        rows = list(folder_rows(folder, config))
        expected = [r for r in records if config_of(r) == config]
        assert len(rows) == len(expected) > 0
        for row, record in zip(rows, expected, strict=True):
            assert list(row) == list(COLUMNS)
            metadata = json.loads(row["metadata"])
            assert {k: row[k] for k in ("id", "input", "choices", "target")} | {"metadata": metadata} == record
            assert json.dumps(metadata) == json.dumps(record["metadata"])  # key order too
            assert row["variant"] == record["metadata"]["variant"]
            assert row["question_date"] == dt.date.fromisoformat(record["metadata"]["target_date"])
            assert row["evidence_known_from"] is not None
        n += len(rows)
    assert n == len(records)


def test_gold_dates_are_those_of_the_answers_evidence(folder: Path, questions_file: Path) -> None:
    """TempoMed's and ChroKnow's answer-key evidence carries each version's valid time: the row stating the gold
    answer must give the exported gold dates (TempoMed's historical items included: gold before the update)."""
    records = {r["id"]: r for r in canonical(questions_file)}
    checked = {"tempomed-seed": 0, "chroknow-seed": 0}
    historical = 0
    for config in checked:
        for row in folder_rows(folder, config):
            key = records[row["id"]]["metadata"]["answer_key"]
            stating = [e for e in key["evidence"] if e.get("fact_id") and key["answer"] in
                       (e.get("text"), e.get("caption"), e.get("value"))]
            assert stating, row["id"]
            day = lambda v: None if v is None else dt.date.fromisoformat(v)  # noqa: E731
            assert row["gold_valid_from"] == min(day(e["valid_from"]) for e in stating)
            assert row["gold_valid_to"] == (None if any(e["valid_to"] is None for e in stating)
                                            else max(day(e["valid_to"]) for e in stating))
            historical += "historical" in row["variant"] and row["gold_valid_to"] is not None
            checked[config] += 1
    assert checked["tempomed-seed"] == 66 and checked["chroknow-seed"] == 270 and historical > 0


def test_known_from_is_the_release_that_brought_the_evidence(folder: Path) -> None:
    """The demo's QA answers come from its update of 2026-11-01, the synthetic chest X-rays from their 2026-01-01
    release, ChroKnow's legal items from the CFR editions (2022-12-30, 2024-12-30) and its office holders from
    the yearly ChroKnowBench rows (known from a row's release, at the latest the year asked about)."""
    known = {config: {r["evidence_known_from"] for r in folder_rows(folder, config)} for config in
             ("benchage-seed", "micxr-seed")}
    assert known == {"benchage-seed": {dt.date(2026, 11, 1)}, "micxr-seed": {dt.date(2026, 1, 1)}}
    chroknow = list(folder_rows(folder, "chroknow-seed"))
    # a legal item tests both editions' versions of its section: known once the later edition was loaded
    assert {r["evidence_known_from"] for r in chroknow if r["variant"].startswith("legal/")} == {dt.date(2024, 12, 30)}
    general = [r for r in chroknow if r["variant"].startswith("general/")]
    assert general and all(r["evidence_known_from"] <= dt.date.fromisoformat(json.loads(r["metadata"])["release_date"])
                           for r in general)


def test_the_card_declares_configs_features_licences_citations_snapshot_releases(folder: Path,
                                                                                demo_built: Path) -> None:
    meta = front_matter(folder)
    with KgliteStore(demo_built, read_only=True) as store:
        releases, sid = snapshot.sources(store), snapshot.current(store)
    names = sorted(p.name for p in folder.iterdir() if p.is_dir())
    assert [c["config_name"] for c in meta["configs"]] == names
    for config in meta["configs"]:
        (files,) = config["data_files"]
        assert files["split"] == "test" and (folder / files["path"]).is_file()
    for info in meta["dataset_info"]:
        assert [f["name"] for f in info["features"]] == list(COLUMNS)
        assert {f["name"]: f.get("dtype") for f in info["features"]}["gold_valid_from"] == "date32"
        (split,) = info["splits"]
        assert split["num_examples"] == len(list(folder_rows(folder, info["config_name"])))
    own = meta["chronokg"]
    (snap,) = own["snapshots"]
    assert snap["id"] == sid and [r["id"] for r in snap["releases"]] == releases
    kinds = {s["kind"]: s["licence"] for s in own["sources"]}
    assert kinds["wikidata" if "wikidata" in kinds else "cfr"].startswith(("CC0", "public domain"))
    assert kinds["chroknow"].startswith("CC BY 4.0") and kinds["umls"].startswith("UMLS Metathesaurus License")
    assert all(s["licence"] and not s["licence"].startswith("unknown") for s in own["sources"])
    families = {f["family"]: f for f in own["families"]}
    assert sorted(families) == ["benchage", "chroknow", "conflictmedqa", "micxr", "tempomed"]
    assert "arXiv:2605.13045" in families["tempomed"]["citation"]
    assert all(f["citation"].startswith("@") and f["licence"] for f in families.values())
    body = (folder / "README.md").read_text(encoding="utf-8")
    assert body.count("```bibtex") == 5 and f"## Snapshot {sid}" in body


def test_the_same_questions_give_the_same_bytes(folder: Path, demo_built: Path, questions_file: Path,
                                                tmp_path: Path) -> None:
    again = tmp_path / "again"
    assert export(demo_built, questions_file, again).exit_code == 0
    files = sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert all((folder / f).read_bytes() == (again / f).read_bytes() for f in files)
    assert export(demo_built, questions_file, again).exit_code == 0  # over its own earlier export
    assert all((folder / f).read_bytes() == (again / f).read_bytes() for f in files)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again"]  # no temporary folder left


def test_a_recorded_snapshot_exports_the_same_after_a_newer_release(demo_store: Path, tmp_path: Path) -> None:
    """Questions of a recorded snapshot, exported before and after the store loads a newer release: the same bytes
    (the card lists the snapshot's releases, not the store's new ones)."""
    from chronokg.ingest import qasets

    with KgliteStore(demo_store) as store:
        sid = snapshot.record(store)
        qs = generate("conflictmedqa", store, sid, {})[0]
    path = tmp_path / "q.jsonl"
    write_jsonl(path, qs)
    assert export(demo_store, path, tmp_path / "before").exit_code == 0
    with KgliteStore(demo_store) as store:
        qasets.load(store, [FIXTURES / "qasets" / "boolq.jsonl"])
        assert snapshot.current(store) != sid
    done = export(demo_store, path, tmp_path / "after")
    assert done.exit_code == 0, done.output
    for f in (tmp_path / "before").rglob("*"):
        if f.is_file():
            assert f.read_bytes() == (tmp_path / "after" / f.relative_to(tmp_path / "before")).read_bytes(), f


def one_line(done: Any) -> str:
    assert done.exit_code == 2, done.output
    assert "Traceback" not in done.output
    lines = [line for line in done.output.splitlines() if line.strip()]
    return " ".join(lines)


def test_bad_input_is_one_line_and_writes_nothing(demo_built: Path, questions_file: Path, folder: Path,
                                                  tmp_path: Path) -> None:
    out = tmp_path / "out"
    lines = questions_file.read_text(encoding="utf-8").splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text(lines[0] + "\n{not json\n", encoding="utf-8")
    said = one_line(export(demo_built, broken, out))
    assert str(broken) in said and "line 2" in said
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text(lines[0] + "\n" + json.dumps({"question": "q", "answer": "a"}) + "\n", encoding="utf-8")
    said = one_line(export(demo_built, foreign, out))
    assert str(foreign) in said and "line 2" in said and "canonical" in said
    elsewhere = json.loads(lines[1])
    elsewhere["metadata"]["snapshot"] = "snap-0000000000000000"
    other = tmp_path / "other.jsonl"
    other.write_text("\n".join([lines[0], json.dumps(elsewhere), *lines[2:]]) + "\n", encoding="utf-8")
    said = one_line(export(demo_built, other, out))
    assert str(other) in said and "line 2" in said and "snap-0000000000000000" in said
    assert not out.exists()
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    assert "is a file" in one_line(export(demo_built, questions_file, a_file))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    assert "other files" in one_line(export(demo_built, questions_file, mine))
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    said = one_line(export(demo_built, other, folder))  # a failed export over an earlier one leaves it as it was
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "broken.jsonl", "foreign.jsonl", "mine",
                                                          "other.jsonl"]
