"""A file written whole or not at all: the one way chronokg replaces a file others may read at any moment.

A temporary file beside the target (same folder, so the rename never crosses a file system), flushed to disk,
then renamed over the target; on any failure the temporary file is removed and the target is as it was.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_whole(target: Path, data: bytes) -> None:
    """Replace `target` by `data` atomically (readers see the old file or the new one, never part of it)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
