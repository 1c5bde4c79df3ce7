"""How long one text field of an input may be: past its source's limit a record is refused, not stored.

A field of megabytes is a broken or hostile file, not a fact: stored, it would be copied into every answer, table
and page that shows it. Each loader declares its limit as `MAX_TEXT` in its module (README, "Input limits").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chronokg.errors import InputError

DEFAULT_MAX_TEXT = 100_000  # characters: the readers' limit where a source declares none


def too_long(where: str, size: int, limit: int) -> str:
    shown = where if len(where) <= 80 else where[:79] + "…"
    return f"field {shown!r} is {size:,} characters (at most {limit:,} for this source)"


def check_text(value: str, path: Path | str, record: str | int | None, where: str, limit: int) -> str:
    """`value`, or an InputError naming the field when it is longer than `limit` characters."""
    if len(value) > limit:
        raise InputError(path, record, too_long(where, len(value), limit))
    return value


def check_texts(obj: Any, path: Path | str, record: str | int | None, limit: int, raw_size: int | None = None) -> Any:
    """`obj`, or an InputError naming the first string (value or key) longer than `limit` characters.

    `raw_size`: the length of the text `obj` was parsed from; no string inside can be longer, so a record
    shorter than the limit is not walked at all (almost every record of every real input).
    """
    if raw_size is not None and raw_size <= limit:
        return obj
    stack: list[tuple[Any, str]] = [(obj, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            check_text(value, path, record, where or "(the record)", limit)
        elif isinstance(value, dict):
            for key, child in value.items():
                name = f"{where}.{key}" if where else str(key)
                if isinstance(key, str) and len(key) > limit:
                    raise InputError(path, record, f"a key in {where or 'the record'!r} is {len(key):,} characters "
                                                   f"(at most {limit:,} for this source)")
                stack.append((child, name))
        elif isinstance(value, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(value))
    return obj
