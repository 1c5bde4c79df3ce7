"""`chronokg query ...`: one command per registered query, built from its spec.

The options of `chronokg query NAME` are the fields of the query's parameter
model (the alias where it has one: `--from`, `--org`), so the CLI, the Python
API and `chronokg query run NAME --params '{...}'` take the same parameters.
"""

from __future__ import annotations

import datetime as dt
import inspect
import json
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel

from chronokg.cli.common import FormatOpt, console, guarded, opened, parse_day
from chronokg.cli.lazy import Command, lazy_group
from chronokg.cli.render import Format, emit, json_text, say


def _base(annotation: Any) -> tuple[Any, bool]:
    """(the non-None type, whether None is allowed) of a field annotation."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else str), True
    return annotation, False


def _choices(item: Any) -> str:
    members = getattr(item, "__members__", None)
    return "one of " + ", ".join(members) if members else "values"


def split_lists(values: dict[str, Any]) -> dict[str, Any]:
    """Comma-separated list/tuple flags as lists; unset flags dropped (the model's defaults apply)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, list):
            value = [v.strip() for item in value for v in str(item).split(",") if v.strip()]
        elif isinstance(value, str) and "," in value and key.endswith(("years", "range")):
            value = [v.strip() for v in value.split(",")]
        out[key] = value
    return out


def option_parameter(name: str, field: Any) -> inspect.Parameter:
    """A typer option for one field of a pydantic model (its alias, if any, names the flag)."""
    option = "--" + (field.alias or name).replace("_", "-")
    base, optional = _base(field.annotation)
    required = field.is_required()
    default = inspect.Parameter.empty if required else field.default
    help_text = field.description
    origin = typing.get_origin(base)
    if base is dt.date:
        opt = typer.Option(option, parser=parse_day, metavar="DATE", help=f"{help_text} (YYYY-MM-DD or YYYY)")
        annotation: Any = Annotated[dt.date | None if optional else dt.date, opt]
    elif base is bool:
        annotation = Annotated[bool, typer.Option(f"{option}/--no-{option[2:]}", help=help_text)]
    elif origin is list:
        # A list option is given as comma-separated values (or repeated).
        item = typing.get_args(base)[0]
        default = None if default is inspect.Parameter.empty else default
        annotation = Annotated[list[str] | None, typer.Option(option, help=f"{help_text} (comma-separated; "
                                                                            f"{_choices(item)})")]
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
    elif origin is tuple:
        annotation = Annotated[str | None, typer.Option(option, help=f"{help_text} (FIRST,LAST)")]
        return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation)
    else:
        annotation = Annotated[base | None if optional else base, typer.Option(option, help=help_text)]
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def spec_command(name: str) -> Command:
    """The click command for the registered query `name`."""
    from chronokg.queries.spec import QUERIES

    spec = QUERIES.get(name)
    fields = spec.params.model_fields

    def command(**values: Any) -> None:
        fmt: Format = values.pop("fmt")

        def body() -> None:
            params = spec.validate(values)
            with opened(read_only=True, quick=True) as store:
                results = [(spec, spec.run(store, params))]
                if fmt is Format.table:
                    for other in spec.follow:
                        follow = QUERIES.get(other)
                        results.append((follow, follow.run(store, params.model_dump(by_alias=True))))
            title = f"{spec.name} " + " ".join(f"{k}={v}" for k, v in params.model_dump(by_alias=True).items()
                                               if v not in (None, False))
            for shown, rows in results:
                emit(console, rows, fmt, title=title if shown is spec else shown.name,
                     columns=list(shown.columns) or None)
        guarded(body)

    parameters = [option_parameter(n, f) for n, f in fields.items()]
    parameters.append(inspect.Parameter("fmt", inspect.Parameter.KEYWORD_ONLY, default=Format.table,
                                        annotation=FormatOpt))
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__doc__ = spec.help
    app = typer.Typer(add_completion=False)
    app.command(name)(command)
    return typer.main.get_command(app)


def provider() -> dict[str, Callable[[], Command]]:
    from chronokg.queries.spec import all_queries

    def maker(name: str) -> Callable[[], Command]:
        return lambda: spec_command(name)

    return {name: maker(name) for name, spec in all_queries().items() if "cli" in spec.tags}


