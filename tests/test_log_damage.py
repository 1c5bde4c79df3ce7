"""`chronokg store check` predicts the next writer: for every kind of damage to an embedded store's files, the
check's verdict (what the writer does: open, replay, replay and set a torn tail aside, wait, refuse; how many
commits it replays) is what a real `chronokg ingest` then did, observed from its exit, its one-line error, the
checkpoint's content and the files beside the store. A damaged commit is never dropped silently: the writer
refuses and names `chronokg store check --repair`, which replays every commit before the damage.

The table the test measured is printed and is the one in docs/integrity.md ("What the next writer does").
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from chronokg.graph import recover
from chronokg.graph.kglite_files import FRAME_HEAD, WAL_HEADER, readable_versions
from chronokg.graph.kglite_store import KgliteStore
from tests.helpers import REPO

pytestmark = pytest.mark.slow  # writer processes killed mid-write


COMMITS = 3
CRASHED_WRITER = textwrap.dedent("""
    import datetime as dt, os, sys
    from chronokg.graph.batch import GraphBatch
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.graph.model import Fact, Source
    from chronokg.graph.writer import write_batch
    path = sys.argv[1]
    with KgliteStore(path):
        pass  # a first checkpoint, kept as the older copy of the store
    if len(sys.argv) > 3:
        import shutil
        shutil.copy2(path, sys.argv[3])
    with KgliteStore(path) as store:
        store.write(iter([("CREATE (:Entity {id: 'base', caption: 'checkpointed'})", {})]))
    name = sys.argv[4] if len(sys.argv) > 4 else "late"
    store = KgliteStore(path)
    for i in range(int(sys.argv[2])):  # one commit, so one frame of the log, each
        batch = GraphBatch()
        batch.source(Source(id="late", kind="test", caption="commits after the checkpoint"))
        batch.fact(Fact(subject=f"{name}{i}", predicate="p", value=i, valid_from=dt.date(2001, 1, 1),
                        source_id="late", source_kind="test"))
        write_batch(store, batch)
    os._exit(0)  # killed before its checkpoint: the facts are only in the log
""")
HOLDER = textwrap.dedent("""
    import sys, time
    from chronokg.graph.kglite_store import KgliteStore
    store = KgliteStore(sys.argv[1])
    print("holding", flush=True)
    time.sleep(120)
""")
ENV = {"PATH": "/usr/bin:/bin", "COLUMNS": "1000", "PYTHONPATH": str(REPO), "CHRONOKG_QUERY_DAEMON_IDLE_S": "0",
       "CHRONOKG_LOCK_TIMEOUT": "1"}


def frames(log: bytes) -> list[int]:
    """The offsets of the log's frames."""
    at, found = WAL_HEADER, []
    while at < len(log):
        found.append(at)
        at += FRAME_HEAD + int.from_bytes(log[at:at + 4], "little")
    return found


def flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]


def dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


Damage = Callable[[Path, bytes], None]


def log_of(make: Callable[[bytes], bytes | None]) -> Damage:
    def damage(store: Path, log: bytes) -> None:
        data = make(log)
        wal = Path(f"{store}-wal")
        if data is None:
            wal.unlink()
        else:
            wal.write_bytes(data)
    return damage


def version(delta: int | None = None, exact: int | None = None) -> Damage:
    lo, hi = readable_versions()
    v = exact if exact is not None else (hi + (delta or 0))
    assert delta != -1 or v >= lo  # "one lower" is a version this kglite reads
    return log_of(lambda log: log[:4] + bytes([v]) + log[5:])


def owner(text: Callable[[], str] | None) -> Damage:
    def damage(store: Path, log: bytes) -> None:
        file = Path(f"{store}.lock-owner")
        if text is None:
            file.unlink(missing_ok=True)
        else:
            file.write_text(text())
    return damage


def bad_checkpoint(store: Path, log: bytes) -> None:
    store.write_bytes(b"this is not a store")


EXTRAS: dict[str, bytes] = {}  # filled by the `crashed` fixture: another store's log, an older checkpoint


def foreign_log(store: Path, log: bytes) -> None:
    Path(f"{store}-wal").write_bytes(EXTRAS["foreign log"])


def older_checkpoint(store: Path, log: bytes) -> None:
    store.write_bytes(EXTRAS["older checkpoint"])


def both(*damages: Damage) -> Damage:
    def damage(store: Path, log: bytes) -> None:
        for d in damages:
            d(store, log)
    return damage


def reused_pid() -> str:
    """An owner file naming a process that runs but holds no lease (this test's own: a pid reused)."""
    return f"pid={os.getpid()}\nsince=2026-01-01T00:00:00Z\n"


