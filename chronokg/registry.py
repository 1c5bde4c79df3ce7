"""One generic registry for every extension point (sources, queries, families, clients, metrics, providers).

Entries may be objects or lazy `"module:attr"` strings, resolved on first use, so
listing what exists never imports the heavy module behind an entry.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Generic, TypeVar, cast

from chronokg.errors import ChronoKGError

T = TypeVar("T")


class UnknownEntry(ChronoKGError, KeyError):
    """A name that is not registered; the message lists the names that are."""

    def __str__(self) -> str:
        return str(self.args[0])


class Registry(Generic[T]):
    """Name -> T, with lazy `"package.module:attr"` entries and one clear error for unknown names."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: dict[str, T | str] = {}

    def register(self, name: str, entry: T | str, *, replace: bool = False) -> None:
        if name in self._entries and not replace:
            raise ChronoKGError(f"{self.what} {name!r} is already registered")
        self._entries[name] = entry

    def get(self, name: str) -> T:
        try:
            entry = self._entries[name]
        except KeyError:
            known = ", ".join(sorted(self._entries)) or "none"
            raise UnknownEntry(f"unknown {self.what} {name!r} (known: {known})") from None
        if isinstance(entry, str):
            module, _, attr = entry.partition(":")
            resolved = cast(T, getattr(importlib.import_module(module), attr))
            self._entries[name] = resolved
            return resolved
        return entry

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def items(self) -> Iterator[tuple[str, T]]:
        for name in self.names():
            yield name, self.get(name)
