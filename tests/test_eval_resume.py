"""kill -9 in the middle of a 2,000-sample run, then resume: no sample lost or duplicated.

No model can run on these machines: a real OpenAI-compatible HTTP server on loopback
(`chronokg.testing.openai_server`, answering a little slowly so there is something to interrupt)
stands in for it. The run is a real `chronokg eval run` process, killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from chronokg.bench import snapshot
from chronokg.bench.family import generate
from chronokg.bench.question import write_jsonl
from chronokg.eval.log import read_samples, repair
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import tempomed
from chronokg.testing.openai_server import Fault, OpenAIServer
from tests.helpers import REPO

pytestmark = pytest.mark.slow  # runs killed and resumed


SAMPLES = 2000


@pytest.fixture(scope="module")
def questions(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("resume")
    store = KgliteStore(":memory:")
    tempomed.load(store, [shared_data / "tempomed-bench"])
    qs, _ = generate("tempomed", store, snapshot.current(store), {})
    path = tmp / "questions.jsonl"
    write_jsonl(path, qs[:SAMPLES])
    return path


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "chronokg.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def wait_for_lines(runs: Path, at_least: int, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    """Until the run's log holds `at_least` lines (the kill then lands mid-run whatever the machine's speed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        logs = list(runs.glob("*/samples.jsonl"))
        if logs and logs[0].read_bytes().count(b"\n") >= at_least:
            return
        time.sleep(0.01)
    raise AssertionError(f"the run did not reach {at_least} samples")


@pytest.mark.parametrize("kill_at", [50, 800, 1700])
def test_kill_and_resume_loses_and_duplicates_nothing(questions: Path, tmp_path: Path, kill_at: int) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CHRONOKG_STORE": f"kglite://{tmp_path}/none.kgl",
           "CHRONOKG_RESPONSE_CACHE": str(tmp_path / "cache.sqlite")}
    with OpenAIServer() as server:
        server.fail_next(Fault.slow(0.004), times=10**6)
        args = ["eval", "run", str(questions), "--model", "openai-compat/loopback", "--base-url", server.url,
                "--log-dir", str(tmp_path / "runs"), "--concurrency", "16", "--no-write", "--no-cache"]
        proc = run_cli(args, env)
        wait_for_lines(tmp_path / "runs", kill_at, proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
        (folder,) = list((tmp_path / "runs").iterdir())
        log = folder / "samples.jsonl"
        before = log.read_bytes()
        written = before.count(b"\n")
        assert kill_at <= written < SAMPLES, f"the kill should land mid-run ({written} written)"
        repaired = repair(log) if not before.endswith(b"\n") else 0  # what the resume does first
        assert repaired >= 0
        first = [r.question_id for r in read_samples(log) if r.ok]
        sent_before = server.model_requests
        again = run_cli(["eval", "run", "--resume", str(folder), "--no-write"], env)
        out, err = again.communicate(timeout=300)
        assert again.returncode == 0, err
        assert "resuming" in out and "complete" in out
    records = list(read_samples(log))
    ok = Counter(r.question_id for r in records if r.ok)
    assert len(ok) == SAMPLES and set(ok.values()) == {1}  # every sample exactly once
    assert set(first) <= set(ok)  # nothing done before the kill was lost or redone
    expected = {json.loads(line)["id"] for line in questions.read_text().splitlines()}
    assert set(ok) == expected
    assert server.model_requests - sent_before <= SAMPLES - len(first) + 16  # only the missing ones were asked
