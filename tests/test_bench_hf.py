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
from chronokg.bench.family import FAMILIES, generate
from chronokg.bench.hf import COLUMNS, folder_rows
from chronokg.bench.question import Question, write_jsonl
from chronokg.cli.app import app
from chronokg.graph.kglite_store import KgliteStore

FIXTURES = Path(__file__).parent / "fixtures"
pytest.importorskip("pyarrow", reason="pyarrow (installed with datasets, the integrations extra) is missing")


def every_family(store: KgliteStore) -> list[Question]:
    out: list[Question] = []
    for family in FAMILIES.names():
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
    unknown = [s["kind"] for s in own["sources"] if not s["licence"] or s["licence"].startswith("unknown")]
    assert not unknown, f"sources {unknown} have no licence: add each to LICENCES in chronokg/bench/hf_card.py"
    families = {f["family"]: f for f in own["families"]}
    assert sorted(families) == sorted(FAMILIES.names())
    assert "arXiv:2605.13045" in families["tempomed"]["citation"]
    uncited = [name for name, f in families.items() if not (f["citation"].startswith("@") and f["licence"])]
    assert not uncited, (f"families {uncited} have no seed licence and BibTeX citation: add each to SEEDS in "
                         "chronokg/bench/hf_card.py")
    body = (folder / "README.md").read_text(encoding="utf-8")
    assert body.count("```bibtex") == len(families) and f"## Snapshot {sid}" in body


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


@pytest.mark.parametrize("family", ["../escaped", "/ABS", "a/b", "x\n---\ny: 1", ".hidden", "tempomed\u202e"])
def test_a_config_name_that_is_not_a_plain_name_is_refused_and_writes_nothing(demo_built: Path, questions_file: Path,
                                                                             tmp_path: Path, family: str) -> None:
    """A config is a folder of the export, named from the question's family and protocol: a name that is a path
    (`..`, `/`), a line break or a control would write outside `--out`, or a card `datasets` cannot read."""
    record = json.loads(questions_file.read_text(encoding="utf-8").splitlines()[0])
    record["metadata"]["family"] = family.replace("/ABS", str(tmp_path / "abs"))
    hostile = tmp_path / "hostile.jsonl"
    hostile.write_text(json.dumps(record) + "\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    said = one_line(export(demo_built, hostile, work / "out"))
    assert str(hostile) in said and "line 1" in said and "config" in said
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == ["hostile.jsonl", "work"]


def test_an_out_that_is_a_link_is_written_through(demo_built: Path, questions_file: Path, tmp_path: Path) -> None:
    """`--out` a link to a folder: the export goes where the link points, and the link and its folder stay."""
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    for _ in range(2):  # a new folder, then one this export wrote
        done = export(demo_built, questions_file, tmp_path / "link")
        assert done.exit_code == 0, done.output
        assert (tmp_path / "link").is_symlink() and (real / "README.md").is_file()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]


