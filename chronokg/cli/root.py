"""The root command group: the one error path of the whole CLI.

Usage errors (a typo'd command or option), chronokg errors and file errors all end the same way:
`error: ...` on stderr, one line, exit code 2 (an incomplete evaluation run exits 3, see docs/eval.md).
Typos of a command get "did you mean", also in the groups whose commands are built lazily.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from difflib import get_close_matches
from typing import Annotated, Any

import typer
from typer import Abort
from typer._click import exceptions as click  # typer ships its own click core: its exception classes
from typer.core import TyperGroup

from chronokg.errors import ChronoKGError


def suggest(message: str, typo: str, names: Sequence[str]) -> str:
    """`message` with "Did you mean ...?" added when `typo` is close to one of `names`."""
    matches = get_close_matches(typo, list(names))
    if not matches or "Did you mean" in message:
        return message
    return f"{message.rstrip('.')}. Did you mean {', '.join(repr(m) for m in matches)}?"


def _usage_error(exc: click.UsageError) -> None:
    from chronokg.cli.common import err, fail_line

    ctx = exc.ctx
    if ctx is not None:
        err.print(ctx.get_usage(), markup=False, highlight=False, soft_wrap=True)
        err.print(f"Try '{ctx.command_path} {ctx.help_option_names[0]}' for help.", markup=False,
                  highlight=False, soft_wrap=True)
    fail_line(exc.format_message())


class RootGroup(TyperGroup):
    """`chronokg` itself: runs a command and turns every expected failure into one `error:` line."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, windows_expand_args: bool = True,
             **extra: Any) -> Any:
        from chronokg.cli.common import fail_line, os_error_message, reader_gone

        code: Any = 0
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False,
                                windows_expand_args=windows_expand_args, **extra)
            sys.stdout.flush()  # a reader that left shows here, not in the interpreter's flush at exit
        except BrokenPipeError:
            code = reader_gone()
        except click.NoArgsIsHelpError as exc:
            exc.show()
            code = exc.exit_code
        except click.UsageError as exc:
            _usage_error(exc)
            code = exc.exit_code
        except click.ClickException as exc:
            fail_line(exc.format_message())
            code = exc.exit_code
        except Abort:
            fail_line("aborted")
            code = 1
        except ChronoKGError as exc:
            fail_line(str(exc))
            code = 2
        except OSError as exc:
            fail_line(os_error_message(exc))
            code = 2
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


def root(
    store: Annotated[str | None, typer.Option(
        "--store", show_default=False,
        help="Store URI: kglite:///path/store.kgl or neo4j://host:7687 "
        "[default: $CHRONOKG_STORE, else an embedded store under the user data dir]",
    )] = None,
) -> None:
    from chronokg.cli.common import state

    state.store_uri = store


def root_app() -> typer.Typer:
    """A `chronokg` Typer with the global options and no group yet: the whole CLI adds every group to one
    (chronokg.cli.app), `chronokg query ...` only the query group (chronokg.cli.app_for)."""
    app = typer.Typer(help="chronokg: a bitemporal knowledge graph of time-specific facts.", no_args_is_help=True,
                      rich_markup_mode=None,  # plain top-level help: no rich help renderer to import (fast start)
                      cls=RootGroup)  # the one error path of the CLI
    app.callback()(root)
    return app