DAMAGE: dict[str, Damage] = {
    "no log": log_of(lambda log: None),
    "empty log (0 bytes)": log_of(lambda log: b""),
    "header only": log_of(lambda log: log[:WAL_HEADER]),
    "header cut to 3 bytes": log_of(lambda log: log[:3]),
    "3 bytes that are no header": log_of(lambda log: b"XYZ"),
    "intact commits": log_of(lambda log: log),
    "zero bytes after the last commit": log_of(lambda log: log + bytes(16)),
    "format version one lower": version(-1),
    "format version one higher": version(+1),
    "format version 1 (kglite < 0.14)": version(exact=1),
    "format version 0": version(exact=0),
    "bad magic": log_of(lambda log: b"XXXX" + log[4:]),
    "torn last frame (cut 10 bytes)": log_of(lambda log: log[:-10]),
    "uncommitted tail (half a frame head)": log_of(lambda log: log + log[WAL_HEADER:WAL_HEADER + 3]),
    "last commit: one payload byte flipped": log_of(lambda log: flip(log, frames(log)[-1] + FRAME_HEAD + 3)),
    "first commit: one payload byte flipped": log_of(lambda log: flip(log, frames(log)[0] + FRAME_HEAD + 3)),
    "first commit: its checksum flipped": log_of(lambda log: flip(log, frames(log)[0] + 5)),
    "first commit: its length flipped": log_of(lambda log: flip(log, frames(log)[0] + 1)),
    "missing lock owner file": owner(None),
    "stale lock (owner process gone)": owner(lambda: f"pid={dead_pid()}\nsince=2026-01-01T00:00:00Z\n"),
    "damaged checkpoint": bad_checkpoint,
    "foreign log (another store's commits)": foreign_log,
    "older checkpoint (restored beside a newer log)": older_checkpoint,
    "reused PID (the owner file names a live process)": owner(reused_pid),
    "reused PID, last commit damaged": both(owner(reused_pid),
                                            log_of(lambda log: flip(log, frames(log)[-1] + FRAME_HEAD + 3))),
}
LIVE = "live lock (another writer holds it)"


def late_facts(store: Path) -> int:
    with KgliteStore(store, read_only=True) as reader:
        return int(reader.run("MATCH (f:Fact {source_id: 'late'}) RETURN count(f) AS n")[0]["n"])


