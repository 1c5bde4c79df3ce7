"""CLI commands for the TempoMed-Bench source."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chronokg.cli.common import Groups, OptDateOpt, console, guarded, opened
from chronokg.cli.progress import progress_bar
from chronokg.cli.render import load_summary


def register(groups: Groups) -> None:
    """Add `ingest tempomed`."""

    @groups.ingest.command("tempomed")
    def ingest_tempomed(
        paths: Annotated[
            list[Path], typer.Argument(help="MCQ .jsonl, trajectory .json, *_extracted_diffs.json, or folders")
        ],
        release_date: OptDateOpt = None,
    ) -> None:
        """TempoMed-Bench MCQs, trajectories and difference files (one transaction; bad input writes nothing)."""
        from chronokg.ingest import tempomed

        def body() -> None:
            with opened(load=True) as s, progress_bar(console) as bar:
                summary = tempomed.load(s, paths, release_date or tempomed.DEFAULT_RELEASE, progress=bar)
            load_summary(console, summary)
        guarded(body)
