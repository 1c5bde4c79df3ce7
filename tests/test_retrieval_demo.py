"""Retrieval on the whole demo store (the corpus and its sources, as `chronokg demo` loads them) with the real
all-MiniLM-L6-v2 model: passages name what they are about, the README's search finds its target, the demo's
historical questions find theirs, an index of the older format is refused or rebuilt, `index build` reports its
progress, and a second `retrieve search` is answered by the warm search process with the same bytes."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from chronokg.bench.family import generate
from chronokg.cli import query_client
from chronokg.demo.corpus import load_demo
from chronokg.demo.sources import load_sources
from chronokg.errors import ChronoKGError
from chronokg.graph.kglite_store import KgliteStore
from chronokg.retrieval import indexing
from chronokg.retrieval.embed import shared_embedder
from chronokg.retrieval.evaluate import evaluate
from chronokg.retrieval.index import PassageIndex
from chronokg.retrieval.index_layout import FORMAT
from chronokg.retrieval.passages import store_passages
from chronokg.retrieval.rag import Retriever
from tests.test_query_daemon import IDLE, LOOK, cli, off, stop_all

pytestmark = pytest.mark.slow  # an embedding model, index builds


D = dt.date
TODAY = D(2026, 11, 23)
README_QUERY = "chest compression depth"  # README.md, Retrieval: as of 2012-06-01, -k 3
IN_FORCE_2012 = "Push down at least 2 inches (5 cm)."


class Recorder:
    """A Progress that remembers every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, str]] = []

    def start(self, total: int, description: str) -> None:
        self.calls.append(("start", total, description))

    def advance(self, n: int) -> None:
        self.calls.append(("advance", n, ""))


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Recorder]:
    """The demo store with its passage index beside it, and the progress its build reported."""
    root = tmp_path_factory.mktemp("demo-rag")
    store_path = root / "demo.kgl"
    progress = Recorder()
    with KgliteStore(store_path) as store:
        load_demo(store)
        load_sources(store)
        indexing.update_index(store, root / "demo.kgl.rag", progress=progress)
    return store_path, root / "demo.kgl.rag", progress


@pytest.fixture(scope="module")
def retriever(demo: tuple[Path, Path, Recorder]) -> Retriever:
    return Retriever(PassageIndex.open(demo[1]), shared_embedder(), today=TODAY)


def test_passages_carry_their_guidelines_topic_title_and_organisation(demo: tuple[Path, Path, Recorder],
                                                                       retriever: Retriever) -> None:
    with KgliteStore(demo[0], read_only=True) as store:
        caption = store.run("MATCH (e:Entity {id: 'adult-cpr-compression-depth'}) RETURN e.caption AS c")[0]["c"]
        guideline = store.run("MATCH (g:Guideline {id: 'aha-ecc-2010'}) RETURN g.caption AS c, g.topic AS t")[0]
        depth = next(p for p in store_passages(store) if p.text == IN_FORCE_2012)
    assert (depth.topic, depth.organization) == (guideline["t"], "American Heart Association")
    assert depth.title == "American Heart Association guideline aha-ecc-2010 (2010)"
    assert depth.heading == (f"{caption} — American Heart Association, {guideline['c']} (2010; {guideline['t']})")
    assert depth.embedded == f"{depth.heading}: {IN_FORCE_2012}"  # what the model embeds names the topic
    hit = next(h for h in retriever.retrieve(README_QUERY, D(2012, 6, 1), 3) if h.text == IN_FORCE_2012)
    assert hit.metadata["topic"] == guideline["t"] and hit.metadata["heading"] == depth.heading
    assert hit.metadata["organization"] == "American Heart Association"


def test_the_readme_search_finds_the_recommendation_in_force_in_its_top_3(retriever: Retriever) -> None:
    hits = retriever.retrieve(README_QUERY, D(2012, 6, 1), 3)
    assert [h.rank for h in hits] == [1, 2, 3]
    target = [h for h in hits if h.text == IN_FORCE_2012]
    assert len(target) == 1 and target[0].source == "aha-ecc-2010"
    assert target[0].valid_from == D(2010, 1, 1) and target[0].valid_to == D(2015, 1, 1)


