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
        show: Annotated[int, typer.Option(min=0, help="Changed verdicts the table lists (0: all); every one is in "
                                                      "the new folder's flips.json and not_scorable.json, and in "
                                                      "--format json")] = 20,
    ) -> None:
        """Re-run every question's answer key against the store, score the run's stored answers against the
        targets it gives, and write a new run folder linked to the old one (its id from the run, the store
        snapshot and --known-at: re-running changes nothing). Lists the verdicts that changed (flipped right to
        wrong or wrong to right, or not scorable now) and ends with their counts. Asks no model."""
        from chronokg.bench import snapshot
        from chronokg.eval.rescore import FLIPS, NOT_SCORABLE, rescore

        def body() -> None:
            with opened(read_only=True) as store:
                result = rescore(run, out, store, snapshot.current(store),
                                 known_at.date() if known_at is not None else None)
            if fmt is Format.json:
                print(json.dumps(result.model_dump(mode="json"), ensure_ascii=False, indent=2))
                return
            changed = result.changed()
            listed = changed if not show else changed[:show]
            if listed:
                emit(console, listed, Format.table, title="verdicts that changed",
                     columns=["question_id", "model", "sample", "answer", "old_correct", "new_correct", "old_target",
                              "new_target", "old_answer", "new_answer"])
            if len(listed) < len(changed):
                say(console, (f"showing {len(listed):,} of {len(changed):,} changed verdicts", "yellow"),
                    f"; all of them: {Path(result.folder) / FLIPS}, {Path(result.folder) / NOT_SCORABLE} "
                    "(or --format json, or --show 0)")
            say(console, ("wrote" if result.written else "unchanged", "green" if result.written else "yellow"),
                f" {result.folder} (re-scored from {result.rescored_from})")
            say(console, result.summary())
        guarded(body)
