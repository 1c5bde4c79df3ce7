"""The README's "Evaluating models" quick start, run as written: demo store → generate → verify → eval run with
two reference baselines → metrics → report, on the embedded store, no network.

Two substitutions only: `runs/run-<id>` becomes the run folder's glob (a shell cannot know the id in advance),
and `pip install 'chronokg[reports]' &&` is dropped (the test environment has the extra already).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

pytestmark = pytest.mark.slow  # the README's commands as written


def quick_start() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Evaluating models", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "README: no bash block under 'Evaluating models'"
    lines = [line.split("  #", 1)[0].strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line]


def test_the_readme_quick_start_runs_end_to_end(tmp_path: Path) -> None:
    lines = quick_start()
    assert any(line.startswith("chronokg eval run") for line in lines)
    script = "\n".join(line.replace("runs/run-<id>", "runs/run-*").replace("pip install 'chronokg[reports]' && ", "")
                       for line in lines)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHRONOKG_", "XDG_"))}
    # HOME in tmp: the demo store, the response cache and the data dirs all land there
    env.update(HOME=str(tmp_path / "home"), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               TMPDIR=str(tmp_path), CHRONOKG_QUERY_DAEMON_IDLE_S="0")  # no local query process left behind
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = list((tmp_path / "runs").glob("run-*"))
    assert len(runs) == 1 and (runs[0] / "samples.jsonl").stat().st_size > 0
    assert "tempomed.accuracy" in done.stdout and "0 answers changed" in " ".join(done.stdout.split())
    report = tmp_path / "report"
    assert (report / "report.html").is_file() and (report / "report.md").is_file()
    assert any(report.rglob("*.png"))
    assert (tmp_path / "home" / ".local" / "share" / "chronokg" / "demo.kgl").exists()
