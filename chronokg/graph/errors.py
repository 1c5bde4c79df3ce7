"""Errors that cross the graph boundary with enough context to act on."""

from __future__ import annotations

from pathlib import Path


class ChronoKGError(Exception):
    """Base class for chronokg errors."""


class StoreError(ChronoKGError):
    """The store could not be opened, or a statement failed in the engine."""


class InputError(ChronoKGError):
    """Bad input data: names the file and the record so the user can fix it."""

    def __init__(self, path: str | Path, record: str | int | None, message: str) -> None:
        self.path = str(path)
        self.record = record
        self.detail = message
        where = self.path if record is None else f"{self.path}, record {record}"
        super().__init__(f"{where}: {message}")
