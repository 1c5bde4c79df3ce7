"""Which checkpoint an embedded store's file holds, read from its head without loading it.

A kglite checkpoint starts with a metadata block (`RGF`, a format byte, then a length-prefixed JSON object that
names, among its section sizes, `checkpoint_lsn`: the last commit the checkpoint holds). Its identity here is an
XXH3 hash of the file's first 64 KiB (that block and what follows it): the same after a copy, another after any
save. The files beside the store name the checkpoint they belong to by it: the interval sidecar's stamp and the
write-ahead log's binding (`graph.log_binding`).
"""

from __future__ import annotations

import json
from pathlib import Path

HEAD = 1 << 16  # bytes hashed: kglite's metadata block is a few KiB at most
META_AT = 13  # the JSON object of the metadata block starts here, its length (u32 LE) just before it


def identity(path: str | Path) -> int | None:
    """An XXH3 hash of the checkpoint's head, as a signed 64-bit number (None: no file)."""
    import xxhash

    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD)
    except OSError:
        return None
    value = xxhash.xxh3_64_intdigest(head)
    return value - (1 << 64) if value >= 1 << 63 else value


def lsn(path: str | Path) -> int | None:
    """The last commit the checkpoint at `path` holds (`checkpoint_lsn`), or None when its head cannot be read
    so (another format: then nothing is decided from it)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD)
        if not head.startswith(b"RGF"):
            return None
        size = int.from_bytes(head[META_AT - 4:META_AT], "little")
        text = head[META_AT:META_AT + size].decode("utf-8", errors="replace")  # the block ends in a checksum
        meta = json.JSONDecoder().raw_decode(text)[0]
        value = meta.get("checkpoint_lsn") if isinstance(meta, dict) else None
    except (OSError, ValueError):
        return None
    return value if isinstance(value, int) else None
