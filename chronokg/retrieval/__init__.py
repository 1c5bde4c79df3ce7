"""Retrieval: what is true now, what was true on a date, and passages filtered by validity.

Public surface (each imported on first use, so `import chronokg.retrieval` loads no faiss,
torch, onnxruntime or httpx):

* `latest(store, subject, predicate)`, `current_answer(store, question)` — up-to-date facts
  (`retrieval.current`); `refresh(store, qids, pids)` — Wikidata via SPARQL, known from today
  (`retrieval.refresh`);
* `retrieve(query, as_of, k)`, `Retriever`, `rag_context(question, mode, k)`, `update_index`
  — time-aware RAG over the store's passages (`retrieval.rag`, `retrieval.indexing`);
* `evaluate(retriever, questions, mode, k)` — recall@k and stale-passage rate;
* `SearchProvider`, `RetrievalResult`, `PROVIDERS`, `get_provider` — one protocol for the
  passage index and the web engines (Brave, Google, Wikipedia, SearxNG);
* `WebPipeline` — BenchAge's web pipeline (`retrieval.web.pipeline`).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "latest": "chronokg.retrieval.current", "current_answer": "chronokg.retrieval.current",
    "CurrentAnswer": "chronokg.retrieval.current", "refresh": "chronokg.retrieval.refresh",
    "retrieve": "chronokg.retrieval.rag", "Retriever": "chronokg.retrieval.rag",
    "rag_context": "chronokg.retrieval.rag", "query_text": "chronokg.retrieval.rag",
    "index_dir": "chronokg.retrieval.rag", "update_index": "chronokg.retrieval.indexing",
    "evaluate": "chronokg.retrieval.evaluate", "SearchProvider": "chronokg.retrieval.types",
    "RetrievalResult": "chronokg.retrieval.types", "ProviderError": "chronokg.retrieval.types",
    "PROVIDERS": "chronokg.retrieval.providers", "get_provider": "chronokg.retrieval.providers",
    "WebPipeline": "chronokg.retrieval.web.pipeline",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'chronokg.retrieval' has no attribute {name!r}")
