"""`ingest wikidata` names every statement it skips for its date (year 0, year 99999, 2023-02-30 at day
precision): by statement id in the load summary and in the CLI's report, not only as a count."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import wikidata
from tests.helpers import REPO
from tests.test_wikidata import _statement, _time, raw, write_entity


def entity_with_bad_dates(shared_data: Path, tmp_path: Path) -> Path:
    entity = raw(shared_data / "wikidata-entities" / "Q646148.json")
    base = entity["claims"]["P39"][1]
    entity["claims"]["P39"] = [
        _statement(base, 1, {"P580": [_time("+0000-01-01T00:00:00Z", 11)]}),  # year 0
        _statement(base, 2, {"P580": [_time("+99999-01-01T00:00:00Z", 9)]}),  # year 99999
        _statement(base, 3, {"P580": [_time("+2023-02-30T00:00:00Z", 11)]}),  # no such day
        _statement(base, 4, {"P580": [_time("+2001-02-03T00:00:00Z", 11)]}),  # fine
        _statement(base, 5, snaktype="novalue"),
    ]
    return write_entity(tmp_path / "Q646148.json", entity)


def test_the_summary_names_each_skipped_statement(shared_data: Path, tmp_path: Path) -> None:
    summary = wikidata.load(KgliteStore(":memory:"), [entity_with_bad_dates(shared_data, tmp_path)])
    assert summary.skipped == {"before_year_1": 1, "after_year_9999": 1, "invalid_day_as_month": 1, "novalue": 1}
    assert summary.skipped_statements == {
        "after_year_9999": ["Q646148$TEST-2"], "before_year_1": ["Q646148$TEST-1"],
        "invalid_day_as_month": ["Q646148$TEST-3"], "novalue": ["Q646148$TEST-5"],
    }
    assert summary.facts == 2  # the good statement, and 2023-02-30 read at month precision


def test_the_cli_report_names_them(shared_data: Path, tmp_path: Path) -> None:
    path = entity_with_bad_dates(shared_data, tmp_path)
    done = subprocess.run([sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{tmp_path / 's.kgl'}", "ingest",
                           "wikidata", str(path)], capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    out = done.stdout + done.stderr
    assert "Traceback" not in out
    assert "before_year_1: Q646148$TEST-1" in out and "after_year_9999: Q646148$TEST-2" in out
    assert "invalid_day_as_month: Q646148$TEST-3" in out
