"""Lifecycle commands: `releases list|drop`, `bench list|delete`, `eval runs list|delete`.

Each removal is one transaction (chronokg.graph.lifecycle) and prints what it removed; one that would
remove derived things (questions, predictions) is refused unless `--derived` says so.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from chronokg.cli.common import FormatOpt, console, guarded, opened
from chronokg.cli.render import Format, dicts, say

DerivedOpt = Annotated[bool, typer.Option("--derived", help="Also remove what was derived from it (generated "
                                                            "questions, snapshots, predictions)")]


def _print(removal: Any) -> None:
    for line in removal.lines():
        say(console, line)


def register(app: typer.Typer) -> None:
    """`releases list|drop` (a lazy top-level group)."""
    releases = typer.Typer(help="Source releases in the store: list them, drop one loaded by mistake.",
                           no_args_is_help=True)
    app.add_typer(releases, name="releases")

    @releases.command("list")
    def list_releases(fmt: FormatOpt = Format.table) -> None:
        """The releases loaded, oldest first, with the facts each asserts."""
        def body() -> None:
            with opened(read_only=True) as store:
                rows = store.run("MATCH (s:Source) OPTIONAL MATCH (f:Fact)-[:ASSERTED_IN]->(s) "
                                 "RETURN s.id AS id, s.kind AS kind, toString(s.release_date) AS release_date, "
                                 "s.path AS path, count(f) AS facts ORDER BY release_date, id")
            dicts(console, rows, fmt, "source releases", priority=["id", "release_date", "facts", "kind"])
        guarded(body)

    @releases.command("drop")
    def drop(release: Annotated[str, typer.Argument(help="The release's id (chronokg releases list)")],
             derived: DerivedOpt = False,
             force: Annotated[bool, typer.Option("--force", help="Where the other releases cannot be replayed "
                                                                 "(an input changed or moved), undo it in place; "
                                                                 "drop it even where a value it changed cannot be "
                                                                 "restored: those keep their current value")] = False,
             ) -> None:
        """Leave, in one step, the store a store that loaded the other releases in the same order would be: the
        other releases of its source are loaded again from their files and the source's part of the store made
        equal to them. Refused while generated questions depend on it, unless --derived; refused where an input
        changed or moved, unless --force (then undone in place)."""
        from chronokg.ingest.replay import drop_release

        def body() -> None:
            with opened() as store:
                _print(drop_release(store, release, derived, force))
        guarded(body)


def register_benchmarks(bench_app: typer.Typer) -> None:
    @bench_app.command("list")
    def list_benchmarks(fmt: FormatOpt = Format.table) -> None:
        """The generated benchmarks the store holds: questions per family and snapshot."""
        from chronokg.graph.lifecycle import list_benchmarks as rows

        def body() -> None:
            with opened(read_only=True) as store:
                found = rows(store)
            dicts(console, found, fmt, "generated benchmarks (family, snapshot)")
        guarded(body)

    @bench_app.command("delete")
    def delete(family: Annotated[str, typer.Argument(help="The benchmark family")],
               snapshot: Annotated[str, typer.Argument(help="The snapshot it was generated at (bench list)")],
               derived: DerivedOpt = False) -> None:
        """Remove the family's questions generated at SNAPSHOT (questions also generated at another snapshot
        keep that one), and the snapshot when nothing else refers to it. Refused while predictions answer them,
        unless --derived (which removes those predictions, and runs left without one, too)."""
        from chronokg.graph.lifecycle import delete_benchmark

        def body() -> None:
            with opened() as store:
                _print(delete_benchmark(store, family, snapshot, derived))
        guarded(body)


def register_runs(eval_app: typer.Typer) -> None:
    runs = typer.Typer(help="Evaluation runs held in the store: list, delete.", no_args_is_help=True)
    eval_app.add_typer(runs, name="runs")

    @runs.command("list")
    def list_runs(fmt: FormatOpt = Format.table) -> None:
        """The runs whose predictions the store holds."""
        from chronokg.graph.lifecycle import list_runs as rows

        def body() -> None:
            with opened(read_only=True) as store:
                found = rows(store)
            dicts(console, found, fmt, "runs in the store")
        guarded(body)

    @runs.command("delete")
    def delete(run_id: Annotated[str, typer.Argument(help="The run's id (run-…)")]) -> None:
        """Remove the run and its predictions from the store, with the questions it stored that no benchmark
        holds and no other run answers (its folder on disk is left as it is)."""
        from chronokg.graph.lifecycle import delete_run

        def body() -> None:
            with opened() as store:
                _print(delete_run(store, run_id))
        guarded(body)
