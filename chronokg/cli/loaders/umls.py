"""CLI commands for the UMLS source: `chronokg ingest umls` (there is no download: the UMLS is licensed)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from chronokg.cli.common import Groups, console, guarded, opened
from chronokg.cli.progress import progress_bar
from chronokg.cli.render import load_summary


def parse_release_dates(values: list[str]) -> dict[str, str]:
    """`2020AA=2020-05-04` options to {release: date text}; the loader checks the dates."""
    out: dict[str, str] = {}
    for value in values:
        name, sep, date = value.partition("=")
        if not sep or not name.strip() or not date.strip():
            raise typer.BadParameter(f"{value!r}: expected RELEASE=DATE, e.g. 2020AA=2020-05-04",
                                     param_hint="--release-date")
        out[name.strip().upper()] = date.strip()
    return out


HELP = (
    "UMLS Metathesaurus relations (MRREL) with validity across releases, and concept names (MRCONSO).\n\n"
    "Each MRREL row 'CUI1|..|CUI2|..|RELA' (read right to left, as NLM documents it) becomes the fact "
    "'CUI2 RELA CUI1', valid from the first loaded release that holds it until the first later release that "
    "drops it. Load releases together or one at a time, oldest first, always with the same --sab/--rela "
    "filters. One transaction: bad input writes nothing.\n\n"
    "The UMLS is licensed (UMLS Metathesaurus License, free from NLM after sign-up), so there is no download "
    "command for it: get the release files from NLM yourself."
)


def register(groups: Groups) -> None:
    """Add `ingest umls`."""

    @groups.ingest.command("umls", help=HELP)
    def ingest_umls(
        release_dirs: Annotated[list[Path], typer.Argument(
            metavar="RELEASE_DIR...",
            help="UMLS release folders named after the release (2020AA, 2021AB, ...), each holding MRREL.RRF and "
                 "MRCONSO.RRF directly or under META/",
        )],
        sab: Annotated[list[str] | None, typer.Option(
            "--sab", help="Keep only relations asserted by this source vocabulary (repeatable; default: all)",
        )] = None,
        rela: Annotated[list[str] | None, typer.Option(
            "--rela", help="Keep only this relation (repeatable; default: the 12 ChroKnowBench relations)",
        )] = None,
        all_relations: Annotated[bool, typer.Option(
            "--all-relations", help="Keep every relation that has a RELA",
        )] = False,
        release_date: Annotated[list[str] | None, typer.Option(
            "--release-date", metavar="RELEASE=DATE",
            help="Exact release date (repeatable), e.g. 2020AA=2020-05-04 (default: AA = May 1st, AB = November "
                 "1st, at month precision)",
        )] = None,
    ) -> None:
        """UMLS Metathesaurus relations with validity across releases (see HELP)."""
        from chronokg.ingest import umls

        if all_relations and rela:
            raise typer.BadParameter("give either --rela or --all-relations", param_hint="--all-relations")
        dates = parse_release_dates(release_date or [])
        relas = None if all_relations else (rela or list(umls.CHROKNOW_RELAS))

        def body() -> None:
            with opened(load=True) as s, progress_bar(console) as bar:
                summary = umls.load(s, release_dirs, sabs=sab or None, relas=relas, release_dates=dates,
                                    progress=bar)
            load_summary(console, summary)
            table = Table(title="UMLS releases", header_style="bold cyan")
            table.add_column("release", no_wrap=True)
            table.add_column("date", no_wrap=True)
            for c in ("rows", "kept rows", "relations", "opened", "continued", "closed", "concepts", "named"):
                table.add_column(c, justify="right")
            for r in summary.releases:
                if r.skipped:
                    table.add_row(r.release, str(r.date), *(["already loaded: skipped"] + [""] * 7))
                else:
                    table.add_row(r.release, str(r.date), *(str(v) for v in (
                        r.rows, r.kept_rows, r.relations, r.opened, r.continued, r.closed, r.concepts, r.named)))
            console.print(table)
        guarded(body)
