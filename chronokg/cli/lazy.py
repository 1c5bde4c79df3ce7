"""Command groups whose commands are built on first use, from a registry.

`chronokg --help` then costs the framework import and little more: a query's or
a source's module is imported only when its command is listed or run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from typer._click import exceptions as click  # typer ships its own click core: its exception classes
from typer.core import TyperGroup

Command = Any  # typer's own command class (typer ships its own click core)
Provider = Callable[[], dict[str, Callable[[], Command]]]


def lazy_group(provider: Provider) -> type[TyperGroup]:
    """A TyperGroup class that adds the commands `provider()` names, each built when first needed."""

    class LazyGroup(TyperGroup):
        _cache: dict[str, Command] | None = None
        _makers: dict[str, Callable[[], Command]] | None = None

        def _lazy(self) -> dict[str, Callable[[], Command]]:
            if self._makers is None:
                self._makers = provider()
            return self._makers

        def list_commands(self, ctx: Any) -> list[str]:
            return sorted({*super().list_commands(ctx), *self._lazy()})

        def get_command(self, ctx: Any, cmd_name: str) -> Command | None:
            found = super().get_command(ctx, cmd_name)
            if found is not None:
                return found
            maker = self._lazy().get(cmd_name)
            if maker is None:
                return None
            if self._cache is None:
                self._cache = {}
            if cmd_name not in self._cache:
                self._cache[cmd_name] = maker()
            return self._cache[cmd_name]

        def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Command | None, list[str]]:
            try:
                return super().resolve_command(ctx, args)
            except click.UsageError as exc:  # "did you mean" over the lazy commands too, not only the built ones
                from chronokg.cli.root import suggest

                if args:
                    exc.message = suggest(exc.message, args[0], self.list_commands(ctx))
                raise

    return LazyGroup


class RichHelpGroup(TyperGroup):
    """A group whose commands print their help in rich's boxed layout, as every `query` and `ingest` command does
    (those are built apart from the root, whose own plain help keeps `chronokg --help` fast; a group added to the
    root takes the root's plain help); the group's own help stays plain, as those groups'."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        found = super().get_command(ctx, cmd_name)
        rich_help(found)
        return found


def rich_help(command: Any) -> None:
    """Rich's layout for `command` (a group: each of its commands), its help texts escaped once: rich reads
    `[default: …]` in a help text as markup and would drop it."""
    from rich.markup import escape

    if isinstance(command, TyperGroup):
        for inner in command.commands.values():
            rich_help(inner)
    elif command is not None and command.rich_markup_mode is None:
        command.rich_markup_mode = "rich"
        command.help = escape(command.help) if command.help else command.help
        for param in command.params:
            if getattr(param, "help", None):
                param.help = escape(param.help)
