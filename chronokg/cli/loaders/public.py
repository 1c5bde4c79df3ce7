"""`chronokg download tempomed|selfaware|truthfulqa`: pinned public files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chronokg.cli.common import Groups, console, guarded
from chronokg.cli.progress import progress_bar
from chronokg.cli.render import say
from chronokg.ingest.public import PUBLIC_FILES, PublicFile


def register(groups: Groups) -> None:
    for entry in PUBLIC_FILES.values():
        _add(groups.download, entry)


def _add(download: typer.Typer, entry: PublicFile) -> None:
    @download.command(entry.name, help=f"{entry.note}. Load it with `chronokg ingest {entry.loader}`.")
    def command(
        out: Annotated[Path, typer.Option(help="Folder to save into")] = Path("data") / entry.name,
        url: Annotated[str, typer.Option(help="Download from here instead (a mirror)")] = entry.url,
        sha256: Annotated[str | None, typer.Option(help="Expected SHA-256 (default: the pinned one)")] = None,
    ) -> None:
        from chronokg.ingest.download import fetch

        expected = sha256 or (entry.sha256 if url == entry.url else None)

        def body() -> None:
            with progress_bar(console) as bar:
                got = fetch(url, out / entry.filename, expected, progress=bar)
            say(console, ("saved", "green"), f" {got.path} ({got.bytes} bytes, sha256 {got.sha256})")
            say(console, f"next: chronokg ingest {entry.loader} {got.path}")
        guarded(body)
