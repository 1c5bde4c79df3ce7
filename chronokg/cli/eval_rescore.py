"""`chronokg eval rescore`: a finished run's stored answers scored again against the store as it is now (or as
known on a past day), without asking any model; the verdicts that flipped, with both targets."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Annotated

import typer

from chronokg.cli.common import console, guarded, opened
from chronokg.cli.render import Format, emit, say


def register_rescore(eval_app: typer.Typer) -> None:
    @eval_app.command("rescore")
    def rescore_command(
        run: Annotated[Path, typer.Argument(help="A run folder (run-…)")],
        out: Annotated[Path, typer.Option("--out", "-o", help="Where the re-scored run's folder goes")],
        known_at: Annotated[dt.datetime | None, typer.Option(
            formats=["%Y-%m-%d"], help="Re-run the answer keys as the releases known on this day said it "
                                       "[default: as known now]")] = None,
        fmt: Annotated[Format, typer.Option("--format", "-f", help="table or json")] = Format.table,
    ) -> None:
        """Re-run every question's answer key against the store, score the run's stored answers against the
        targets it gives, and write a new run folder linked to the old one (its id from the run, the store
        snapshot and --known-at: re-running changes nothing). Lists the verdicts that flipped. Asks no model."""
        from chronokg.bench import snapshot
        from chronokg.eval.rescore import rescore

        def body() -> None:
            with opened(read_only=True) as store:
                result = rescore(run, out, store, snapshot.current(store),
                                 known_at.date() if known_at is not None else None)
            if fmt is Format.json:
                print(json.dumps(result.model_dump(mode="json"), ensure_ascii=False, indent=2))
                return
            say(console, result.summary())
            say(console, ("wrote" if result.written else "unchanged", "green" if result.written else "yellow"),
                f" {result.folder} (re-scored from {result.rescored_from})")
            if result.flips:
                emit(console, result.flips, Format.table, title="verdicts that flipped",
                     columns=["question_id", "model", "sample", "answer", "old_correct", "new_correct", "old_target",
                              "new_target", "old_answer", "new_answer"])
        guarded(body)
