"""`chronokg store check`: what an embedded store's files hold, what the next writer will do with them, and
the recovery of a damaged write-ahead log.

An embedded store is its last checkpoint (`store.kgl`) plus a write-ahead log (`store.kgl-wal`) of commits made
since. The check predicts the writer (`kglite_files`: the log read frame by frame, as kglite reads it): it starts
a new log, replays the log's commits, replays them and sets a torn last append aside, waits for a live writer, or
refuses (a damaged header, a log of another kglite, a damaged commit, a log that does not continue the checkpoint
on disk (`graph.log_binding`), an unreadable checkpoint). A damaged commit is never dropped silently: the writer
refuses it, and `repair` recovers it without losing a committed byte: the damaged log is first copied aside
unchanged (`store.kgl-wal.damaged-<UTC time>`, never deleted), then a log with this kglite's header and every
intact commit before the damage replaces it (written to a temporary name, renamed when whole), and a writer opens
the store, replays them and checkpoints. What cannot be replayed stays in the kept copy. A log that does not
continue the checkpoint is kept aside whole (`store.kgl-wal.unbound-<UTC time>`) and none of it replayed.
"""

from __future__ import annotations

import datetime as dt
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Literal

import kglite
from pydantic import BaseModel

from chronokg.errors import StoreBusy, StoreError
from chronokg.files import write_whole
from chronokg.graph.kglite_files import (
    UNBOUND,
    WAL_HEADER,
    WAL_MAGIC,
    LogState,
    lease_holder,
    lease_owner,
    process_alive,
    readable_versions,
    scan_bytes,
    scan_log,
)
from chronokg.graph.kglite_store import KgliteStore

ASIDE = (".damaged-", ".unbound-", ".torn-", ".quarantine-")  # copies of log bytes kept beside a store
WriterAction = Literal["open", "replay", "replay-discard", "wait", "refuse"]
REFUSED: frozenset[LogState] = frozenset({"damaged", "newer", "older-unsupported", "foreign", "out-of-sequence"})


class StoreCheck(BaseModel):
    """What `chronokg store check` found, and what the next writer does (`writer`); `ok` when it opens."""

    path: str
    checkpoint: str  # "ok" or why it cannot be read
    nodes: int | None = None
    relationships: int | None = None
    log: LogState
    log_bytes: int = 0
    log_version: int | None = None
    commits: int = 0  # intact commits in the log, which the next writer replays (none when it refuses or waits)
    log_problem: str | None = None
    lease: str  # "free", "stale (process N is gone)" or "held by process N"
    writer: WriterAction
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


def lease_state(store: Path) -> str:
    """The writer lease: kglite's lock on `<store>.lock` (held or not), named by the owner file beside it. A
    lock nobody holds whose owner file still names a process is stale, whether that process is gone or its pid
    now belongs to another process (the next writer takes it over)."""
    owner = lease_owner(store)
    if owner is None:
        return "free"
    pid, held = owner
    if held:
        return f"held by process {pid}" if pid is not None else "held by another process"
    if pid is not None and process_alive(pid):
        return f"stale (process {pid} runs but holds no lock: its pid was reused)"
    return f"stale (process {pid} is gone)"


def _writer(checkpoint: str, lease: str, log: LogState) -> WriterAction:
    if checkpoint != "ok" or log in REFUSED:
        return "refuse"
    if lease.startswith("held"):
        return "wait"
    return {"commits": "replay", "torn": "replay-discard"}.get(log, "open")  # type: ignore[return-value]


def _advice(store: Path, writer: WriterAction, found: StoreCheck) -> str:
    wal = f"{store.name}-wal"
    if found.checkpoint != "ok":
        return (f"the checkpoint {store.name} cannot be read: restore it from a backup or re-run the loads "
                "(nothing was changed)")
    if found.log == "damaged":
        return (f"the next writer refuses: {found.log_problem}. `chronokg store check --repair` keeps the damaged "
                f"log aside ({wal}.damaged-…), replays every intact commit in it and checkpoints; readers see "
                "the last checkpoint meanwhile")
    if found.log in UNBOUND:
        return (f"the next writer refuses: {found.log_problem}. `chronokg store check --repair` keeps the log aside "
                f"({wal}.unbound-…), replays none of it and opens the checkpoint as it is; readers see the "
                "checkpoint meanwhile")
    if writer == "refuse":
        return f"the next writer refuses: {found.log_problem}"
    if writer == "wait":
        return f"the writer lease is {found.lease}: the next writer waits for it (CHRONOKG_LOCK_TIMEOUT), then refuses"
    if writer == "replay":
        return (f"the log holds {found.commits} commit(s) not yet checkpointed (a writer stopped without closing): "
                "the next writer replays them (chronokg init)")
    if writer == "replay-discard":
        return (f"the next writer replays the log's {found.commits} intact commit(s) and sets the rest aside "
                f"({wal}.torn-…): {found.log_problem}")
    if found.log == "short":
        return f"the next writer starts a new log: {found.log_problem}"
    return "nothing to do"


def check(path: str | Path) -> StoreCheck:
    """Inspect the store's files without opening it as a writer, changing nothing."""
    store = Path(path)
    if not store.is_file():
        raise StoreError(f"no store at {store}")
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
    scan = scan_log(store, readable_versions())
    lease = lease_state(store)
    writer = _writer(checkpoint, lease, scan.state)
    found = StoreCheck(path=str(store), checkpoint=checkpoint, nodes=nodes, relationships=relationships,
                       log=scan.state, log_bytes=scan.size, log_version=scan.version,
                       commits=0 if writer in {"refuse", "wait"} else scan.commits, log_problem=scan.problem,
                       lease=lease, writer=writer, kept_aside=kept, ok=writer not in {"refuse", "wait"}, advice="")
    found.advice = _advice(store, writer, found)
    return found


def repair(path: str | Path) -> StoreCheck:
    """Recover a store whose log is damaged (see the module docstring); a sound store is left as it is."""
    found = check(path)
    if found.checkpoint != "ok" or found.log in {"newer", "older-unsupported"}:
        raise StoreError(f"{found.path}: {found.advice}")
    if found.log not in {"damaged", *UNBOUND}:
        return found
    store = Path(found.path)
    holder = lease_holder(store)
    if holder is not None:
        raise StoreBusy(f"{store} is held by {holder}: stop that writer before repairing its log")
    wal = Path(f"{store}-wal")
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    unbound = found.log in UNBOUND
    kept = wal.with_name(f"{wal.name}.{'unbound' if unbound else 'damaged'}-{stamp}")
    shutil.copy2(wal, kept)  # the log, byte for byte, before anything else happens
    data = wal.read_bytes()
    header = fresh_header()
    lo, hi = readable_versions()
    if not data.startswith(WAL_MAGIC) or not lo <= data[4] <= hi:
        data = header + data[WAL_HEADER:]  # a damaged header: this kglite's, over the same frames
    scan = scan_bytes(data, (lo, hi))
    if unbound:
        data = header  # another checkpoint's commits: none is replayed here, all stay in the kept copy
    elif scan.state == "damaged":
        data = data[:scan.intact_end]  # the commits before the damage; the rest stays in the kept copy
    write_whole(wal, data)
    with KgliteStore(store):  # replays the intact commits, checkpoints
        pass
    return check(store)
