"""Each loader's per-field limit is declared once and documented, and conflicting or misread keys are refused.

The size limit itself is tested per source by the loader conformance mixin
(`test_a_field_over_the_limit_is_refused_naming_file_and_record`).
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
from pathlib import Path

import pytest

from chronokg.errors import InputError
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import chroknow, cxr, cxr_synth, tempomed, umls, wikidata
from chronokg.ingest.sources import SOURCES
from tests.test_loader_conformance import FIXTURES, shared

README = Path(__file__).resolve().parents[1] / "README.md"


def loader_modules() -> dict[str, object]:
    """Every source that loads files (an `ingest/<name>` command), by name: its loader's module."""
    return {name: importlib.import_module(spec.loader.partition(":")[0]) for name, spec in SOURCES.items()
            if any(c == f"ingest/{name}" for c in spec.commands)}


def test_every_loader_declares_its_limit_and_the_readme_states_it() -> None:
    section = README.read_text().split("### Input limits", 1)[1].split("\n#", 1)[0]
    documented = {m[1]: int(m[2].replace(",", "")) for m in re.finditer(r"^\| (\w+) \| ([\d,]+) \|", section, re.M)}
    for name, module in loader_modules().items():
        limit = getattr(module, "MAX_TEXT", None)
        assert isinstance(limit, int), f"{module.__name__} declares no MAX_TEXT: add one (characters per field)"
        assert documented.get(name) == limit, \
            f"README 'Input limits' must give {name}: {limit:,} (has {documented.get(name)})"


def test_a_fifty_megabyte_field_is_one_line_naming_the_record(tmp_path: Path) -> None:
    rows = (FIXTURES / "chroknow" / "general.jsonl").read_text().splitlines()
    row = json.loads(rows[1])
    row["subject"] = "x" * 50_000_000
    path = tmp_path / "general.jsonl"
    path.write_text("\n".join([rows[0], json.dumps(row), *rows[2:]]) + "\n")
    with pytest.raises(InputError) as refused, KgliteStore(tmp_path / "s.kgl") as store:
        chroknow.load(store, [path])
    assert refused.value.record == "2 (line 2)"
    assert "field 'subject' is 50,000,000 characters (at most 10,000" in refused.value.detail
    assert len(str(refused.value)) < 300
    assert not (tmp_path / "s.kgl").exists()


@pytest.mark.parametrize(("file", "key"), [("general", "objects_0"), ("general", "objects_99999"),
                                           ("general", "release_date_20x1"), ("legal", "objects_2019")])
def test_chroknow_refuses_a_snapshot_key_it_would_pass_over(tmp_path: Path, file: str, key: str) -> None:
    rows = (FIXTURES / "chroknow" / f"{file}.jsonl").read_text().splitlines()
    row = json.loads(rows[0])
    row[key] = row[next(k for k in row if k.startswith(("objects_", "answers_")))]
    path = tmp_path / f"{file}.jsonl"
    path.write_text("\n".join([json.dumps(row), *rows[1:]]) + "\n")
    with pytest.raises(InputError) as refused, KgliteStore(tmp_path / "s.kgl") as store:
        chroknow.load(store, [path])
    assert refused.value.record == "1 (line 1)" and repr(key) in refused.value.detail
    assert not (tmp_path / "s.kgl").exists()


def test_chroknow_refuses_a_release_date_without_its_snapshot(tmp_path: Path) -> None:
    rows = (FIXTURES / "chroknow" / "general.jsonl").read_text().splitlines()
    row = json.loads(rows[0])
    row["release_date_1999"] = "1999-01-01"
    path = tmp_path / "general.jsonl"
    path.write_text("\n".join([json.dumps(row), *rows[1:]]) + "\n")
    with pytest.raises(InputError, match=r"release_date_1999' has no objects_1999"), \
            KgliteStore(tmp_path / "s.kgl") as store:
        chroknow.load(store, [path])


