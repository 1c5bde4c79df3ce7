"""One generic registry for every extension point (sources, queries, families, clients, metrics, providers).

Entries may be objects or lazy `"module:attr"` strings, resolved on first use, so
listing what exists never imports the heavy module behind an entry.

A registry made with `group=` also holds what installed packages declare in the entry-point group
`chronokg.<group>`, read once, on its first lookup (not at import): so a provider, source or family from another
package, or from a higher layer of this one, is found whatever was imported before. An entry point
`name = "module:attr"` is one lazy entry; `name = "module"` is a module imported on that first lookup, whose
import registers its entries itself (queries, metrics and plots register with a decorator). See docs/extending.md.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import Generic, TypeVar, cast

from chronokg.errors import ChronoKGError

T = TypeVar("T")


class UnknownEntry(ChronoKGError, KeyError):
    """A name that is not registered; the message lists the names that are."""

    def __str__(self) -> str:
        return str(self.args[0])


PREFIX = "chronokg."
_DISCOVERY = threading.RLock()


@functools.cache
def declared_entry_points() -> dict[str, tuple[tuple[str, str], ...]]:
    """Every installed package's `chronokg.*` entry points, group -> ((name, value), ...), read once per process.

    One scan serves every registry. It reads the `entry_points.txt` of each `*.dist-info` / `*.egg-info` folder on
    sys.path, as importlib.metadata's path finder does (the first of a name on sys.path wins), and parses only files
    holding a `[chronokg.` group: a few ms where `importlib.metadata.entry_points()` takes tens (226 packages).
    """
    found: dict[str, dict[str, str]] = {}
    seen: set[str] = set()
    for folder in sys.path:
        try:
            names = sorted(os.listdir(folder or "."))
        except OSError:
            continue
        for name in names:
            if not name.endswith((".dist-info", ".egg-info")):
                continue
            dist = name.rpartition(".")[0].partition("-")[0].lower().replace("-", "_").replace(".", "_")
            if dist in seen:
                continue
            seen.add(dist)
            try:
                with open(os.path.join(folder or ".", name, "entry_points.txt"), encoding="utf-8") as file:
                    text = file.read()
            except OSError:
                continue
            if "[" + PREFIX in text:
                for group, entry, value in parse_entry_points(text):
                    if group.startswith(PREFIX):
                        found.setdefault(group[len(PREFIX):], {}).setdefault(entry, value)
    return {group: tuple(sorted(pairs.items())) for group, pairs in found.items()}


def parse_entry_points(text: str) -> list[tuple[str, str, str]]:
    """(group, name, value) of an `entry_points.txt` (the ini format pip writes)."""
    out: list[tuple[str, str, str]] = []
    group = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
        elif "=" in line and group:
            name, _, value = line.partition("=")
            out.append((group, name.strip(), value.strip()))
    return out


class Registry(Generic[T]):
    """Name -> T, with lazy `"package.module:attr"` entries and one clear error for unknown names.

    `group`: the entry-point group `chronokg.<group>` whose entries join this registry on its first lookup.
    """

    def __init__(self, what: str, group: str | None = None) -> None:
        self.what = what
        self.group = group
        self._entries: dict[str, T | str] = {}
        self._discovered = group is None
        self._discovering = False
        self.declared_by: dict[str, str] = {}  # name -> the entry point's value, for entries found that way

    def register(self, name: str, entry: T | str, *, replace: bool = False) -> None:
        if name in self._entries and not replace:
            current = self._entries[name]
            if isinstance(current, str) and not isinstance(entry, str) and _defines(current, entry):
                self._entries[name] = entry  # the module a lazy entry names registering that same entry
                return
            raise ChronoKGError(f"{self.what} {name!r} is already registered")
        self._entries[name] = entry

    def discover(self) -> None:
        """Join the entry points of `chronokg.<group>` (once; a no-op for a registry without a group).

        A name already registered keeps its entry (a package cannot replace a built-in by declaring it); a
        module entry point is imported here, and its import registers what it holds.
        """
        if self._discovered:
            return
        with _DISCOVERY:  # one thread reads the group, the others wait for all of it
            if self._discovered or self._discovering:  # a module imported below looking this registry up
                return
            self._discovering = True
            try:
                assert self.group is not None
                for name, value in declared_entry_points().get(self.group, ()):
                    if ":" in value:
                        if name not in self._entries:
                            self._entries[name] = value.replace(" ", "")
                            self.declared_by[name] = value
                    else:
                        importlib.import_module(value.strip())
                self._discovered = True
            finally:
                self._discovering = False

    def get(self, name: str) -> T:
        self.discover()
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
        self.discover()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self.discover()
        return len(self._entries)

    def names(self) -> list[str]:
        self.discover()
        return sorted(self._entries)

    def items(self) -> Iterator[tuple[str, T]]:
        for name in self.names():
            yield name, self.get(name)


def _defines(lazy: str, entry: object) -> bool:
    """Whether `entry` is what the lazy `"module:attr"` names, registered by that module as it is imported."""
    module, _, attr = lazy.partition(":")
    loaded = sys.modules.get(module)
    return loaded is not None and getattr(loaded, attr, entry) is entry
