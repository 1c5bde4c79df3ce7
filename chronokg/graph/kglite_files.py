"""The files beside an embedded store, read without opening it: who holds the writer lease, what the
write-ahead log holds and what the next writer will do with it (why apart: `store check`, readers, the
writer's own refusal and the recovery tool ask this without the engine), and the leftovers of killed writers.

kglite's log (read here byte for byte, its behaviour probed per kind of damage in tests/test_log_damage.py):
a header `KWAL` + one format-version byte, then one frame per commit: payload length (u32 LE), CRC-32 of the
payload (u32 LE), payload. Opening as a writer, kglite replays the intact frames and then, at the first frame
that is incomplete *or fails its checksum*, stops and sets the rest aside (`.torn-`/`.quarantine-` copies),
replaying nothing after it. For a torn append that is right (the commit was never acknowledged); for a
complete frame whose checksum fails, or damage with an intact frame after it, it drops committed work: the
writer refuses those instead (`writer_refusal`) and `chronokg store check --repair` recovers them.
"""

from __future__ import annotations

import functools
import mmap
import os
import re
import shutil
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from chronokg.errors import StoreError
from chronokg.graph import log_binding

WAL_HEADER = 5  # bytes of an empty write-ahead log
WAL_MAGIC = b"KWAL"
FRAME_HEAD = 8  # length and CRC-32, before each frame's payload
UNBOUND = frozenset({"foreign", "out-of-sequence"})  # a log that does not continue the checkpoint on disk
SCAN_BUDGET = 256 << 20  # bytes checksummed looking for intact frames after damage; past it, assume there are
REPLAY_PREFIX = "chronokg-replay-"  # a drop's scratch folder in the temp folder: `<prefix><pid>-…`
LogState = Literal["absent", "empty", "short", "commits", "torn", "damaged", "older-unsupported", "newer", "foreign",
                   "out-of-sequence"]


@dataclass(frozen=True)
class LogScan:
    """What the log holds, frame by frame, and so what a writer opening the store does with it."""

    state: LogState
    size: int = 0
    version: int | None = None
    commits: int = 0  # intact frames a writer replays
    intact_end: int = 0  # where they end (bytes)
    problem: str | None = None
    first_at: int = 0  # where the first and the last intact frame start (0: none)
    last_at: int = 0


def scan_log(path: Path, readable: tuple[int, int]) -> LogScan:
    """Classify the log of the store at `path`; `readable`: the format versions this kglite replays (lo, hi)."""
    wal = Path(str(path) + "-wal")
    try:
        size = wal.stat().st_size
    except FileNotFoundError:
        return LogScan("absent")
    if size == 0:
        return LogScan("empty")
    with wal.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        scan = scan_bytes(data, readable)
        if scan.state not in {"commits", "torn"} or not scan.commits:
            return scan
        unbound = log_binding.problem(path, data, scan.first_at, scan.last_at, scan.commits)
    if unbound is None:
        return scan
    return LogScan(unbound[0], scan.size, scan.version, scan.commits, scan.intact_end, unbound[1])


