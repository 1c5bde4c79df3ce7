"""`ingest umls` values to loader keywords: --rela/--all-relations become `relas`, --release-date `release_dates`."""

from __future__ import annotations

from typing import Any

from chronokg.ingest.options import OptionError
from chronokg.ingest.umls import CHROKNOW_RELAS


def parse_release_dates(values: list[str]) -> dict[str, str]:
    """`2020AA=2020-05-04` options to {release: date text}; the loader checks the dates."""
    out: dict[str, str] = {}
    for value in values:
        name, sep, date = value.partition("=")
        if not sep or not name.strip() or not date.strip():
            raise OptionError(f"{value!r}: expected RELEASE=DATE, e.g. 2020AA=2020-05-04", "--release-date")
        out[name.strip().upper()] = date.strip()
    return out


def prepare(values: dict[str, Any]) -> dict[str, Any]:
    """The loader's keywords from the command's values (None and empty lists already left out)."""
    out = dict(values)
    rela: list[str] | None = out.pop("rela", None)
    all_relations: bool = out.pop("all_relations", False)
    if all_relations and rela:
        raise OptionError("give either --rela or --all-relations", "--all-relations")
    out["release_dates"] = parse_release_dates(out.pop("release_date", None) or [])
    out["relas"] = None if all_relations else (rela or list(CHROKNOW_RELAS))
    return out