def entity_with_statement_twice(tmp_path: Path, change: bool) -> tuple[Path, Path]:
    """(a copy of the first real entity file with a loaded statement given twice, the original)."""
    for first in sorted(shared("wikidata-entities").glob("*.json")):
        data = json.loads(first.read_text())
        entity = next(iter(data["entities"].values())) if "entities" in data else data
        loaded = wikidata.Selection().prefilter(entity["claims"])  # the properties a default load reads
        found = next(((p, s) for p, s in loaded.items() if s and s[0].get("id")), None)
        if found is not None:
            break
    else:
        pytest.fail("no real entity file has a statement a default load reads")
    _, statements = found
    again = json.loads(json.dumps(statements[0]))
    if change:
        again["rank"] = "deprecated" if again.get("rank") != "deprecated" else "normal"
    statements.append(again)
    path = tmp_path / first.name
    path.write_text(json.dumps(data))
    return path, first


def test_wikidata_refuses_a_statement_id_given_twice_with_other_content(tmp_path: Path) -> None:
    path, _ = entity_with_statement_twice(tmp_path, change=True)
    twice = r"statement \S+\$\S+ is given twice in Q\d+ revision \d+ with other content"
    with pytest.raises(InputError, match=twice), KgliteStore(tmp_path / "s.kgl") as store:
        wikidata.load(store, [path])
    assert not (tmp_path / "s.kgl").exists()


def test_wikidata_keeps_one_fact_for_a_statement_repeated_as_it_is(tmp_path: Path) -> None:
    path, original = entity_with_statement_twice(tmp_path, change=False)
    with KgliteStore(tmp_path / "twice.kgl") as store:
        twice = wikidata.load(store, [path])
    with KgliteStore(tmp_path / "once.kgl") as store:
        once = wikidata.load(store, [original])
    assert twice.after == once.after


def umls_release_with(tmp_path: Path, file: str, edit: int, column: int) -> Path:
    """A copy of the 2020AA fixture whose row `edit` repeats the id (column `column`) of the row it follows."""
    release = tmp_path / "2020AA"
    shutil.copytree(FIXTURES / "umls" / "2020AA", release)
    path = release / file
    lines = path.read_text().splitlines()
    fields = lines[edit].split("|")
    fields[column] = lines[edit - 1].split("|")[column]
    lines[edit] = "|".join(fields)
    path.write_text("\n".join(lines) + "\n")
    return release


def test_umls_refuses_an_aui_given_twice_with_other_content(tmp_path: Path) -> None:
    # rows 1 and 2 are atoms of the same concept (C0000970): a reused AUI there names two strings
    release = umls_release_with(tmp_path, "MRCONSO.RRF", 1, 7)
    with pytest.raises(InputError, match=r"record line 2: AUI A\d+ is given again with other content; first given "
                                         r"on line 1"), KgliteStore(tmp_path / "s.kgl") as store:
        umls.load(store, [release])
    assert not (tmp_path / "s.kgl").exists()


def test_umls_refuses_a_rui_given_twice_with_other_content(tmp_path: Path) -> None:
    mrrel = (FIXTURES / "umls" / "2020AA" / "MRREL.RRF").read_text().splitlines()
    kept = [i for i, line in enumerate(mrrel) if line.split("|")[7] in umls.CHROKNOW_RELAS]
    second = kept[1]
    release = tmp_path / "2020AA"
    shutil.copytree(FIXTURES / "umls" / "2020AA", release)
    fields = mrrel[second].split("|")
    fields[8] = mrrel[kept[0]].split("|")[8] or "R1"
    first_fields = mrrel[kept[0]].split("|")
    first_fields[8] = fields[8]
    mrrel[kept[0]], mrrel[second] = "|".join(first_fields), "|".join(fields)
    (release / "MRREL.RRF").write_text("\n".join(mrrel) + "\n")
    with pytest.raises(InputError, match=rf"record line {second + 1}: RUI \S+ is given again with other content"), \
            KgliteStore(tmp_path / "s.kgl") as store:
        umls.load(store, [release])


