"""Fetch public source files for users who have the internet.

Kept thin on purpose: one HTTP GET per file, streamed to a temporary file
beside the target and renamed into place only when complete (a broken
download never leaves a half-written file), with an optional SHA-256 check.
"""

from __future__ import annotations

import hashlib
import urllib.request
from pathlib import Path

from pydantic import BaseModel

from chronokg.errors import ChronoKGError
from chronokg.progress import Progress

USER_AGENT = "chronokg/0.1 (temporal knowledge benchmark toolkit; https://pypi.org/project/chronokg/)"
CHUNK = 1 << 16


class DownloadError(ChronoKGError):
    """A download failed; the target file was not written."""


class Downloaded(BaseModel):
    url: str
    path: str
    bytes: int
    sha256: str


def fetch(url: str, target: Path, sha256: str | None = None, progress: Progress | None = None,
          timeout: float = 60.0) -> Downloaded:
    """Download `url` to `target` atomically; verify `sha256` when given."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    digest = hashlib.sha256()
    size = 0
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response, partial.open("wb") as out:
            total = int(response.headers.get("Content-Length") or 0)
            if progress is not None:
                progress.start(total, f"downloading {target.name}")
            while block := response.read(CHUNK):
                out.write(block)
                digest.update(block)
                size += len(block)
                if progress is not None:
                    progress.advance(len(block))
    except OSError as exc:  # URLError and HTTPError are OSErrors
        partial.unlink(missing_ok=True)
        raise DownloadError(f"cannot download {url}: {exc}") from exc
    got = digest.hexdigest()
    if sha256 is not None and got != sha256.lower():
        partial.unlink(missing_ok=True)
        raise DownloadError(f"{url}: checksum mismatch (expected sha256 {sha256}, got {got}); nothing was saved")
    partial.replace(target)
    return Downloaded(url=url, path=str(target), bytes=size, sha256=got)
