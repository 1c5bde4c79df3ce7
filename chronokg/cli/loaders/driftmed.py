"""`download driftmed` (DriftMed / ConflictMedQA; `ingest driftmed` is built from SOURCES like every load)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chronokg.cli.common import Groups, console, guarded
from chronokg.cli.progress import progress_bar
from chronokg.cli.render import say
from chronokg.ingest.driftmed import DEFAULT_BASE_URL, DEFAULT_FILE


def register(groups: Groups) -> None:
    """Add `download driftmed`."""

    @groups.download.command("driftmed")
    def download_driftmed(
        out: Annotated[Path, typer.Option(help="Folder to save into")] = Path("data/driftmed"),
        base_url: Annotated[str, typer.Option(help="Where the dataset's files are served")] = DEFAULT_BASE_URL,
        file: Annotated[str, typer.Option(help="Path of the file under the base URL")] = DEFAULT_FILE,
        sha256: Annotated[str | None, typer.Option(help="Expected SHA-256 of the file")] = None,
    ) -> None:
        """Fetch DriftMed from Hugging Face (or a mirror); then run `chronokg ingest driftmed` on it."""
        from chronokg.ingest import driftmed
        from chronokg.ingest.download import fetch

        def body() -> None:
            with progress_bar(console) as bar:
                got = fetch(driftmed.download_url(base_url, file), out / driftmed.target_name(file), sha256,
                            progress=bar)
            say(console, ("saved", "green"), f" {got.path} ({got.bytes} bytes, sha256 {got.sha256})")
        guarded(body)