def scan_bytes(data: bytes | mmap.mmap, readable: tuple[int, int]) -> LogScan:
    """`scan_log` on the log's bytes."""
    size = len(data)
    if size < WAL_HEADER:  # no room for a commit; kglite starts the log anew at its first append
        return LogScan("short", size, problem=f"the log is {size} byte(s), less than a header: it holds no commit")
    head = bytes(data[:WAL_HEADER])
    if not head.startswith(WAL_MAGIC):
        return LogScan("damaged", size, problem=f"not a kglite write-ahead log: it starts {head[:4]!r}, not "
                                                f"{WAL_MAGIC!r} (bad magic)")
    version = head[4]
    lo, hi = readable
    if version > hi:
        return LogScan("newer", size, version, problem=f"the log is format version {version}, newer than this kglite "
                                                       f"reads (v{lo}-v{hi}): open the store with the kglite that "
                                                       "wrote it")
    if version == 1:
        return LogScan("older-unsupported", size, version,
                       problem="the log is format version 1 (kglite before 0.14), which this kglite does not read: "
                               "open the store with kglite 0.13.4 and save it")
    if version < lo:
        return LogScan("damaged", size, version, problem=f"the log's header names format version {version}, which "
                                                         "no kglite wrote")
    off, commits, last_at = WAL_HEADER, 0, 0
    while size - off >= FRAME_HEAD:
        length = int.from_bytes(data[off:off + 4], "little")
        if length == 0 or off + FRAME_HEAD + length > size:
            break  # not a whole frame: a torn append, or a damaged length (told apart below)
        if zlib.crc32(data[off + FRAME_HEAD:off + FRAME_HEAD + length]) != int.from_bytes(data[off + 4:off + 8],
                                                                                         "little"):
            return LogScan("damaged", size, version, commits, off,
                           f"commit {commits + 1} (the frame at byte {off}) is whole but fails its checksum: a "
                           f"writer would replay the {commits} commit(s) before it and drop it and all after it")
        commits, last_at, off = commits + 1, off, off + FRAME_HEAD + length
    first_at = WAL_HEADER if commits else 0
    if off == size:
        return LogScan("commits" if commits else "empty", size, version, commits, off, None, first_at, last_at)
    later = _intact_frame_after(data, off + 1)
    if later is not None:
        follows = (f"an intact commit follows it (at byte {later})" if later > off + 1 else
                   "what follows it is too long to show that no commit is in it")
        return LogScan("damaged", size, version, commits, off,
                       f"the frame at byte {off} is damaged and {follows}: a writer would replay the {commits} "
                       "commit(s) before it and drop the rest")
    if not any(data[off:size]):  # space the file system gave the log and nothing wrote: kglite drops it
        return LogScan("commits" if commits else "empty", size, version, commits, off,
                       f"{size - off} zero byte(s) after the last commit, which hold nothing", first_at, last_at)
    return LogScan("torn", size, version, commits, off,
                   f"the last {size - off} byte(s) are not a whole frame: a commit cut off mid-append, never "
                   "acknowledged", first_at, last_at)


def _intact_frame_after(data: bytes | mmap.mmap, start: int) -> int | None:
    """The offset of a whole frame with a matching checksum at or after `start`, or None. Past the scan
    budget, `start` itself: damage that cannot be shown harmless counts as hiding a commit."""
    import numpy as np

    size, spent, chunk = len(data), 0, 1 << 22  # candidate lengths read 4 MiB of offsets at a time
    for base in range(start, size - FRAME_HEAD, chunk):
        raw = np.frombuffer(data, dtype=np.uint8, count=min(chunk + 3, size - base), offset=base).astype(np.int64)
        n = min(chunk, raw.size - 3)
        lengths = raw[:n] | raw[1:n + 1] << 8 | raw[2:n + 2] << 16 | raw[3:n + 3] << 24
        room = (size - base - FRAME_HEAD) - np.arange(n, dtype=np.int64)
        for i in np.flatnonzero((lengths > 0) & (lengths <= room)).tolist():
            at, length = base + i, int(lengths[i])
            end = at + FRAME_HEAD + length  # a frame ends the log, or is followed by one that fits, or by zeros
            follow = int.from_bytes(data[end:end + 4], "little") if end + FRAME_HEAD <= size else 0
            if end != size and not 0 < follow <= size - end - FRAME_HEAD and any(data[end:end + FRAME_HEAD]):
                continue
            spent += length
            if spent > SCAN_BUDGET:
                return start
            crc = int.from_bytes(data[at + 4:at + 8], "little")
            if zlib.crc32(data[at + FRAME_HEAD:at + FRAME_HEAD + length]) == crc:
                return at
    return None


