"""The `search` tool's hook: retrieval provides it, the tool server only finds it.

`SEARCH` names, lazily, factories `(store, settings) -> SearchBackend | None` that return
`None` when the store has no index. A factory is quick (a server calls it before its address is
up); what takes long (an index, a model) loads in the backend's `warm()`, which a server runs in
the background, and a search waits for it. The one registered here, `passages`, adapts the passage
index of `chronokg.retrieval` (its `Retriever` over `index_dir(settings, store.uri)`, time-aware
with `as_of`, today's passages without). Where the retrieval package or its extra cannot be
imported, or the store has no index, the `search` tool is simply absent, and
`ToolHost.search_note` says why (the health endpoint shows it).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib
import importlib.util
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from chronokg.graph.store import GraphStore
from chronokg.registry import Registry
from chronokg.serve.tools import Tool
from chronokg.settings import Settings


class SearchBackend(Protocol):
    """Passages valid at `as_of` (any date when None), most similar first: text, score, interval, source."""

    def search(self, query: str, as_of: dt.date | None, k: int) -> Sequence[BaseModel | Mapping[str, Any]]: ...


SearchFactory = Callable[[GraphStore, Settings], "SearchBackend | None"]

SEARCH: Registry[SearchFactory] = Registry("search backend", group="search_backends")
SEARCH.register("passages", "chronokg.serve.search:passage_search")


class SearchParams(BaseModel):
    """Parameters of the `search` tool."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: str = Field(min_length=1, max_length=2000, description="What to look for, in words")
    as_of: dt.date | None = Field(default=None, description="Only passages valid on this day (YYYY-MM-DD); "
                                                              "omit for the passages valid today")
    k: int = Field(default=5, ge=1, le=50, description="How many passages to return")


SEARCH_TOOL = Tool(
    "search",
    "Passages (verbalised facts, recommendations, guideline text) most similar to the query, only those valid on "
    "as_of (default: today). Rows: text, score, validity interval and source of each passage.",
    SearchParams, "search",
)


WARM_TEXT = "warm up"


def warm(search: SearchBackend) -> None:
    """Load what `search` needs before its first call, where it says how (`warm()`); a failure is left to that
    first call to report."""
    warm_up = getattr(search, "warm", None)
    if callable(warm_up):
        with contextlib.suppress(Exception):
            warm_up()


class _Passages:
    """`chronokg.retrieval`'s Retriever as a search backend (it already returns `RetrievalResult`s), opened on first
    use or by `warm()`: opening it loads the index and the embedding model (seconds to half a minute), which a
    server does in the background after its address is up."""

    def __init__(self, folder: Path, settings: Settings) -> None:
        self.folder, self.settings = folder, settings
        self._retriever: Any = None
        self._lock = threading.Lock()

    @property
    def retriever(self) -> Any:
        with self._lock:
            if self._retriever is None:
                rag = importlib.import_module("chronokg.retrieval.rag")
                self._retriever = rag.shared_retriever(self.folder, self.settings)
            return self._retriever

    def search(self, query: str, as_of: dt.date | None, k: int) -> Sequence[BaseModel | Mapping[str, Any]]:
        hits: Sequence[BaseModel] = self.retriever.retrieve(query, as_of, k)
        return hits

    def warm(self) -> None:
        """Open the index and load the embedding model now (one short text through it), so the first search does
        not pay for it."""
        self.retriever.embedder.encode([WARM_TEXT])


def passage_search(store: GraphStore, settings: Settings) -> SearchBackend | None:
    """The store's passage index, or None where it has none (ImportError: retrieval or its extra is missing);
    cheap: the index and its model load in `warm()` or at the first search."""
    rag = importlib.import_module("chronokg.retrieval.rag")  # not a static import: retrieval is optional
    if importlib.util.find_spec("faiss") is None:  # the index's library: its absence known now, not at a search
        raise ImportError(f"faiss is not installed: {importlib.import_module('chronokg.retrieval.embed').RAG_EXTRA}")
    folder = Path(rag.index_dir(settings, store.uri))
    if not (folder / "meta.json").is_file():
        return None
    return _Passages(folder, settings)


def find_search(store: GraphStore, settings: Settings,
                registry: Registry[SearchFactory] = SEARCH) -> tuple[SearchBackend | None, str]:
    """The first registered backend that has an index for `store`, and a note saying what was found."""
    notes: list[str] = []
    for name in registry.names():
        try:
            factory = registry.get(name)
        except (ImportError, AttributeError) as exc:
            notes.append(f"{name}: not installed ({exc})")
            continue
        try:
            backend = factory(store, settings)
        except ImportError as exc:  # chronokg.retrieval is there, its extra is not
            notes.append(f"{name}: not installed ({exc})")
            continue
        if backend is not None:
            return backend, f"{name}: ready"
        notes.append(f"{name}: no passage index for this store")
    return None, "; ".join(notes) or "no search backend registered"
