"""The `search` tool's hook: retrieval provides it, the tool server only finds it.

`chronokg.retrieval` (sentence-transformers + faiss, an optional extra) registers
nothing here at import; instead `SEARCH` names, lazily, a factory in it:

    def search_backend(store: GraphStore, settings: Settings) -> SearchBackend | None

which returns `None` when the store has no passage index. Where the module cannot be
imported, lacks the factory, or returns `None`, the `search` tool is simply absent, and
`ToolHost.search_note` says why (the health endpoint shows it).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
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

SEARCH: Registry[SearchFactory] = Registry("search backend")
SEARCH.register("rag", "chronokg.retrieval:search_backend")


class SearchParams(BaseModel):
    """Parameters of the `search` tool."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: str = Field(min_length=1, max_length=2000, description="What to look for, in words")
    as_of: dt.date | None = Field(default=None, description="Only passages valid on this day (YYYY-MM-DD); "
                                                              "omit for any time")
    k: int = Field(default=5, ge=1, le=50, description="How many passages to return")


SEARCH_TOOL = Tool(
    "search",
    "Passages (verbalised facts, recommendations, guideline text) most similar to QUERY, only those valid on "
    "AS_OF when given. Rows: text, score, validity interval and source of each passage.",
    SearchParams, "search",
)


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
