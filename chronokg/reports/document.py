"""A report as a list of blocks, written out twice: Markdown (plots linked as PNG files) and one self-contained
HTML page (plots embedded as base64 SVG, styles inline, no scripts, nothing fetched)."""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from chronokg.controls import visible
from chronokg.reports.tables import Table


@dataclass(frozen=True)
class Heading:
    level: int
    text: str

    @property
    def anchor(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.text.lower()).strip("-")


@dataclass(frozen=True)
class Para:
    text: str


@dataclass(frozen=True)
class Bullets:
    items: list[str]


@dataclass(frozen=True)
class TableBlock:
    table: Table


@dataclass(frozen=True)
class FigureBlock:
    name: str
    title: str
    caption: str
    svg: bytes


@dataclass(frozen=True)
class Contents:
    """The table of contents: the level-2 headings."""


Block = Heading | Para | Bullets | TableBlock | FigureBlock | Contents


# Every character Markdown (CommonMark, GFM, and the `$` of math extensions) may read as markup: escaped with a
# backslash, so that text from the runs (model names, run ids, group names, a title) renders as itself.
# An underscore inside a word (snake_case) is no emphasis, and an ampersand only starts an entity (`&lt;`): both
# stay as written elsewhere.
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>#!|~$]|&(?=#?\w+;)|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
_MD_BLOCK_START = re.compile(r"^(\s*)([-+=]|\d+[.)])")  # a list item, a setext underline, an ordered item


def md_text(text: str, *, cell: bool = False) -> str:
    """`text` as Markdown that renders as the text itself, on one line (in a table `cell`, where no line starts a
    list)."""
    escaped = _MD_SPECIAL.sub(r"\\\1", " ".join(visible(text).splitlines()))
    if cell:
        return escaped
    return _MD_BLOCK_START.sub(lambda m: f"{m.group(1)}{m.group(2)[:-1]}\\{m.group(2)[-1]}", escaped, count=1)


def markdown(blocks: Sequence[Block]) -> str:
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            out.append("#" * b.level + " " + md_text(b.text))
        elif isinstance(b, Para):
            out.append(md_text(b.text))
        elif isinstance(b, Bullets):
            out.append("\n".join(f"- {md_text(item)}" for item in b.items))
        elif isinstance(b, TableBlock):
            t = b.table
            lines = ["| " + " | ".join(md_text(h, cell=True) for h in t.headers) + " |",
                     "|" + "|".join([":---", *[("---:" if t.numeric else ":---")] * (len(t.headers) - 1)]) + "|"]
            lines += ["| " + " | ".join(md_text(c, cell=True) for c in row) + " |" for row in t.rows]
            out.append("\n".join(lines))
        elif isinstance(b, FigureBlock):
            png, svg = (quote(f"plots/{b.name}.{ext}") for ext in ("png", "svg"))
            out.append(f"![{md_text(b.title)}]({png})\n\n*{md_text(b.caption)}* ([SVG]({svg}))")
        elif isinstance(b, Contents):
            out.append("\n".join(f"- [{md_text(h.text)}](#{h.anchor})" for h in blocks
                                 if isinstance(h, Heading) and h.level == 2))
    return "\n\n".join(out) + "\n"


CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; max-width: 1200px;
       margin: 2em auto; padding: 0 1em; color: #222; line-height: 1.45; overflow-wrap: anywhere; }
h1, h2, h3 { line-height: 1.2; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
table { border-collapse: collapse; margin: .8em 0; font-size: 0.85em; max-width: 100%; }
/* a table fits the page, never scrolls: at most PER_TABLE value columns each (more give more tables); a header
   or a cell holding a word too long for a column (a long model name, a path) breaks anywhere, others between
   words */
th, td { overflow-wrap: break-word; } .long { overflow-wrap: anywhere; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: right; vertical-align: top; }
th:first-child, td:first-child, table.text th, table.text td { text-align: left; }
th { background: #f4f6f8; } tr:nth-child(even) td { background: #fafafa; }
figure { margin: 1.2em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.85em; color: #444; max-width: 60em; }
ul { padding-left: 1.3em; } li { margin: .15em 0; }
"""


def page(title: str, blocks: Sequence[Block]) -> str:
    esc = _esc
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">', f"<title>{esc(title)}</title>",
           f"<style>{CSS}</style>", "</head>", "<body>", body(blocks), "</body>", "</html>"]
    return "\n".join(out) + "\n"


def _esc(text: str) -> str:
    """`text` as HTML text, its controls and bidirectional controls shown escaped (`\\u202e`), never acted on."""
    return html.escape(visible(text))


def body(blocks: Sequence[Block]) -> str:
    """The blocks as HTML elements (what `page` puts in <body>; the explorer shows it inside its own page)."""
    esc = _esc
    out: list[str] = []
    for b in blocks:
        if isinstance(b, Heading):
            out.append(f'<h{b.level} id="{b.anchor}">{esc(b.text)}</h{b.level}>')
        elif isinstance(b, Para):
            out.append(f"<p>{esc(b.text)}</p>")
        elif isinstance(b, Bullets):
            out.append("<ul>" + "".join(f"<li>{esc(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, TableBlock):
            t = b.table
            head = "".join(f"<th{_long(h)}>{esc(h)}</th>" for h in t.headers)
            rows = "".join("<tr>" + "".join(f"<td{_long(c)}>{esc(c)}</td>" for c in row) + "</tr>" for row in t.rows)
            kind = "" if t.numeric else ' class="text"'
            out.append(f"<table{kind}><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif isinstance(b, FigureBlock):
            data = base64.b64encode(b.svg).decode("ascii")
            out.append(f'<figure id="plot-{b.name}"><img alt="{esc(b.title)}" src="data:image/svg+xml;base64,'
                       f'{data}"><figcaption><b>{esc(b.title)}.</b> {esc(b.caption)}</figcaption></figure>')
        elif isinstance(b, Contents):
            out.append("<ul>" + "".join(f'<li><a href="#{h.anchor}">{esc(h.text)}</a></li>' for h in blocks
                                        if isinstance(h, Heading) and h.level == 2) + "</ul>")
    return "\n".join(out)


def _long(cell: str) -> str:
    """A cell holding a word too long for a column (a path, a run id, a long name) may break it anywhere; other
    cells keep their words whole."""
    return ' class="long"' if any(len(word) > 32 for word in cell.split()) else ""
