"""Questions in their seed benchmark's own file format, so the seed's own scripts read chronokg's output."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from chronokg.bench.family import FAMILIES
from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError


def write_seed(family: str, questions: Iterable[Question], folder: Path) -> dict[Path, int]:
    """Write the family's seed files into `folder`: `.jsonl` one record a line (`.jsonl` files the seed reads as
    blank-line separated blocks get them), `.json` one list. Returns records per file."""
    spec = FAMILIES.get(family)
    if spec.seed_format is None:
        raise ChronoKGError(f"family {family} has no seed format")
    files: dict[str, list[Any]] = {}
    for name, record in spec.seed_format(questions):
        files.setdefault(name, []).append(record)
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[Path, int] = {}
    for name, records in files.items():
        path = folder / f"{family}_{name}"  # a name with folders ("ChroKnowBench/Fewshots/x.jsonl") keeps them
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".part")
        if name.endswith(".jsonl"):
            blocks = getattr(spec, "seed_blocks", False)
            with tmp.open("w", encoding="utf-8") as fh:
                for record in records:
                    if blocks:
                        fh.write(json.dumps(record, ensure_ascii=False, indent=2) + "\n\n\n")
                    else:
                        fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            tmp.write_text(json.dumps(records, ensure_ascii=False, indent=2), encoding="utf-8")
        tmp.replace(path)
        written[path] = len(records)
    return written
