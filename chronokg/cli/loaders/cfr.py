"""CLI commands for the cfr source: `ingest cfr` and `download cfr`."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated

import typer

from chronokg.cli.common import DateOpt, Groups, console, guarded, opened, parse_day
from chronokg.cli.progress import progress_bar
from chronokg.cli.render import load_summary


def register(groups: Groups) -> None:
    """Add `ingest cfr` and `download cfr`."""

    @groups.ingest.command("cfr")
    def ingest_cfr(
        paths: Annotated[list[Path], typer.Argument(help="eCFR or annual-edition CFR XML files of whole titles")],
        edition_date: Annotated[list[dt.date] | None, typer.Option(
            "--edition-date", parser=parse_day, metavar="DATE",
            help="Edition date, once per file in order or once for all (default: AMDDATE or REVISED in the file)",
        )] = None,
    ) -> None:
        """CFR editions: one fact per paragraph, valid until the edition that changes it (one transaction)."""
        from chronokg.ingest import cfr

        def body() -> None:
            with opened(load=True) as s, progress_bar(console) as bar:
                summary = cfr.load(s, paths, edition_date or None, progress=bar)
            load_summary(console, summary)
        guarded(body)

    @groups.download.command("cfr")
    def download_cfr(
        title: Annotated[int, typer.Option(min=1, max=50, help="CFR title number")],
        date: DateOpt,
        base_url: Annotated[str | None, typer.Option(help="eCFR server (default: https://www.ecfr.gov)")] = None,
        out: Annotated[Path | None, typer.Option(
            help="Target file or folder (default: ./ecfr-title-N-DATE.xml)")] = None,
    ) -> None:
        """The eCFR full-text XML of a title as of DATE (versioner API)."""
        from chronokg.ingest import cfr

        def body() -> None:
            name = f"ecfr-title-{title}-{date.isoformat()}.xml"
            target = out / name if out is not None and out.is_dir() else (out or Path(name))
            with progress_bar(console) as bar:
                got = cfr.download(title, date, target, base_url=base_url or cfr.ECFR_BASE_URL, progress=bar)
            console.print(f"[green]saved[/] {got.path} ({got.bytes} bytes, sha256 {got.sha256})")
            console.print(f"load it with: chronokg ingest cfr {got.path} --edition-date {date.isoformat()}")
        guarded(body)