def test_an_out_holding_the_current_folder_is_one_line(demo_built: Path, questions_file: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The export replaces `--out` whole, which the folder a shell is in (`.`) or one above it cannot be."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    for out in (".", "./", ".."):
        said = one_line(export(demo_built, questions_file, Path(out)))
        assert f"--out {Path(out)}" in said and "current folder" in said
    assert [p.name for p in tmp_path.iterdir()] == ["here"] and not any(here.iterdir())


def test_what_a_killed_export_left_is_cleared_by_the_next(demo_built: Path, questions_file: Path, folder: Path,
                                                          tmp_path: Path) -> None:
    """Killed (kill -9) while writing, an export leaves its unfinished folder beside `--out`; killed between moving
    the earlier export aside and renaming the new one into place, `--out` is missing. The next export of that
    `--out` removes the first and puts the second back, so a failed one too leaves `--out` as it was."""
    import shutil

    dead = 2**22 + 1  # above any pid_max: no process has it
    out = tmp_path / "out"
    shutil.copytree(folder, tmp_path / f".out.old-{dead}")
    (tmp_path / f".out.part-{dead}").mkdir()
    (tmp_path / f".out.part-{dead}" / "README.md").write_text("half")
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n")
    assert "line 1" in one_line(export(demo_built, broken, out))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.jsonl", "out"]
    assert {p.relative_to(out) for p in out.rglob("*")} == {p.relative_to(folder) for p in folder.rglob("*")}


def test_a_folder_of_empty_folders_is_named_as_it_is(demo_built: Path, questions_file: Path, tmp_path: Path) -> None:
    (tmp_path / "out" / "sub").mkdir(parents=True)
    said = one_line(export(demo_built, questions_file, tmp_path / "out"))
    assert "other files (sub)" in said


def test_the_card_body_shows_a_hostile_caption_as_text_and_its_yaml_keeps_it_exactly() -> None:
    """A release's caption holds its file's name, which can hold any character but `/`: in the card's tables it is
    text on one row (no line break of any kind, no HTML, no bidi control reordering the row), in the YAML exact."""
    import yaml

    from chronokg.bench.hf_card import Export, Release, card

    caption = "evil\r\n---\n| a |\u2028<script>alert(1)<\\script>&amp;\u202e\x1b[31m`x`\x85.jsonl"
    text = card(Export(Path("out"), {"tempomed-seed": 1}, {"snap-1": [Release("tempomed:x@2026-05-12", "tempomed",
                                                                              caption, "v1", "2026-05-12")]},
                       ["tempomed"], {"tempomed-seed": 10}))
    head, body = text[4:].split("\n---\n", 1)
    meta = yaml.safe_load(head)
    assert meta["chronokg"]["snapshots"][0]["releases"][0]["caption"] == caption
    row = next(line for line in body.split("\n") if line.startswith("| tempomed:x@2026-05-12 |"))
    assert row.endswith(" |") and row.count(" | ") == 4  # one row of five cells
    assert "<script>" not in body and "&lt;script&gt;" in row and "&amp;amp;" in row
    assert not any(c in body for c in "\r\u2028\x85\u202e\x1b")
    assert "\\u202e" in row


def test_a_question_given_twice_is_one_line_naming_both(demo_built: Path, questions_file: Path,
                                                        tmp_path: Path) -> None:
    """A row is named by its id (inspect_ai refuses a dataset whose sample ids repeat): two files concatenated that
    share a question are refused, not exported with the question twice in one config (a question of both TempoMed
    protocols has one id, a row of each config)."""
    lines = questions_file.read_text(encoding="utf-8").splitlines()
    twice = tmp_path / "twice.jsonl"
    twice.write_text("\n".join([*lines[:3], lines[1]]) + "\n", encoding="utf-8")
    said = one_line(export(demo_built, twice, tmp_path / "out"))
    assert str(twice) in said and "line 4" in said and "line 2" in said and json.loads(lines[1])["id"] in said
    assert not (tmp_path / "out").exists()


def test_a_malformed_date_is_one_line_and_a_generator_without_options_is_the_family(
        demo_built: Path, questions_file: Path, tmp_path: Path) -> None:
    record = json.loads(questions_file.read_text(encoding="utf-8").splitlines()[0])
    record["metadata"]["target_date"] = None  # the question date falls back to the answer key's date parameter
    record["metadata"]["answer_key"]["params"]["date"] = "2010-99-99"
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(record) + "\n", encoding="utf-8")
    said = one_line(export(demo_built, bad, tmp_path / "out"))
    assert str(bad) in said and "line 1" in said and "month must be in 1..12" in said
    assert not (tmp_path / "out").exists()
    record = json.loads(questions_file.read_text(encoding="utf-8").splitlines()[0])
    record["metadata"]["generator"]["options"] = "seed"  # not an object: no protocol, as a generator giving none
    bad.write_text(json.dumps(record) + "\n", encoding="utf-8")
    done = export(demo_built, bad, tmp_path / "out")
    assert done.exit_code == 0, done.output
    assert [p.name for p in (tmp_path / "out").iterdir() if p.is_dir()] == [record["metadata"]["family"]]
