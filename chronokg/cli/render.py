"""Everything the CLI prints for people: tables and lines, with stored text shown as it is, never as markup.

Stored and user text (a recommendation holding `[strong recommendation]`, a metric named `table3[...]`, a
path, a model spec) reaches the terminal only as a rich `Text` (`text`) or escaped (`esc`), so brackets are
shown, not read as styles, and never crash a command.

Tables (`table`, `emit`) fit the console's width without splitting a number or a word: columns are kept in
priority order while their longest word fits; a column that does not fit is folded under its row
(`name: value`), never shredded into fragments. On a terminal a table that fits whole gets a box; in a pipe or
a log (stdout not a terminal) every table is plain aligned text, no box drawing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from chronokg.controls import json_safe, visible

if TYPE_CHECKING:
    from pydantic import BaseModel
    from rich.console import Console
    from rich.text import Text

    from chronokg.ingest.common import LoadSummary


class Format(StrEnum):
    table = "table"
    json = "json"


_NUMBER = re.compile(r"^[-+−]?[\d,._]*\d[\d,._]*(%|[eE][-+]?\d+)?$")
GAP = 2  # spaces between the columns of a plain table
PROSE = 30  # the least room a column of sentences gets before a less important column is shown beside it


def _visible(value: str) -> str:
    """Control characters (an escape sequence in stored text) shown as `\\xNN`, bidirectional controls as
    `\\u202e`: never sent to the terminal."""
    return visible(value)


def json_text(payload: Any, indent: int | None = 2) -> str:
    """`payload` as JSON for stdout: non-ASCII text kept readable, C1 and bidirectional controls as `\\uXXXX`."""
    return json_safe(json.dumps(payload, ensure_ascii=False, indent=indent, default=str))


def esc(value: Any) -> str:
    """`value` as text safe inside a markup string: `console.print(f"[green]wrote[/] {esc(path)}")`."""
    from rich.markup import escape

    return escape(_visible(str(value)))


def text(value: Any, style: str = "") -> Text:
    """`value` as a rich Text: printed exactly as it is (no markup, no highlighting), optionally styled."""
    from rich.text import Text

    if isinstance(value, Text):
        return value
    return Text(_visible(str(value)), style=style)


def say(console: Console, *parts: Any, indent: int = 0) -> None:
    """One message built from parts: a `(value, style)` pair is styled, anything else is plain text. Stored values
    go in as parts, never into markup: `say(console, ("wrote", "green"), f" {n:,} questions to ", path)`.
    `indent`: every line, wrapped ones included, starts that many spaces in."""
    from rich.text import Text

    line = Text()
    for part in parts:
        if isinstance(part, tuple):
            line.append_text(text(part[0], part[1]))
        else:
            line.append_text(text(part))
    if not indent:
        console.print(line, highlight=False)
        return
    for wrapped in line.wrap(console, max(1, console.width - indent), overflow="fold"):
        wrapped.rstrip()
        console.print(Text(" " * indent) + wrapped if wrapped.plain else wrapped, highlight=False, soft_wrap=True)


def heading(console: Console, title: str) -> None:
    """A section's heading: a rule across a terminal; in a pipe `== title ==`, wrapped, no box drawing."""
    if console.is_terminal:
        console.rule(text(title, "bold"))
        return
    say(console, f"== {title} ==")


def panel(console: Console, body: str, title: str, width: int | None = None) -> None:
    """A block of stored text under a title: boxed on a terminal; in a pipe the title, then the text as it is."""
    from rich.panel import Panel

    if console.is_terminal:
        console.print(Panel(text(body), title=text(title), width=min(console.width, width or console.width)))
        return
    say(console, (title, "bold"))
    for line in body.splitlines():
        say(console, line, indent=2)


