"""The `chronokg` command."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import typer


def app_for(args: Sequence[str]) -> typer.Typer:
    """The app that runs `chronokg ARGS`: for `chronokg query ...` the root with the query group alone (typer
    turns a whole app into click commands at each call and the other groups' modules cost imports, while a
    query should answer in half a second), otherwise the whole app (chronokg.cli.app)."""
    from chronokg.cli.argv import command_word

    if command_word(args) == "query":
        from chronokg.cli.queries import query_app
        from chronokg.cli.root import root_app

        app = root_app()
        app.add_typer(query_app, name="query")
        return app
    from chronokg.cli.app import app as whole

    return whole


def main() -> Any:
    import sys

    from chronokg.cli import query_client

    args = sys.argv[1:]
    code = query_client.forward(args)  # a live local query process answers, if there is one for this store
    if code is None:
        code = query_client.first_search(args)  # a passage search: the search process it starts answers it
    if code is not None:
        sys.exit(code)
    from chronokg.cli import early_open

    early_open.start(args)  # a query's store opens on a thread meanwhile (chronokg.cli.early_open)
    try:
        return app_for(args)()
    finally:
        early_open.finish()
        query_client.start(args)  # the query process for the next call (chronokg.cli.query_daemon)


__all__ = ["app_for", "main"]
