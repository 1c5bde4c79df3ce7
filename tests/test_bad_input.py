"""Input that is absurd, truncated or empty ends in one clear error naming file and record.

Each case also checks that nothing was written: the store's content hash is unchanged.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chronokg.errors import InputError
from chronokg.graph.counts import content_digest
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import cfr, chroknow, cxr, driftmed, qasets, tempomed, umls, wikidata
from tests.helpers import REPO

FIXTURES = Path(__file__).parent / "fixtures"


def deep_json(depth: int = 5000) -> str:
    """Text of a value nested deeper than Python's json module can parse (RecursionError)."""
    return "[" * depth + "]" * depth


# (file name, text with {deep} where the nested value goes, loader): one per reader of JSON.
DEEP_CASES: dict[str, tuple[str, str, Callable[..., Any]]] = {
    "tempomed-mcq": ("q.jsonl", '{{"idx": 1, "PMID_current": "1", "Answer": {deep}}}\n', tempomed.load),
    "tempomed-trajectory": ("trajectory_1.json", '{{"PMID": "1", "prior_guidelines": {deep}}}', tempomed.load),
    "chroknow": ("general.jsonl", '{{"subject": "s", "relation": "r", "distractor": {deep}}}\n', chroknow.load),
    "driftmed": ("driftmed.jsonl", '{{"id": 1, "text": {deep}}}\n', driftmed.load),
    "selfaware": ("SelfAware.json", '{{"example": {deep}}}', qasets.load),
    "nq": ("nq.jsonl", '{{"question": "q", "answer": {deep}}}\n', qasets.load),
    "wikidata": ("Q1.json", '{{"id": "Q1", "claims": {deep}}}', wikidata.load),
    "cxr": ("cxr/questions.jsonl", '{{"q_id": 1, "choices": {deep}}}\n', cxr.load),
}


def make_deep(tmp: Path, case: str, deep: str) -> tuple[Callable[..., Any], Path]:
    name, template, load = DEEP_CASES[case]
    if name.startswith("cxr/"):
        shutil.copytree(FIXTURES / "cxr", tmp / "cxr")
    path = tmp / name
    path.write_text(template.format(deep=deep))
    return load, (tmp / "cxr" if name.startswith("cxr/") else path)


@pytest.mark.parametrize("case", sorted(DEEP_CASES))
@pytest.mark.parametrize("depth", [60, 5000], ids=["past-our-limit", "past-the-parser"])
def test_deeply_nested_json_is_an_input_error(tmp_path: Path, case: str, depth: int) -> None:
    load, path = make_deep(tmp_path, case, deep_json(depth))
    store = KgliteStore(":memory:")
    digest = content_digest(store)
    with pytest.raises(InputError, match="nested more than 48 levels deep") as info:
        load(store, [path])
    assert info.value.path.endswith((".json", ".jsonl")) and "\n" not in str(info.value)
    assert content_digest(store) == digest


def test_five_digit_umls_release_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "99999AA"
    shutil.copytree(FIXTURES / "umls" / "2020AA", folder)
    with pytest.raises(InputError, match=r"99999AA: cannot tell the release from the folder name"):
        umls.load(KgliteStore(":memory:"), [folder])
    with pytest.raises(InputError, match=r"release 2020AA: 9999-01-01 is not a plausible release date"):
        umls.load(KgliteStore(":memory:"), [FIXTURES / "umls" / "2020AA"], release_dates={"2020AA": "9999"})


def test_five_digit_cfr_edition_year_is_refused(tmp_path: Path, shared_data: Path) -> None:
    real = next((shared_data / "ecfr-title1").glob("*.xml"))
    text = real.read_text(encoding="utf-8")
    assert "<AMDDATE>" in text
    start = text.index("<AMDDATE>") + len("<AMDDATE>")
    bad = tmp_path / "title1.xml"
    bad.write_text(text[:start] + "Dec. 29, 99999" + text[text.index("</AMDDATE>", start):], encoding="utf-8")
    store = KgliteStore(":memory:")
    with pytest.raises(InputError, match=r"title1.xml: no edition date in the file \(AMDDATE='Dec. 29, 99999'"):
        cfr.load(store, [bad])
    far = tmp_path / "far.xml"
    far.write_text(text[:start] + "Dec. 29, 2999" + text[text.index("</AMDDATE>", start):], encoding="utf-8")
    with pytest.raises(InputError, match=r"far.xml: edition date \(AMDDATE\): 2999-12-29 is not a plausible"):
        cfr.load(store, [far])


