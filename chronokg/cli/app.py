"""`chronokg` command line: init, ingest, query, stats, demo."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Annotated, Any

import typer
from platformdirs import user_data_dir

from chronokg.cli.common import (
    DateOpt,
    FormatOpt,
    Groups,
    OptDateOpt,
    console,
    guarded,
    opened,
    parse_day,
    state,
)
from chronokg.cli.render import Format, emit
from chronokg.queries import catalog

app = typer.Typer(help="chronokg: a bitemporal knowledge graph of time-specific facts.", no_args_is_help=True)
ingest_app = typer.Typer(help="Load a source into the store.", no_args_is_help=True)
query_app = typer.Typer(help="Run a named query from the catalog.", no_args_is_help=True)
download_app = typer.Typer(help="Fetch a public source (needs the internet).", no_args_is_help=True)
export_app = typer.Typer(help="Export the store to other formats.", no_args_is_help=True)
generate_app = typer.Typer(help="Generate synthetic source data.", no_args_is_help=True)
app.add_typer(ingest_app, name="ingest")
app.add_typer(query_app, name="query")
app.add_typer(download_app, name="download")
app.add_typer(export_app, name="export")
app.add_typer(generate_app, name="generate")

@app.callback()
def root(
    store: Annotated[str | None, typer.Option(
        "--store", show_default=False,
        help="Store URI: kglite:///path/store.kgl or neo4j://host:7687 "
        "[default: $CHRONOKG_STORE, else an embedded store under the user data dir]",
    )] = None,
) -> None:
    state.store_uri = store


@app.command()
def init() -> None:
    """Create the store (and its constraints and indexes) if it does not exist."""
    def body() -> None:
        with opened() as s:
            console.print(f"[green]ready:[/] {s.uri} ({s.engine})")
    guarded(body)


@query_app.command("as-of")
def query_as_of(
    date: DateOpt,
    subject: Annotated[str | None, typer.Option(help="Subject id as the source gives it (QID, CUI, PMID, ...)")] = None,
    predicate: Annotated[str | None, typer.Option(help="Predicate id (PID, RELA, recommendation, ...)")] = None,
    known_at: OptDateOpt = None,
    limit: Annotated[int | None, typer.Option(min=1)] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """What was true on DATE (according to what was known at --known-at; default: now)."""
    def body() -> None:
        with opened() as s:
            rows = catalog.facts_as_of(s, date, subject=subject, predicate=predicate, known_at=known_at, limit=limit)
        emit(console, rows, fmt, title=f"as of {date}" + (f", known at {known_at}" if known_at else ""),
             columns=["subject", "predicate", "object", "object_caption", "value", "valid_from", "valid_to",
                      "precision", "source_id"])
    guarded(body)


@query_app.command("timeline")
def query_timeline(
    subject: Annotated[str, typer.Option(help="Subject id")],
    predicate: Annotated[str | None, typer.Option()] = None,
    known_at: OptDateOpt = None,
    include_retracted: Annotated[bool, typer.Option(help="Also list versions a later release retracted")] = False,
    fmt: FormatOpt = Format.table,
) -> None:
    """Every version of a subject's facts, in valid-time order."""
    def body() -> None:
        with opened() as s:
            rows = catalog.timeline(s, subject, predicate, known_at=known_at, include_retracted=include_retracted)
        emit(console, rows, fmt, title=f"timeline of {subject}",
             columns=["predicate", "object", "object_caption", "value", "valid_from", "valid_to", "known_from",
                      "known_to"])
    guarded(body)


