"""What every `chronokg` command shares: consoles, option types, store opening, error handling."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast

import typer

from chronokg.cli.render import Format, say
from chronokg.errors import ChronoKGError

if TYPE_CHECKING:
    from pathlib import Path

    from rich.console import Console

    from chronokg.graph.store import GraphStore

T = TypeVar("T")


class _FirstUse:
    """A rich Console made when first used: a command that prints only JSON never imports rich (~50 ms of
    `chronokg query ... -f json`, which should answer in half a second)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def real(self) -> Console:
        if self._console is None:
            from rich.console import Console

            class _Console(Console):
                def on_broken_pipe(self) -> None:  # rich's own exits 1; `guarded` ends the command as `cat` would
                    self.quiet = True
                    raise BrokenPipeError

            self._console = _Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)

    def __enter__(self) -> Console:  # `with console:` (rich's Live and Progress) looks these up on the type
        return self.real().__enter__()

    def __exit__(self, *exc: object) -> None:
        self.real().__exit__(*exc)


console = cast("Console", _FirstUse())
err = cast("Console", _FirstUse(stderr=True))


def said_beside(out: Path) -> Console:
    """Where a command that writes `out` says what it wrote: stderr when `out` is this process's standard output
    (`--out /dev/stdout`, or a path to the same pipe or file), so the summary never mixes into the data."""
    import os
    import sys

    if str(out) in ("-", "/dev/stdout"):
        return err
    try:
        here, there = os.fstat(sys.stdout.fileno()), os.stat(out)
    except (OSError, ValueError, AttributeError):  # no such file yet, or a stdout without a descriptor
        return console
    return err if (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino) else console


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
    """A day the way the tool servers take it too (`chronokg.graph.dates.parse_day`)."""
    from chronokg.graph.dates import parse_day as day_from_text  # not at import: `chronokg --help` loads no graph

    try:
        return day_from_text(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


DateOpt = Annotated[dt.date, typer.Option(parser=parse_day, metavar="DATE", help="YYYY-MM-DD (or YYYY)")]
OptDateOpt = Annotated[
    dt.date | None, typer.Option(parser=parse_day, metavar="DATE", help="YYYY-MM-DD (or YYYY)")
]
FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="table for people, json for scripts")]


@contextmanager
def opened(uri: str | None = None, load: bool = False,
           read_only: bool = False, must_exist: bool = False, quick: bool = False) -> Iterator[GraphStore]:
    """The store named by --store, $CHRONOKG_STORE, or the default embedded one.

    `read_only=True` (queries, stats): a reader, which never writes the store and runs beside other
    readers and a writer. Otherwise a writer, which waits (up to CHRONOKG_LOCK_TIMEOUT seconds, saying
    so on stderr) while another process writes the same embedded store.

    `load=True` (ingest commands): an embedded file store is opened without its write-ahead
    log unless the URI names `durable=` itself. A one-shot load is one transaction that is
    checkpointed atomically when the store closes, so a crash loses only that load (re-run
    it), and a large load needs several times less memory than with the log.

    `quick=True` (a reader answering one query, then exiting): the fastest safe open (`open_store`'s
    `quick_open`: on a million facts, tens of milliseconds instead of seconds).

    `must_exist=True` (commands that read what was loaded, even when they also write): an embedded store
    file that is not there is an error, instead of a new empty store.
    """
    from chronokg.graph.open import open_store
    from chronokg.settings import Settings
    from chronokg.store_uri import StoreURI

    settings = Settings()
    uri = uri or state.store_uri or settings.store
    file = StoreURI.parse(uri).file
    if must_exist and file is not None:
        from pathlib import Path

        from chronokg.errors import StoreError

        if not Path(file).exists():
            raise StoreError(f"no store at {file}: load a source into it first (chronokg ingest ...), or give "
                             "--store URI")
    def waiting(message: str) -> None:
        say(err, (f"{message}…", "yellow"))

    early = None
    if quick and read_only:  # opened on a thread while the CLI started, or held by the query process?
        from chronokg.cli.early_open import held, take

        resident = held(uri)
        if resident is not None:
            yield from _borrowed(resident)
            return
        early = take(uri)
    with early if early is not None else open_store(uri, settings, read_only=read_only, on_wait=waiting,
                                                    quick_open=quick and read_only, load=load) as store:
        for notice in store.notices:
            say(err, ("note:", "yellow"), f" {notice}")
        yield store


def _borrowed(store: GraphStore) -> Iterator[GraphStore]:
    """The query process's open store, lent to one command and left open (chronokg.cli.query_daemon)."""
    for notice in store.notices:
        say(err, ("note:", "yellow"), f" {notice}")
    yield store


def fresh_consoles() -> None:
    """Forget the consoles made so far: the next print makes them again from the environment and the streams
    then in place (the query process answers each caller in its own terminal)."""
    for first_use in (console, err):
        cast("_FirstUse", first_use)._console = None


def fail_line(message: str) -> None:
    """The one way the CLI reports an error: `error: ...` on stderr, one line, in red."""
    from chronokg.cli.render import esc

    one = message.replace("\r", "\\r").replace("\n", "\\n")  # a line break of a path or value it names, as text
    err.print(f"[bold red]error:[/] {esc(one)}", soft_wrap=True)  # a message may hold [brackets]


def os_error_message(exc: OSError) -> str:
    """`PATH: what went wrong` for a file the user named (no errno tuple, no traceback)."""
    what = exc.strerror or str(exc)
    return f"{exc.filename}: {what}" if exc.filename is not None else what


SIGPIPE_EXIT = 128 + 13  # what a shell reports for a command ended by SIGPIPE (`yes | head`)


def reader_gone() -> int:
    """stdout's reader went away (`chronokg query ... | head`): say nothing more, as `cat` would. Later writes
    (and the interpreter's flush at exit) go to /dev/null instead of raising again."""
    import os
    import sys

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return SIGPIPE_EXIT


def guarded(fn: Callable[[], T]) -> T:
    """Run a command body; chronokg errors and file errors become one red line and exit code 2."""
    try:
        return fn()
    except ChronoKGError as exc:
        fail_line(str(exc))
        raise typer.Exit(2) from None
    except BrokenPipeError:  # stdout's reader left (`| head`)
        raise typer.Exit(reader_gone()) from None
    except OSError as exc:  # a path the user gave: missing, a directory, unreadable
        fail_line(os_error_message(exc))
        raise typer.Exit(2) from None
