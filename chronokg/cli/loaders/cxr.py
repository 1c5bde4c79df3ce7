"""CLI commands for chest-X-ray timelines: `ingest cxr` and `generate cxr` (MIMIC is credentialed: no download)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from chronokg.cli.common import Groups, OptDateOpt, console, guarded, opened
from chronokg.cli.progress import progress_bar
from chronokg.cli.render import load_summary


def register(groups: Groups) -> None:
    """Add `chronokg ingest cxr` and `chronokg generate cxr`."""

    @groups.ingest.command("cxr")
    def ingest_cxr(
        paths: Annotated[list[Path], typer.Argument(
            help="Folders or files: *.scene_graph.json (+ sibling *.metadata.json), study_metadata.csv[.gz], "
                 "MI-CXR question .jsonl")],
        release_date: OptDateOpt = None,
        base_date: OptDateOpt = None,
        allow_unmatched: Annotated[bool, typer.Option(
            help="Keep questions whose images match no loaded study (attached to the studies that match)")] = False,
    ) -> None:
        """MIMIC-Ext-CXR-QBA scene graphs as patient timelines, and MI-CXR questions (one transaction)."""
        from chronokg.ingest import cxr

        def body() -> None:
            with opened(load=True) as s, progress_bar(console) as bar:
                summary = cxr.load(s, paths, release_date=release_date, base_date=base_date or cxr.BASE_DATE,
                                   allow_unmatched=allow_unmatched, progress=bar)
            load_summary(console, summary)
            console.print(f"{summary.patients} patients, {summary.studies} studies, {summary.observations} "
                          f"observations, {summary.questions} questions")
            if summary.unmatched_questions:
                console.print(f"[yellow]{summary.unmatched_questions} question(s) have images matching no loaded "
                              "study[/]")
        guarded(body)

    @groups.generate.command("cxr")
    def generate_cxr(
        out: Annotated[Path, typer.Option(help="Folder to write the cohort into")],
        patients: Annotated[int, typer.Option(min=1)] = 20,
        visits: Annotated[int, typer.Option(min=3, help="Studies per patient")] = 5,
        seed: Annotated[int, typer.Option()] = 0,
        findings: Annotated[int, typer.Option(min=1, help="Findings tracked per patient")] = 3,
        gaps: Annotated[str, typer.Option(help="Visit-gap distribution: lognormal or pareto")] = "lognormal",
        median_gap_days: Annotated[float, typer.Option(min=1.0)] = 30.0,
        double_events: Annotated[bool, typer.Option(
            help="Also deal the relapsing and remitting patterns (two emergences / two resolutions; MI-CXR's "
                 "second-event questions need them)")] = False,
    ) -> None:
        """Synthetic scene-graph timelines with controlled finding patterns, and their ground truth."""
        from chronokg.ingest import cxr_synth

        try:
            dist = cxr_synth.GapDistribution(gaps)
        except ValueError:
            raise typer.BadParameter(f"{gaps!r}: use lognormal or pareto", param_hint="--gaps") from None

        def body() -> None:
            try:
                patterns = cxr_synth.PATTERNS + (cxr_synth.DOUBLE_EVENT_PATTERNS if double_events else ())
                cohort = cxr_synth.generate(out, patients, visits, seed, findings, dist, median_gap_days, patterns)
            except ValueError as exc:
                raise typer.BadParameter(str(exc)) from None
            table = Table(title=f"cxr cohort in {out}", header_style="bold cyan")
            table.add_column("pattern")
            table.add_column("findings", justify="right")
            for pattern, n in cohort.pattern_counts().items():
                table.add_row(pattern, str(n))
            console.print(table)
            gaps_days = cohort.gaps()
            console.print(f"{len(cohort.patients)} patients × {visits} studies; gaps median "
                          f"{statistics.median(gaps_days):.1f} d, max {max(gaps_days):.1f} d; "
                          f"{len(cohort.questions)} questions; ground truth: {out / cxr_synth.TRUTH_FILE}")
        guarded(body)
