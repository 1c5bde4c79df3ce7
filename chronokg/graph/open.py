"""Pick an engine from a store URI."""

from __future__ import annotations

from collections.abc import Callable

from chronokg.errors import StoreError
from chronokg.graph.store import GraphStore
from chronokg.graph.uris import redact
from chronokg.settings import Settings


def open_store(uri: str | None = None, settings: Settings | None = None, *, read_only: bool = False,
               on_wait: Callable[[str], None] | None = None, quick_open: bool = False) -> GraphStore:
    """Open `kglite:///path/store.kgl`, `kglite://:memory:` or `neo4j://host:7687` (also bolt://, neo4j+s://).

    `kglite:///path/store.kgl?durable=off` keeps no write-ahead log (for very large bulk loads: far less
    memory; a crash loses what was written since the store was opened).

    `read_only=True` opens a reader: it never writes (on kglite it reads the last checkpoint, takes no
    lease and leaves the file untouched; on Neo4j its sessions are READ sessions). A writer waits up to
    `settings.lock_timeout` seconds for another writer of the same embedded store, telling `on_wait`.
    `quick_open=True` (a reader that answers one query and exits): on kglite the file is mapped and its
    property indexes are left unbuilt (`KgliteStore(quick_open=True)`); ignored elsewhere.
    """
    settings = settings or Settings()
    uri = uri or settings.store
    scheme, sep, rest = uri.partition("://")
    if not sep:
        raise StoreError(f"not a store URI: {redact(uri)!r} (expected kglite:///path/to/store.kgl or neo4j://host:7687)")
    if scheme == "kglite":
        from chronokg.graph.kglite_store import KgliteStore

        path, _, query = rest.partition("?")
        options = dict(part.partition("=")[::2] for part in query.split("&") if part)
        unknown = set(options) - {"durable"}
        if unknown:
            raise StoreError(f"unknown option(s) {', '.join(sorted(unknown))} in {redact(uri)!r} (known: durable)")
        return KgliteStore(path, durable=options.get("durable", "normal"), read_only=read_only,
                           lock_timeout=settings.lock_timeout, on_wait=on_wait, quick_open=quick_open)
    if scheme in {"neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc"}:
        from chronokg.graph.neo4j_store import Neo4jStore

        return Neo4jStore(
            uri, settings.neo4j_user, settings.neo4j_password.get_secret_value(), settings.neo4j_database,
            read_only=read_only,
        )
    raise StoreError(f"unknown store scheme {scheme!r} in {redact(uri)!r}: use kglite:// or neo4j://")
