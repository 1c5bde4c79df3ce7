"""What every loader shares: reading records with precise errors, sources, and the load summary."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field, StringConstraints, ValidationError

from chronokg.errors import InputError
from chronokg.graph.batch import GraphBatch
from chronokg.graph.counts import graph_counts
from chronokg.graph.dates import implausible_release
from chronokg.graph.model import Source
from chronokg.graph.store import GraphStore
from chronokg.graph.writer import WriteReport, write_batch
from chronokg.ingest.limits import DEFAULT_MAX_TEXT, check_texts, check_unicode, escapes_surrogate
from chronokg.progress import Progress

# Input text fields: stripped, and empty counts as missing.
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class LoadSummary(BaseModel):
    """What one load read and what it changed in the store."""

    source_kind: str
    paths: list[str]
    records: int
    staged: dict[str, int] = Field(default_factory=dict, description="Nodes and edges per label/type in the input")
    before: dict[str, int] = Field(default_factory=dict, description="Store counts per label/type before the load")
    after: dict[str, int] = Field(default_factory=dict, description="Store counts per label/type after the load")
    report: WriteReport | None = Field(default=None, description="What changed, from content")

    @property
    def added(self) -> dict[str, int]:
        return {k: self.after.get(k, 0) - self.before.get(k, 0) for k in sorted({*self.before, *self.after})}

    @property
    def unchanged(self) -> bool:
        """Nothing created or updated (from content when the write reported it, else from counts)."""
        if self.report is not None:
            return not self.report.changed
        return self.before == self.after


class RecordKeys:
    """The keys of the records read so far: the same key again with other content is an error naming both.

    For inputs whose records become content-addressed facts (two rows for one
    subject and relation would otherwise both be kept, silently). Identical
    repeats are accepted: re-stating a record changes nothing.
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self._seen: dict[Any, tuple[str, str]] = {}

    def check(self, key: Any, content: Any, path: Path, record: str | int) -> bool:
        """True the first time `key` is seen; False for an identical repeat; InputError for a different one."""
        digest = hashlib.sha1(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()
        here = f"{path.name}, record {record}"
        first = self._seen.setdefault(key, (digest, here))
        if first[0] == digest:
            return first[1] == here
        raise InputError(path, record, f"{self.what} {key!r} is given again with other content; "
                                       f"first given in {first[1]}")


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


MAX_DEPTH = 48  # nested JSON arrays/objects: far above any real record (Wikidata entities reach about 12)


def check_depth(obj: Any, path: Path, record: str | int | None, limit: int = MAX_DEPTH) -> Any:
    """`obj`, or an InputError if it nests deeper than `limit` (checked without recursion)."""
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Iterable[Any] = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            raise InputError(path, record, f"JSON nested more than {limit} levels deep")
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return obj


def loads(text: str, path: Path, record: str | int | None, max_text: int = DEFAULT_MAX_TEXT) -> Any:
    """`json.loads` that turns every way text can be bad JSON (or a string over `max_text`) into an InputError
    naming the record."""
    try:
        obj = check_texts(check_depth(json.loads(text), path, record), path, record, max_text, len(text))
        return check_unicode(obj, path, record) if escapes_surrogate(text) else obj
    except json.JSONDecodeError as exc:
        raise InputError(path, record, f"broken JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from exc
    except RecursionError:
        raise InputError(path, record, f"JSON nested more than {MAX_DEPTH} levels deep") from None


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text: {exc}") from exc
    except OSError as exc:
        raise InputError(path, None, f"cannot read: {exc.strerror or exc}") from exc


def read_json(path: Path, max_text: int = DEFAULT_MAX_TEXT) -> Any:
    """A whole JSON file, every string in it at most `max_text` characters."""
    text = read_text(path)
    if not text.strip():
        raise InputError(path, None, "the file is empty")
    try:
        data = check_depth(json.loads(text), path, None)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"line {exc.lineno}", f"broken JSON (truncated file?): {exc.msg}") from exc
    except RecursionError:
        raise InputError(path, None, f"JSON nested more than {MAX_DEPTH} levels deep") from None
    if isinstance(data, list) and len(text) > max_text:  # a list of records: name the record
        for n, item in enumerate(data, start=1):
            check_texts(item, path, n, max_text)
    if escapes_surrogate(text):
        for n, item in enumerate(data if isinstance(data, list) else [data], start=1):  # a list: name the record
            check_unicode(item, path, n if isinstance(data, list) else None)
    return check_texts(data, path, None, max_text, len(text))


def read_json_blocks(path: Path, max_text: int = DEFAULT_MAX_TEXT) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """Records of a file of JSON objects: one per line, or pretty-printed and separated by blank lines.

    Yields (record number from 1, first line number, object), every string at most `max_text` characters.
    TempoMed-Bench's `.jsonl` files are the second kind.
    """
    text = read_text(path)
    decoder = json.JSONDecoder()
    pos, n, line, counted = 0, 0, 1, 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            if n == 0:
                raise InputError(path, None, "the file has no records")
            return
        n += 1
        line += text.count("\n", counted, pos)
        counted = pos
        try:
            start, (obj, pos) = pos, decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise InputError(path, f"{n} (line {line})", f"broken JSON: {exc.msg} at line {exc.lineno}") from exc
        except RecursionError:
            raise InputError(path, f"{n} (line {line})", f"JSON nested more than {MAX_DEPTH} levels deep") from None
        check_depth(obj, path, f"{n} (line {line})")
        check_texts(obj, path, f"{n} (line {line})", max_text, pos - start)
        if escapes_surrogate(text, start, pos):
            check_unicode(obj, path, f"{n} (line {line})")
        if not isinstance(obj, dict):
            raise InputError(path, f"{n} (line {line})", f"expected a JSON object, got {type(obj).__name__}")
        yield n, line, obj


def caption(text: str, limit: int = 160) -> str:
    """Text on one line, cut at `limit` characters: for captions of long questions and paragraphs."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def check_release(day: dt.date | None, path: Path | str, record: str | int | None, what: str = "release date") -> None:
    """An InputError naming the record when `day` cannot be a release date (see `dates.RELEASE_RANGE`)."""
    problem = None if day is None else implausible_release(day)
    if problem is not None:
        raise InputError(path, record, f"{what}: {problem}")


def file_source(path: Path, kind: str, release_date: dt.date | None, what: str = "", prefix: str = "") -> Source:
    """A Source for one input file: one release, identified by its content hash and release date."""
    check_release(release_date, path, None)
    digest = file_sha256(path)
    scope = f"{what}:" if what else ""
    # A release is the content *and* its date: the same bytes released again later are a new release.
    dated = f"@{release_date.isoformat()}" if release_date else ""
    return Source(
        id=f"{kind}:{scope}{digest[:12]}{dated}", kind=kind,
        caption=" ".join(p for p in (prefix, what, path.name) if p), version=digest[:12],
        release_date=release_date, checksum=f"sha256:{digest}", path=str(path),
    )


def expand_paths(
    paths: Iterable[Path], accept: Callable[[Path], bool], what: str, recursive: bool = True
) -> list[Path]:
    """Files as given, plus the accepted files inside given folders (sorted); missing paths are errors."""
    paths = list(paths)
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            found = p.rglob("*") if recursive else p.iterdir()
            out.extend(sorted(q for q in found if q.is_file() and accept(q)))
        elif p.exists():
            out.append(p)
        else:
            raise InputError(p, None, "no such file or directory")
    if not out:
        raise InputError(", ".join(map(str, paths)), None, f"no {what} found")
    return out


def validated(model: type[BaseModel], obj: Any, path: Path, record: str | int | None) -> Any:
    """`model` parsed from `obj`, or an InputError listing every bad field."""
    try:
        return model.model_validate(obj)
    except ValidationError as exc:
        problems = "; ".join(f"field {'.'.join(map(str, e['loc'])) or '?'!r}: {e['msg']}" for e in exc.errors())
        raise InputError(path, record, problems) from None


def read_csv_records(path: Path, *, line_end_optional: bool = False,
                     max_text: int = DEFAULT_MAX_TEXT) -> Iterator[tuple[str, dict[str, str]]]:
    """(`row N (line L)`, row) pairs of a CSV file with a header.

    A truncated quote, a long or short row, or no rows at all are errors; so is a last row with no line end
    after it (a file cut in the middle of a row, which a CSV reader would take as a shorter last field),
    unless `line_end_optional`: files released without a final line break (TruthfulQA.csv) load, and a
    cut inside a quoted field is still refused as a truncated quote.
    """
    ended = _ends_with_newline(path)
    pending: tuple[str, dict[str, str]] | None = None
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh, strict=True)
            n, start = 0, 2
            try:
                if not reader.fieldnames:
                    raise InputError(path, "line 1", "empty CSV: no header")
                start = reader.line_num + 1
                for raw in reader:
                    n += 1
                    record = f"row {n} (line {start})"
                    start = reader.line_num + 1
                    if None in raw:
                        raise InputError(path, record, "more fields than the header names")
                    missing = [k for k, v in raw.items() if v is None]
                    if missing:
                        raise InputError(path, record, f"row ends early: no {', '.join(map(repr, missing))}")
                    check_texts(raw, path, record, max_text)
                    if pending is not None:
                        yield pending
                    pending = (record, raw)
            except csv.Error as exc:
                if "field larger than field limit" in str(exc):  # the csv module's own cap (131,072)
                    raise InputError(path, f"row {n + 1} (line {start})",
                                     f"a field is over {csv.field_size_limit():,} characters (at most {max_text:,} "
                                     "for this source)") from None
                raise InputError(path, f"row {n + 1} (line {start})", f"broken CSV: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text: {exc}") from exc
    if pending is None:
        raise InputError(path, None, "the CSV has a header but no rows")
    if not ended and not line_end_optional:
        raise InputError(path, pending[0], "the file ends inside this row, with no line break after it: it looks "
                                           "truncated (if it is complete, end it with a line break)")
    yield pending


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as fh:
        fh.seek(0, 2)
        if fh.tell() == 0:
            return True
        fh.seek(-1, 2)
        return fh.read(1) in {b"\n", b"\r"}


def read_jsonl(path: Path, max_text: int = DEFAULT_MAX_TEXT) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of a one-object-per-line file, read line by line (NQ files are large); every
    string at most `max_text` characters."""
    seen = 0
    try:
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                obj = loads(line, path, f"line {n}", max_text)
                if not isinstance(obj, dict):
                    raise InputError(path, f"line {n}", f"expected a JSON object, got {type(obj).__name__}")
                seen += 1
                yield n, obj
    except UnicodeDecodeError as exc:
        raise InputError(path, None, f"not UTF-8 text: {exc}") from exc
    if not seen:
        raise InputError(path, None, "the file has no records")


# Staged items (nodes + edges) from which `apply` uses the bulk path on the embedded engine: below it the
# transactional Cypher writer is as fast and does not rewrite the checkpoint at once.
BULK_MIN = 20_000


def apply(
    store: GraphStore, batch: GraphBatch, source_kind: str, paths: list[Path], records: int,
    progress: Progress | None = None,
) -> LoadSummary:
    """Write a fully staged batch as one all-or-nothing step and summarise it.

    Large batches on the embedded engine go through `graph.bulk` (native loaders into a staged
    copy, published atomically); others through `writer.write_batch` (one transaction). Both
    write the same graph and report the same changes (the loader conformance suite checks it).
    """
    before = graph_counts(store)
    if store.capabilities.bulk_loader and len(batch) >= BULK_MIN:
        from chronokg.graph.bulk import write_bulk

        report = write_bulk(store, [batch], progress=progress)
    else:
        report = write_batch(store, batch, progress=progress)
    return LoadSummary(
        source_kind=source_kind, paths=[str(p) for p in paths], records=records, staged=batch.counts(),
        before=before, after=graph_counts(store), report=report,
    )


def today() -> dt.date:
    return dt.date.today()
