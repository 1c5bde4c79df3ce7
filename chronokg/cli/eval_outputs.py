"""`chronokg eval export|report`: what a finished run is written out as (the seeds' result files, inspect_ai logs,
a report)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chronokg.cli.common import console, err, guarded
from chronokg.cli.render import say


def register_outputs(eval_app: typer.Typer) -> None:
    @eval_app.command("export")
    def export_command(
        run: Annotated[Path, typer.Argument(help="A run folder (run-…, re-scored ones too)")],
        out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the exported files")],
        fmt: Annotated[str, typer.Option("--format", help="seed (each seed's result files) or inspect (inspect_ai "
                                                          "logs: one .eval per model and family)")] = "seed",
    ) -> None:
        """The run's predictions in each seed's own result format (the seed's scripts can re-score them), or as
        inspect_ai logs that `inspect view` opens and `inspect score` re-scores."""
        from chronokg.errors import ChronoKGError
        from chronokg.eval.log import latest, left_out

        def body() -> None:
            if fmt == "inspect":
                try:
                    from chronokg.integrations.inspect_log import export_run
                except ImportError:
                    raise ChronoKGError("--format inspect: install inspect_ai (pip install 'chronokg[integrations]')"
                                        ) from None

                for path in export_run(run, out):  # every sample, failed and not scorable ones included
                    say(console, ("wrote", "green"), f" the inspect log {path}")
                return
            if fmt != "seed":
                raise ChronoKGError("--format must be seed or inspect")
            from chronokg.metrics.runs import export_seed

            for path, n in export_seed(run, out).items():
                say(console, ("wrote", "green"), f" {n:,} records to {path}")
            failed, not_scorable = left_out(latest(run / "samples.jsonl").values())
            parts = [f"{failed:,} failed requests"] * bool(failed) + [
                f"{not_scorable:,} samples not scorable now (a re-scored run: their answer key gives no answer "
                "among the options)"] * bool(not_scorable)
            if parts:
                say(console, ("left out:", "yellow"),
                    f" {' and '.join(parts)}: the seed's files hold scored samples only")
        guarded(body)

    @eval_app.command("report")
    def report_command(
        runs: Annotated[list[Path], typer.Argument(help="Run folders (several: side by side)")],
        out: Annotated[Path, typer.Option("--out", "-o", help="Folder for report.md, report.html, metrics.json "
                                                              "and plots/")],
        model: Annotated[list[str] | None, typer.Option("--model", "-m", help="Only these models")] = None,
        title: Annotated[str, typer.Option(help="The report's title")] = "chronokg evaluation report",
    ) -> None:
        """A report of one or more runs: every metric as a table, the families' plots (PNG and SVG), one
        self-contained HTML page (needs the reports extra: matplotlib)."""
        from chronokg.cli.progress import progress_bar
        from chronokg.reports import build_report

        def body() -> None:
            # a bar per step (reading, metrics, drawing, rendering, writing) on a terminal; in a pipe, lines on stderr
            with progress_bar(console, lines=err) as bar:
                report = build_report(runs, out, model, title, bar)
            say(console, ("wrote", "green"), f" {report.markdown}, {report.html} and {len(report.plots)} plots "
                         f"(PNG and SVG) in {out / 'plots'}: {len(report.metrics)} metrics, "
                         f"{len(report.series)} model columns")
        guarded(body)
