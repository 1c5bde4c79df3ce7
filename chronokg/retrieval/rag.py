"""Time-aware retrieval: `retrieve(query, as_of=DATE, k)` and the RAG context a question is sent with.

* `as_of=DATE`: only passages valid on that day (and known now), ranked by cosine similarity;
* `as_of=None`: similarity over the passages valid *today*; `scope="all"` drops even that and
  ranks every version by similarity alone.

`rag_context(question, mode, k)` is what the evaluation runner's `--rag time-aware|atemporal
--k N` arm calls: the question's user message wrapped in ConflictMedQA's context template
(`rag_code.txt`, the authors' `predict_scenarios.py`), with the k retrieved passages as
`Source {id}: {text}` lines. Time-aware retrieves as of the question's date; atemporal ranks
**every version** by similarity alone, as a search over PubMed does in TempoMed's Table 3 (the
literature holds the superseded guideline beside its successor: docs/eval.md).
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from pathlib import Path
from typing import Any, Literal

from platformdirs import user_data_dir

from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError
from chronokg.retrieval.embed import Embedder, shared_embedder
from chronokg.retrieval.index import PassageIndex, Strategy
from chronokg.retrieval.types import RetrievalResult
from chronokg.settings import Settings
from chronokg.store_uri import StoreURI

Mode = Literal["time-aware", "atemporal"]
Scope = Literal["current", "all"]
PROVIDER = "passages"
QUERY_CACHE = 20_000


def index_dir(settings: Settings | None = None, store_uri: str | None = None) -> Path:
    """Where the store's passage index lives: `CHRONOKG_RAG_INDEX`, else `<store>.rag/` beside an embedded
    store, else a folder per server under the user data directory."""
    settings = settings or Settings()
    if settings.rag_index is not None:
        return settings.rag_index
    uri = StoreURI.parse(store_uri or settings.store)
    if uri.embedded:
        if uri.file is None:
            raise ChronoKGError("an in-memory store has no place for an index: set CHRONOKG_RAG_INDEX")
        return Path(uri.file).with_name(Path(uri.file).name + ".rag")
    # The server's address (never its credentials) as a folder name.
    where = "_".join([uri.location, *(f"{k}={v}" for k, v in uri.options)])
    name = re.sub(r"[^A-Za-z0-9.-]+", "_", where).strip("_") or "store"
    return Path(user_data_dir("chronokg")) / "rag" / name


class Retriever:
    """Queries against one passage index, embedded with the model the index was built with."""

    def __init__(self, index: PassageIndex, embedder: Embedder | None = None, today: dt.date | None = None) -> None:
        self.index = index
        self.embedder = embedder or shared_embedder()
        self.today = today
        self._vectors: dict[str, Any] = {}  # query text -> vector: a question asked under several arms embeds once
        if self.embedder.name != index.meta.model:
            raise ChronoKGError(f"{index.folder} was built with {index.meta.model}, the query model is "
                                f"{self.embedder.name}: rebuild the index or set CHRONOKG_EMBEDDING_MODEL")

    @classmethod
    def open(cls, folder: Path | None = None, settings: Settings | None = None,
             embedder: Embedder | None = None) -> Retriever:
        settings = settings or Settings()
        return cls(PassageIndex.open(folder or index_dir(settings)), embedder or shared_embedder(settings))

    def retrieve(self, query: str, as_of: dt.date | None = None, k: int = 10, *, scope: Scope = "current",
                 known_at: dt.date | None = None, strategy: Strategy = "filter") -> list[RetrievalResult]:
        """At most k passages for `query`, best first: valid on `as_of`, or (None) valid today / any time."""
        return self.retrieve_many([query], [as_of], k, scope=scope, known_at=known_at, strategy=strategy)[0]

    def retrieve_many(self, queries: list[str], as_of: list[dt.date | None], k: int = 10, *,
                      scope: Scope = "current", known_at: dt.date | None = None,
                      strategy: Strategy = "filter") -> list[list[RetrievalResult]]:
        """`retrieve` for many queries at once (one embedding batch; one faiss call per distinct day)."""
        if len(queries) != len(as_of):
            raise ValueError("one as_of per query")
        if k < 1:
            raise ChronoKGError(f"k must be at least 1 (got {k})")
        vectors = self.encode([q.strip() for q in queries])
        days = [d if d is not None else (None if scope == "all" else self.today or dt.date.today()) for d in as_of]
        hits: list[list[tuple[int, float]]] = [[] for _ in queries]
        for d in dict.fromkeys(days):
            members = [i for i, x in enumerate(days) if x == d]
            found = self.index.search(vectors[members], k, d, known_at, strategy)
            for i, row in zip(members, found, strict=True):
                hits[i] = row
        stored = self.index.passages(sorted({r for row in hits for r, _ in row}))
        return [[self._result(stored[r], score, rank) for rank, (r, score) in enumerate(row, 1)] for row in hits]

    def encode(self, texts: list[str]) -> Any:
        """Query vectors, from the small cache where a text was embedded before."""
        import numpy as np

        missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if missing:
            if len(self._vectors) + len(missing) > QUERY_CACHE:
                self._vectors.clear()
            for text, vector in zip(missing, self.embedder.encode(missing), strict=True):
                self._vectors[text] = vector
        return np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, self.index.meta.dim),
                                                                                   dtype=np.float32)

    def _result(self, p: object, score: float, rank: int) -> RetrievalResult:
        from chronokg.retrieval.passages import Passage

        assert isinstance(p, Passage)
        return RetrievalResult(
            id=p.key, text=p.text, score=score, rank=rank, provider=PROVIDER, kind=p.kind, title=p.title,
            source=p.source, valid_from=p.valid_from, valid_to=p.valid_to,
            metadata={"fact_id": p.fact_id, "subject": p.subject, "predicate": p.predicate, "topic": p.topic,
                      "organization": p.organization, "heading": p.heading,
                      "known_from": p.known_from.isoformat() if p.known_from else None,
                      "known_to": p.known_to.isoformat() if p.known_to else None})


_SHARED: dict[Path, tuple[tuple[int, ...], Retriever]] = {}
_LOCK = threading.Lock()


def _stamp(folder: Path) -> tuple[int, ...]:
    """When the index's files last changed (a rebuilt or updated index is opened afresh)."""
    stamps = []
    for name in ("meta.json", "vectors.faiss"):
        try:
            stamps.append((folder / name).stat().st_mtime_ns)
        except OSError:
            stamps.append(0)
    return tuple(stamps)


