"""The two new tables (TempoMed Table 3, ConflictMedQA change category x factor) in a report built from the demo."""

from __future__ import annotations

from typing import Any

import pytest

from chronokg.reports import build_report
from tests.report_helpers import demo_run

pytestmark = pytest.mark.slow  # a whole run and its plots


MODELS = ["baseline/oracle", "baseline/latest-only", "baseline/always-yes"]
NEW_PLOTS = ("conflictmedqa-ecda-category-factor", "conflictmedqa-ikcr-category-factor")  # no --rag: no Table 3 plot


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("demo-report")
    return build_report([demo_run(tmp, MODELS)], tmp / "report")


def section(md: str, metric: str) -> str:
    return md.split(f"### {metric}\n", 1)[1].split("\n### ", 1)[0]


def test_the_new_tables_and_plots_are_in_the_demo_report(report: Any) -> None:
    md = report.markdown.read_text(encoding="utf-8")
    for name in NEW_PLOTS:
        assert name in report.plots and (report.out / "plots" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert f"](plots/{name}.png)" in md
    table3 = section(md, "tempomed.table3")
    row = next(line for line in table3.splitlines() if line.startswith("| none · original_current_guideline · all |"))
    # columns: the models in label order (always-yes, latest-only, oracle): the oracle is right on every item
    assert row.rstrip(" |").endswith("1.000 (n 11)"), row
    ecda = section(md, "conflictmedqa.ecda_category_factor")
    ikcr = section(md, "conflictmedqa.ikcr_category_factor")
    for category in ("Diagnostic & Threshold", "Recommendation Intensity", "Implementation Approach"):
        assert category in ecda and category in ikcr
    # always-yes endorses both versions of every pair: IKCR 1 in every cell; the oracle: 0.
    cells = [line for line in ikcr.splitlines() if line.startswith("| Diagnostic & Threshold")]
    assert cells and all("| 1.000 |" in line and line.rstrip().endswith("| 0.000 |") for line in cells), cells
