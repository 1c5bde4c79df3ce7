"""`chronokg quality` and `chronokg export html`: the explorer's data-quality table and its static page."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from chronokg.cli.common import FormatOpt, console, guarded, opened
from chronokg.cli.render import Format, emit, say

if TYPE_CHECKING:
    from chronokg.progress import Progress

RunsOpt = Annotated[list[Path] | None, typer.Option(
    "--runs", help="A run folder whose report (as `chronokg eval report` builds it) the Runs view shows beside "
                   "the stored runs (repeat: side by side)")]


# What `eval report --out` writes beside its tables: the page offers no such files, so it does not point to them.
FILES_NOTE = re.compile(r"\s*Every value is also in metrics\.json; every plot is in plots/ as PNG and SVG\.")


def run_report(folders: list[Path] | None, progress: Progress | None = None) -> str | None:
    """The report of `--runs` folders as HTML elements, or None without any (needs the reports extra); the
    sentence naming the files `eval report --out` writes is left out (the page shows their tables and plots);
    `progress` hears its steps."""
    if not folders:
        return None
    from chronokg.reports import report_body

    return FILES_NOTE.sub("", report_body(folders, progress=progress))


def register(app: typer.Typer, export_app: typer.Typer) -> None:
    @app.command("quality")
    def quality_cmd(
        latest_year: Annotated[int | None, typer.Option(help="Years after this are implausible [default: this "
                                                             "year]")] = None,
        fmt: FormatOpt = Format.table,
    ) -> None:
        """Data quality of the loaded trajectories (TempoMed-Bench's trajectory report): one catalog query per
        check (`chronokg query list`: quality-*), the table the explorer shows."""
        from chronokg.queries.explorer import QualityRow
        from chronokg.queries.spec import all_queries

        def body() -> None:
            rows: list[QualityRow] = []
            with opened(read_only=True) as store:
                for _name, spec in sorted(all_queries().items()):
                    if "quality" in spec.tags:
                        rows += spec.run(store, {"latest_year": latest_year})
            emit(console, rows, fmt, title="data quality", columns=("section", "check", "count", "total",
                                                                    "examples"))
        guarded(body)

    @export_app.command("html")
    def export_html_cmd(
        out: Annotated[Path, typer.Option(help="Folder to write index.html into (opens from disk)")],
        topic: Annotated[str | None, typer.Option(help="Only trajectories with these words in topic, title or "
                                                       "organisation")] = None,
        org: Annotated[str | None, typer.Option(help="Only trajectories of this organisation (words in its "
                                                     "name)")] = None,
        category: Annotated[str | None, typer.Option(help="Only trajectories of this organisation category "
                                                          "(Commercial, Non-commercial, Other)")] = None,
        year_from: Annotated[int | None, typer.Option(help="Only trajectories whose current version is from "
                                                           "this year or later")] = None,
        year_to: Annotated[int | None, typer.Option(help="... or earlier")] = None,
        limit: Annotated[int | None, typer.Option(min=1, help="At most this many trajectories")] = None,
        subject: Annotated[list[str] | None, typer.Option(help="Also the timeline of this subject (repeat)")]
        = None,
        runs: RunsOpt = None,
    ) -> None:
        """The explorer as one self-contained page (data embedded as JSON) for a slice of the store."""
        from chronokg.serve.explorer.static import Slice, export_html

        def body() -> None:
            chosen = Slice(topic=topic, organization=org, category=category, year_from=year_from, year_to=year_to,
                           limit=limit, subjects=subject or [])
            report = run_report(runs)
            with opened(read_only=True) as store:
                summary = export_html(store, out, chosen, report)
            say(console, ("wrote", "green"), f" {summary.path} ({summary.trajectories} trajectories, "
                          f"{summary.subjects} timelines, {summary.questions} questions, "
                          f"{summary.bytes / 1e6:.1f} MB): open it in a browser")
        guarded(body)
