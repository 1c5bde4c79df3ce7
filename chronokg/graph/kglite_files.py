"""The files beside an embedded store, read without opening it: who holds the writer lease, and whether
the write-ahead log holds commits no checkpoint has taken in (why apart: `store check`, readers and the
recovery tool ask this without the engine).
"""

from __future__ import annotations

import os
from pathlib import Path

WAL_HEADER = 5  # bytes of an empty write-ahead log


def lease_holder(path: Path) -> str | None:
    """Who holds the writer lease of the store at `path` now ("process 123"), or None."""
    owner = Path(str(path) + ".lock-owner")
    try:
        text = owner.read_text() if owner.exists() else ""
    except OSError:
        return None
    fields = dict(line.partition("=")[::2] for line in text.splitlines())
    pid = fields.get("pid", "")
    if "released" not in fields and pid.isdigit() and _alive(int(pid)):
        return f"process {pid}"
    return None


def unreplayed_log(path: Path) -> str | None:
    """A notice when the store's log holds commits of a writer that died before its checkpoint, or cannot
    be read at all. Readers read the last checkpoint only; the next writer replays the log.
    """
    wal = Path(str(path) + "-wal")
    size = wal.stat().st_size if wal.exists() else 0
    if size == 0:
        return None
    with wal.open("rb") as log:
        head = log.read(WAL_HEADER)
    if not head.startswith(b"KWAL") or len(head) < WAL_HEADER:
        return (f"{wal} is damaged (not a kglite write-ahead log); readers see the last checkpoint, and no writer "
                "can open the store until it is repaired: run `chronokg store check`")
    if size <= WAL_HEADER:
        return None
    if lease_holder(path) is not None:
        return None  # a writer is at work: its commits become visible at its checkpoint
    return (f"{path} has writes in its log that were never checkpointed (a writer stopped without closing); "
            "readers do not see them until a writer opens the store again (chronokg init)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
