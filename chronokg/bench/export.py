"""Questions in their seed benchmark's own file format, so the seed's own scripts read chronokg's output."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from chronokg.bench.family import FAMILIES, OURS
from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError

IDS_FILE = "chronokg_ids.jsonl"  # `{family}_chronokg_ids.jsonl`: one line `{file, record, …}` per such record


def write_seed(family: str, questions: Iterable[Question], folder: Path) -> dict[Path, int]:
    """Write the family's seed files into `folder`: `.jsonl` one record a line (`.jsonl` files the seed reads as
    blank-line separated blocks get them), `.json` one list (or, for the family's `seed_objects`, the one object
    yielded), `.csv` a header and one row per record. A record holds only the seed's own fields: what a family
    adds under `OURS` (the chronokg ids it was built from, …) goes to the side file `{family}_chronokg_ids.jsonl`
    (`file`, `record`: its 0-based position in that file, then those fields). Returns records per file."""
    spec = FAMILIES.get(family)
    if spec.seed_format is None:
        raise ChronoKGError(f"family {family} has no seed format")
    files: dict[str, list[Any]] = {}
    side: list[dict[str, Any]] = []
    for name, record in spec.seed_format(questions):
        records = files.setdefault(name, [])
        if isinstance(record, dict) and OURS in record:
            record = dict(record)
            side.append({"file": f"{family}_{name}", "record": len(records), **record.pop(OURS)})
        records.append(record)
    if side:
        files[IDS_FILE] = side
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[Path, int] = {}
    for name, records in files.items():
        path = folder / f"{family}_{name}"  # a name with folders ("ChroKnowBench/Fewshots/x.jsonl") keeps them
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part")
        if name.endswith(".jsonl"):
            blocks = name in spec.seed_blocks
            with tmp.open("w", encoding="utf-8") as fh:
                for record in records:
                    if blocks:
                        fh.write(json.dumps(record, ensure_ascii=False, indent=2) + "\n\n\n")
                    else:
                        fh.write(json.dumps(record, ensure_ascii=spec.seed_ascii) + "\n")
        elif name.endswith(".csv"):
            _write_csv(tmp, records)
        elif name in spec.seed_objects:
            if len(records) != 1:
                raise ChronoKGError(f"family {family} gave {len(records)} objects for its seed file {name}")
            tmp.write_text(json.dumps(records[0], ensure_ascii=False, indent=4), encoding="utf-8")
        else:
            tmp.write_text(json.dumps(records, ensure_ascii=spec.seed_json_ascii, indent=spec.seed_json_indent),
                           encoding="utf-8")
        tmp.replace(path)
        written[path] = len(records)
    return written


def _write_csv(path: Path, records: list[Any]) -> None:
    """Records (dicts) as CSV with a header of every key in first-seen order (what pandas' `read_csv` reads)."""
    columns = list(dict.fromkeys(key for record in records for key in record))
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(records)
