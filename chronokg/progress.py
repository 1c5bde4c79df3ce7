"""The Progress protocol: where long work reports how far it is (the CLI draws a progress bar).

A leaf module, so loaders, writers, generators and the evaluation runner all report the same way.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Started once per phase with its total (0 when unknown), then advanced as work completes."""

    def start(self, total: int, description: str) -> None: ...

    def advance(self, n: int) -> None: ...