def register(query_app: typer.Typer) -> None:
    """`query run`, `query list` and `query cypher` (the per-query commands come from `provider`)."""

    @query_app.command("run")
    def query_run(
        name: Annotated[str, typer.Argument(help="A query name (chronokg query list)")],
        params: Annotated[str, typer.Option("--params", "-p", help="Parameters as a JSON object")] = "{}",
        fmt: FormatOpt = Format.json,
    ) -> None:
        """Run any registered query by name with JSON parameters (the form answer keys use)."""
        from chronokg.errors import ChronoKGError
        from chronokg.queries.spec import all_queries

        def body() -> None:
            try:
                given = json.loads(params)
            except json.JSONDecodeError as exc:
                raise ChronoKGError(f"--params is not JSON: {exc.msg}") from None
            if not isinstance(given, dict):
                raise ChronoKGError("--params must be a JSON object")
            spec = all_queries().get(name)
            with opened(read_only=True, quick=True) as store:
                rows = spec.run(store, given)
            emit(console, rows, fmt, title=name, columns=list(spec.columns) or None)
        guarded(body)

    @query_app.command("batch")
    def query_batch(
        file: Annotated[Path, typer.Argument(help='JSON lines: {"query": NAME, "params": {...}, "id": ...}')],
    ) -> None:
        """Answer many named queries with one store open; one JSON line per question on stdout, in order.

        The whole file is checked first (a bad line names its line number and nothing runs).
        """
        from chronokg.queries.batch import answer, read_batch

        def body() -> None:
            questions = read_batch(file)
            with opened(read_only=True) as store:
                for out in answer(store, questions):
                    typer.echo(json_text(out, indent=None))
        guarded(body)

    @query_app.command("list")
    def query_list(fmt: FormatOpt = Format.table) -> None:
        """Every registered query: its name, parameters and what it answers."""
        from chronokg.queries.spec import all_queries

        class Entry(BaseModel):
            name: str
            parameters: str
            answers: str

        rows = [Entry(name=n, answers=s.help,
                      parameters=", ".join(f.alias or k for k, f in s.params.model_fields.items()))
                for n, s in all_queries().items()]
        emit(console, rows, fmt, title="queries")


query_app = typer.Typer(help="Run a named query from the catalog (chronokg query list).", no_args_is_help=True,
                        cls=lazy_group(provider))


@query_app.command("cypher")
def query_cypher(
    cypher: Annotated[str, typer.Argument(help="One read-only Cypher statement (anything that could write, read "
                                               "files or administer is refused, with the reason)")],
    param: Annotated[list[str] | None, typer.Option("--param", "-p", help="name=value (JSON values allowed)")] = None,
    timeout: Annotated[float | None, typer.Option(help="Time limit in seconds [default: $CHRONOKG_READ_TIMEOUT_S "
                                                        "or 10]", min=0.001)] = None,
    max_rows: Annotated[int | None, typer.Option(help="Rows to return at most [default: 10000]", min=1)] = None,
) -> None:
    """Run your own read-only Cypher, within time, work, row and size limits, and print the rows as JSON."""
    from chronokg.cli.common import err
    from chronokg.graph.guard import ReadLimits, guarded_read
    from chronokg.settings import Settings

    def body() -> None:
        params = dict(_parse_param(p) for p in param or [])
        limits = ReadLimits.from_settings(Settings())
        limits = limits.model_copy(update={k: v for k, v in (("timeout_s", timeout), ("max_rows", max_rows))
                                           if v is not None})
        with opened(read_only=True) as s:
            result = guarded_read(s, cypher, params, limits)
        print(json_text(result.rows))
        if result.truncated:
            total = f" of {result.total_rows:,}" if result.total_rows else ""
            say(err, ("note:", "yellow"), f" showing the first {len(result.rows):,}{total} rows (--max-rows); add "
                "LIMIT or ORDER BY to choose which")
    guarded(body)


def _parse_param(text: str) -> tuple[str, Any]:
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise typer.BadParameter(f"{text!r}: expected name=value")
    try:
        return name, json.loads(raw)
    except json.JSONDecodeError:
        return name, raw


register(query_app)

daemon_app = typer.Typer(help="The local query process `chronokg query NAME` calls reuse (one per store and "
                              "settings; exits after CHRONOKG_QUERY_DAEMON_IDLE_S seconds idle, 0: never start one).",
                         no_args_is_help=True)
query_app.add_typer(daemon_app, name="daemon")


@daemon_app.command("status")
def daemon_status(fmt: FormatOpt = Format.table) -> None:
    """The live query processes of this user (kind `query`; `search`: the warm encoder of `retrieve search`):
    process id, store, calls answered, idle time, whether the indexed open (search: the warm encoder) is ready."""
    from chronokg.cli.query_client import processes

    class Process(BaseModel):
        pid: int
        kind: str = "query"
        store: str
        requests: int
        idle_for_s: float
        idle_s: float
        indexed: bool
        socket: str

    rows = [Process.model_validate(p) for p in processes("status")]
    emit(console, rows, fmt, title="query processes")


@daemon_app.command("stop")
def daemon_stop() -> None:
    """Stop every live query and search process of this user (the next call starts one again)."""
    from chronokg.cli.query_client import processes

    stopped = processes("stop")
    print(f"stopped {len(stopped)} query process{'es' if len(stopped) != 1 else ''}")
