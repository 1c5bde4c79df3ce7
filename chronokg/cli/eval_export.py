"""`chronokg eval export`: a run's predictions in each seed's own result files, or the run as inspect_ai logs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from chronokg.cli.common import console, guarded
from chronokg.cli.render import say


def register_export(eval_app: typer.Typer) -> None:
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

        def body() -> None:
            if fmt == "inspect":
                try:
                    from chronokg.integrations.inspect_log import export_run
                except ImportError:
                    raise ChronoKGError("--format inspect: install inspect_ai (pip install 'chronokg[integrations]')"
                                        ) from None

                for path in export_run(run, out):
                    say(console, ("wrote", "green"), f" the inspect log {path}")
                return
            if fmt != "seed":
                raise ChronoKGError("--format must be seed or inspect")
            from chronokg.metrics.runs import export_seed

            for path, n in export_seed(run, out).items():
                say(console, ("wrote", "green"), f" {n:,} records to {path}")
        guarded(body)
