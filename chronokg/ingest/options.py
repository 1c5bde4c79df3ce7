"""A source's `ingest <source>` parameters as data, so the CLI builds the command and `ingest` never imports `cli`.

Declared next to each source in `sources.py`; nothing here imports a source's module (an enum is named as
`module:Name` and imported only when the command is built), so `chronokg ingest --help` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

Kind = Literal["path", "str", "int", "float", "bool", "date", "enum"]


class Param(BaseModel):
    """One argument or option of `ingest <source>`.

    `to` is the loader keyword it fills (default: `name`); a value of None (or an empty list) is left out, so
    the loader's own default applies. `flags` are the option names when they are not `--<name-with-dashes>`
    (a bool with explicit flags has no `--no-` form). A date is read as YYYY-MM-DD or YYYY.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: Kind
    help: str | None = None
    default: Any = None
    required: bool = False
    multiple: bool = False
    argument: bool = False
    flags: tuple[str, ...] = ()
    metavar: str | None = None
    enum: str | None = None  # `module:Name` of the StrEnum a `kind="enum"` value is read as
    to: str | None = None

    @property
    def keyword(self) -> str:
        return self.to or self.name


class IngestOptions(BaseModel):
    """The `ingest <source>` command: its help, its parameters, and the hooks around the loader.

    `prepare` (`module:function`, ingest layer) turns the parsed values into loader keywords where one option
    is not one keyword (UMLS's --rela/--all-relations); it raises `OptionError` for a bad value. `report`
    (`module:function`, CLI layer, named here as text and never imported by `ingest`) prints what the source
    adds after the common load summary.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    help: str
    params: tuple[Param, ...]
    prepare: str | None = None
    report: str | None = None


class OptionError(Exception):
    """A value the CLI takes but the source cannot use: the CLI shows it as a bad parameter `option`."""

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


def resolve(ref: str) -> Any:
    """`package.module:name` (or `:Class.attr`) to the object, importing the module."""
    module, _, name = ref.partition(":")
    found: Any = importlib.import_module(module)
    for part in name.split("."):
        found = getattr(found, part)
    return found


DATE_HELP = "YYYY-MM-DD (or YYYY)"
RELEASE_DATE = Param(name="release_date", kind="date", help=DATE_HELP)


__all__ = ["DATE_HELP", "RELEASE_DATE", "IngestOptions", "OptionError", "Param", "resolve"]
