"""The one exception root, and the errors every part of chronokg may raise.

A leaf module: it imports nothing from chronokg, so every package can use it.
The CLI turns any `ChronoKGError` into one red line and exit code 2.
"""

from __future__ import annotations

from pathlib import Path


class ChronoKGError(Exception):
    """Base class for chronokg errors."""


class StoreError(ChronoKGError):
    """The store could not be opened, or a statement failed in the engine."""


class StoreBusy(StoreError):
    """Another process holds the store's writer lease (after waiting for it, if asked to)."""


class InputError(ChronoKGError):
    """Bad input data: names the file and the record so the user can fix it."""

    def __init__(self, path: str | Path, record: str | int | None, message: str) -> None:
        self.path = str(path)
        self.record = record
        self.detail = message
        where = self.path if record is None else f"{self.path}, record {record}"
        super().__init__(f"{where}: {message}")


class QueryRefused(ChronoKGError):
    """A query from outside was refused by the read-only guard; `reason` says why."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"refused: {reason}")


class QueryLimitExceeded(QueryRefused):
    """A read ran past one of its limits (time, work, rows or result size) and was stopped."""


class ModelError(ChronoKGError):
    """A model client could not produce a completion (bad request, auth, exhausted retries, ...)."""
