"""Every source in SOURCES passes the loader contract (`chronokg.testing.loader_conformance`).

Each class names a good input (fixtures, or the real samples in ../shared/data) and a broken copy of it.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from chronokg.ingest import cxr_synth
from chronokg.ingest.sources import SOURCES
from chronokg.testing.loader_conformance import LoaderConformance
from tests.conftest import SHARED_DATA

FIXTURES = Path(__file__).parent / "fixtures"


def truncated(src: Path, dst: Path) -> Path:
    """A copy of `src` cut in the middle: a file a download or a disk left half-written."""
    text = src.read_text()
    dst.write_text(text[: len(text) // 2])
    return dst


def longest_string_replaced(data: Any, text: str) -> Any:
    """`data` with its longest string value replaced by `text` (a free-text field in every real record)."""
    found: list[tuple[int, Any, Any]] = []
    stack = [data]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            if isinstance(value, str):
                found.append((len(value), node, key))
            else:
                stack.append(value)
    _, node, key = max(found, key=lambda f: f[0])
    node[key] = text
    return data


def inflated_json(src: Path, dst: Path, text: str) -> Path:
    """A copy of a JSON file with its longest string replaced by `text`."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(longest_string_replaced(json.loads(src.read_text()), text)))
    return dst


def inflated_lines(src: Path, dst: Path, text: str) -> Path:
    """A copy of a one-object-per-line file whose first record's longest string is `text`."""
    lines = src.read_text().splitlines()
    lines[0] = json.dumps(longest_string_replaced(json.loads(lines[0]), text))
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text("\n".join(lines) + "\n")
    return dst


def shared(name: str) -> Path:
    path = SHARED_DATA / name
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"real sample data not found at {path}")
        pytest.skip(f"real sample data not found at {path}")
    return path


class TestTempomed(LoaderConformance):
    source = "tempomed"

    def good(self, tmp_path: Path) -> list[Path]:
        return [FIXTURES / "tempomed"]

    def bad(self, tmp_path: Path) -> list[Path]:
        return [truncated(FIXTURES / "tempomed" / "trajectory_90000003.json", tmp_path / "trajectory_1.json")]

    def oversized(self, tmp_path: Path, text: str) -> list[Path]:
        folder = tmp_path / "tempomed"
        shutil.copytree(FIXTURES / "tempomed", folder, dirs_exist_ok=True)
        inflated_json(folder / "trajectory_90000003.json", folder / "trajectory_90000003.json", text)
        return [folder]


class TestChroknow(LoaderConformance):
    source = "chroknow"

    def good(self, tmp_path: Path) -> list[Path]:
        return [FIXTURES / "chroknow" / "general.jsonl", FIXTURES / "chroknow" / "legal.jsonl"]

    def bad(self, tmp_path: Path) -> list[Path]:
        return [truncated(FIXTURES / "chroknow" / "biomedical.jsonl", tmp_path / "biomedical.jsonl")]

    def oversized(self, tmp_path: Path, text: str) -> list[Path]:
        return [inflated_lines(FIXTURES / "chroknow" / "general.jsonl", tmp_path / "general.jsonl", text)]


class TestDriftmed(LoaderConformance):
    source = "driftmed"

    def good(self, tmp_path: Path) -> list[Path]:
        return [FIXTURES / "driftmed" / "driftmed.csv"]

    def bad(self, tmp_path: Path) -> list[Path]:
        return [truncated(FIXTURES / "driftmed" / "driftmed.jsonl", tmp_path / "driftmed.jsonl")]

    def oversized(self, tmp_path: Path, text: str) -> list[Path]:
        with (FIXTURES / "driftmed" / "driftmed.csv").open(newline="") as fh:
            rows = list(csv.DictReader(fh))
        rows[0]["text"] = text
        path = tmp_path / "driftmed.csv"
        with path.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        return [path]


class TestQA(LoaderConformance):
    source = "qa"

    def good(self, tmp_path: Path) -> list[Path]:
        return [FIXTURES / "qasets" / "triviaqa.json", FIXTURES / "qasets" / "boolq.jsonl"]

    def bad(self, tmp_path: Path) -> list[Path]:
        return [truncated(FIXTURES / "qasets" / "triviaqa.json", tmp_path / "triviaqa.json")]

    def oversized(self, tmp_path: Path, text: str) -> list[Path]:
        return [inflated_lines(FIXTURES / "qasets" / "boolq.jsonl", tmp_path / "boolq.jsonl", text)]