def test_time_aware_recall_on_the_demos_historical_questions(demo: tuple[Path, Path, Recorder],
                                                             retriever: Retriever) -> None:
    with KgliteStore(demo[0], read_only=True) as store:
        questions, _ = generate("tempomed", store, "test", {})
    historical = [q for q in questions if q.variant == "mcq5/historical/reorder_only"]
    aware = evaluate(retriever, historical, "time-aware", 2)
    assert aware.questions == len(historical) == 11 and aware.without_target == 0
    assert aware.recall_at_k >= 0.8 and aware.stale_rate == 0.0
    every = evaluate(retriever, historical, "atemporal", 5)  # every version: the in-force one among them
    assert every.recall_at_k > 0.0 and every.stale_rate > 0.0


def test_index_build_reports_its_progress(demo: tuple[Path, Path, Recorder]) -> None:
    calls = demo[2].calls
    starts = [c for c in calls if c[0] == "start"]
    assert starts[0] == ("start", 0, "reading passages from the store")
    embedding = calls.index(("start", 276, "embedding passages"))
    writing = calls.index(starts[-1])
    assert starts[-1][2].startswith("writing the index") and writing > embedding
    after = calls[embedding + 1:writing]
    assert after and all(c[0] == "advance" for c in after) and sum(c[1] for c in after) == 276
    assert PassageIndex.open(demo[1]).meta.rows == 276


def test_an_index_of_the_older_format_is_refused_then_rebuilt(demo: tuple[Path, Path, Recorder],
                                                              tmp_path: Path) -> None:
    folder = tmp_path / "old.rag"
    shutil.copytree(demo[1], folder)
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    (folder / "meta.json").write_text(json.dumps({**meta, "format": FORMAT - 1}), encoding="utf-8")
    with pytest.raises(ChronoKGError, match=r"index format 1, this chronokg reads 2 .*chronokg index build --rebuild"):
        PassageIndex.open(folder)
    with KgliteStore(demo[0], read_only=True) as store:
        report = indexing.update_index(store, folder)  # an update rebuilds it: never two formats in one index
    assert report.added == 276 and PassageIndex.open(folder).meta.format == FORMAT


@pytest.fixture
def daemon_env(demo: tuple[Path, Path, Recorder], monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The local processes on, in a runtime folder of this test's; every process stopped afterwards."""
    run = Path(tempfile.mkdtemp(prefix="ckr", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run))
    yield {**os.environ, **LOOK, "XDG_RUNTIME_DIR": str(run), IDLE: "60", "CHRONOKG_STORE": f"kglite://{demo[0]}"}
    stop_all(run)


def test_a_second_search_is_answered_by_the_warm_search_process(demo: tuple[Path, Path, Recorder],
                                                                daemon_env: dict[str, str]) -> None:
    args = ["retrieve", "search", README_QUERY, "--as-of", "2012-06-01", "-k", "3"]
    in_process = cli(off(daemon_env), *args)
    assert in_process[0] == 0 and f"passages: {README_QUERY}" in in_process[1]
    assert query_client.processes("status") == []  # off: none started
    first = cli(daemon_env, *args)
    [process] = query_client.processes("status")
    assert (process["kind"], process["store"], process["requests"]) == ("search", str(demo[0]), 1)
    assert stat.S_IMODE(os.stat(process["socket"]).st_mode) == 0o600
    second = cli(daemon_env, *args)
    assert first == second == in_process  # exit code, stdout and stderr, byte for byte
    again = query_client.processes("status")
    assert [(p["pid"], p["requests"], p["indexed"]) for p in again] == [(process["pid"], 2, True)]
    as_json = [*args, "--format", "json"]
    forwarded = cli(daemon_env, *as_json)
    assert forwarded == cli(off(daemon_env), *as_json)
    assert IN_FORCE_2012 in [hit["text"] for hit in json.loads(forwarded[1])]
    missing = [*args, "--index", str(demo[1]) + ".missing"]  # an error is the in-process one too
    refused = cli(daemon_env, *missing)
    assert refused == cli(off(daemon_env), *missing) and refused[0] != 0 and "chronokg index build" in refused[2]
    assert query_client.processes("status")[0]["requests"] == 4  # every call above but the in-process ones
    assert query_client.kind([*args, "--provider", "brave"]) is None  # a web search is never forwarded
