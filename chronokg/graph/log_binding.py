"""The write-ahead log bound to the checkpoint it continues.

kglite's log names no checkpoint: another store's log, or a checkpoint restored from an older backup beside a
newer log, would be replayed as this store's commits. Its format is kglite's, so the binding is a small file
beside it, `<store>-wal.bind` (JSON, written whole under a temp name and renamed in), written by chronokg's
writer at each checkpoint and when it opens the store:

- `checkpoint`: the identity of the checkpoint the log continues (`graph.checkpoint.identity`);
- `open`: a writer opened that checkpoint, so commits may follow it (False at a checkpoint a writer closed);
- `first`: the head of the log's first commit after it (its length, checksum and sequence number, hex), once
  the writer's first write returned; None before.

A log holding commits is refused as `out-of-sequence` when its first commit's sequence number (LSN) leaves a
gap after the checkpoint's (`checkpoint_lsn`): the commits between are in no file, so the log continues another,
later checkpoint (one restored from an older copy beside a newer log). It is refused as `foreign` when the binding
names the checkpoint on disk and either recorded another first commit, or records that no writer has written
since it. Commits the checkpoint already holds (a crash between a save and the log's truncation) are skipped by
kglite and never count. Where the binding names another checkpoint (kglite folds a long log into a new checkpoint
by itself, then trims the log) or there is none (a store from before bindings), the sequence numbers alone decide;
so does the window between a writer's first commit and its record of it.
"""

from __future__ import annotations

import json
import mmap
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from chronokg.graph import checkpoint

SUFFIX = "-wal.bind"
HEADER = 5  # the log's header (`KWAL` and a format byte), before its first frame
FRAME_HEAD = 8  # the length and CRC-32 before each frame's payload (as `kglite_files` reads them)
ID_BYTES = 18  # a frame's head and the start of its payload (its sequence number, a LEB128 varint, comes first)
Verdict = Literal["foreign", "out-of-sequence"]
Buffer = bytes | mmap.mmap


def path_of(store: str | Path) -> Path:
    return Path(str(store) + SUFFIX)


@dataclass(frozen=True)
class Binding:
    checkpoint: int | None
    open: bool
    first: str | None


def read(store: str | Path) -> Binding | None:
    try:
        data = json.loads(path_of(store).read_text())
        return Binding(checkpoint=data.get("checkpoint"), open=bool(data.get("open")), first=data.get("first"))
    except (OSError, ValueError, AttributeError):
        return None


def write(store: str | Path, *, open_: bool, first: str | None = None) -> None:
    """Bind the log to the checkpoint now at `store` (see the module docstring); the temp file's name carries
    the pid, so a writer killed mid-write leaves what `kglite_files.remove_leftovers` removes."""
    target = path_of(store)
    text = json.dumps({"checkpoint": checkpoint.identity(store), "open": open_, "first": first}, sort_keys=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{Path(store).name}-wal.{os.getpid()}.", suffix=".bind", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def frame_id(data: Buffer, at: int) -> str:
    return bytes(data[at:at + ID_BYTES]).hex()


def first_frame(store: str | Path, header: int) -> str | None:
    """The identity of the log's first commit (`frame_id`), or None when it holds none."""
    try:
        with open(str(store) + "-wal", "rb") as fh:
            fh.seek(header)
            head = fh.read(ID_BYTES)
    except OSError:
        return None
    return head.hex() if len(head) > FRAME_HEAD else None


def sequence(data: Buffer, at: int) -> int | None:
    """The sequence number (LSN) at the start of the payload of the frame at `at`: a LEB128 varint."""
    value, shift, pos = 0, 0, at + FRAME_HEAD
    while pos < len(data) and shift < 64:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value
        shift, pos = shift + 7, pos + 1
    return None


def problem(store: str | Path, data: Buffer, first_at: int, last_at: int, commits: int
            ) -> tuple[Verdict, str] | None:
    """Why the log (its bytes; the offsets of its first and last intact commits, `commits` of them) does not
    continue the checkpoint at `store`, or None when it does (see the module docstring)."""
    if not commits:
        return None
    wal = f"{Path(store).name}-wal"
    last = checkpoint.lsn(store)
    first, final = sequence(data, first_at), sequence(data, last_at)
    if last is not None and final is not None and final <= last:
        return None  # commits the checkpoint already holds (sequence numbers only grow): kglite skips them
    if last is not None and first is not None and first > last + 1:
        return "out-of-sequence", (f"{wal}'s first commit is number {first}, but the checkpoint in "
                                   f"{Path(store).name} ends at commit {last}: the log does not continue it (a "
                                   "checkpoint restored from an older copy beside a newer log, or another store's "
                                   f"log?); its {commits} commit(s) would be replayed onto the wrong state")
    bound = read(store)
    if bound is None or bound.checkpoint != checkpoint.identity(store):
        return None  # no binding (an older store), or kglite checkpointed by itself since: the numbers decide
    if bound.first is not None and bound.first != frame_id(data, first_at):
        return "foreign", (f"{wal} is not the log this store's writer wrote after its checkpoint (its first "
                           "commit is another one: another store's log?)")
    if bound.first is None and not bound.open:
        return "foreign", (f"{wal} holds {commits} commit(s), but no writer of this store has written since its "
                           "checkpoint (another store's log?)")
    return None


# --- the writer's side ---------------------------------------------------------------------------------------

def on_open(store: str | Path, *, logged: bool) -> bool:
    """A writer opened the store (its log's commits, if any, replayed in memory): bind the log to the checkpoint
    on disk, open for commits when `logged`, with its first commit if it holds one. Returns whether the first
    commit is recorded (a writer records it after its own first commit otherwise: `after_commit`)."""
    first = first_frame(store, HEADER) if logged else None
    write(store, open_=logged, first=first)
    return first is not None or not logged


def after_commit(store: str | Path) -> bool:
    """After a commit: record the log's first commit once (True when it is recorded)."""
    first = first_frame(store, HEADER)
    if first is None:
        return False
    write(store, open_=True, first=first)
    return True


def after_checkpoint(store: str | Path, *, writing: bool) -> bool:
    """After a checkpoint, or as a writer that changed nothing lets go: bind the log to the checkpoint on disk,
    open while the writer goes on writing to the log, with its first commit if it holds one (a commit made
    outside the writer's own writes, which the next writer replays). Returns whether nothing is left to record."""
    first = first_frame(store, HEADER)
    write(store, open_=writing or first is not None, first=first)
    return first is not None or not writing
