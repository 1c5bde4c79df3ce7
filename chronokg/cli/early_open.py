"""`chronokg query NAME ...` opens its embedded store on a thread while the CLI imports and parses.

kglite's load releases the GIL, so on a second core the load overlaps the Python imports (typer, the
query catalog) instead of following them, so that a CLI query on a 1M store answers
in half a second. The command takes the store from here only when it asks for the same store the
same way (read-only, quick); otherwise, and when it never opens one (a bad flag, --help), the early
store is closed unused. A failed early open is raised where the command opens, so what the user
sees is what the plain open would have shown; a reader writes nothing, so an unused one costs only time.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from chronokg.cli.argv import command_word, store_option, subcommand_word
from chronokg.errors import StoreError
from chronokg.store_uri import StoreURI

if TYPE_CHECKING:
    from chronokg.graph.store import GraphStore

NO_STORE = ("list", "batch", "cypher", "daemon")  # query subcommands that do not open the quick reader


class EarlyOpen:
    """A quick read-only open of the embedded store `--store` (or the settings) name, on its own thread."""

    def __init__(self, store_arg: str | None) -> None:
        self._store_arg = store_arg
        self.uri: str | None = None
        self._store: GraphStore | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._open, name="chronokg-early-open", daemon=True)
        self._thread.start()

    def _open(self) -> None:
        try:
            from chronokg.settings import Settings

            settings = Settings()
            uri = self._store_arg or settings.store
            if not StoreURI.parse(uri).embedded:
                return  # a server store: opened as before, by the command
            from chronokg.graph.open import open_store

            self.uri = uri
            self._store = open_store(uri, settings, read_only=True, quick_open=True)
        except BaseException as exc:  # raised again where the command opens (see take)
            self._error = exc

    def take(self, uri: str) -> GraphStore | None:
        """The early store if it is `uri`'s (its open's error raised here), else None; taken once."""
        self._thread.join()
        if self.uri != uri:
            return None
        self.uri = None
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        store, self._store = self._store, None
        return store

    def close(self) -> None:
        """Close the store if no command took it."""
        self._thread.join()
        if self._store is not None:
            store, self._store = self._store, None
            store.close()


_early: EarlyOpen | None = None
_held: tuple[str, GraphStore] | None = None  # the query process's open store (chronokg.cli.query_daemon)


def hold(path: str | None, store: GraphStore | None) -> None:
    """The query process keeps `store` (the embedded store at the absolute `path`) open for every caller."""
    global _held
    _held = (path, store) if path is not None and store is not None else None


def held(uri: str) -> GraphStore | None:
    """The held store when `uri` names it (a plain `kglite://PATH`, resolved against the cwd), else None."""
    if _held is None:
        return None
    path = StoreURI.parse(uri).plain_file
    return _held[1] if path is not None and path == _held[0] else None


def start(args: Sequence[str]) -> EarlyOpen | None:
    """Start the early open for `chronokg ARGS` when they name a query that opens the quick reader."""
    global _early
    sub = subcommand_word(args)
    if command_word(args) != "query" or sub is None or sub in NO_STORE or "--help" in args or "-h" in args:
        return None
    given = store_option(args)
    try:
        if given is not None and not StoreURI.parse(given).embedded:
            return None  # a server store: nothing to load early
    except StoreError:
        return None  # not a store URI: the command says so
    # The thread's modules are imported here, before it starts: two threads importing the same packages at once
    # can deadlock on importlib's module locks. What runs beside the main thread is kglite's load itself.
    import chronokg.graph.kglite_store
    import chronokg.graph.open
    import chronokg.settings  # noqa: F401

    _early = EarlyOpen(given)
    return _early


def take(uri: str) -> GraphStore | None:
    """The early store for `uri`, if one was started and is that store's (chronokg.cli.common.opened)."""
    return _early.take(uri) if _early is not None else None


def finish() -> None:
    global _early
    if _early is not None:
        early, _early = _early, None
        early.close()
