"""The tests on your own Bolt server (CHRONOKG_NEO4J_URI) share its one database and each wipes it, so pytest's
workers must not run two at once: each is grouped onto one xdist worker (`--dist loadgroup` in addopts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.helpers import REPO

BOLT_FILES = ["tests/test_conformance.py", "tests/test_cli_bolt.py", "tests/test_cross_engine.py",
              "tests/test_guard_engines.py"]
COLLECT = """
import json, sys
import pytest

class Groups:
    def __init__(self): self.seen = {}
    def pytest_collection_finish(self, session):
        for item in session.items:
            mark = item.get_closest_marker("xdist_group")
            self.seen[item.nodeid] = [mark.args[0] if mark else None, "bolt_target" in item.fixturenames]

groups = Groups()
code = pytest.main(["--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider", *sys.argv[1:]], plugins=[groups])
print("GROUPS" + json.dumps(groups.seen))
sys.exit(int(code))
"""


def _groups(env: dict[str, str], *files: str) -> dict[str, list[object]]:
    done = subprocess.run([sys.executable, "-c", COLLECT, *files], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("GROUPS"))
    found: dict[str, list[object]] = json.loads(line.removeprefix("GROUPS"))
    return found


def test_tests_on_your_own_bolt_server_run_on_one_worker() -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOKG_NEO4J")}
    base["PYTHONPATH"] = str(REPO)
    own = _groups({**base, "CHRONOKG_NEO4J_URI": "bolt://127.0.0.1:1"}, *BOLT_FILES, "tests/test_serve_fair.py")
    bolt = {node: group for node, (group, uses) in own.items() if uses}
    assert len(bolt) > 30 and set(bolt.values()) == {"bolt-server"}
    assert all(group is None for group, uses in own.values() if not uses)  # the rest spreads as before
    arcade = _groups(base, *BOLT_FILES)  # ArcadeDB: one server per worker, nothing grouped
    assert arcade and all(group is None for group, _ in arcade.values())
    with open(REPO / "pyproject.toml", encoding="utf-8") as fh:
        assert "--dist loadgroup" in next(line for line in fh if line.startswith("addopts"))
