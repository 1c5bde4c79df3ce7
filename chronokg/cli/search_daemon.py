"""The local search process `chronokg retrieve search` calls reuse (started by chronokg.cli.query_client).

`python -m chronokg.cli.search_daemon SOCKET STORE FINGERPRINT`: the query process's sibling for passage search.
Loading the encoder takes seconds to a minute on a busy machine, a query a few milliseconds, so this process
holds the encoder (its embedding worker) and the store's passage index warm and answers `retrieve search` over
the passages, one caller at a time, with the very app and the caller's argv, cwd, environment and
stdin/stdout/stderr (chronokg.cli.query_daemon's `_run_as_caller`): the bytes and exit code are the in-process
ones. It never opens the graph engine (a search needs none, and kglite, torch and faiss do not all fit in one
process). The same rules as the query process: a 0700 socket folder, a 0600 socket, the peer must be the same
user, the caller's settings must be the ones it started with (FINGERPRINT), and it exits after
CHRONOKG_QUERY_DAEMON_IDLE_S seconds without a call, when its store or its socket disappears, on SIGTERM or on
`chronokg query daemon stop`. A rebuilt or updated index is opened afresh at the next call (`shared_retriever`
compares the index files).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Sequence
from typing import Any

from chronokg.cli.query_client import kind
from chronokg.cli.query_daemon import Daemon, Stop, bound
from chronokg.store_uri import embedded_file


class SearchDaemon(Daemon):
    """One store's passage index and the encoder, one socket, one caller at a time."""

    process = "search"

    def open(self) -> None:
        """Warm the encoder and open the store's default index on a thread: a caller arriving meanwhile waits
        for the same lock instead of loading a second copy."""
        folder = _default_index(self.store_path)
        self.indexing = True

        def warm() -> None:
            try:
                from chronokg.retrieval.rag import warm_retriever

                warm_retriever(folder)
                self.indexed = True
            except Exception:
                pass  # no index yet, or no model: the first caller's search says why, as in-process
            finally:
                self.indexing = False

        threading.Thread(target=warm, daemon=True, name="chronokg-warm-encoder").start()

    def fresh(self) -> bool:
        return os.path.exists(self.store_path)

    def not_mine(self, argv: Sequence[str]) -> str | None:
        """Why `argv` is not a passage search (then the caller runs it in-process), or None."""
        return None if kind(argv) == "search" else "not a passage search"


def _default_index(store: str) -> Any:
    """The index folder a search on `store` reads without `--index` (the settings' or the one beside it)."""
    from chronokg.retrieval.rag import index_dir

    return index_dir(None, str(embedded_file(store)))


def main(argv: Sequence[str]) -> None:
    started = bound(argv, SearchDaemon, "chronokg.cli.search_daemon")
    if started is None:
        return
    daemon, server = started
    try:
        import typer

        from chronokg.cli import app_for

        daemon.command = typer.main.get_command(app_for(["retrieve", "search"]))
        daemon.open()
        daemon.serve(server)
    except Stop:
        daemon.unlink()
    except Exception:
        daemon.unlink()
        sys.exit(1)


if __name__ == "__main__":
    main(sys.argv[1:])
