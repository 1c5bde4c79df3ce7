"""Queries that benchmark generation reads (answer keys of generated questions)."""

from __future__ import annotations
