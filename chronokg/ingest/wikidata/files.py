"""Reading Wikidata files: single documents and streamed dumps (.json, .gz, .bz2)."""

from __future__ import annotations

import bz2
import gzip
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from chronokg.errors import InputError
from chronokg.ingest.common import expand_paths, loads, read_json

# Characters in one string of an entity (README, "Input limits"): Wikidata itself stores string values of at
# most 1,500 and labels of at most 250.
MAX_TEXT = 10_000

# --- reading files ---------------------------------------------------------------------------------


def _open_text(path: Path) -> IO[str]:
    with path.open("rb") as fh:
        magic = fh.read(3)
    if magic[:2] == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8")
    if magic == b"BZh":
        return bz2.open(path, "rt", encoding="utf-8")
    return path.open("r", encoding="utf-8")


def is_dump(path: Path) -> bool:
    """A dump (one entity per line, streamed) rather than one JSON document (read whole)."""
    if path.suffix in (".jsonl", ".ndjson"):
        return True
    try:
        with path.open("rb") as fh:
            head = fh.read(3)
        if head[:2] == b"\x1f\x8b" or head == b"BZh":
            return True
        with path.open("r", encoding="utf-8") as fh:
            return fh.readline().strip() == "["
    except (OSError, UnicodeDecodeError):
        return False


def read_document(path: Path) -> list[tuple[str, Any]]:
    """The entity objects of one JSON document: wrapper, bare entity, or a list."""
    data = read_json(path, MAX_TEXT)
    if not data:
        raise InputError(path, None, "no entities in the file")
    if isinstance(data, dict) and isinstance(data.get("entities"), dict):
        return [(f"entities.{k}", v) for k, v in data["entities"].items()]
    if isinstance(data, dict):
        return [(str(data.get("id", 1)), data)]
    if isinstance(data, list):
        return [(f"[{i}]", v) for i, v in enumerate(data)]
    raise InputError(path, None, f"expected an entity object, an {{'entities': ...}} wrapper or a list, "
                                 f"got {type(data).__name__}")


def read_dump(path: Path) -> Iterator[tuple[str, Any]]:
    """Entity objects of a dump, one line at a time (a dump of any size, in constant memory)."""
    opened_array = closed = False
    lineno = 0
    try:
        with _open_text(path) as fh:
            for lineno, raw in enumerate(fh, start=1):
                line = raw.strip()
                if not line:
                    continue
                if line == "[" and not opened_array and lineno == 1:
                    opened_array = True
                    continue
                if line == "]" and opened_array:
                    closed = True
                    continue
                if closed:
                    raise InputError(path, f"line {lineno}", "data after the closing ']'")
                yield f"line {lineno}", loads(line.removesuffix(","), path, f"line {lineno}", MAX_TEXT)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise InputError(path, f"line {lineno + 1}", f"cannot read (truncated or corrupt file?): {exc}") from exc
    if opened_array and not closed:
        raise InputError(path, f"line {lineno}", "the dump ends without its closing ']' (truncated file?)")


def expand(paths: Iterable[Path]) -> list[Path]:
    return expand_paths(paths, _entity_file, "Wikidata entity files (.json, .json.gz, ...)", recursive=False)


def _entity_file(p: Path) -> bool:
    return p.name.endswith((".json", ".json.gz", ".json.bz2", ".jsonl", ".ndjson", ".jsonl.gz"))
