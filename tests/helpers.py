"""Test helpers shared by several test modules."""

from __future__ import annotations

import functools
import http.server
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def child_at_marker(script: str, args: list[str], marker: Path, timeout: float = 120) -> subprocess.Popen[bytes]:
    """A Python child running `script` with `args`, returned once it has written `marker` (where the test
    kills it, as a crash would)."""
    child = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while not marker.exists():
        assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return child


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serve_http(handler: type[http.server.BaseHTTPRequestHandler] | functools.partial[Any]) -> Iterator[str]:
    """A real HTTP server on loopback (stands in for the public internet); yields its base URL."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@contextmanager
def serve_folder(root: Path) -> Iterator[str]:
    """Serve the files under `root` on loopback; yields the base URL."""
    with serve_http(functools.partial(QuietHandler, directory=str(root))) as base:
        yield base


def seed_ids(folder: Path, family: str, file: str) -> list[list[str]]:
    """The chronokg ids of each record of seed file `file` (by position), from the export's side file."""
    import json

    side = [json.loads(line) for line in (folder / f"{family}_chronokg_ids.jsonl").read_text("utf-8").splitlines()]
    mine = [r for r in side if r["file"] == f"{family}_{file}"]
    assert [r["record"] for r in mine] == list(range(len(mine)))
    return [r["chronokg_ids"] for r in mine]


def result_ids(out: Path, family: str, path: Path) -> list[str]:
    """The chronokg id of each record of `eval export --format seed` file `path` (by position), from the export's
    side file `{family}/{family}_chronokg_ids.jsonl`; the file itself names none."""
    import json

    from chronokg.bench.family import OURS

    side = [json.loads(line) for line in (out / family / f"{family}_chronokg_ids.jsonl").read_text("utf-8")
            .splitlines()]
    mine = [r for r in side if r["file"] == path.relative_to(out / family).as_posix()]
    assert [r["record"] for r in mine] == list(range(len(mine))) and mine
    text = path.read_text("utf-8")
    assert "chronokg_id" not in text and OURS not in text, path
    return [r["chronokg_ids"][0] for r in mine]


def defined_at(module_file: str, name: str) -> str:
    """`tests/<file>:<line>` of the module-level assignment or function `name` in the test module `module_file` (a
    test that lists what a new source, family, query or metric must add names where to add it)."""
    path = Path(module_file)
    lines = path.read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if text.startswith((f"{name}:", f"{name} =", f"def {name}(")))
    return f"{path.resolve().relative_to(REPO).as_posix()}:{line}"


def spy_on_sidecar(m: Any) -> list[Any]:
    """Record the columns each bulk load publishes as its interval sidecar (None: it fell back to the Cypher
    build), through `m` (a monkeypatch or its context), still publishing them."""
    from chronokg.graph.kglite_store import KgliteStore

    published: list[Any] = []
    real = KgliteStore.publish_sidecar

    def spy(self: KgliteStore, cols: Any) -> None:
        published.append(cols)
        real(self, cols)

    m.setattr(KgliteStore, "publish_sidecar", spy)
    return published


def two_release_tempomed(shared_data: Path, tmp: Path) -> tuple[list[dict[str, Any]], Path, Path, list[Any]]:
    """Records 0-5 of the real TempoMed sample released on 2024-01-01, records 6-11 on 2025-06-01, in a store at
    `tmp/store.kgl`; the chronokg questions generated after both, written to `tmp/questions.jsonl`. Returns the
    records, the store, the question file and the questions."""
    import datetime as dt
    import json

    from chronokg.bench import snapshot
    from chronokg.bench.family import generate
    from chronokg.bench.question import write_jsonl
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.ingest import tempomed
    from chronokg.ingest.common import read_json_blocks

    records = [r for _, _, r in read_json_blocks(next((shared_data / "tempomed-bench").glob("*.jsonl")))][:12]
    for name, part in (("r1.jsonl", records[:6]), ("r2.jsonl", records[6:])):
        (tmp / name).write_text("".join(json.dumps(r) + "\n" for r in part), encoding="utf-8")
    store = tmp / "store.kgl"
    with KgliteStore(store, durable="off") as s:
        tempomed.load(s, [tmp / "r1.jsonl"], release_date=dt.date(2024, 1, 1))
        tempomed.load(s, [tmp / "r2.jsonl"], release_date=dt.date(2025, 6, 1))
        questions = generate("tempomed", s, snapshot.current(s), {"protocol": "chronokg"})[0]
    qfile = tmp / "questions.jsonl"
    write_jsonl(qfile, questions)
    return records, store, qfile, questions
