"""Rows to a rich table or to JSON (one array of row objects on stdout, for scripts)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.console import Console

    from chronokg.ingest.common import LoadSummary


class Format(StrEnum):
    table = "table"
    json = "json"


def _cell(value: Any, width: int | None) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        value = ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in value)
    text = str(value)
    if width and len(text) > width:
        return text[: width - 1] + "…"
    return text


def emit(console: Console, rows: Sequence[BaseModel], fmt: Format, title: str | None = None,
         columns: Sequence[str] | None = None, wrap: int | None = 80) -> None:
    if fmt is Format.json:
        payload = [r.model_dump(mode="json") for r in rows]
        print(json.dumps(payload, ensure_ascii=False, indent=2))
        return
    if not rows:
        console.print(f"[yellow]no rows[/]{f' for {title}' if title else ''}")
        return
    from rich.table import Table

    cols = list(columns or type(rows[0]).model_fields)
    table = Table(title=title, show_lines=False, header_style="bold cyan")
    for c in cols:
        table.add_column(c, overflow="fold")
    for r in rows:
        data = r.model_dump()
        table.add_row(*(_cell(data.get(c), wrap) for c in cols))
    console.print(table)


def load_summary(console: Console, summary: LoadSummary) -> None:
    """What a load read and what it changed: per label/type, created / updated / unchanged, from content."""
    from rich.table import Table

    table = Table(title=f"{summary.source_kind}: {summary.records} records from {len(summary.paths)} file(s)",
                  header_style="bold cyan")
    report = summary.report
    columns = ["label / type", "in input", "before", "after"]
    columns += ["created", "updated", "unchanged"] if report is not None else ["added"]
    for c in columns:
        table.add_column(c, justify="left" if c == "label / type" else "right")
    added = summary.added
    for key in sorted({*summary.staged, *summary.after}):
        cells = [key, str(summary.staged.get(key, 0)), str(summary.before.get(key, 0)),
                 str(summary.after.get(key, 0))]
        if report is None:
            cells.append(f"{added.get(key, 0):+d}")
        elif key in report.edges_created or key in report.edges_updated:
            cells += [str(report.edges_created.get(key, 0)), str(report.edges_updated.get(key, 0)), ""]
        else:
            cells += [str(report.created.get(key, 0)), str(report.updated.get(key, 0)),
                      str(report.unchanged.get(key, "")) if key in report.unchanged else ""]
        table.add_row(*cells)
    console.print(table)
    if report is not None and report.events:
        words = {"retracted": "facts retracted by this release", "reopened": "facts asserted again",
                 "known_earlier": "facts now known from an earlier release"}
        console.print("; ".join(f"{n} {words.get(k, k)}" for k, n in sorted(report.events.items()) if n))
    if summary.unchanged:
        console.print("[green]store unchanged: everything in the input was already loaded[/]")
