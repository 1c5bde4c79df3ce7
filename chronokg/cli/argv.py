"""What `chronokg ARGS` names, read before typer parses them: which app to build, which store to open early."""

from __future__ import annotations

from collections.abc import Sequence


def command_word(args: Sequence[str]) -> str | None:
    """The group or command `args` name after the global options (`--store URI`), or None when they name
    none or give another root option (--help, completion): then only the whole app will do."""
    rest = iter(args)
    for arg in rest:
        if arg == "--store":
            next(rest, None)
        elif arg.startswith("--store="):
            continue
        elif arg.startswith("-"):
            return None
        else:
            return arg
    return None


def store_option(args: Sequence[str]) -> str | None:
    """The value of the last `--store` before the command word (the one click keeps), or None."""
    found: str | None = None
    rest = iter(args)
    for arg in rest:
        if arg == "--store":
            found = next(rest, None)
        elif arg.startswith("--store="):
            found = arg.removeprefix("--store=")
        elif not arg.startswith("-"):
            break
    return found


def subcommand_word(args: Sequence[str]) -> str | None:
    """The word after the command word (`as-of` in `chronokg --store S query as-of ...`), or None."""
    rest = iter(args)
    for arg in rest:
        if arg == "--store":
            next(rest, None)
        elif arg.startswith("-"):
            continue
        else:
            sub = next(rest, None)
            return None if sub is None or sub.startswith("-") else sub
    return None
