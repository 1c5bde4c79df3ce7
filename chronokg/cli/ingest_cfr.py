"""CLI commands for the cfr source."""

from __future__ import annotations

from chronokg.cli.common import Groups


def register(groups: Groups) -> None:
    """Add this source's commands to the ingest/download/export/generate groups. Placeholder until the loader lands."""
