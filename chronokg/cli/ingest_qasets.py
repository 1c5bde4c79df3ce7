"""CLI commands for the qasets source (registered on the ingest/download/export groups)."""

from __future__ import annotations

import typer


def register(ingest: typer.Typer, download: typer.Typer, export: typer.Typer) -> None:
    """Add this source's commands. Placeholder until the loader lands."""
