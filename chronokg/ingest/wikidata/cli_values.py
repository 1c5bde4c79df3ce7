"""`ingest wikidata` values to loader keywords: --properties becomes a `Selection`."""

from __future__ import annotations

from typing import Any

from chronokg.ingest.options import OptionError
from chronokg.ingest.wikidata import Selection


def prepare(values: dict[str, Any]) -> dict[str, Any]:
    """The loader's keywords from the command's values: `properties` parsed, a bad list named as --properties."""
    out = dict(values)
    try:
        out["selection"] = Selection.parse(out.pop("properties"))
    except ValueError as exc:
        raise OptionError(str(exc), "--properties") from None
    return out