class TestUmls(LoaderConformance):
    source = "umls"

    def good(self, tmp_path: Path) -> list[Path]:
        return [FIXTURES / "umls" / r for r in ("2020AA", "2021AA")]

    def bad(self, tmp_path: Path) -> list[Path]:
        release = tmp_path / "bad" / "2022AA"
        shutil.copytree(FIXTURES / "umls" / "2022AA", release)
        mrrel = next(release.rglob("MRREL.RRF"))
        with mrrel.open("a") as fh:
            fh.write("C0000001|A1|SCUI|RO|C0000002\n")  # a row with too few fields
        return [FIXTURES / "umls" / "2020AA", release]

    def oversized(self, tmp_path: Path, text: str) -> list[Path]:
        release = tmp_path / "over" / "2020AA"
        shutil.copytree(FIXTURES / "umls" / "2020AA", release)
        mrconso = release / "MRCONSO.RRF"
        first, *rest = mrconso.read_text().splitlines()
        fields = first.split("|")
        fields[14] = text  # STR
        mrconso.write_text("\n".join(["|".join(fields), *rest]) + "\n")
        return [release]


class TestWikidata(LoaderConformance):
    source = "wikidata"

    def good(self, tmp_path: Path) -> list[Path]:
        return sorted(shared("wikidata-entities").glob("*.json"))[:3]

    def bad(self, tmp_path: Path) -> list[Path]:
        first = sorted(shared("wikidata-entities").glob("*.json"))[0]
        return [truncated(first, tmp_path / first.name)]

    def oversized(self, tmp_path: Path, text: str) -> list[Path]:
        first = sorted(shared("wikidata-entities").glob("*.json"))[0]
        return [inflated_json(first, tmp_path / first.name, text)]


class TestCfr(LoaderConformance):
    source = "cfr"

    def good(self, tmp_path: Path) -> list[Path]:
        return [shared("ecfr-title1") / "ECFR-title1.subset.xml"]

    def bad(self, tmp_path: Path) -> list[Path]:
        return [truncated(shared("ecfr-title1") / "ECFR-title1.subset.xml", tmp_path / "ECFR-title1.xml")]

    def oversized(self, tmp_path: Path, text: str) -> list[Path]:
        xml = (shared("ecfr-title1") / "ECFR-title1.subset.xml").read_text()
        at = xml.index("<P>") + len("<P>")
        path = tmp_path / "ECFR-title1.xml"
        path.write_text(xml[:at] + text + " " + xml[at:])
        return [path]


class TestCxr(LoaderConformance):
    source = "cxr"

    def good(self, tmp_path: Path) -> list[Path]:
        out = tmp_path / "cohort"
        if not out.exists():
            cxr_synth.generate(out, patients=4, visits=4, seed=3)
        return [out]

    def bad(self, tmp_path: Path) -> list[Path]:
        out = self.good(tmp_path)[0]
        broken = tmp_path / "broken"
        if not broken.exists():
            shutil.copytree(out, broken)
            graph = sorted(broken.rglob("*.scene_graph.json"))[-1]
            truncated(graph, graph)
        return [broken]

    def oversized(self, tmp_path: Path, text: str) -> list[Path]:
        out = self.good(tmp_path)[0]
        over = tmp_path / "over"
        if not over.exists():
            shutil.copytree(out, over)
            graph = sorted(over.rglob("*.scene_graph.json"))[0]
            inflated_json(graph, graph, text)
        return [over]


def test_every_source_with_a_loader_runs_the_conformance_suite() -> None:
    covered = {cls.source for cls in LoaderConformance.__subclasses__()}
    loaders = {name for name, spec in SOURCES.items() if spec.commands and spec.commands[0].startswith("ingest/")}
    assert loaders <= covered, (f"sources without a conformance class: {sorted(loaders - covered)}: subclass "
                                "chronokg.testing.loader_conformance.LoaderConformance with `source` set and a good "
                                "and a bad input (tests/test_loader_conformance.py)")
