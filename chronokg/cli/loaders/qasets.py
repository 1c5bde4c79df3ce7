"""`ingest qa-update` for the QA sets: one newer answer, not a file load (`ingest qa` is built from SOURCES)."""

from __future__ import annotations

from typing import Annotated

import typer

from chronokg.cli.common import DateOpt, Groups, OptDateOpt, console, guarded, opened
from chronokg.cli.render import say
from chronokg.ingest.qasets import Benchmark


def register(groups: Groups) -> None:
    """Add `ingest qa-update`."""

    @groups.ingest.command("qa-update")
    def ingest_qa_update(
        question_id: Annotated[str, typer.Argument(help="Question id, e.g. selfaware:42 or triviaqa:tc_33")],
        answer: Annotated[str, typer.Argument(help="The up-to-date answer (true/false for BoolQ)")],
        as_of: DateOpt,
        source: Annotated[str, typer.Option(help="Where the new answer comes from")] = "manual",
        known_from: OptDateOpt = None,
    ) -> None:
        """Record a newer answer valid from --as-of; the old gold answer is closed there (bitemporally)."""
        from chronokg.ingest import qasets

        def body() -> None:
            value: str | bool = answer
            if question_id.startswith(f"{Benchmark.BOOLQ.value}:") and answer.lower() in {"true", "false"}:
                value = answer.lower() == "true"
            with opened() as s:
                result = qasets.add_updated_answer(s, question_id, value, as_of, source=source,
                                                   known_from=known_from)
            if result.changed:
                say(console, ("updated", "green"), f" {question_id}: {answer!r} from {as_of} "
                             f"(closed {len(result.closed)}, retracted {len(result.retracted)})")
            else:
                say(console, ("store unchanged:", "green"), f" {answer!r} already holds for {question_id} on {as_of}")
        guarded(body)
