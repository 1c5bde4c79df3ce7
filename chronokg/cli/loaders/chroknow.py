"""CLI commands for ChroKnowBench."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chronokg.cli.common import Groups, OptDateOpt, console, guarded, opened
from chronokg.cli.progress import progress_bar
from chronokg.cli.render import load_summary
from chronokg.ingest.chroknow import Domain


def register(groups: Groups) -> None:
    """Add `ingest chroknow`."""

    @groups.ingest.command("chroknow")
    def ingest_chroknow(
        paths: Annotated[list[Path], typer.Argument(help="ChroKnowBench .jsonl files, or folders of them")],
        domain: Annotated[Domain | None, typer.Option(
            help="Read every file as this domain [default: detected from each file's fields]")] = None,
        release_date: OptDateOpt = None,
    ) -> None:
        """ChroKnowBench rows: yearly snapshots become facts with validity intervals (one transaction)."""
        from chronokg.ingest import chroknow

        def body() -> None:
            with opened(load=True) as s, progress_bar(console) as bar:
                summary = chroknow.load(s, paths, domain, release_date or chroknow.DEFAULT_RELEASE, progress=bar)
            load_summary(console, summary)
        guarded(body)
