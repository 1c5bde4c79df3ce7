"""Questions as a Hugging Face dataset folder: what `chronokg bench export --format hf` writes.

One config per family and protocol (`tempomed-seed`, `chroknow-chronokg`, ...), one `test` split each, stored as
`CONFIG/test.parquet`, and a `README.md` dataset card whose YAML declares the configs, their features, the
licence of every source, the seed papers, the snapshot and its releases (`chronokg.bench.hf_card`). A row is the
canonical record as the questions file holds it (`id`, `input`, `choices`, `target`; `metadata` as one JSON
string, since its shape differs between families and variants and a string round-trips it exactly), plus
`variant` and the item's dates as date32 columns (`datasets` reads them back as `datetime.date`): `DATES`, as
`chronokg.eval.item_dates` defines them for every route. The caller passes that definition in (`dates`), read from
the store the questions were generated from.

Fact dates are parts of a fact's id, so a later release never changes them, and the card names no time of
writing: exporting the same questions from a store holding their snapshot gives the same bytes (with the same
pyarrow). pyarrow and PyYAML (both installed with `datasets`) are imported inside `export_hf` only.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chronokg.bench.hf_card import CANONICAL, COLUMNS, DATES, SPLIT, Export, Release, card, croissant
from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError, InputError
from chronokg.graph.store import GraphStore

__all__ = ["COLUMNS", "DATES", "SPLIT", "DatesOf", "Export", "Release", "export_hf", "folder_rows", "read_canonical"]
OWN_FILES = frozenset({"README.md", "croissant.json"})
# Given the store and the questions (read from it once), a question's dates (by `DATES`) and the facts it reads
# that the store lacks; a date of the question's own that is no date is a ValueError.
DatedBy = Callable[[Question], tuple[Mapping[str, dt.date | None], Sequence[str]]]
DatesOf = Callable[[GraphStore, Sequence[Question]], DatedBy]


@dataclass
class Item:
    """One canonical record as read, where it was read, and the question it holds."""

    line: int
    record: dict[str, Any]
    question: Question


def read_canonical(path: Path) -> list[Item]:
    """Every record of a canonical questions file, exactly as written; a record that is not one is an InputError
    naming the file and its line."""
    from chronokg.ingest.common import read_jsonl

    items = []
    for n, record in read_jsonl(path):
        where = f"line {n}"
        if sorted(record) != sorted(CANONICAL):
            raise InputError(path, where, f"not a canonical chronokg question: its fields are {sorted(record)}, "
                                          f"not {list(CANONICAL)}")
        if not all(isinstance(record[k], str) for k in ("id", "input", "target")) or not isinstance(
                record["metadata"], dict) or not (isinstance(record["choices"], list)
                                                  and all(isinstance(c, str) for c in record["choices"])):
            raise InputError(path, where, "not a canonical chronokg question: id, input and target are text, "
                                          "choices a list of texts, metadata an object")
        try:
            question = Question.from_canonical(record)
        except (KeyError, ValueError) as exc:
            raise InputError(path, where, f"not a chronokg question: {str(exc).splitlines()[0]}") from None
        items.append(Item(n, record, question))
    return items


def config_name(question: Question) -> str:
    """`family-protocol`; the family alone where the generator recorded no protocol."""
    protocol = (question.generator.get("options") or {}).get("protocol")
    return f"{question.family}-{protocol}" if protocol else question.family


def _releases(store: GraphStore, path: Path, items: Sequence[Item]) -> dict[str, list[Release]]:
    """The releases of every snapshot the questions were generated at: the store's record of it, or its current
    releases where the snapshot is the store's current one."""
    from chronokg.bench import snapshot

    first: dict[str, int] = {}
    for item in items:
        first.setdefault(item.question.snapshot, item.line)
    current = snapshot.sources(store)
    out: dict[str, list[Release]] = {}
    for sid, line in sorted(first.items()):
        rows = store.run("MATCH (s:Snapshot {id: $id}) RETURN s.sources AS sources", {"id": sid})
        ids = rows[0]["sources"] if rows and rows[0]["sources"] is not None else None
        if ids is None and snapshot.snapshot_id(current) == sid:
            ids = current
        if ids is None:
            raise InputError(path, f"line {line}", f"generated at snapshot {sid!r}, which {store.uri} neither "
                                                   "holds nor recorded: export from the store the questions were "
                                                   "generated from")
        found = {r["id"]: r for r in store.run(
            "MATCH (s:Source) WHERE s.id IN $ids RETURN s.id AS id, s.kind AS kind, s.caption AS caption, "
            "s.version AS version, s.release_date AS release_date ORDER BY id", {"ids": sorted(ids)})}
        out[sid] = [Release(i, found.get(i, {}).get("kind"), found.get(i, {}).get("caption"),
                            _text(found.get(i, {}).get("version")), _iso(found.get(i, {}).get("release_date")))
                    for i in sorted(ids)]
    return out


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _iso(value: Any) -> str | None:
    return None if value is None else _date(value).isoformat()


