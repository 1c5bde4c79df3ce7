"""Reports of evaluation runs: tables of every metric and plots (matplotlib, imported only when drawing).

`build_report(run_folders, out)` writes report.md, a self-contained report.html, metrics.json and every plot
as PNG and SVG; `report_body` is the same report as HTML elements, written nowhere (the explorer's
Runs view). Families add plots with `@plot("metric.name")` in `chronokg/reports/families/<family>.py`
(docs/reports.md).
"""

from chronokg.reports.build import Report, build_report, report_body
from chronokg.reports.plots import PLOTS, Plot, plot
from chronokg.reports.series import Series

__all__ = ["PLOTS", "Plot", "Report", "Series", "build_report", "plot", "report_body"]
