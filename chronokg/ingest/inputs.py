"""What each release was read from: its input files, by absolute path, with a digest of their content.

A load records them on every `Source` it created (`INPUTS`: the release's roots, the files or folders it was
given as, and every file under them with its SHA-256), so that dropping another release of its source can
replay it from the same files wherever the drop runs, and refuse when one of them changed, is gone, or a
folder holds a file it did not, naming the release and the file (`changed`). A release whose `Source` names no
file of its own (chest-X-ray scene graphs: one release over many files) gets the paths its load was given
that no other release of the same load names.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chronokg.errors import InputError

INPUTS = "inputs"  # Source property: JSON {"roots": [...], "files": {path: "sha256:..."}}
SEPARATOR = "; "  # a Source.path naming several files (CFR: one edition over several files)


@dataclass
class Inputs:
    """A release's roots (as given, absolute) and every file under them with its digest."""

    roots: list[str]
    files: dict[str, str] = field(default_factory=dict)
    recorded: bool = True  # False: a release loaded before inputs were recorded (its roots from `Source.path`)

    def text(self) -> str:
        return json.dumps({"roots": self.roots, "files": self.files}, sort_keys=True, ensure_ascii=False)

    @classmethod
    def parse(cls, text: Any) -> Inputs | None:
        if not text:
            return None
        data = json.loads(str(text))
        return cls(roots=list(data["roots"]), files=dict(data["files"]))


def absolute(path: str | Path) -> Path:
    return Path(path).resolve()


STORE_FILE = re.compile(r"\.kgl($|[-.])")  # an embedded store and what its writers keep beside it


def files_under(root: Path) -> list[Path]:
    """`root` itself when it is a file, else every regular file below it (sorted), but an embedded store's
    files (`x.kgl`, its log, binding, lock, sidecar and folders beside it): a store kept in a loaded folder is
    no input of it, and its writes do not change the release's inputs."""
    if root.is_dir():
        return sorted(p for p in root.rglob("*")
                      if p.is_file() and not any(STORE_FILE.search(part) for part in p.relative_to(root).parts))
    return [root] if root.exists() else []


def check_names(paths: Iterable[Path]) -> None:
    """Refuse a given path, or a file under a given folder, whose name is no UTF-8 (bytes the file system
    allows): a release records its inputs' names as text, so it is refused before the load writes anything."""
    for root in paths:
        for path in [root, *files_under(root)]:
            try:
                str(path).encode("utf-8")
            except UnicodeEncodeError:
                raise InputError(path, None, "its name is not valid UTF-8: rename it (a release records the names "
                                 "of its input files as text)") from None


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return f"sha256:{h.hexdigest()}"


def under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def split(path: str) -> list[str]:
    """A `Source.path`'s files: split at `SEPARATOR`, but a file whose own name holds it stays one (the pieces
    are joined while what they name does not exist, resolved against the working folder)."""
    out: list[str] = []
    part: str | None = None
    for piece in path.split(SEPARATOR):
        part = piece if part is None else f"{part}{SEPARATOR}{piece}"
        if absolute(part).exists():
            out.append(part)
            part = None
    return out + (part.split(SEPARATOR) if part is not None else [])


def of_load(sources: Mapping[str, Any], given: Sequence[str], read: Sequence[str]) -> dict[str, Inputs]:
    """The inputs of the Sources one load created (`sources`: id -> its `path` as the loader gave it, resolved
    against the working folder of the load). A Source without a path gets the paths the load was `given` that
    are no other release's; where such a folder holds another release's root, the files under it the load
    `read` (its summary's paths) that are no other release's."""
    roots = {i: [str(absolute(p)) for p in split(str(path))] for i, path in sources.items() if path}
    claimed = [Path(r) for rs in roots.values() for r in rs]
    for i in (i for i, path in sources.items() if not path):
        mine: list[str] = []
        for p in map(absolute, given):
            if any(under(p, c) for c in claimed):
                continue
            if any(under(c, p) for c in claimed):
                mine += [str(f) for f in map(absolute, read) if under(f, p) and not any(under(f, c) for c in claimed)]
            else:
                mine.append(str(p))
        roots[i] = mine
    cache: dict[Path, str] = {}
    out = {}
    for i, rs in roots.items():
        files = {f for r in rs for f in files_under(Path(r))}
        for f in files - set(cache):
            cache[f] = sha256(f)
        out[i] = Inputs(roots=rs, files={str(f): cache[f] for f in sorted(files)})
    return out


def changed(found: Inputs) -> str | None:
    """Why a release cannot be replayed from its recorded inputs (a file gone, changed or added), or None (also
    when nothing was recorded: then only the replayed release's id is checked)."""
    if not found.recorded:
        return None
    for name, digest in sorted(found.files.items()):
        path = Path(name)
        if not path.is_file():
            return f"its input {name} is gone"
        if sha256(path) != digest:
            return f"its input {name} changed since it was loaded"
    now = {str(f) for r in found.roots for f in files_under(Path(r))}
    added = sorted(now - set(found.files))
    if added:
        return f"its input folder holds a file it did not hold when it was loaded: {added[0]}"
    return None


def without(given: Iterable[str], dropped: Inputs, kept: Iterable[Inputs]) -> list[str]:
    """A call's paths (absolute, in the order given) with the dropped release's left out: a root of it goes; a
    folder holding one of its roots becomes the kept releases' roots inside it, sorted as a folder is read. A
    kept release's own root stays (the same file loaded again as another release, at another date)."""
    gone = [Path(r) for r in dropped.roots]
    kept_roots = [Path(r) for k in kept for r in k.roots]
    out: list[str] = []
    for p in map(Path, given):
        if p in kept_roots:
            out.append(str(p))
            continue
        if p in gone:
            continue
        if any(under(g, p) for g in gone):
            out += [str(r) for r in sorted({r for r in kept_roots if under(r, p)})]
        else:
            out.append(str(p))
    return out
