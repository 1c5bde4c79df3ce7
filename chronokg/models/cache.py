"""The persistent response cache: one SQLite file, one row per (request, sample index).

The key is the sha256 of canonical JSON of (spec, base URL, messages or prompt, the full
generation config less `n` and `timeout`, epoch, sample index). Caching per sample index means
that `n=5` after `n=3` reuses the three and asks the server for two, and that a resumed run gets
back exactly the samples it had. WAL mode and a busy timeout let many tasks and several
processes write at once; each response's samples are written in one transaction, so a Ctrl-C or
a kill leaves either all of them or none. The first writer of a key wins.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from chronokg.models.client_errors import ModelConfigError
from chronokg.models.types import Choice, ModelRequest, Usage

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key     TEXT PRIMARY KEY,
    spec    TEXT NOT NULL,
    created REAL NOT NULL,
    body    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_spec ON responses (spec);
"""


class CachedSample(BaseModel):
    """One cached choice, with the response it came from (server model name, request id, usage)."""

    choice: Choice
    model: str | None = None
    request_id: str | None = None
    usage: Usage = Usage()


class CacheStat(BaseModel):
    spec: str
    entries: int
    oldest: float
    newest: float


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sample_keys(spec: str, base_url: str | None, request: ModelRequest) -> list[str]:
    """One key per sample index `0..n-1` of `request`."""
    stem: dict[str, Any] = {
        "v": 1, "spec": spec, "base_url": base_url, "epoch": request.epoch,
        "config": request.config.model_dump(mode="json", exclude={"n", "timeout"}, exclude_none=True),
    }
    if request.messages is not None:
        stem["messages"] = [m.model_dump(mode="json", exclude_none=True) for m in request.messages]
    else:
        stem["prompt"] = request.prompt
    head = canonical_json(stem)[:-1]  # the same prefix for every sample; only the index differs
    return [hashlib.sha256(f'{head},"sample":{i}}}'.encode()).hexdigest() for i in range(request.config.n)]


def set_wal(conn: sqlite3.Connection, timeout_s: float) -> None:
    """Switch to WAL, retrying while another process holds the lock it needs: SQLite does not always call its
    busy handler for this switch (two processes opening one new cache at once got "database is locked" at
    once in CI), so `busy_timeout` alone is not enough here."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if ("locked" not in str(exc) and "busy" not in str(exc)) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)


class ResponseCache:
    """A SQLite response cache at `path` (created on first use), shared safely between processes."""

    def __init__(self, path: Path | str, *, busy_timeout_s: float = 60.0) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None,
                                       check_same_thread=False)
                conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
                set_wal(conn, self.busy_timeout_s)
                conn.execute("PRAGMA synchronous = NORMAL")
                conn.executescript(_SCHEMA)
            except (OSError, sqlite3.Error) as exc:
                raise ModelConfigError(f"cannot open the response cache at {self.path}: {exc}") from exc
            self._conn = conn
        return self._conn

    def get_many(self, keys: list[str]) -> dict[str, CachedSample]:
        """The cached samples among `keys`."""
        with self._lock:
            db = self._db()
            if len(keys) == 1:
                rows = db.execute("SELECT key, body FROM responses WHERE key = ?", keys).fetchall()
            else:
                marks = ",".join("?" * len(keys))
                rows = db.execute(f"SELECT key, body FROM responses WHERE key IN ({marks})", keys).fetchall()
        return {key: CachedSample.model_validate_json(body) for key, body in rows}

    def put_many(self, spec: str, samples: dict[str, CachedSample]) -> None:
        """Store the samples of one response in one transaction (all or none; existing keys kept)."""
        now = time.time()
        rows = [(key, spec, now, sample.model_dump_json(exclude_defaults=True)) for key, sample in samples.items()]
        with self._lock:
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany("INSERT OR IGNORE INTO responses (key, spec, created, body) VALUES (?, ?, ?, ?)",
                               rows)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def stats(self) -> list[CacheStat]:
        """Entries per model spec, with the oldest and newest write times (Unix seconds)."""
        if not self.path.exists():
            return []
        with self._lock:
            rows = self._db().execute(
                "SELECT spec, COUNT(*), MIN(created), MAX(created) FROM responses GROUP BY spec ORDER BY spec"
            ).fetchall()
        return [CacheStat(spec=s, entries=n, oldest=lo, newest=hi) for s, n, lo, hi in rows]

    def size_bytes(self) -> int:
        """The database file and its write-ahead log on disk."""
        files = [self.path, self.path.with_name(self.path.name + "-wal")]
        return sum(f.stat().st_size for f in files if f.exists())

    def clear(self, spec: str | None = None) -> int:
        """Delete every entry (or one spec's); returns how many were deleted."""
        if not self.path.exists():
            return 0
        with self._lock:
            db = self._db()
            if spec is None:
                deleted = db.execute("DELETE FROM responses").rowcount
            else:
                deleted = db.execute("DELETE FROM responses WHERE spec = ?", (spec,)).rowcount
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return int(deleted)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