def cell(value: Any) -> str:
    """A value as a table cell: None as —, floats to 4 significant digits, lists comma-separated."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, list | tuple):
        return ", ".join(cell(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return str(value)


def _words(value: str) -> list[str]:
    return value.split() or [""]


def _width(value: str) -> int:
    from rich.cells import cell_len

    return cell_len(value)


def _numeric(values: Sequence[str]) -> bool:
    filled = [v for v in values if v not in ("", "—")]
    return bool(filled) and all(_NUMBER.match(v) for v in filled)


def _plan(headers: Sequence[str], cells: list[list[str]], width: int, order: list[int],
          overhead: tuple[int, int]) -> tuple[list[int], dict[int, int]]:
    """(columns shown, their widths): kept in `order` while every shown column's longest word (a column of
    sentences: PROSE cells) fits in `width`; the rest of the room makes names and labels whole, then goes to
    the columns whose text would otherwise wrap. `overhead`: (per column, per table) in characters."""
    per, fixed = overhead

    def longest_word(i: int) -> int:
        return max(_width(w) for v in [headers[i], *(row[i] for row in cells)] for w in _words(v))

    def full(i: int) -> int:
        return max(_width(line) for v in [headers[i], *(row[i] for row in cells)] for line in v.split("\n"))

    def prose(i: int) -> bool:
        return any(len(row[i].split()) >= 4 for row in cells)

    need = {i: max(longest_word(i), min(full(i), PROSE) if prose(i) else 0) for i in order}
    cap = max(8, (width - fixed) // 2)
    chosen: list[int] = []
    for i in order:
        trial = [*chosen, i]
        if sum(min(need[j], cap) for j in trial) + per * len(trial) + fixed <= width or not chosen:
            chosen.append(i)
    room = max(1, width - fixed - per * len(chosen))
    widths = {i: min(need[i], cap, room) for i in chosen}
    spare = room - sum(widths.values())
    for goal in (need, {i: full(i) for i in chosen if not prose(i)}):  # names and labels whole, then sentences
        for i in chosen:
            grow = min(spare, goal.get(i, 0) - widths[i])
            if grow > 0:
                widths[i] += grow
                spare -= grow
    wanting = [i for i in chosen if full(i) > widths[i]]
    while spare > 0 and wanting:
        share = max(1, spare // len(wanting))
        for i in wanting:
            grow = min(share, full(i) - widths[i], spare)
            widths[i] += grow
            spare -= grow
        wanting = [i for i in wanting if full(i) > widths[i]]
    return sorted(chosen), widths


def _wrap(console: Console, value: str, width: int) -> list[str]:
    """`value` in lines of at most `width` cells, broken at spaces; only a word longer than a line is cut."""
    from rich.text import Text

    lines = Text(value).wrap(console, width, overflow="fold", no_wrap=False)
    return [line.plain.rstrip() for line in lines] or [""]


def _pad(value: str, width: int, right: bool) -> str:
    room = width - _width(value)
    return (" " * room + value) if right else (value + " " * room)


def table(console: Console, headers: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None,
          priority: Sequence[str] | None = None) -> None:
    """Rows of values under `headers`, fitted to the console's width (see the module's docstring).

    `priority`: the headers that matter most, first; columns not named follow in their own order. Folded
    columns are the least important ones that do not fit."""
    cells = [[_visible(cell(v)) for v in row] for row in rows]
    heads = [_visible(h) for h in headers]
    title = _visible(title) if title else title  # a title names stored values too (a model's spec)
    named = [heads.index(h) for h in (priority or []) if h in heads]
    order = [*dict.fromkeys([*named, *range(len(heads))])]
    right = {i: _numeric([row[i] for row in cells]) for i in range(len(heads))}
    width = console.width
    if console.is_terminal:
        shown, widths = _plan(heads, cells, width, order, (3, 1))
        if len(shown) == len(heads):
            _boxed(console, heads, cells, title, widths, right)
            return
    shown, widths = _plan(heads, cells, width, order, (GAP, -GAP))
    _plain(console, heads, cells, title, shown, widths, right)


def _boxed(console: Console, heads: list[str], cells: list[list[str]], title: str | None, widths: dict[int, int],
           right: dict[int, bool]) -> None:
    from rich.table import Table

    out = Table(title=text(title) if title else None, header_style="bold cyan")
    for i, head in enumerate(heads):
        out.add_column(text(head), width=widths[i], justify="right" if right[i] else "left", overflow="fold")
    for row in cells:
        out.add_row(*(text(v) for v in row))
    console.print(out)


def _plain(console: Console, heads: list[str], cells: list[list[str]], title: str | None, shown: list[int],
           widths: dict[int, int], right: dict[int, bool]) -> None:
    """Aligned columns separated by spaces; folded columns as `name: value` lines under their row, or once above
    the table where every row holds the same value."""
    from rich.text import Text

    width = console.width
    hidden = [i for i in range(len(heads)) if i not in shown]
    same = [i for i in hidden if len(cells) > 1 and len({row[i] for row in cells}) == 1]
    under = [i for i in hidden if i not in same]

    def emit_line(line: str, style: str = "") -> None:
        console.print(Text(line.rstrip(), style=style), soft_wrap=True, highlight=False)

    if title:
        for line in _wrap(console, title, width):
            emit_line(line, "bold")
    if same:
        for line in _wrap(console, "in every row: " + "; ".join(f"{heads[i]} {cells[0][i]}" for i in same), width):
            emit_line(line)
    blocks: list[list[str]] = []
    for row in [heads, *cells]:
        wrapped = {i: _wrap(console, row[i], widths[i]) for i in shown}
        height = max(len(v) for v in wrapped.values())
        lines = [(" " * GAP).join(_pad(wrapped[i][k] if k < len(wrapped[i]) else "", widths[i], right[i])
                                  for i in shown) for k in range(height)]
        if row is not heads:
            lines += _folded(console, [(heads[i], row[i]) for i in under if row[i] not in ("", "—")], width)
        blocks.append(lines)
    head, *body = blocks
    for line in head:
        emit_line(line, "bold cyan")
    emit_line((" " * GAP).join("-" * widths[i] for i in shown), "dim")
    spaced = any(len(block) > 1 for block in body)  # rows of several lines: a blank line between rows
    for n, block in enumerate(body):
        if spaced and n:
            emit_line("")
        for line in block:
            emit_line(line)
    if under:
        names = ", ".join(heads[i] for i in under)
        for line in _wrap(console, f"(under each row at {width} columns: {names})", width):
            emit_line(line, "dim")


def _folded(console: Console, fields: list[tuple[str, str]], width: int) -> list[str]:
    """A row's folded columns, indented under it: `a: 1; b: 2` on one line where they fit, else one field a line,
    a value of several lines under its name."""
    joined = "; ".join(f"{name}: {value}" for name, value in fields)
    if not fields:
        return []
    if "\n" not in joined and _width(joined) <= width - 2:
        return ["  " + joined]
    out: list[str] = []
    for name, value in fields:
        if "\n" in value:
            out.append(f"  {name}:")
            out += ["    " + line for part in value.split("\n") for line in _wrap(console, part, width - 4)]
        else:
            out += ["  " + line for line in _wrap(console, f"{name}: {value}", width - 2)]
    return out


def emit(console: Console, rows: Sequence[BaseModel], fmt: Format, title: str | None = None,
         columns: Sequence[str] | None = None, priority: Sequence[str] | None = None) -> None:
    """Model rows as a table (`columns`: which fields, in order) or, for scripts, one JSON array on stdout."""
    if fmt is Format.json:
        print(json_text([r.model_dump(mode="json") for r in rows]))
        return
    if not rows:
        say(console, ("no rows", "yellow"), f" for {title}" if title else "")
        return
    cols = list(columns or type(rows[0]).model_fields)
    data = [r.model_dump() for r in rows]
    table(console, cols, [[d.get(c) for c in cols] for d in data], title=title, priority=priority)


def dicts(console: Console, rows: Sequence[dict[str, Any]], fmt: Format, title: str,
          priority: Sequence[str] | None = None) -> None:
    """Plain dict rows (a store's answer) as a table or one JSON array, like `emit`."""
    if fmt is Format.json:
        print(json_text(list(rows)))
        return
    if not rows:
        say(console, ("none", "yellow"), f" ({title})")
        return
    headers = list(rows[0])
    table(console, headers, [[row.get(h) for h in headers] for row in rows], title=title, priority=priority)


def load_summary(console: Console, summary: LoadSummary) -> None:
    """What a load read and what it changed: per label/type, created / updated / unchanged, from content."""
    files = len(summary.paths)
    report = summary.report
    columns = ["label / type", "in input", "before", "after"]
    columns += ["created", "updated", "unchanged"] if report is not None else ["added"]
    added = summary.added
    rows: list[list[Any]] = []
    untouched = 0  # labels and types the store holds that this load neither read nor changed (others' derivations)
    for key in sorted({*summary.staged, *summary.after}):
        cells: list[Any] = [key, summary.staged.get(key, 0), summary.before.get(key, 0), summary.after.get(key, 0)]
        if not cells[1] and cells[2] == cells[3]:
            untouched += 1
            continue
        if report is None:
            cells.append(f"{added.get(key, 0):+d}")
        elif key in report.edges_created or key in report.edges_updated:
            cells += [report.edges_created.get(key, 0), report.edges_updated.get(key, 0), ""]
        else:
            cells += [report.created.get(key, 0), report.updated.get(key, 0),
                      report.unchanged.get(key, "") if key in report.unchanged else ""]
        rows.append(cells)
    table(console, columns, rows,
          title=f"{summary.source_kind}: {summary.records} records from {files} file{'s' if files != 1 else ''}")
    if untouched:
        what = "label or type" if untouched == 1 else "labels and types"
        say(console, f"left out: {untouched} {what} the store holds that this input has none of and this load left "
                     "unchanged (chronokg stats counts them)")
    if report is not None and report.events:
        words = {"retracted": "facts retracted by this release", "reopened": "facts asserted again",
                 "known_earlier": "facts now known from an earlier release"}
        say(console, "; ".join(f"{n} {words.get(k, k)}" for k, n in sorted(report.events.items()) if n))
    if summary.unchanged:
        say(console, ("store unchanged: everything in the input was already loaded", "green"))
