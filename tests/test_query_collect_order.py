"""No catalog query picks from a `collect` by position: `collect` keeps no order any engine promises, so
`xs[0]`, `head(xs)` or `last(xs)` of a collected list can name a different row on another engine (or another
load). Picks go through `min`/`max` or a total order in Python. The scan reads every string in
chronokg/queries/ (the Cypher is built from them)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

QUERIES = Path(__file__).resolve().parents[1] / "chronokg" / "queries"
ALIAS = re.compile(r"collect\((?:[^()]|\([^()]*\))*\)\s+AS\s+(\w+)", re.IGNORECASE)
DIRECT = re.compile(r"collect\((?:[^()]|\([^()]*\))*\)\s*\[", re.IGNORECASE)


def cypher_text(source: str) -> str:
    """Every string constant of a module (f-string parts included), one per line."""
    return "\n".join(node.value for node in ast.walk(ast.parse(source))
                     if isinstance(node, ast.Constant) and isinstance(node.value, str))


def positional_picks(text: str) -> list[str]:
    """Each place `text` indexes a collected list, or takes its head or last element."""
    found = [m.group(0) for m in DIRECT.finditer(text)]
    for alias in sorted(set(ALIAS.findall(text))):
        pick = re.compile(rf"(?<![\w.]){alias}\s*\[|\b(?:head|last)\(\s*{alias}\s*\)", re.IGNORECASE)
        found += [m.group(0) for m in pick.finditer(text)]
    return found


def test_the_scan_finds_positional_picks() -> None:
    bad = ("WITH c, collect(DISTINCT o.caption) AS orgs, collect(q) AS qs\n"
           "WITH c, CASE WHEN size(qs) = 0 THEN null ELSE qs[0] END AS q, head(orgs) AS org")
    assert positional_picks(bad) == ["head(orgs)", "qs["]
    assert positional_picks("RETURN collect(x.id)[0] AS first") == ["collect(x.id)["]
    assert positional_picks("WITH min(o.caption) AS org, collect(q.id) AS ids RETURN org, size(ids) AS n") == []


def test_no_catalog_query_picks_from_a_collect_by_position() -> None:
    files = sorted(QUERIES.glob("*.py"))
    assert len(files) >= 10
    found = {f.name: picks for f in files if (picks := positional_picks(cypher_text(f.read_text())))}
    assert found == {}