def shared_retriever(folder: Path | None = None, settings: Settings | None = None) -> Retriever:
    """The process's retriever over the index in `folder` (default: the settings' index), opened on first use
    and kept while the index files stay as they are; its model is `shared_embedder`'s. The tool server's
    search, the runner's RAG arm and `retrieve` all take it, so a long-lived process opens each index and
    loads the model once."""
    settings = settings or Settings()
    folder = (folder or index_dir(settings)).resolve()
    stamp = _stamp(folder)
    with _LOCK:
        held = _SHARED.get(folder)
        if held is None or held[0] != stamp:
            held = (stamp, Retriever.open(folder, settings))
            _SHARED[folder] = held
        return held[1]


def warm_retriever(folder: Path | None = None, settings: Settings | None = None) -> Retriever:
    """`shared_retriever(folder)` with its encoder loaded (`warm_encoder`): callable from a background thread."""
    from chronokg.retrieval.embed import warm_encoder

    warm_encoder(settings)
    return shared_retriever(folder, settings)


def default_retriever(settings: Settings | None = None) -> Retriever:
    """The shared retriever over the settings' index (see `shared_retriever`)."""
    return shared_retriever(None, settings)


def retrieve(query: str, as_of: dt.date | None = None, k: int = 10, *, retriever: Retriever | None = None,
             scope: Scope = "current") -> list[RetrievalResult]:
    """Passages for `query` valid on `as_of` (None: atemporal over today's passages), from the store's index."""
    return (retriever or default_retriever()).retrieve(query, as_of, k, scope=scope)


# --- questions -------------------------------------------------------------------------------------------------

_LABEL_LINE = re.compile(r"^\s*[A-Za-z0-9]{1,2}[).:]\s*$")


def query_text(question: Question) -> str:
    """What a question retrieves with: an explicit `retrieval_query`, ConflictMedQA's scenario (the seed's query:
    the scenario without the task question), else the user message without its option texts."""
    meta = question.metadata
    for name in ("retrieval_query", "scenario"):
        value = meta.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    text = question.input
    for choice in sorted(question.choices, key=lambda c: -len(c.text)):
        if len(choice.text) >= 12:
            text = text.replace(choice.text, "")
    lines = [line for line in text.splitlines() if not _LABEL_LINE.match(line)]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def mode_scope(mode: Mode) -> Scope:
    """Which passages a RAG mode ranks: time-aware those valid on its day, atemporal every version."""
    return "all" if mode == "atemporal" else "current"


def question_day(question: Question, mode: Mode, today: dt.date | None = None) -> dt.date | None:
    """The day a question retrieves for: its target date (time-aware; today if it has none), or None."""
    if mode == "atemporal":
        return None
    return question.target_date or today or dt.date.today()


def context_lines(results: list[RetrievalResult]) -> str:
    """ConflictMedQA's `context_text`: `Source {id}: {text}` per hit, in rank order."""
    return "\n".join(f"Source {r.source or r.id}: {r.text}" for r in results)


def wrap(question_input: str, results: list[RetrievalResult]) -> str:
    """The question's user message with retrieved passages in ConflictMedQA's context template."""
    from chronokg.bench.families.conflictmedqa_prompts import template

    return (template("RAG_CODE").replace("{context_text}", context_lines(results))
            .replace("{original_scenario}", question_input))


def rag_context(question: Question, mode: Mode, k: int = 2, retriever: Retriever | None = None) -> str:
    """The user message to send for `question` under a RAG arm: time-aware (passages valid on the question's
    target date) or atemporal (similarity alone over every version), k passages."""
    if mode not in ("time-aware", "atemporal"):
        raise ChronoKGError(f"unknown RAG mode {mode!r} (time-aware or atemporal)")
    r = retriever or default_retriever()
    hits = r.retrieve(query_text(question), question_day(question, mode, r.today), k, scope=mode_scope(mode))
    return wrap(question.input, hits)