def digest(folder: Path) -> dict[str, str]:
    """Every file's hash but the lease's (a refused writer takes the lease, then lets it go)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())
            if p.is_file() and ".lock" not in p.name}


def ingest(store: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{store}", "ingest", "qa",
                           str(REPO / "tests/fixtures/qasets/boolq.jsonl")],
                          capture_output=True, text=True, cwd=REPO, timeout=300, env=ENV)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-3000:]
    return done


def observed(store: Path, done: subprocess.CompletedProcess[str], before: dict[str, str]) -> tuple[str, int]:
    """What the writer did, from the outside: (action, commits replayed into the checkpoint)."""
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    if done.returncode != 0:
        assert len(errors) == 1, done.stderr
        assert digest(store.parent) == before  # refused: nothing changed, the log kept byte for byte
        return ("wait" if "after waiting" in errors[0] else "refuse"), 0
    replayed = late_facts(store)
    aside = [n for n in set(digest(store.parent)) - set(before) if ".torn-" in n or ".quarantine-" in n]
    if aside:
        return "replay-discard", replayed
    return ("replay" if replayed else "open"), replayed


@pytest.fixture(scope="module")
def crashed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """A store whose log holds three commits no checkpoint took in, each a fact 'lateN'."""
    store = tmp_path_factory.mktemp("crashed") / "s.kgl"
    older = tmp_path_factory.mktemp("older") / "s.kgl"
    subprocess.run([sys.executable, "-c", CRASHED_WRITER, str(store), str(COMMITS), str(older)], check=True,
                   cwd=REPO, timeout=300, env=ENV)
    log = Path(f"{store}-wal").read_bytes()
    assert len(frames(log)) == COMMITS and late_facts(store) == 0
    other = tmp_path_factory.mktemp("other") / "s.kgl"  # another store, crashed the same way with fewer commits
    subprocess.run([sys.executable, "-c", CRASHED_WRITER, str(other), str(COMMITS - 1), str(other) + ".older",
                    "other"], check=True, cwd=REPO, timeout=300, env=ENV)
    EXTRAS.update({"foreign log": Path(f"{other}-wal").read_bytes(), "older checkpoint": older.read_bytes()})
    return store, log


def copy_of(crashed: tuple[Path, bytes], folder: Path) -> Path:
    store = folder / "s.kgl"
    for f in crashed[0].parent.iterdir():
        shutil.copy2(f, folder / f.name)
    return store


def row(kind: str, found: recover.StoreCheck, did: tuple[str, int]) -> str:
    return f"| {kind} | {found.log} | {found.lease.split()[0]} | {found.writer} {found.commits} | {did[0]} {did[1]} |"


def test_store_check_predicts_what_the_next_writer_does(crashed: tuple[Path, bytes], tmp_path: Path) -> None:
    rows = ["| damage | `store check`: log | lease | predicted: writer, commits | `ingest` did: writer, commits |",
            "|---|---|---|---|---|"]
    for n, (kind, damage) in enumerate(DAMAGE.items()):
        folder = tmp_path / str(n)
        folder.mkdir()
        store = copy_of(crashed, folder)
        damage(store, crashed[1])
        before = digest(folder)
        found = recover.check(store)
        assert digest(folder) == before  # the check changes nothing
        done = ingest(store)
        did = observed(store, done, before)
        rows.append(row(kind, found, did))
        assert (found.writer, found.commits) == did, (kind, found, done.stderr)
        assert found.ok == (done.returncode == 0), kind
        if found.log in {"damaged", "foreign", "out-of-sequence"} and found.checkpoint == "ok":
            assert "chronokg store check --repair" in done.stderr, done.stderr
        if found.log in {"newer", "older-unsupported"}:  # no repair: the kglite that wrote it opens it
            assert "written by another kglite" in done.stderr and "--repair" not in done.stderr, done.stderr
        if found.writer in {"replay", "replay-discard"}:  # no committed frame is lost: every intact one is in
            assert found.commits == late_facts(store)
    rows.append(live_lease(crashed, tmp_path / "live"))
    print("\n" + "\n".join(rows))
    docs = (REPO / "docs" / "integrity.md").read_text()
    assert "\n".join(rows) in docs  # the table docs/integrity.md shows is the one measured here


def live_lease(crashed: tuple[Path, bytes], folder: Path) -> str:
    folder.mkdir()
    store = copy_of(crashed, folder)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(store)], stdout=subprocess.PIPE, text=True,
                              cwd=REPO, env=ENV)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        before = digest(folder)
        found = recover.check(store)
        done = ingest(store)
        did = observed(store, done, before)
        assert (found.writer, found.commits, found.ok) == (*did, False)
        assert f"process {holder.pid}" in found.lease and f"process {holder.pid}" in done.stderr
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(30)
    time.sleep(0.1)
    assert recover.check(store).lease.startswith("stale")  # and the next writer takes it over
    return row(LIVE, found, did)


@pytest.mark.parametrize("kind", ["last commit: one payload byte flipped", "first commit: its length flipped",
                                  "bad magic"])
def test_repair_replays_every_commit_before_the_damage(crashed: tuple[Path, bytes], tmp_path: Path,
                                                       kind: str) -> None:
    store = copy_of(crashed, tmp_path)
    DAMAGE[kind](store, crashed[1])
    damaged = Path(f"{store}-wal").read_bytes()
    expected = {"last commit: one payload byte flipped": COMMITS - 1, "first commit: its length flipped": 0,
                "bad magic": COMMITS}[kind]
    assert recover.check(store).writer == "refuse"
    repaired = recover.repair(store)
    assert repaired.ok and repaired.log == "empty" and late_facts(store) == expected
    (kept,) = tmp_path.glob("s.kgl-wal.damaged-*")
    assert kept.read_bytes() == damaged  # what could not be replayed is kept, byte for byte
    assert ingest(store).returncode == 0


def store_check(store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{store}", "store", "check"],
                          capture_output=True, text=True, cwd=REPO, timeout=300, env=ENV)


@pytest.mark.parametrize("kind", ["torn last frame (cut 10 bytes)", "first commit: one payload byte flipped"])
def test_store_check_prints_its_verdict(crashed: tuple[Path, bytes], tmp_path: Path, kind: str) -> None:
    """The lines `store check` prints are the check's fields, and a query's note names the damage."""
    store = copy_of(crashed, tmp_path)
    DAMAGE[kind](store, crashed[1])
    found = recover.check(store)
    done = store_check(store)
    assert done.returncode == (0 if found.ok else 1), done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert f"checkpoint: ok ({found.nodes:,} nodes, {found.relationships:,} relationships)" in lines
    assert f"log: {found.log} ({found.log_bytes:,} bytes): {found.log_problem}" in lines
    pid = Path(f"{store}.lock-owner").read_text().split("pid=")[1].split()[0]
    assert f"lease: {found.lease}" in lines and found.lease == f"stale (process {pid} is gone)"
    said = {"replay-discard": f"next writer: replays {found.commits} intact commit(s), sets the torn tail aside "
                              "and checkpoints",
            "refuse": "next writer: refuses to open the store (nothing is changed)"}[found.writer]
    assert said in lines and found.commits == (2 if found.writer == "replay-discard" else 0)
    assert lines[-1] == ("ok: " if found.ok else "damaged: ") + found.advice
    query = subprocess.run([sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{store}", "stats"],
                           capture_output=True, text=True, cwd=REPO, timeout=300, env=ENV)
    assert query.returncode == 0
    if found.writer == "refuse":
        assert "cannot be replayed" in query.stderr and "chronokg store check" in query.stderr
    else:
        assert "never checkpointed" in query.stderr


@pytest.mark.parametrize("kind", ["intact commits", "torn last frame (cut 10 bytes)",
                                  "first commit: one payload byte flipped"])
def test_readers_of_an_unreplayed_log_print_only_chronokg_s_note(crashed: tuple[Path, bytes], tmp_path: Path,
                                                                 kind: str) -> None:
    """A reader of a store whose writer died before its checkpoint says so once, in chronokg's own note: kglite's
    Python warning (with its source line) is not shown beside it."""
    store = copy_of(crashed, tmp_path)
    DAMAGE[kind](store, crashed[1])
    for args in (["stats"], ["releases", "list"], ["store", "check"]):
        done = subprocess.run([sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{store}", *args],
                              capture_output=True, text=True, cwd=REPO, timeout=300, env=ENV)
        assert done.returncode in (0, 1), done.stderr
        for noise in ("Warning", ".py:"):
            assert noise not in done.stderr, (args, done.stderr)


def test_the_scan_tells_a_torn_append_from_damage_that_hides_commits() -> None:
    """Synthetic logs at sizes the crashed writer does not reach: a long torn last append is torn (the writer
    replays what comes before it), and an intact commit behind damage is found wherever it lies."""
    import random
    import zlib

    from chronokg.graph.kglite_files import scan_bytes

    rng = random.Random(5)

    def frame(payload: bytes) -> bytes:
        return len(payload).to_bytes(4, "little") + zlib.crc32(payload).to_bytes(4, "little") + payload

    readable = readable_versions()
    log = b"KWAL" + bytes([readable[1]]) + b"".join(frame(rng.randbytes(50)) for _ in range(3))
    cut = (10_000_000).to_bytes(4, "little") + rng.randbytes(4_000_000)  # a large commit, cut off mid-append
    assert (scan_bytes(log, readable).state, scan_bytes(log, readable).commits) == ("commits", 3)
    assert (scan_bytes(log + cut, readable).state, scan_bytes(log + cut, readable).commits) == ("torn", 3)
    assert scan_bytes(log + bytes(4096), readable).state == "commits"  # zeros: no data
    hidden = log + b"\xff\xff\xff\x7f" + rng.randbytes((1 << 22) + 17) + frame(b"late commit")
    for tail in (b"", bytes(64), frame(b"and one more")):
        found = scan_bytes(hidden + tail, readable)
        assert (found.state, found.commits) == ("damaged", 3), tail
        assert f"an intact commit follows it (at byte {len(log) + 4 + (1 << 22) + 17})" in (found.problem or "")


@pytest.mark.parametrize("kind", ["foreign log (another store's commits)",
                                  "older checkpoint (restored beside a newer log)"])
def test_repair_keeps_a_log_of_another_checkpoint_aside(crashed: tuple[Path, bytes], tmp_path: Path,
                                                        kind: str) -> None:
    """A log that does not continue the checkpoint on disk is kept aside whole and none of it replayed: the
    store is its checkpoint as it is, and the next writer opens it."""
    store = copy_of(crashed, tmp_path)
    DAMAGE[kind](store, crashed[1])
    unbound = Path(f"{store}-wal").read_bytes()
    found = recover.check(store)
    assert (found.writer, found.log) == ("refuse", "foreign" if kind.startswith("foreign") else "out-of-sequence")
    assert "--repair" in found.advice
    query = subprocess.run([sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{store}", "stats"],
                           capture_output=True, text=True, cwd=REPO, timeout=300, env=ENV)
    assert query.returncode == 0 and "cannot be replayed" in query.stderr, query.stderr
    repaired = recover.repair(store)
    assert repaired.ok and repaired.log == "empty" and late_facts(store) == 0
    (kept,) = tmp_path.glob("s.kgl-wal.unbound-*")
    assert kept.read_bytes() == unbound
    assert ingest(store).returncode == 0 and recover.check(store).ok
