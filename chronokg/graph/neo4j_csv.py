"""The store as CSV files for `neo4j-admin database import full` (the route for tens of millions of facts).

Follows Neo4j's documented import header format
(https://neo4j.com/docs/operations-manual/current/import/header-format/):
one node file per label, `id:ID(<Label>)` (an ID space per label, the id kept as
the `id` property the constraints key on), `:LABEL`, then `name:<type>` property
columns; one relationship file per (type, start label, end label) with
`:START_ID(<Label>)`, `:END_ID(<Label>)`, `:TYPE` and the edge's properties.
Lists are `<type>[]` joined by the unit separator (passed as `--array-delimiter`),
strings are quoted, values may span lines (`--multiline-fields=true`). The
command line that imports the folder is written beside the files (`import.sh`).
"""

from __future__ import annotations

import datetime as dt
import re
import shlex
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chronokg.errors import ChronoKGError
from chronokg.graph.store import GraphStore

ARRAY_DELIMITER = "\x1f"  # unit separator: never part of chronokg's text
ARRAY_DELIMITER_ARG = "U+001F"
ENGINE_KEYS = frozenset({"title", "name", "label", "type"})  # filled by kglite itself, not chronokg's data
_START, _END = "\x00start", "\x00end"  # endpoint keys while edges are partitioned (no property is named so)
_SAFE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class Export:
    """What was written: files per kind, row counts, and the import command line."""

    folder: Path
    nodes: list[Path] = field(default_factory=list)
    relationships: list[Path] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # label or type -> rows

    def command(self, database: str = "neo4j") -> list[str]:
        """`neo4j-admin database import full DATABASE --nodes=... --relationships=... ...` as argv."""
        argv = ["neo4j-admin", "database", "import", "full", database,
                f"--array-delimiter={ARRAY_DELIMITER_ARG}", "--multiline-fields=true", "--id-type=string"]
        argv += [f"--nodes={path.name}" for path in self.nodes]  # labels: the :LABEL column
        argv += [f"--relationships={path.name}" for path in self.relationships]  # types: the :TYPE column
        return argv


def _kind(value: Any) -> str:
    """The import type of one value (bool before int: a bool is an int in Python)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, dt.datetime):
        return "datetime" if value.tzinfo is not None else "localdatetime"
    if isinstance(value, dt.date):
        return "date"
    return "string"


def value_type(value: Any) -> str:
    """The import type of one property value: a scalar type, or `<type>[]` for a list."""
    if isinstance(value, list | tuple):
        kinds = {_kind(v) for v in value}
        return (kinds.pop() if len(kinds) == 1 else "string") + "[]"
    return _kind(value)


def column_types(rows: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """Each property's import type over `rows` (rows whose types differ go to separate files: `partition`)."""
    seen: dict[str, set[str]] = defaultdict(set)
    for props in rows:
        for key, value in props.items():
            if value is not None and key not in ENGINE_KEYS:
                seen[key].add(value_type(value))
    out: dict[str, str] = {}
    for key, kinds in seen.items():
        if len(kinds) > 1:
            raise ChronoKGError(f"property {key!r} has several types {sorted(kinds)}: partition the rows first")
        out[key] = kinds.pop()
    return dict(sorted(out.items()))


def partition(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Rows split so that each part has one type per property (a CSV column has one type; a node property
    may hold a string on one node and a list on another, as `Fact.value` does)."""
    seen: dict[str, set[str]] = defaultdict(set)
    for props in rows:
        for key, value in props.items():
            if value is not None and key not in ENGINE_KEYS:
                seen[key].add(value_type(value))
    mixed = sorted(k for k, kinds in seen.items() if len(kinds) > 1)
    if not mixed:
        return [rows]
    parts: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for props in rows:
        parts[tuple(value_type(props[k]) if props.get(k) is not None else "" for k in mixed)].append(props)
    return [parts[k] for k in sorted(parts)]


def _cell(value: Any, kind: str) -> Any:
    if value is None:
        return None  # an empty field: no property
    if kind.endswith("[]"):
        parts = [_cell(v, kind[:-2]) for v in value]
        text = [str(p) for p in parts]
        if any(ARRAY_DELIMITER in t for t in text):
            raise ChronoKGError("a list value contains the unit separator (U+001F): cannot export it")
        return ARRAY_DELIMITER.join(text)
    if kind == "boolean":
        return "true" if value else "false"
    if kind in {"date", "datetime", "localdatetime"}:
        return str(value.isoformat())
    if kind == "string":
        return value if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
    return value


def _name(text: str) -> str:
    if not _SAFE.match(text):
        raise ChronoKGError(f"{text!r} is not a plain label, type or property name: cannot write it in a CSV header")
    return text


def _field(value: Any) -> str:
    """A CSV field: strings quoted (quotes doubled), numbers bare, None an unquoted empty field (no property;
    a quoted empty field would import as an empty string)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    return repr(value) if isinstance(value, float) else str(value)


def _write(path: Path, header: list[str], rows: Iterator[list[Any]]) -> int:
    n = 0
    with path.open("w", encoding="utf-8", newline="") as fh:
        fh.write(",".join(_field(h) for h in header) + "\n")
        for row in rows:
            fh.write(",".join(_field(v) for v in row) + "\n")
            n += 1
    return n


def export(store: GraphStore, folder: Path) -> Export:
    """Write the whole store into `folder` (created; existing files of the same names are replaced)."""
    from chronokg.graph.counts import label_counts, relationship_counts

    folder.mkdir(parents=True, exist_ok=True)
    result = Export(folder=folder)
    for label in label_counts(store):
        rows = [r["p"] for r in store.run(f"MATCH (n:`{_name(label)}`) RETURN properties(n) AS p")]
        result.counts[label] = 0
        for i, part in enumerate(partition(rows)):
            types = column_types(part)
            types.pop("id", None)
            header = [f"id:ID({label})", ":LABEL", *(f"{_name(k)}:{t}" for k, t in types.items())]
            path = folder / (f"nodes_{label}.csv" if i == 0 else f"nodes_{label}_{i + 1}.csv")
            result.counts[label] += _write(path, header, (
                [str(p["id"]), label, *(_cell(p.get(k), t) for k, t in types.items())] for p in part))
            result.nodes.append(path)
    for rel in relationship_counts(store):
        grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for r in store.run(f"MATCH (a)-[e:`{_name(rel)}`]->(b) RETURN labels(a) AS la, a.id AS s, labels(b) AS lb, "
                           "b.id AS d, properties(e) AS p"):
            grouped[(r["la"][0], r["lb"][0])].append({**(r["p"] or {}), _START: r["s"], _END: r["d"]})
        result.counts[rel] = 0
        for (start, end), edges in sorted(grouped.items()):
            for i, part in enumerate(partition(edges)):
                types = column_types(part)
                types.pop(_START)
                types.pop(_END)
                header = [f":START_ID({start})", f":END_ID({end})", ":TYPE",
                          *(f"{_name(k)}:{t}" for k, t in types.items())]
                path = folder / f"rels_{rel}_{start}_{end}{'' if i == 0 else f'_{i + 1}'}.csv"
                result.counts[rel] += _write(path, header, (
                    [str(e[_START]), str(e[_END]), rel, *(_cell(e.get(k), t) for k, t in types.items())]
                    for e in part))
                result.relationships.append(path)
    script = folder / "import.sh"
    script.write_text("#!/bin/sh\n# Run from this folder, with the database absent (or add --overwrite-destination).\n"
                      + shlex.join(result.command()) + "\n")
    return result


__all__ = ["ARRAY_DELIMITER", "Export", "column_types", "export", "partition", "value_type"]
