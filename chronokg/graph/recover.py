"""`chronokg store check`: what an embedded store's files hold, and the recovery of a damaged write-ahead log.

An embedded store is its last checkpoint (`store.kgl`) plus a write-ahead log (`store.kgl-wal`) of commits
made since. kglite itself recovers a log whose damage is a torn or corrupt *frame*: it replays the intact
frames before it and sets the rest aside in a `.torn-`/`.quarantine-` copy beside the store. What it
cannot open is a log whose *header* is damaged (`not a kglite WAL file (bad magic)`): every writer then
fails. `repair` recovers that case without losing a committed byte: the damaged log is first copied aside
unchanged (`store.kgl-wal.damaged-<UTC time>`, never deleted), then a log with a fresh header and the
damaged log's frames replaces it (written to a temporary name, renamed when whole), and a writer opens the
store, replays every intact frame and checkpoints. Whatever kglite cannot replay stays in the kept copies.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Literal

import kglite
from pydantic import BaseModel

from chronokg.errors import StoreBusy, StoreError
from chronokg.graph.kglite_files import WAL_HEADER, lease_holder
from chronokg.graph.kglite_store import KgliteStore

WAL_MAGIC = b"KWAL"
LogState = Literal["absent", "empty", "commits", "damaged", "newer"]
ASIDE = (".damaged-", ".torn-", ".quarantine-")  # copies of log bytes kept beside a store (ours and kglite's)


class StoreCheck(BaseModel):
    """What `chronokg store check` found; `ok` when a writer can open the store as it is."""

    path: str
    checkpoint: str  # "ok" or why it cannot be read
    nodes: int | None = None
    relationships: int | None = None
    log: LogState
    log_bytes: int = 0
    log_problem: str | None = None
    kept_aside: list[str] = []
    ok: bool
    advice: str


def fresh_header() -> bytes:
    """The header this kglite build writes at the top of a new log (read from one, never assumed)."""
    with tempfile.TemporaryDirectory(prefix="chronokg-wal-") as folder:
        graph = kglite.open(str(Path(folder) / "h.kgl"), durable="normal")
        header = (Path(folder) / "h.kgl-wal").read_bytes()[:WAL_HEADER]
        graph.close()
    return header


def _log_state(wal: Path, header: bytes) -> tuple[LogState, str | None]:
    if not wal.exists():
        return "absent", None
    head = wal.read_bytes()[:WAL_HEADER] if wal.stat().st_size else b""
    if not head:
        return "empty", None
    if not head.startswith(WAL_MAGIC):
        return "damaged", f"not a kglite write-ahead log: it starts {head[:4]!r}, not {WAL_MAGIC!r} (bad magic)"
    if len(head) < WAL_HEADER:
        return "damaged", f"the log's header is cut short ({len(head)} of {WAL_HEADER} bytes)"
    if head != header:
        if head[4] > header[4]:
            return "newer", (f"the log is format version {head[4]}, newer than this kglite reads ({header[4]}): "
                             "open the store with the kglite that wrote it")
        return "damaged", f"the log's header names format version {head[4]}, which this kglite does not read"
    return ("commits" if wal.stat().st_size > WAL_HEADER else "empty"), None


def check(path: str | Path) -> StoreCheck:
    """Inspect the store's files without opening it as a writer, changing nothing."""
    store = Path(path)
    if not store.is_file():
        raise StoreError(f"no store at {store}")
    wal = Path(f"{store}-wal")
    kept = sorted(p.name for p in store.parent.glob(f"{store.name}-wal*") if any(a in p.name for a in ASIDE))
    nodes = relationships = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # kglite's note on unreplayed commits: the log is reported below
            reader = KgliteStore(store, read_only=True)  # the checkpoint alone: no lease, nothing written
        with reader:
            nodes = int(reader.run("MATCH (n) RETURN count(n) AS n")[0]["n"])
            relationships = int(reader.run("MATCH ()-[r]->() RETURN count(r) AS n")[0]["n"])
        checkpoint = "ok"
    except StoreError as exc:
        checkpoint = " ".join(str(exc).split())
    log, problem = _log_state(wal, fresh_header())
    size = wal.stat().st_size if wal.exists() else 0
    if checkpoint != "ok":
        advice = (f"the checkpoint {store.name} cannot be read: restore it from a backup or re-run the loads "
                  "(nothing was changed)")
    elif log == "damaged":
        advice = (f"the log's header is damaged, so no writer can open the store; readers see the last checkpoint. "
                  f"`chronokg store check --repair` keeps the damaged log aside ({wal.name}.damaged-…), replays "
                  "every intact commit in it and checkpoints")
    elif log == "newer":
        advice = problem or ""
    elif log == "commits":
        advice = ("the log holds commits not yet checkpointed (a writer stopped without closing): the next writer "
                  "replays them (chronokg init)")
    else:
        advice = "nothing to do"
    return StoreCheck(path=str(store), checkpoint=checkpoint, nodes=nodes, relationships=relationships, log=log,
                      log_bytes=size, log_problem=problem, kept_aside=kept,
                      ok=checkpoint == "ok" and log not in {"damaged", "newer"}, advice=advice)


def repair(path: str | Path) -> StoreCheck:
    """Recover a store whose log header is damaged (see the module docstring); a sound store is left as it is."""
    found = check(path)
    if found.checkpoint != "ok" or found.log == "newer":
        raise StoreError(f"{found.path}: {found.advice}")
    if found.log != "damaged":
        return found
    store = Path(found.path)
    holder = lease_holder(store)
    if holder is not None:
        raise StoreBusy(f"{store} is held by {holder}: stop that writer before repairing its log")
    wal = Path(f"{store}-wal")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    kept = wal.with_name(f"{wal.name}.damaged-{stamp}")
    shutil.copy2(wal, kept)  # the damaged log, byte for byte, before anything else happens
    body = wal.read_bytes()[WAL_HEADER:]
    fd, temp = tempfile.mkstemp(prefix=f".{wal.name}.", dir=store.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(fresh_header() + body)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, wal)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    with KgliteStore(store):  # replays the intact frames (kglite sets any damaged ones aside), checkpoints
        pass
    return check(store)
