"""Verbatim prompt templates of a family: `prompts/<family>/<name>.txt`, checked against recorded sha256s.

Each family's `<family>_prompts.py` keeps its `SHA256` table (template name -> hash of the file's
bytes) and reads its templates through `read`; `mismatches` is its `check()`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from importlib import resources


def read(family: str, name: str, known: Mapping[str, str]) -> str:
    """The text of template `name` of `family` (a key of its hash table `known`)."""
    if name not in known:
        raise KeyError(f"no {family} template {name!r} (known: {', '.join(known)})")
    path = resources.files("chronokg.bench.families") / "prompts" / family / f"{name.lower()}.txt"
    return path.read_bytes().decode("utf-8")


def mismatches(family: str, known: Mapping[str, str]) -> list[str]:
    """Names of the templates whose text no longer matches its recorded hash (empty: all verbatim)."""
    return [n for n, h in known.items()
            if hashlib.sha256(read(family, n, known).encode("utf-8")).hexdigest() != h]