@functools.cache
def readable_versions() -> tuple[int, int]:
    """The log format versions this kglite build replays, from its own refusal of version 0 ("reads v2-v13"),
    never assumed; the engine is imported only here, and only when a log holds more than its header."""
    import kglite

    with tempfile.TemporaryDirectory(prefix="chronokg-wal-") as folder:
        store = Path(folder) / "v.kgl"
        Path(f"{store}-wal").write_bytes(WAL_MAGIC + b"\x00")
        try:
            graph = kglite.open(str(store), durable="normal")
        except OSError as exc:
            found = re.search(r"reads v(\d+)-v(\d+)", str(exc))
            if found:
                return int(found.group(1)), int(found.group(2))
        else:
            graph.close()
        current = Path(f"{store}-wal").read_bytes()[4] if Path(f"{store}-wal").stat().st_size >= WAL_HEADER else 0
        return current, current


def writer_refusal(path: Path) -> str | None:
    """One line when a writer must not open the store at `path`: its log holds a damaged commit that kglite
    would drop, or is another kglite's (None otherwise, and while another process holds the lease: that
    writer's frames may be half written; the lease wait decides). kglite refuses a bad header by itself."""
    wal = Path(str(path) + "-wal")
    if not wal.exists() or wal.stat().st_size <= WAL_HEADER:
        return None  # the common case, decided without reading a byte
    scan = scan_log(path, readable_versions())
    if scan.state in {"newer", "older-unsupported"}:
        return (f"{path}-wal, the store's write-ahead log, was written by another kglite ({scan.problem}); nothing "
                "was changed and readers still see the last checkpoint (`chronokg store check` says more)")
    if scan.state in UNBOUND and lease_holder(path) is None:
        return (f"{path}-wal, the store's write-ahead log, is not this checkpoint's ({scan.state}: {scan.problem}); "
                "nothing was changed and readers still see the last checkpoint: run `chronokg store check "
                "--repair` to keep the log aside and open the checkpoint as it is (docs/integrity.md)")
    if scan.state != "damaged" or scan.intact_end == 0 or lease_holder(path) is not None:
        return None
    return (f"{path}-wal, the store's write-ahead log, holds a damaged commit ({scan.problem}); nothing was "
            "changed and readers still see the last checkpoint: run `chronokg store check --repair` to keep the "
            "log aside and replay every intact commit (docs/integrity.md)")


def remove_leftovers(path: Path) -> list[str]:
    """Remove the temporary files of writers that died at `path` (a killed save or bulk load, a killed
    repair): `<store>.tmp.<pid>.<n>` (kglite's save), `<store>.intervals.npz.<pid>.*.tmp` (the interval
    sidecar), `.<store>-wal.<pid>.*` (a repair's new log) and a drop's scratch folder in the temp folder
    (`chronokg-replay-<pid>-*`), each only when its process is gone. Called by
    a writer holding the lease, so no live writer owns them. Returns the names removed."""
    removed = []
    name = re.escape(path.name)
    patterns = rf"{name}\.tmp\.(\d+)\.\d+", rf"{name}\.intervals\.npz\.(\d+)\..*\.tmp", rf"\.{name}-wal\.(\d+)\..*"
    for pattern in patterns:
        for leftover in (p for p in path.parent.iterdir() if path.name in p.name):
            found = re.fullmatch(pattern, leftover.name)
            if found and int(found.group(1)) != os.getpid() and not process_alive(int(found.group(1))):
                leftover.unlink(missing_ok=True)
                removed.append(leftover.name)
    scratch = Path(tempfile.gettempdir())
    for folder in scratch.glob(f"{REPLAY_PREFIX}*"):  # a drop's replay killed before it removed its scratch store
        found = re.match(rf"{re.escape(REPLAY_PREFIX)}(\d+)-", folder.name)
        if found and folder.is_dir() and int(found.group(1)) != os.getpid() and not process_alive(int(found.group(1))):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    return sorted(removed)


