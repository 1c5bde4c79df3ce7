"""How long one text field of an input may be: past its source's limit a record is refused, not stored.

A field of megabytes is a broken or hostile file, not a fact: stored, it would be copied into every answer, table
and page that shows it. Each loader declares its limit as `MAX_TEXT` in its module (README, "Input limits").
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from chronokg.errors import InputError

DEFAULT_MAX_TEXT = 100_000  # characters: the readers' limit where a source declares none
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


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


def escapes_surrogate(text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether JSON `text[start:end]` escapes a UTF-16 surrogate (`\\uD800`-`\\uDFFF`): the only way parsed JSON can
    hold a lone one, so text without such an escape need not be walked by `check_unicode`."""
    return _SURROGATE_ESCAPE.search(text, start, len(text) if end is None else end) is not None


def check_unicode(obj: Any, path: Path | str, record: str | int | None) -> Any:
    """`obj`, or an InputError naming the first string (value or key) holding a lone UTF-16 surrogate: JSON can
    escape half a pair (`"\\ud800"`), a string no UTF-8 file or store can hold."""
    stack: list[tuple[Any, str]] = [(obj, "")]
    while stack:
        value, where = stack.pop()
        named = [(value, where)] if isinstance(value, str) else []
        if isinstance(value, dict):
            for key, child in value.items():
                name = f"{where}.{key}" if where else str(key)
                named += [(key, name)] if isinstance(key, str) else []
                stack.append((child, name))
        elif isinstance(value, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(value))
        for text_value, name in named:
            try:
                text_value.encode("utf-8")
            except UnicodeEncodeError as exc:
                shown = name or "(the record)"  # repr escapes the surrogate
                shown = shown if len(shown) <= 80 else shown[:79] + "…"
                raise InputError(path, record, f"field {shown!r} holds a lone UTF-16 surrogate "
                                               f"(\\u{ord(text_value[exc.start]):04x}), which is not text") from None
    return obj