def test_cxr_refuses_a_study_id_given_twice_with_other_content_in_the_study_tables(tmp_path: Path) -> None:
    out = tmp_path / "cohort"
    cxr_synth.generate(out, patients=2, visits=3, seed=5)
    graphs = sorted(out.rglob("*.scene_graph.json"))
    study = json.loads(graphs[0].read_text())["study_id"]
    table = out / "study_metadata.csv"
    table.write_text(f"study_id,procedure\n{study},CHEST (PA AND LAT)\n{study},CHEST (PORTABLE AP)\n")
    with pytest.raises(InputError, match=r"study_metadata.csv, record line 3: study_id \S+ is given again with "
                                         r"other content"), KgliteStore(tmp_path / "s.kgl") as store:
        cxr.load(store, [out])


@pytest.mark.parametrize(("where", "key"), [("record", "Choice_F"), ("record", "Year_curent"),
                                            ("Answer", "Choice_F")])
def test_tempomed_refuses_a_key_of_an_mcq_record_it_would_pass_over(shared_data: Path, tmp_path: Path,
                                                                    where: str, key: str) -> None:
    source = next((shared_data / "tempomed-bench").glob("*.jsonl"))
    blocks = [json.loads(b) for b in re.split(r"\n\s*\n", source.read_text().strip())][:3]
    target = blocks[1] if where == "record" else blocks[1]["Answer"]
    target[key] = "an option no reader would see"
    path = tmp_path / source.name
    path.write_text("\n\n".join(json.dumps(b, indent=1) for b in blocks) + "\n")
    with pytest.raises(InputError) as refused, KgliteStore(tmp_path / "s.kgl") as store:
        tempomed.load(store, [path])
    assert str(refused.value.record).startswith("2 (idx ") and f"unknown key {key!r}" in refused.value.detail
    assert not (tmp_path / "s.kgl").exists()


@pytest.mark.parametrize("where", ["value", "key"])
def test_a_lone_surrogate_escape_is_one_line_naming_the_record(shared_data: Path, tmp_path: Path, where: str) -> None:
    """JSON may escape half of a UTF-16 pair (`"\\ud800"`): Python reads it as a string no UTF-8 file or store can
    hold, so it is refused where it is read, not met as an encoding traceback when the loader hashes or writes it."""
    source = next((shared_data / "tempomed-bench").glob("*.jsonl"))
    blocks = [json.loads(b) for b in re.split(r"\n\s*\n", source.read_text().strip())][:3]
    if where == "value":
        blocks[1]["Question"] = "\ud800 half a pair"
    else:
        blocks[1]["Answer"]["Choice_\udfff"] = "x"
    path = tmp_path / source.name
    path.write_text("\n\n".join(json.dumps(b, indent=1) for b in blocks) + "\n")  # ensure_ascii: the escape
    with pytest.raises(InputError) as refused, KgliteStore(tmp_path / "s.kgl") as store:
        tempomed.load(store, [path])
    assert str(refused.value.record).startswith("2 (line ") and "lone UTF-16 surrogate" in refused.value.detail
    assert not (tmp_path / "s.kgl").exists()


def test_a_lone_surrogate_is_refused_by_every_json_reader(tmp_path: Path) -> None:
    from chronokg.ingest.common import read_json, read_json_blocks, read_jsonl

    path = tmp_path / "records.json"
    path.write_text('{"a": "\\ud83d\\ude00 a whole pair"}\n\n{"a": ["ok", "\\uDC00"]}\n')
    with pytest.raises(InputError, match=r"records.json, record 2 \(line 3\): field 'a\[1\]' holds a lone UTF-16 "
                                         r"surrogate \(\\udc00\)"):
        list(read_json_blocks(path))
    with pytest.raises(InputError, match=r"record line 3: .*surrogate"):
        list(read_jsonl(path))
    path.write_text('[{"a": "\\ud83d\\ude00"}, {"b": "\\ud83d"}]')
    with pytest.raises(InputError, match=r"records.json, record 2: field 'b' holds a lone UTF-16 surrogate"):
        read_json(path)
    path.write_text('{"a": "\\ud83d\\ude00 \\u00e9"}')
    assert read_json(path) == {"a": "\U0001f600 \u00e9"}
