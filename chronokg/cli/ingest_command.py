"""The one builder of every `ingest <source>` command, from the parameters its SourceSpec declares as data.

The command's signature is generated (typer reads `__signature__` and the annotations), so help text,
option names, defaults and errors are what a hand-written command with those parameters would give.
"""

from __future__ import annotations

import datetime as dt
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from chronokg.cli.common import console, guarded, opened, parse_day
from chronokg.ingest.options import IngestOptions, OptionError, Param, resolve
from chronokg.ingest.sources import SourceSpec

_TYPES: dict[str, Any] = {"path": Path, "str": str, "int": int, "float": float, "bool": bool, "date": dt.date}


def annotation(p: Param) -> Any:
    """`Annotated[type, typer.Argument|Option(...)]` for one declared parameter."""
    base: Any = resolve(p.enum) if p.kind == "enum" and p.enum else _TYPES[p.kind]
    kind: Any = list[base] if p.multiple else base
    if not p.required and p.default is None:
        kind = kind | None
    extra: dict[str, Any] = {}
    if p.kind == "date":
        extra.update(parser=parse_day, metavar=p.metavar or "DATE")
    elif p.metavar:
        extra["metavar"] = p.metavar
    if p.argument:
        return Annotated[kind, typer.Argument(help=p.help, **extra)]
    return Annotated[kind, typer.Option(*p.flags, help=p.help, **extra)]


def signature(params: tuple[Param, ...]) -> inspect.Signature:
    return inspect.Signature([
        inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation(p),
                          default=inspect.Parameter.empty if p.required else p.default)
        for p in params])


def given(options: IngestOptions, values: dict[str, Any]) -> dict[str, Any]:
    """Each value under its `to` name, None and empty lists left out (what a load records to replay it)."""
    return {p.keyword: values[p.name] for p in options.params if values[p.name] not in (None, [], ())}


def keywords(options: IngestOptions, values: dict[str, Any]) -> dict[str, Any]:
    """The loader's keywords: each value under its `to` name, None and empty lists left out, then `prepare`."""
    out = given(options, values)
    if options.prepare is None:
        return out
    try:
        prepared: dict[str, Any] = resolve(options.prepare)(out)
    except OptionError as exc:
        raise typer.BadParameter(str(exc), param_hint=exc.option) from None
    return prepared


def command(spec: SourceSpec) -> Callable[..., None]:
    """The `ingest <spec.name>` callback: load in one transaction, print the summary and the source's report."""
    options = spec.ingest
    assert options is not None, f"{spec.name} declares no ingest options"

    def ingest(**values: Any) -> None:
        from chronokg.cli.progress import progress_bar
        from chronokg.cli.render import load_summary

        def body() -> None:
            from chronokg.ingest.replay import load

            keywords(options, values)  # a bad value is refused before the store is opened
            with opened(load=True) as s, progress_bar(console) as bar:
                summary = load(s, spec.name, given(options, values), progress=bar)
            load_summary(console, summary)
            if options.report:
                resolve(options.report)(summary)
        guarded(body)

    sig = signature(options.params)
    ingest.__signature__ = sig  # type: ignore[attr-defined]
    ingest.__annotations__ = {name: p.annotation for name, p in sig.parameters.items()}
    ingest.__name__ = ingest.__qualname__ = f"ingest_{spec.name.replace('-', '_')}"
    return ingest


def register(app: typer.Typer, spec: SourceSpec) -> None:
    """Add `ingest <spec.name>` to the `ingest` group."""
    assert spec.ingest is not None
    app.command(spec.name, help=spec.ingest.help)(command(spec))