def _date(value: Any) -> dt.date:
    """A date as the engines return one (a date, a datetime, an ISO text)."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    return dt.date.fromisoformat(str(value)[:10])


def rows(store: GraphStore, path: Path, items: Sequence[Item], dates: DatesOf) -> dict[str, list[dict[str, Any]]]:
    """The rows of every config, in the file's order; a fact a question reads that the store lacks is an
    InputError naming the question's line."""
    date_of = dates(store, [item.question for item in items])
    out: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        q = item.question
        when, missing = date_of(q)
        if missing:
            raise InputError(path, f"line {item.line}", f"question {q.id} tests fact {missing[0]}, which "
                                                        f"{store.uri} does not hold: export from the store the "
                                                        "questions were generated from")
        row = {k: item.record[k] for k in CANONICAL}
        row["metadata"] = json.dumps(item.record["metadata"], ensure_ascii=False)
        row["variant"] = q.variant
        row.update({d: when[d] for d in DATES})
        out.setdefault(config_name(q), []).append(row)
    return out


def check_out(out: Path) -> None:
    """`--out` must be a new or empty folder, or one this export wrote before (it is then replaced whole)."""
    if out.exists() and not out.is_dir():
        raise ChronoKGError(f"--out {out} is a file: --format hf writes a folder")
    if not out.is_dir() or not any(out.iterdir()):
        return
    readme = out / "README.md"
    ours = readme.is_file() and "\nchronokg:\n" in readme.read_text(encoding="utf-8", errors="replace")
    strangers = [p.name for p in sorted(out.iterdir()) if p.name not in OWN_FILES
                 and not (p.is_dir() and {c.name for c in p.iterdir()} <= {f"{SPLIT}.parquet"})]
    if not ours or strangers:
        raise ChronoKGError(f"--out {out} is a folder holding other files ({', '.join(strangers[:3]) or 'README.md'}"
                            "): give a new or empty folder, or one written by bench export --format hf")


def _table(rows: list[dict[str, Any]]) -> Any:
    import pyarrow as pa

    schema = pa.schema([("id", pa.string()), ("input", pa.string()), ("choices", pa.list_(pa.string())),
                        ("target", pa.string()), ("metadata", pa.string()), ("variant", pa.string()),
                        *[(d, pa.date32()) for d in DATES]])
    return pa.Table.from_pylist(rows, schema=schema)


def _write(folder: Path, export: Export, tables: dict[str, Any]) -> list[Path]:
    """The parquet files, then the card and the Croissant file (which names each parquet file's sha256)."""
    import hashlib

    import pyarrow.parquet as pq

    files = []
    for name, table in sorted(tables.items()):
        (folder / name).mkdir()
        target = folder / name / f"{SPLIT}.parquet"
        # one row group: the same rows give the same bytes (pyarrow writes no time; its footer names its version)
        pq.write_table(table, target, compression="zstd", compression_level=3, row_group_size=max(table.num_rows, 1))
        files.append(target)
    digests = {f"{p.parent.name}/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
    (folder / "README.md").write_text(card(export), encoding="utf-8")
    (folder / "croissant.json").write_text(croissant(export, digests), encoding="utf-8")
    return [*files, folder / "README.md", folder / "croissant.json"]


def export_hf(store: GraphStore, path: Path, out: Path, dates: DatesOf) -> Export:
    """Write the questions of `path` (canonical JSONL) as a dataset folder `out`, built whole under a temporary
    name beside it and renamed into place: a failed export leaves `out` as it was. `dates` gives each question's
    dates and the facts it reads that the store lacks (`chronokg.eval.item_dates.store_dates`)."""
    try:
        import pyarrow  # noqa: F401
        import yaml  # noqa: F401
    except ImportError as exc:
        raise ChronoKGError(f"--format hf needs pyarrow and PyYAML ({exc.name} is missing): "
                            "pip install 'chronokg[integrations]'") from None
    check_out(out)
    items = read_canonical(path)
    snapshots = _releases(store, path, items)
    configs = rows(store, path, items, dates)
    families = sorted({item.question.family for item in items})
    tables = {name: _table(r) for name, r in sorted(configs.items())}
    export = Export(out, {k: len(v) for k, v in sorted(configs.items())}, snapshots, families,
                    {k: int(t.nbytes) for k, t in tables.items()})
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.part-{os.getpid()}"
    old = out.parent / f".{out.name}.old-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
        files = _write(tmp, export, tables)
        if out.exists():
            out.rename(old)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not out.exists():
            old.rename(out)
        raise
    shutil.rmtree(old, ignore_errors=True)
    export.files = [out / f.relative_to(tmp) for f in files]
    return export


def folder_rows(folder: Path, config: str) -> Iterable[dict[str, Any]]:
    """A config's rows as pyarrow reads them back (for checks without `datasets`)."""
    import pyarrow.parquet as pq

    return pq.read_table(folder / config / f"{SPLIT}.parquet").to_pylist()  # type: ignore[no-any-return]