def test_absurd_release_dates_elsewhere(tmp_path: Path, shared_data: Path) -> None:
    row = json.loads((FIXTURES / "chroknow" / "general.jsonl").read_text().splitlines()[0])
    path = tmp_path / "general.jsonl"
    path.write_text(json.dumps(dict(row, release_date_2016="99991231")) + "\n")
    with pytest.raises(InputError, match=r"general.jsonl, record 1 \(line 1\): field 'release_date_2016': "
                                         r"9999-12-31 is not a plausible release date"):
        chroknow.load(KgliteStore(":memory:"), [path])
    mcq = next((shared_data / "tempomed-bench").glob("*.jsonl"))
    with pytest.raises(InputError, match="2999-01-01 is not a plausible release date"):
        import datetime as dt

        tempomed.load(KgliteStore(":memory:"), [mcq], release_date=dt.date(2999, 1, 1))


def test_a_truncated_csv_is_refused(tmp_path: Path, shared_data: Path) -> None:
    real = next((shared_data / "truthfulqa").glob("*.csv"))
    data = real.read_bytes()
    quoted = data.index(b',"', len(data) // 2) + 5  # inside a quoted field in the second half
    cut = tmp_path / "TruthfulQA.csv"
    cut.write_bytes(data[:quoted])
    store = KgliteStore(":memory:")
    digest = content_digest(store)
    with pytest.raises(InputError, match=r"TruthfulQA.csv, record row \d+ \(line \d+\): broken CSV: unexpected end"):
        qasets.load(store, [cut])
    assert content_digest(store) == digest
    header_only = tmp_path / "header.csv"
    header_only.write_bytes(data.split(b"\n", 1)[0] + b"\n")
    with pytest.raises(InputError, match="header but no rows"):
        qasets.load(store, [header_only])


def test_a_csv_without_a_final_line_break_loads(tmp_path: Path, shared_data: Path) -> None:
    """The released TruthfulQA.csv ends without a line break: every row loads, as from the file with one."""
    real = next((shared_data / "truthfulqa").glob("*.csv"))
    bare = tmp_path / real.name
    bare.write_bytes(real.read_bytes().rstrip(b"\r\n"))
    ended, unended = KgliteStore(":memory:"), KgliteStore(":memory:")
    rows = sum(1 for _ in csv.reader(real.open(encoding="utf-8", newline=""))) - 1
    assert qasets.load(ended, [real]).report == qasets.load(unended, [bare]).report
    # The same questions; only the release (the file's content hash) differs.
    questions = "MATCH (q:SourceQuestion) RETURN properties(q) AS q ORDER BY q.id"
    assert [{k: v for k, v in r["q"].items() if k != "source_id"} for r in ended.run(questions)] == \
        [{k: v for k, v in r["q"].items() if k != "source_id"} for r in unended.run(questions)]
    assert len(unended.run(questions)) == rows == 613
    small = tmp_path / "small.csv"  # a last field in quotes, closed, then the end of the file
    small.write_text('Type,Category,Question,Best Answer,Correct Answers,Incorrect Answers,Source\r\n'
                     'Adversarial,Misc,"Is it, though?",Yes,Yes; Indeed,No,"https://example.org/a,b"')
    fresh = KgliteStore(":memory:")
    qasets.load(fresh, [small])
    assert [r["q"]["question"] for r in fresh.run(questions)] == ["Is it, though?"]


@pytest.mark.parametrize("name,content", [("questions.jsonl", ""), ("questions2.jsonl", "\n\n  \n"),
                                          ("trajectory_1.json", "[]"), ("trajectory_2.json", ""),
                                          ("1_2_extracted_diffs.json", "[]")])
def test_an_empty_tempomed_file_writes_nothing(tmp_path: Path, name: str, content: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    store = KgliteStore(":memory:")
    digest = content_digest(store)
    with pytest.raises(InputError, match=name):
        tempomed.load(store, [path])
    assert content_digest(store) == digest


def test_an_absurd_cxr_offset_is_an_input_error(tmp_path: Path) -> None:
    folder = tmp_path / "cxr"
    shutil.copytree(FIXTURES / "cxr", folder)
    graph = folder / "scene_data" / "p10" / "p10000001" / "s50000003.scene_graph.json"
    data = json.loads(graph.read_text())
    data["timestamp_since_first"] = 99_999_999
    graph.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"s50000003.scene_graph.json.*more than a century of follow-up"):
        cxr.load(KgliteStore(":memory:"), [folder])


def test_cli_bad_input_is_one_line_and_exit_code_2(tmp_path: Path) -> None:
    path = tmp_path / "q.jsonl"
    path.write_text('{"idx": 1, "Answer": ' + deep_json() + "}\n")
    store = tmp_path / "s.kgl"
    result = subprocess.run(
        [sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{store}", "ingest", "tempomed", str(path)],
        capture_output=True, text=True, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert "Traceback" not in result.stderr and "nested more than 48 levels deep" in result.stderr
    assert len(" ".join(lines)) < 400 and str(path) in " ".join(lines).replace("\n", "")
    assert not store.exists() and not list(tmp_path.glob("s.kgl*"))  # a failed first load leaves no store
