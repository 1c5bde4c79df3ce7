"""Open a store from its URI: the scheme picks the engine (`chronokg.graph.engines`)."""

from __future__ import annotations

from collections.abc import Callable

from chronokg.errors import StoreError
from chronokg.graph.engines import ENGINES
from chronokg.graph.store import GraphStore
from chronokg.settings import Settings
from chronokg.store_uri import StoreURI


def open_store(uri: str | StoreURI | None = None, settings: Settings | None = None, *, read_only: bool = False,
               on_wait: Callable[[str], None] | None = None, quick_open: bool = False,
               load: bool = False) -> GraphStore:
    """Open `kglite:///path/store.kgl`, `kglite://:memory:` or `neo4j://host:7687` (also bolt://, neo4j+s://).

    `kglite:///path/store.kgl?durable=off` keeps no write-ahead log (for very large bulk loads: far less
    memory; a crash loses what was written since the store was opened).

    `read_only=True` opens a reader: it never writes (on kglite it reads the last checkpoint, takes no
    lease and leaves the file untouched; on Neo4j its sessions are READ sessions). A writer waits up to
    `settings.lock_timeout` seconds for another writer of the same embedded store, telling `on_wait`.
    `quick_open=True` (a reader that answers one query and exits): on kglite the file is mapped and its
    property indexes are left unbuilt (`KgliteStore(quick_open=True)`); ignored elsewhere.
    `load=True` (a one-shot load): the engine's settings for one large all-or-nothing write where the URI
    names none (on kglite: no write-ahead log, `durable=off`).
    """
    settings = settings or Settings()
    parsed = StoreURI.parse(uri or settings.store)
    if parsed.scheme not in ENGINES:
        raise StoreError(f"unknown store scheme {parsed.scheme!r} in {parsed.redacted()!r}: use one of "
                         f"{', '.join(s + '://' for s in ENGINES)}")
    return ENGINES.get(parsed.scheme).open(parsed, settings, read_only=read_only, on_wait=on_wait,
                                           quick_open=quick_open, load=load)
