"""Tables of metric values, generic over any `MetricValue`: a row per group, a column per series.

A group whose value is a dict with a headline number (accuracy, share, rate, value, mean) becomes one row,
"headline [interval] (n …)"; any other dict is spread over one row per key ("group · key"). So a new family's
metrics get a readable table without code here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chronokg.metrics.spec import MetricValue
from chronokg.reports.series import Series

HEADLINES = ("accuracy", "share", "rate", "value", "mean", "score")
INTERVALS = ("wilson95", "bootstrap95", "ci95", "ci")
SIZES = ("n", "count")
MISSING = "—"


@dataclass(frozen=True)
class Table:
    headers: list[str]
    rows: list[list[str]]
    numeric: bool = True  # columns after the first hold numbers (right-aligned)


def number(value: Any) -> str:
    """Numbers to 3 decimals, counts with thousands separators, None as a dash."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):  # years stay years: separators from 10,000 on
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, float):
        if abs(value) < 1e-12:  # rounding noise of an interval bound at 0
            return "0.000"
        return f"{value:.3g}" if abs(value) < 1e-3 or abs(value) >= 1e4 else f"{value:.3f}"
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, int | float) for v in value):
        return f"[{number(float(value[0]))}, {number(float(value[1]))}]"
    if isinstance(value, dict):
        return ", ".join(f"{k} {number(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(number(v) for v in value)
    return str(value)


def headline(cell: dict[str, Any]) -> str | None:
    """"0.225 [0.206, 0.246] (n 1,677)" for a dict with a headline key, else None."""
    key = next((k for k in HEADLINES if k in cell and not isinstance(cell[k], dict | list)), None)
    if key is None:
        return None
    text = number(cell[key])
    interval = next((cell[k] for k in INTERVALS if isinstance(cell.get(k), list | tuple)), None)
    if interval is not None:
        text += " " + number(interval)
    size = next((k for k in SIZES if isinstance(cell.get(k), int) and k != key), None)
    if size is not None:
        text += f" ({size} {number(cell[size])})"
    return text


def flatten(value: MetricValue) -> dict[str, str]:
    """Row name -> cell text of one metric value (the value first, then its groups)."""
    rows: dict[str, str] = {}
    if value.value is not None:
        rows["value"] = number(value.value)
    for key, group in value.groups.items():
        if isinstance(group, dict):
            line = headline(group)
            if line is not None:
                rows[str(key)] = line
                continue
            for sub, inner in group.items():
                rows[f"{key} · {sub}"] = number(inner)
        else:
            rows[str(key)] = number(group)
    return rows


def metric_table(metric: str, series: Sequence[Series]) -> Table:
    """One metric, the series side by side: the union of their rows, in order of first appearance."""
    columns = [(s.label, flatten(v) if (v := s.get(metric)) is not None else {}) for s in series]
    names: dict[str, None] = {}
    for _, rows in columns:
        names.update(dict.fromkeys(rows))
    return Table(headers=[metric, *(label for label, _ in columns)],
                 rows=[[name, *(rows.get(name, MISSING) for _, rows in columns)] for name in names])


PER_TABLE = 4  # series columns in one table: a wider one would not fit a page; more series give more tables


def empty(cell: str) -> bool:
    """No value: a dash, or a dash with its count ("— (count 0)")."""
    return cell == MISSING or cell.startswith(MISSING + " ")


def split(table: Table, per: int = PER_TABLE) -> list[Table]:
    """`table` as tables of at most `per` value columns each (its first column in every one), balanced: 5 columns
    give 3 + 2, not 4 + 1."""
    columns = len(table.headers) - 1
    if columns <= per:
        return [table]
    parts = -(-columns // per)
    size = -(-columns // parts)
    return [Table(headers=[table.headers[0], *table.headers[1 + k:1 + k + size]],
                  rows=[[row[0], *row[1 + k:1 + k + size]] for row in table.rows], numeric=table.numeric)
            for k in range(0, columns, size)]


def fitted(whole: Table) -> tuple[list[Table], list[str]]:
    """`whole` with its value columns that hold no value left out, split to fit a page: (tables, the headers of
    the columns left out). No tables where no column has a value."""
    keep = [j for j in range(1, len(whole.headers)) if any(not empty(row[j]) for row in whole.rows)]
    gone = [whole.headers[j] for j in range(1, len(whole.headers)) if j not in keep]
    if not keep:
        return [], gone
    shown = Table(headers=[whole.headers[0], *(whole.headers[j] for j in keep)],
                  rows=[[row[0], *(row[j] for j in keep)] for row in whole.rows], numeric=whole.numeric)
    return split(shown), gone


def headline_table(metrics: Sequence[str], series: Sequence[Series]) -> Table:
    """Every metric with a single value, one row each, the series side by side."""
    rows = []
    for metric in metrics:
        cells = [number(v.value) if (v := s.get(metric)) is not None else MISSING for s in series]
        if any(c != MISSING for c in cells):
            rows.append([metric, *cells])
    return Table(headers=["metric", *(s.label for s in series)], rows=rows)


def details(metric: str, series: Sequence[Series], limit: int = 12) -> list[str]:
    """A line per series with the metric's details: scalars and small tables as they are, large ones by size
    (they are in metrics.json)."""
    lines: list[tuple[str, str]] = []
    for s in series:
        value = s.get(metric)
        if value is None or not value.details:
            continue
        parts = []
        for key, item in value.details.items():
            if isinstance(item, dict) and len(item) > limit:
                parts.append(f"{key}: {len(item):,} entries (in metrics.json)")
            elif isinstance(item, list) and len(item) > limit:
                parts.append(f"{key}: {len(item):,} items (in metrics.json)")
            else:
                parts.append(f"{key}: {number(item)}")
        lines.append((s.label, "; ".join(parts)))
    if len(lines) > 1 and len({text for _, text in lines}) == 1:
        return [f"all: {lines[0][1]}"]
    return [f"{label}: {text}" for label, text in lines]