def lease_taken(path: Path) -> bool:
    """Whether a process holds the writer lease of the store at `path` now: kglite's lease is an exclusive
    `flock` on `<store>.lock`, which the operating system releases when its holder dies. Asked by trying to
    take it without waiting and letting it go at once; a missing lock file is a free lease (nothing is
    created)."""
    import fcntl

    try:
        fd = os.open(str(path) + ".lock", os.O_RDONLY)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def lease_owner(path: Path) -> tuple[int | None, bool] | None:
    """The process the lease owner file names (None: unnamed) and whether the lease is held now, or None when
    it is free and no file names an owner (no file, unreadable, released, no pid). A pid is only a name: the
    lease itself is the lock (`lease_taken`), so a named process that runs but holds no lock (its pid reused)
    holds nothing."""
    held = lease_taken(path)
    owner = Path(str(path) + ".lock-owner")
    try:
        text = owner.read_text(errors="replace") if owner.is_file() else ""
    except OSError:
        text = ""
    fields = dict(line.partition("=")[::2] for line in text.splitlines())
    pid = fields.get("pid", "")
    named = int(pid) if pid.isdigit() and "released" not in fields else None
    if named is None and not held:
        return None
    return named, held


def lease_holder(path: Path) -> str | None:
    """Who holds the writer lease of the store at `path` now ("process 123"), or None."""
    owner = lease_owner(path)
    if owner is None or not owner[1]:
        return None
    return f"process {owner[0]}" if owner[0] is not None else "another process"


LOCK_FILES = (".lock", ".lock-owner")


def existing_lock_files(path: Path) -> set[str]:
    return {suffix for suffix in LOCK_FILES if Path(str(path) + suffix).exists()}


def remove_lock_files(path: Path, existed: set[str]) -> None:
    """After a writer failed to open the store at `path`: remove the lease files its attempt created (those in
    `existed` were there before it), unless a process holds the lease now."""
    if lease_taken(path):
        return
    for suffix in LOCK_FILES:
        if suffix not in existed:
            Path(str(path) + suffix).unlink(missing_ok=True)


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
    if len(head) < WAL_HEADER:
        return None  # a header cut short holds no commit; the next writer starts a new log
    if not head.startswith(WAL_MAGIC):
        return (f"{wal} is damaged (not a kglite write-ahead log); readers see the last checkpoint, and no writer "
                "can open the store until it is repaired: run `chronokg store check`")
    if size <= WAL_HEADER:
        return None
    if lease_holder(path) is not None:
        return None  # a writer is at work: its commits become visible at its checkpoint
    scan = scan_log(path, readable_versions())  # after a crash only: a log holds commits
    if scan.state in {"damaged", "newer", "older-unsupported", *UNBOUND}:
        return (f"{wal} cannot be replayed ({scan.problem}); readers see the last checkpoint, and no writer opens "
                "the store until it is dealt with: run `chronokg store check`")
    return (f"{path} has writes in its log that were never checkpointed (a writer stopped without closing); "
            "readers do not see them until a writer opens the store again (chronokg init)")


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder_words(exc: Any) -> str:
    """Who holds the writer lease, in words ("process 123 (since 2026-11-23T11:36:00Z)")."""
    info = getattr(exc, "holder", None) or {}
    if info.get("self"):
        return "an earlier handle in this process that was never closed"
    who = f"process {info['pid']}" if info.get("pid") else "another process"
    return who + (f" (since {info['since']})" if info.get("since") else "")


def open_logged(path: str, level: Literal["full", "normal", "off"]) -> Any:
    """`kglite.open`, with a log whose header is damaged (which no writer can open) said in one line."""
    import kglite

    try:
        return kglite.open(path, durable=level)
    except OSError as exc:
        if "write-ahead log" not in str(exc):
            raise
        reason = str(exc).split(": ", 1)[-1].split(". ")[0]
        raise StoreError(f"{path}-wal, the store's write-ahead log, cannot be read ({reason}); the last checkpoint "
                         "is intact and readers still see it: run `chronokg store check` to see what the store "
                         "holds, then `chronokg store check --repair` to recover (docs/integrity.md)") from None
