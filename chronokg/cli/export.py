"""`chronokg export neo4j-csv`: the store as files for `neo4j-admin database import full`; `chronokg export lm-eval`:
generated questions as lm-evaluation-harness tasks."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from chronokg.cli.common import console, guarded, opened, state
from chronokg.cli.render import say
from chronokg.controls import visible


def register(export_app: typer.Typer) -> None:
    @export_app.command("neo4j-csv")
    def export_neo4j_csv(
        out: Annotated[Path, typer.Option(help="Folder to write the CSV files and import.sh into")],
        database: Annotated[str, typer.Option(help="Database name in the printed command line")] = "neo4j",
    ) -> None:
        """Node and relationship CSV files in neo4j-admin's import header format, and the command that loads them."""
        from chronokg.graph.neo4j_csv import export

        def body() -> None:
            with opened(read_only=True) as store:
                result = export(store, out)
            nodes = sum(n for key, n in result.counts.items() if not key.isupper())
            say(console, ("wrote", "green"), f" {len(result.nodes)} node files ({nodes} nodes) and "
                          f"{len(result.relationships)} relationship files to {out}")
            say(console, f"import (from {out}, Neo4j stopped):")
            console.print(visible(shlex.join(result.command(database))), soft_wrap=True, markup=False, highlight=False)
        guarded(body)

    @export_app.command("lm-eval")
    def export_lm_eval(
        questions: Annotated[list[Path], typer.Argument(help="Question files (canonical JSONL)")],
        out: Annotated[Path, typer.Option(help="Folder for the task folders (lm_eval --include_path OUT)")],
        protocol: Annotated[str, typer.Option(help="seed or chronokg: settings, extraction and scoring")] = "seed",
        cutoff: Annotated[str | None, typer.Option(help="A knowledge cutoff (YYYY, YYYY-MM or YYYY-MM-DD): the "
                                                        "tasks also report accuracy before and after it "
                                                        "(acc_pre_cutoff, acc_post_cutoff)")] = None,
    ) -> None:
        """A generate_until task per family for lm-evaluation-harness (YAML, data with each item's dates, the
        family's extraction as its filter); score its --log_samples output with `chronokg eval score`."""
        from chronokg.errors import ChronoKGError
        from chronokg.eval.item_dates import missing_facts, stored_facts
        from chronokg.eval.runner import load_questions
        from chronokg.graph.dates import parse_date
        from chronokg.integrations.lm_eval_export import export_lm_eval

        def body() -> None:
            try:
                day = parse_date(cutoff.strip())[0] if cutoff is not None else None
            except ValueError as exc:
                raise ChronoKGError(f"--cutoff {cutoff!r}: {exc}") from None
            chosen = load_questions(questions, None)
            facts = stored_facts(state.store_uri, chosen)  # the dates from the store's facts where it is there
            for task, n in export_lm_eval(chosen, out, protocol, day, facts).items():
                say(console, ("wrote", "green"), " task ", (task, "bold"), f" ({n:,} questions) to {out / task}")
            stored = 0 if facts is None else sum(not missing_facts(q, facts) for q in chosen)
            say(console, f"item dates: {stored:,} questions dated from the store's facts, {len(chosen) - stored:,} "
                         "from their answer keys' evidence rows" + (" (no store file: give --store URI)"
                                                                    if facts is None else ""))
            run = shlex.join(["lm_eval", "--include_path", str(out), "--tasks", "NAME", "--model",
                              "local-chat-completions", "--apply_chat_template", "--log_samples", "--output_path",
                              "RESULTS"])  # the folder as one shell word, its controls shown as codes
            console.print(visible(f"run: {run} ..."), soft_wrap=True, markup=False, highlight=False)
        guarded(body)
