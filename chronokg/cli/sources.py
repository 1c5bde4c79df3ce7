"""The `ingest`, `download`, `export` (and source `generate`) commands, built from SOURCES on first use."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache

import typer

from chronokg.cli.common import Groups
from chronokg.cli.lazy import Command

GROUPS = ("ingest", "download", "export", "generate")


@cache
def built(module: str) -> dict[str, dict[str, Command]]:
    """The commands a source's CLI module adds, per group (the module is imported here, once)."""
    apps = {g: typer.Typer() for g in GROUPS}
    importlib.import_module(module).register(Groups(**apps))
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

    def maker(module: str, name: str) -> Callable[[], Command]:
        def make() -> Command:
            command = built(module).get(group, {}).get(name)
            if command is None:
                raise RuntimeError(f"{module} does not add `{group} {name}`, though SOURCES says it does")
            return command
        return make

    out: dict[str, Callable[[], Command]] = {}
    for _, spec in SOURCES.items():
        for name in spec.in_group(group):
            out[name] = maker(spec.cli, name)
    return out
