"""What `chronokg ARGS` names, read before typer parses them: which app to build, which store to open early."""

from __future__ import annotations

from collections.abc import Sequence


def _words(args: Sequence[str]) -> tuple[str | None, str | None, str | None]:
    """One walk over the global options: (the last `--store` value before the command word, as click keeps it;
    the command word, or None when `args` name none or give another root option first (--help, completion);
    the word after the command word, or None when it is missing or an option)."""
    store: str | None = None
    rest = iter(args)
    for arg in rest:
        if arg == "--store":
            store = next(rest, None)
        elif arg.startswith("--store="):
            store = arg.removeprefix("--store=")
        elif arg.startswith("-"):
            return store, None, None
        else:
            sub = next(rest, None)
            return store, arg, None if sub is None or sub.startswith("-") else sub
    return store, None, None


def command_word(args: Sequence[str]) -> str | None:
    """The group or command `args` name after the global options (`--store URI`), or None when they name
    none or give another root option (--help, completion): then only the whole app will do."""
    return _words(args)[1]


def store_option(args: Sequence[str]) -> str | None:
    """The value of the last `--store` before the command word (the one click keeps), or None."""
    return _words(args)[0]


def subcommand_word(args: Sequence[str]) -> str | None:
    """The word after the command word (`as-of` in `chronokg --store S query as-of ...`), or None."""
    return _words(args)[2]
