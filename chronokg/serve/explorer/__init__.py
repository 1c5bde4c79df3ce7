"""The explorer: one HTML page (no build step, no network) over the query catalog.

`chronokg serve http` serves it at `/` (its reads at `GET /explore/api/QUERY?params`, through
`ToolHost.call_query`: validated, guarded, in the read workers, behind the same gate as the
tools); `chronokg export html` writes the same page with a slice's answers embedded as JSON
(`chronokg.serve.explorer.static`). The page asks for catalog queries by name either way.
Besides the specs tagged "explorer" (listings, questions, runs, quality checks) it reads
`timeline` and `as-of`, and three combinations: `quality` (every
spec tagged "quality") and `verify` (a generated question's answer key re-run, its evidence
hash compared as `bench verify` does), and `run-report`: the report of the run folders the
server or the export was given (`--runs`), built by the CLI as `chronokg eval report` builds it
(this layer only carries its HTML).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any

from chronokg.errors import ChronoKGError
from chronokg.queries.spec import all_queries, evidence_hash
from chronokg.serve.csp import digest, policy

CORE = frozenset({"timeline", "as-of"})
COMBINED = ("quality", "verify", "run-report")
SLOT = re.compile(r"/\*(CSP|CSS|JS|CONFIG|DATA)\*/")  # the template's slots, found in the template alone
Call = Callable[[str, Mapping[str, Any]], list[dict[str, Any]]]  # a catalog query's rows as JSON values


def readable() -> list[str]:
    """The catalog queries the page may ask for (and the two combinations)."""
    names = [n for n, spec in all_queries().items() if "explorer" in spec.tags or n in CORE]
    return sorted([*names, *COMBINED])


def quality(call: Call) -> list[dict[str, Any]]:
    """Every data-quality check (the specs tagged "quality"), in name order."""
    rows: list[dict[str, Any]] = []
    for name, spec in sorted(all_queries().items()):
        if "quality" in spec.tags:
            rows += call(name, {})
    return rows


def verify(call: Call, question: str) -> list[dict[str, Any]]:
    """Does a generated question's answer key still give the evidence it gave at generation?"""
    keys = call("question-key", {"question": question})
    if not keys or not keys[0].get("key_query"):
        raise ChronoKGError(f"no generated question {question!r} in the store")
    key = keys[0]
    try:
        params = json.loads(key["key_params"] or "{}")
    except json.JSONDecodeError:
        raise ChronoKGError(f"question {question}: its stored answer-key parameters are not JSON") from None
    rows = call(key["key_query"], params)
    new = evidence_hash(rows)
    return [{"question": question, "query": key["key_query"], "rows": len(rows), "agrees": new == key["evidence_hash"],
             "hash": new, "stored_hash": key["evidence_hash"]}]


def run_report_rows(html: str | None) -> list[dict[str, Any]]:
    """`run-report`'s answer: one row holding the report's HTML, none without `--runs`."""
    return [] if html is None else [{"html": html}]


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    # Inside <script type="application/json">: nothing may close the element or open a comment.
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@functools.cache
def _assets() -> tuple[str, str, str]:
    """The page's template, style and script (read once)."""
    assets = resources.files(__package__) / "assets"
    template, css, js = ((assets / name).read_text(encoding="utf-8") for name in ("index.html", "app.css", "app.js"))
    return template, css, js


@functools.cache
def page_policy(*, meta: bool = False) -> str:
    """The page's Content-Security-Policy: its one script and one style by hash, reads from its own origin, images
    only as data (the report's plots); `meta`: the copy inside the page (no `frame-ancestors` there). Hashed once
    per process, like the assets it hashes, not on every page served."""
    _, css, js = _assets()
    return policy(scripts=[digest(js)], styles=[digest(css)], meta=meta)


def page(config: Mapping[str, Any], data: Mapping[str, Any] | None = None) -> str:
    """The whole page, its CSS and script inline (allowed by hash); `config` (the mode, and what the first view
    needs) and a static export's `data` (parsed by the page only when first needed) embedded as JSON data.

    Each slot of the template is filled once, in one pass over the template: a stored string that spells a slot
    (`/*DATA*/`) is data inside a JSON element, never a place something else is put."""
    template, css, js = _assets()
    fills = {"CSP": page_policy(meta=True), "CSS": css, "JS": js, "CONFIG": _json(config), "DATA": _json(data or {})}
    return SLOT.sub(lambda m: fills[m.group(1)], template)
