"""`download cfr` (a versioner-API fetch, not a load: `ingest cfr` is built from SOURCES like every load)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chronokg.cli.common import DateOpt, Groups, console, guarded
from chronokg.cli.progress import progress_bar
from chronokg.cli.render import say


def register(groups: Groups) -> None:
    """Add `download cfr`."""

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
            say(console, ("saved", "green"), f" {got.path} ({got.bytes} bytes, sha256 {got.sha256})")
            say(console, f"load it with: chronokg ingest cfr {got.path} --edition-date {date.isoformat()}")
        guarded(body)