@query_app.command("changed-between")
def query_changed_between(
    start: Annotated[dt.date, typer.Option("--from", parser=parse_day, metavar="DATE")],
    end: Annotated[dt.date, typer.Option("--to", parser=parse_day, metavar="DATE")],
    predicate: Annotated[str | None, typer.Option()] = None,
    subject: Annotated[str | None, typer.Option()] = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """Facts whose value on --to differs from their value on --from."""
    def body() -> None:
        with opened() as s:
            rows = catalog.changed_between(s, start, end, predicate=predicate, subject=subject)
        emit(console, rows, fmt, title=f"changed between {start} and {end}")
    guarded(body)


@query_app.command("recommended-on")
def query_recommended_on(
    date: DateOpt,
    topic: Annotated[str | None, typer.Option(help="Words in the guideline topic or title")] = None,
    org: Annotated[str | None, typer.Option(help="Issuing organization (id or words in its name)")] = None,
    guideline: Annotated[str | None, typer.Option(help="Any version's PMID (or id): selects its trajectory")] = None,
    known_at: OptDateOpt = None,
    fmt: FormatOpt = Format.table,
) -> None:
    """What was recommended on DATE, answered from the guideline version in force then."""
    def body() -> None:
        with opened() as s:
            rows = catalog.recommended_on(s, date, topic=topic, organization=org, guideline=guideline,
                                          known_at=known_at)
        emit(console, rows, fmt, title=f"recommended on {date}",
             columns=["decision_id", "recommendation", "guideline", "guideline_year", "organization",
                      "valid_from", "valid_to"])
    guarded(body)


@query_app.command("trajectory")
def query_trajectory(
    guideline: Annotated[str, typer.Option(help="Any version's PMID (or id)")],
    changes: Annotated[bool, typer.Option(help="Also list the change pairs")] = True,
    fmt: FormatOpt = Format.table,
) -> None:
    """A guideline's supersession chain, oldest first, with its change pairs."""
    def body() -> None:
        with opened() as s:
            versions = catalog.trajectory(s, guideline)
            pairs = catalog.change_pairs(s, guideline) if changes else []
        if fmt is Format.json:
            emit(console, versions, fmt)
            return
        emit(console, versions, fmt, title=f"trajectory of {guideline}")
        if changes:
            emit(console, pairs, fmt, title="change pairs",
                 columns=["decision_id", "prior_pmid", "prior_year", "current_pmid", "current_year",
                          "prior_recommendation", "current_recommendation"], wrap=60)
    guarded(body)


@query_app.command("cypher")
def query_cypher(
    cypher: Annotated[str, typer.Argument(help="A read-only Cypher query (writes are refused after EXPLAIN)")],
    param: Annotated[list[str] | None, typer.Option("--param", "-p", help="name=value (JSON values allowed)")] = None,
) -> None:
    """Run your own read-only Cypher and print the rows as JSON."""
    def body() -> None:
        params = dict(_parse_param(p) for p in param or [])
        with opened() as s:
            rows = catalog.read_only(s, cypher, params)
        print(json.dumps(rows, default=str, ensure_ascii=False, indent=2))
    guarded(body)


def _parse_param(text: str) -> tuple[str, Any]:
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise typer.BadParameter(f"{text!r}: expected name=value")
    try:
        return name, json.loads(raw)
    except json.JSONDecodeError:
        return name, raw


@app.command()
def stats(fmt: FormatOpt = Format.table) -> None:
    """Counts per label and relationship type, and facts per source release."""
    def body() -> None:
        with opened() as s:
            rows = catalog.stats(s)
        if fmt is Format.json:
            emit(console, rows, fmt)
            return
        emit(console, [r for r in rows if r.kind != "source"], fmt, title="graph", columns=["kind", "name", "count"])
        emit(console, [r for r in rows if r.kind == "source"], fmt, title="facts per source release",
             columns=["source_kind", "name", "version", "release_date", "count"])
    guarded(body)


def demo_store_uri() -> str:
    return f"kglite://{Path(user_data_dir('chronokg')) / 'demo.kgl'}"


@app.command()
def demo(
    keep: Annotated[bool, typer.Option(help="Add to an existing demo store instead of starting fresh")] = False,
) -> None:
    """Build a store from the bundled demo corpus and run the showcase queries."""
    from chronokg.cli.showcase import run_showcase

    def body() -> None:
        uri = state.store_uri or demo_store_uri()
        if not keep and uri.startswith("kglite://") and state.store_uri is None:
            _remove_kglite_files(Path(uri.removeprefix("kglite://")))
        with opened(uri) as s:
            run_showcase(s, console)
    guarded(body)


def _remove_kglite_files(path: Path) -> None:
    for p in [path, *(path.with_name(path.name + suffix) for suffix in ("-wal", ".lock", ".lock-owner"))]:
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


def _register_sources() -> None:
    from chronokg.cli import (
        download_public,
        ingest_cfr,
        ingest_chroknow,
        ingest_cxr,
        ingest_driftmed,
        ingest_qasets,
        ingest_tempomed,
        ingest_umls,
        ingest_wikidata,
    )

    for module in (ingest_tempomed, ingest_wikidata, ingest_umls, ingest_cfr, ingest_chroknow, ingest_driftmed,
                   ingest_qasets, ingest_cxr, download_public):
        module.register(Groups(ingest_app, download_app, export_app, generate_app))


def _register_models() -> None:
    from chronokg.cli import models

    models.register(app)


_register_sources()
_register_models()


def main() -> Any:
    return app()
