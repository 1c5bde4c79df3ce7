"""Text shown to people with its control characters visible, never acted on: an escape sequence (C0/C1) would
restyle or move a terminal's cursor, and a bidirectional control (embeddings and overrides U+202A-202E, isolates
U+2066-2069) reverses the rest of its line in a bidi terminal, editor or browser. Standard library only: the CLI,
the reports and the plots share these two functions."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
BIDI = re.compile(r"[\u202a-\u202e\u2066-\u2069]")


def _escape_one(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(value: str) -> str:
    """`value` with every control shown as `\\xNN` and every bidirectional control as `\\u202e` (a tab a space;
    a newline kept)."""
    return _CONTROL.sub(_escape_one, value.replace("\t", " "))


def json_safe(text: str) -> str:
    """JSON text with C1, bidirectional and line-separator characters written as `\\uXXXX` escapes: the same JSON
    value, none of them raw (json escapes C0 itself). Such characters only occur inside JSON strings, where the
    escape means the character."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
