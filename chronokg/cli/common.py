"""What every `chronokg` command shares: consoles, option types, store opening, error handling."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from chronokg.cli.render import Format
from chronokg.errors import ChronoKGError

if TYPE_CHECKING:
    from chronokg.graph.store import GraphStore

console = Console()
err = Console(stderr=True)
T = TypeVar("T")


class State:
    """Global options of the current invocation (set by the root callback)."""

    store_uri: str | None = None


state = State()


@dataclass(frozen=True)
class Groups:
    """The command groups a source module adds its commands to."""

    ingest: typer.Typer
    download: typer.Typer
    export: typer.Typer
    generate: typer.Typer


def parse_day(value: str) -> dt.date:
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        if value.isdigit() and len(value) == 4:
            return dt.date(int(value), 1, 1)
        raise typer.BadParameter(f"{value!r} is not a date (YYYY-MM-DD or YYYY)") from None


DateOpt = Annotated[dt.date, typer.Option(parser=parse_day, metavar="DATE", help="YYYY-MM-DD (or YYYY)")]
OptDateOpt = Annotated[
    dt.date | None, typer.Option(parser=parse_day, metavar="DATE", help="YYYY-MM-DD (or YYYY)")
]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="table for people, json for scripts")]


@contextmanager
def opened(uri: str | None = None, load: bool = False,
           read_only: bool = False) -> Iterator[GraphStore]:
    """The store named by --store, $CHRONOKG_STORE, or the default embedded one.

    `read_only=True` (queries, stats): a reader, which never writes the store and runs beside other
    readers and a writer. Otherwise a writer, which waits (up to CHRONOKG_LOCK_TIMEOUT seconds, saying
    so on stderr) while another process writes the same embedded store.

    `load=True` (ingest commands): an embedded file store is opened without its write-ahead
    log unless the URI names `durable=` itself. A one-shot load is one transaction that is
    checkpointed atomically when the store closes, so a crash loses only that load (re-run
    it), and a large load needs several times less memory than with the log.
    """
    from chronokg.graph.open import open_store
    from chronokg.settings import Settings

    settings = Settings()
    uri = uri or state.store_uri or settings.store
    if load and uri.startswith("kglite://") and "?" not in uri and not uri.endswith(":memory:"):
        uri += "?durable=off"
    def waiting(message: str) -> None:
        err.print(f"[yellow]{message}…[/]")

    with open_store(uri, settings, read_only=read_only, on_wait=waiting) as store:
        for notice in getattr(store, "notices", []):
            err.print(f"[yellow]note:[/] {notice}")
        yield store


def guarded(fn: Callable[[], T]) -> T:
    """Run a command body; chronokg errors become one red line and exit code 2."""
    try:
        return fn()
    except ChronoKGError as exc:
        # A message may hold [brackets] (chronokg[serve]); soft_wrap: one line however narrow the terminal.
        err.print(f"[bold red]error:[/] {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(2) from None
