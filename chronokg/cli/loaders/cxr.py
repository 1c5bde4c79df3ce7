"""`generate cxr`: synthetic chest-X-ray timelines (a generator, not a load; MIMIC is credentialed: no download)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Annotated

import typer

from chronokg.cli.common import Groups, console, guarded
from chronokg.cli.render import say, table


def register(groups: Groups) -> None:
    """Add `chronokg generate cxr`."""

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
            table(console, ["pattern", "findings"], [[p, n] for p, n in cohort.pattern_counts().items()],
                  title=f"cxr cohort in {out}")
            gaps_days = cohort.gaps()
            say(console, f"{len(cohort.patients)} patients × {visits} studies; gaps median "
                          f"{statistics.median(gaps_days):.1f} d, max {max(gaps_days):.1f} d; "
                          f"{len(cohort.questions)} questions; ground truth: {out / cxr_synth.TRUTH_FILE}")
        guarded(body)
