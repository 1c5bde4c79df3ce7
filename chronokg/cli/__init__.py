"""The `chronokg` command."""

from chronokg.cli.app import main

__all__ = ["main"]
