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
import glob
import json
import os
import re
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
# A config is a folder of the export and a name in the card's YAML: words joined by single `.`, `_` or `-`, so a
# family or protocol read from a questions file can never be a path (`..`, `/`), a line break or a control.
CONFIG_NAME = re.compile(r"[A-Za-z0-9]+(?:[._-][A-Za-z0-9]+)*")


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

    items: list[Item] = []
    seen: dict[tuple[str, str], int] = {}
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
        first = seen.setdefault((config_name(question), record["id"]), n)
        if first != n:  # inspect_ai refuses a dataset whose sample ids repeat (one config is one dataset)
            raise InputError(path, where, f"question {record['id']} is also line {first}, of the same config: a row "
                                          "is named by its id")
        items.append(Item(n, record, question))
    return items


def config_name(question: Question) -> str:
    """`family-protocol`; the family alone where the generator recorded no protocol."""
    options = question.generator.get("options")
    protocol = options.get("protocol") if isinstance(options, dict) else None
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
        config = config_name(q)
        if len(config) > 100 or not CONFIG_NAME.fullmatch(config):
            raise InputError(path, f"line {item.line}", f"question {q.id}'s family and protocol make the config name "
                                                        f"{config[:100]!r}, which is not letters and digits joined "
                                                        "by single '.', '_' or '-': it names a folder of the export")
        try:
            when, missing = date_of(q)
        except ValueError as exc:  # a date of the question's own (metadata, answer key) that is no date
            raise InputError(path, f"line {item.line}", f"question {q.id}: {exc}") from None
        if missing:
            raise InputError(path, f"line {item.line}", f"question {q.id} tests fact {missing[0]}, which "
                                                        f"{store.uri} does not hold: export from the store the "
                                                        "questions were generated from")
        row = {k: item.record[k] for k in CANONICAL}
        row["metadata"] = json.dumps(item.record["metadata"], ensure_ascii=False)
        row["variant"] = q.variant
        row.update({d: when[d] for d in DATES})
        out.setdefault(config, []).append(row)
    return out


def check_out(out: Path) -> Path:
    """`--out` must be a new or empty folder, or one this export wrote before (it is then replaced whole); a link
    is followed. Gives the folder to write."""
    if out.exists() and not out.is_dir():
        raise ChronoKGError(f"--out {out} is a file: --format hf writes a folder")
    target = out.resolve() if out.is_symlink() else out
    here = Path.cwd().resolve()
    if target.resolve() in (here, *here.parents):
        raise ChronoKGError(f"--out {out} is the current folder or holds it: the export replaces --out whole, so "
                            "give a folder inside it")
    if not target.is_dir() or not any(target.iterdir()):
        return target
    readme = target / "README.md"
    ours = readme.is_file() and "\nchronokg:\n" in readme.read_text(encoding="utf-8", errors="replace")
    strangers = [p.name for p in sorted(target.iterdir()) if p.name not in OWN_FILES
                 and not (p.is_dir() and {c.name for c in p.iterdir()} <= {f"{SPLIT}.parquet"})]
    if not ours or strangers:
        shown = strangers or sorted(p.name for p in target.iterdir())
        raise ChronoKGError(f"--out {out} is a folder holding other files ({', '.join(shown[:3])}): give a new or "
                            "empty folder, or one written by bench export --format hf")
    return target


def clear_killed(out: Path) -> None:
    """What an export of `out` killed by its process's end left beside it: its unfinished folder is removed, and an
    earlier export it had moved aside is put back where `out` is missing (else removed)."""
    if not out.parent.is_dir():
        return
    for left in sorted(out.parent.glob(f".{glob.escape(out.name)}.*-*")):
        kind, _, pid = left.name[len(out.name) + 2:].partition("-")
        if kind not in ("part", "old") or not pid.isdigit() or _alive(int(pid)):
            continue
        if kind == "old" and not out.exists() and not out.is_symlink():
            left.rename(out)
        else:
            shutil.rmtree(left, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError):  # another user's process, or no pid at all: left alone
        return True
    return True


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
    clear_killed(check_out(out))
    folder = check_out(out)  # again: an earlier export may have been put back
    items = read_canonical(path)
    snapshots = _releases(store, path, items)
    configs = rows(store, path, items, dates)
    families = sorted({item.question.family for item in items})
    tables = {name: _table(r) for name, r in sorted(configs.items())}
    export = Export(out, {k: len(v) for k, v in sorted(configs.items())}, snapshots, families,
                    {k: int(t.nbytes) for k, t in tables.items()})
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.parent / f".{folder.name}.part-{os.getpid()}"
    old = folder.parent / f".{folder.name}.old-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir()
        files = _write(tmp, export, tables)
        if folder.exists():
            folder.rename(old)
        tmp.rename(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not folder.exists():
            old.rename(folder)
        raise
    shutil.rmtree(old, ignore_errors=True)
    export.files = [out / f.relative_to(tmp) for f in files]
    return export


def folder_rows(folder: Path, config: str) -> Iterable[dict[str, Any]]:
    """A config's rows as pyarrow reads them back (for checks without `datasets`)."""
    import pyarrow.parquet as pq

    return pq.read_table(folder / config / f"{SPLIT}.parquet").to_pylist()  # type: ignore[no-any-return]
