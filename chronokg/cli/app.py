"""`chronokg` command line: init, ingest, query, stats, demo."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from chronokg.cli.common import FormatOpt, console, guarded, opened, state
from chronokg.cli.lazy import lazy_group
from chronokg.cli.queries import query_app
from chronokg.cli.render import Format, emit, say
from chronokg.cli.root import root_app
from chronokg.store_uri import StoreURI, embedded_file


def source_commands(group: str) -> Callable[[], dict[str, Any]]:
    """The commands SOURCES declares for `group`, each built from its source's CLI module when first needed."""

    def provider() -> dict[str, Any]:
        from chronokg.cli.sources import makers

        return makers(group)

    return provider


def family_commands() -> dict[str, Any]:
    from chronokg.cli.bench import provider

    return provider()

app = root_app()  # the root group and its --store option (chronokg.cli.root)
ingest_app = typer.Typer(help="Load a source into the store.", no_args_is_help=True,
                         cls=lazy_group(source_commands("ingest")))
download_app = typer.Typer(help="Fetch a public source (needs the internet).", no_args_is_help=True,
                           cls=lazy_group(source_commands("download")))
export_app = typer.Typer(help="Export the store to other formats.", no_args_is_help=True,
                         cls=lazy_group(source_commands("export")))
generate_app = typer.Typer(help="Generate benchmark questions from the graph (one command per family), or "
                                "synthetic source data (cxr).", no_args_is_help=True,
                           cls=lazy_group(lambda: {**family_commands(), **source_commands("generate")()}))
bench_app = typer.Typer(help="Work with generated benchmarks: verify answer keys, export to seed formats.",
                        no_args_is_help=True)
app.add_typer(ingest_app, name="ingest")
app.add_typer(query_app, name="query")
app.add_typer(download_app, name="download")
app.add_typer(export_app, name="export")
app.add_typer(generate_app, name="generate")
app.add_typer(bench_app, name="bench")

@app.command()
def init() -> None:
    """Create the store (and its constraints and indexes) if it does not exist."""
    def body() -> None:
        with opened() as s:
            say(console, ("ready:", "green"), f" {s.uri} ({s.engine})")
    guarded(body)


@app.command()
def stats(fmt: FormatOpt = Format.table) -> None:
    """Counts per label and relationship type, and facts per source release."""
    from chronokg.queries import catalog

    def body() -> None:
        with opened(read_only=True) as s:
            rows = catalog.stats(s)
        if fmt is Format.json:
            emit(console, rows, fmt)
            return
        emit(console, [r for r in rows if r.kind != "source"], fmt, title="graph", columns=["kind", "name", "count"])
        emit(console, [r for r in rows if r.kind == "source"], fmt, title="facts per source release",
             columns=["source_kind", "name", "version", "release_date", "count"])
    guarded(body)


def demo_store_uri() -> str:
    from platformdirs import user_data_dir

    return str(embedded_file(Path(user_data_dir("chronokg")) / "demo.kgl"))


@app.command()
def demo(
    keep: Annotated[bool, typer.Option(help="Add to an existing demo store instead of starting fresh")] = False,
) -> None:
    """Build a store from the bundled demo corpus and run the showcase queries."""
    from chronokg.cli.showcase import run_showcase

    def body() -> None:
        uri = state.store_uri or demo_store_uri()
        demo_file = StoreURI.parse(uri).file
        if not keep and demo_file is not None and state.store_uri is None:
            _remove_kglite_files(Path(demo_file))
        with opened(uri) as s:
            run_showcase(s, console)
        loop_demo(console, uri)  # the research loop, in its own store (chronokg.cli.demo_loop)
        from chronokg.cli.demo_query import show_query_process

        show_query_process(console, uri)  # the same query from a shell, answered by the local query process
    guarded(body)


def loop_demo(console: Any, uri: str) -> None:
    from chronokg.cli.demo_loop import run_loop

    file = StoreURI.parse(uri).file
    base = Path(file).parent if file is not None else None
    if base is None:
        from platformdirs import user_data_dir

        base = Path(user_data_dir("chronokg"))
    run_loop(console, base / "demo-loop", typer.main.get_command(app))


def _remove_kglite_files(path: Path) -> None:
    for p in [path, *(path.with_name(path.name + suffix) for suffix in ("-wal", ".lock", ".lock-owner"))]:
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


def _register_commands() -> None:
    """The eval, bench, export and explore commands (light modules); sources and families are lazy groups."""
    from chronokg.cli import bench, explore, export
    from chronokg.cli import eval as eval_cli

    export.register(export_app)
    eval_cli.register(app)
    bench.register(app, bench_app)
    explore.register(app, export_app)


_register_commands()


def _registered_by(module: str, group: str) -> Callable[[], dict[str, Any]]:
    """The commands `chronokg.cli.<module>.register` adds under `group`, that module imported on first use."""

    def provider() -> dict[str, Any]:
        import importlib

        holder = typer.Typer()
        importlib.import_module(f"chronokg.cli.{module}").register(holder)
        commands = typer.main.get_command(holder).commands[group].commands  # type: ignore[attr-defined]
        return {name: (lambda c=command: c) for name, command in commands.items()}

    return provider


for _module, _group, _help in [
    ("models", "models", "Model clients: check a server, list providers and aliases."),
    ("models", "cache", "The model response cache."),
    ("retrieve", "retrieve", "Retrieval: passages valid on a date, up-to-date answers, web search."),
    ("retrieve", "index", "The store's passage index (faiss, beside the store)."),
    ("serve", "serve", "Serve the read-only agent tools (queries, guarded Cypher, search) over HTTP or MCP."),
    ("store", "store", "The store's files: check them, recover a damaged write-ahead log."),
    ("lifecycle", "releases", "Source releases in the store: list them, drop one loaded by mistake."),
]:
    app.add_typer(typer.Typer(help=_help, no_args_is_help=True, cls=lazy_group(_registered_by(_module, _group))),
                  name=_group)


def main() -> Any:
    return app()
