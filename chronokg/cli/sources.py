"""The `ingest`, `download`, `export` (and source `generate`) commands, built from SOURCES on first use.

`ingest <source>` is built from the parameters the source declares (`cli/ingest_command.py`); a source's other
commands (downloads, exports, generators, a second ingest path) come from the CLI module its spec names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

import typer

from chronokg.cli.common import Groups
from chronokg.cli.lazy import Command

if TYPE_CHECKING:
    from chronokg.ingest.sources import SourceSpec

GROUPS = ("ingest", "download", "export", "generate")


def add_commands(spec: SourceSpec, groups: Groups) -> None:
    """Add every command of a source: `ingest <name>` from its declared options, the rest from its CLI module."""
    if spec.ingest is not None:
        from chronokg.cli.ingest_command import register

        register(groups.ingest, spec)
    if spec.cli is not None:
        importlib.import_module(spec.cli).register(groups)


@cache
def built(name: str) -> dict[str, dict[str, Command]]:
    """The commands a source adds, per group (its CLI module, if any, is imported here, once)."""
    from chronokg.ingest.sources import SOURCES

    apps = {g: typer.Typer() for g in GROUPS}
    add_commands(SOURCES.get(name), Groups(**apps))
    out: dict[str, dict[str, Command]] = {}
    for group, app in apps.items():
        if app.registered_commands:
            app.command("_")(lambda: None)  # a group of one command would collapse into that command
            out[group] = {n: c for n, c in typer.main.get_command(app).commands.items()  # type: ignore[attr-defined]
                          if n != "_"}
    return out


def makers(group: str) -> dict[str, Callable[[], Command]]:
    """name -> a function building the command, for every command SOURCES declares in `group`."""
    from chronokg.ingest.sources import SOURCES

    def maker(source: str, name: str) -> Callable[[], Command]:
        def make() -> Command:
            command = built(source).get(group, {}).get(name)
            if command is None:
                raise RuntimeError(f"source {source} does not add `{group} {name}`, though SOURCES says it does")
            return command
        return make

    out: dict[str, Callable[[], Command]] = {}
    for _, spec in SOURCES.items():
        for name in spec.in_group(group):
            out[name] = maker(spec.name, name)
    return out
