"""The default sentence encoder: the model's graph on onnxruntime, its text split by `tokenizers`, no torch.

It gives sentence-transformers' vectors (cosine >= 0.99999: tests/test_embed_onnx_equal.py) for a small part
of its start (benchmarks/README.md, "Encoder start"), and runs in the calling process: onnxruntime brings no
libgomp, so kglite, faiss and it share one process (torch cannot: see `embed_st`), and no child is started.

The graph is built from the folder's model.safetensors on first use (`onnx_graph`) and kept under
`Settings.embedding_cache`, in a folder named by the SHA-256 of the weights and of config.json and by the
builder's version, so a changed model or builder never reuses a stale graph. It is written atomically (a
second process building at the same time writes the same bytes). A weights file's digest is remembered by its
path, size, modification time, inode and change time, so a warm start reads the graph but never hashes the
weights again. The folder is only a cache: a graph damaged since it was written is built again, and a build
folder a killed process left is removed by a later build.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chronokg.errors import ChronoKGError
from chronokg.files import write_whole
from chronokg.retrieval.embed_common import BATCH, DIM, RAG_EXTRA, default_model_path, model_name, note_load
from chronokg.retrieval.onnx_graph import BUILDER_VERSION, GRAPH, write_graph
from chronokg.retrieval.onnx_graph import WEIGHTS as GRAPH_WEIGHTS
from chronokg.settings import Settings

if TYPE_CHECKING:
    from chronokg.retrieval.embed_common import Vectors

WEIGHTS = "model.safetensors"
NEEDED = (WEIGHTS, "tokenizer.json", "config.json", "modules.json")
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length, when a folder names none
STALE_BUILD_S = 3600.0


def weights_digest(weights: Path, cache: Path) -> str:
    """The SHA-256 of a weights file, hashed again only when its size, modification time, inode or change time
    changed: the change time too, since a copy that keeps the source's time (`cp -p`, rsync, tar) can put other
    weights of the same size under the same name and time. Remembering is best effort: a cache folder this
    process cannot write still serves the graphs it holds."""
    stat = weights.stat()
    key, stamp = str(weights.resolve()), [stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns]
    memo_file = cache / "digests.json"
    try:
        memo: dict[str, Any] = json.loads(memo_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        memo = {}
    seen = memo.get(key)
    if isinstance(seen, dict) and seen.get("stamp") == stamp and isinstance(seen.get("sha256"), str):
        return str(seen["sha256"])
    digest = hashlib.sha256()
    with weights.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    memo[key] = {"stamp": stamp, "sha256": digest.hexdigest()}
    with contextlib.suppress(OSError):
        write_whole(memo_file, json.dumps(memo, indent=1, sort_keys=True).encode("utf-8"))
    return digest.hexdigest()


def graph_key(folder: Path, cache: Path) -> str:
    """The cache folder's name for `folder`'s graph: weights digest, config digest, builder version."""
    config = hashlib.sha256((folder / "config.json").read_bytes()).hexdigest()[:12]
    return f"{weights_digest(folder / WEIGHTS, cache)}-{config}-b{BUILDER_VERSION}"


def _complete(folder: Path) -> bool:
    return all((folder / n).is_file() for n in (GRAPH, GRAPH_WEIGHTS))


def _build(folder: Path, target: Path) -> None:
    """`write_graph`, with weights it cannot read (truncated, missing a tensor, of another shape) one line."""
    try:
        write_graph(folder, target)
    except (ImportError, OSError, ChronoKGError):
        raise
    except Exception as exc:  # safetensors, numpy and onnx each raise their own types
        detail = " ".join(str(exc).split()) or "no detail"
        raise ChronoKGError(f"{folder / WEIGHTS}: the onnx encoder cannot build a graph from these weights "
                            f"({type(exc).__name__}: {detail})") from exc


def _sweep(cache: Path) -> None:
    """Remove build folders a killed process left (a build takes seconds; one an hour old is nobody's)."""
    import time

    with contextlib.suppress(OSError):
        for left in cache.glob(".build-*"):
            if left.is_dir() and time.time() - left.stat().st_mtime > STALE_BUILD_S:
                shutil.rmtree(left, ignore_errors=True)


def graph_file(folder: Path, cache: Path) -> Path:
    """The ONNX graph of the model in `folder`, built and cached the first time it is asked for: built in a
    temporary folder, then renamed into place whole (a process that loses the race keeps the winner's)."""
    try:
        final = cache / graph_key(folder, cache)
        if not _complete(final):
            cache.mkdir(parents=True, exist_ok=True)
            _sweep(cache)
            tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=cache))
            try:
                _build(folder, tmp)
                for name in (GRAPH, GRAPH_WEIGHTS):
                    with (tmp / name).open("rb") as f:
                        os.fsync(f.fileno())
                if final.exists() and not _complete(final):  # left half-done by something else: replaced
                    shutil.rmtree(final)
                try:
                    os.rename(tmp, final)
                except OSError:
                    if not _complete(final):  # another process renamed its complete copy first: that one is used
                        raise
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    except ImportError as exc:
        raise ChronoKGError(f"building the encoder graph needs onnx and safetensors ({exc.name}): {RAG_EXTRA}") from exc
    except OSError as exc:
        raise ChronoKGError(f"cannot write the encoder graph under {cache} ({exc.strerror or exc}): set "
                            "CHRONOKG_EMBEDDING_CACHE to a writable folder") from exc
    return final / GRAPH


def max_tokens(folder: Path) -> int:
    """Word pieces kept per text ([CLS] and [SEP] included), as sentence-transformers truncates: the folder's
    max_seq_length, at most the model's position table."""
    def read(name: str) -> dict[str, Any]:
        try:
            value = json.loads((folder / name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return value if isinstance(value, dict) else {}

    limit = int(read("sentence_bert_config.json").get("max_seq_length") or MAX_TOKENS)
    return min(limit, int(read("config.json").get("max_position_embeddings") or limit))


class OnnxEmbedder:
    """A model folder's encoder on onnxruntime (CPU), loaded on the first `encode` and kept until `close()`."""

    def __init__(self, path: Path | None = None, batch_size: int = BATCH, settings: Settings | None = None) -> None:
        settings = settings or Settings()
        self.path = path or default_model_path(settings)
        self.cache = settings.embedding_cache
        self.batch_size = batch_size
        self.name = model_name(self.path)
        self.dim = DIM
        self._model: tuple[Any, Any] | None = None  # (onnxruntime session, tokenizer)
        self._lock = threading.Lock()

    def _load(self) -> tuple[Any, Any]:
        if self._model is not None:
            return self._model
        missing = [n for n in NEEDED if not (self.path / n).is_file()]
        if missing:
            raise ChronoKGError(f"no sentence-transformers model at {self.path} (missing {', '.join(missing)}; "
                                f"{RAG_EXTRA})")
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ChronoKGError(f"the onnx encoder needs onnxruntime and tokenizers: {RAG_EXTRA}") from exc
        graph = graph_file(self.path, self.cache)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only: a warning is no business of the caller's output
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")  # idle threads sleep, never spin
        try:
            session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
        except Exception:  # onnxruntime raises its own exception types
            # A cached graph damaged since it was written (a truncated copy, a full disk): it is only a cache,
            # so it is built again, once.
            shutil.rmtree(graph.parent, ignore_errors=True)
            graph = graph_file(self.path, self.cache)
            try:
                session = ort.InferenceSession(str(graph), options, providers=["CPUExecutionProvider"])
            except Exception as exc:
                detail = " ".join(str(exc).split())
                raise ChronoKGError(f"{graph}: onnxruntime cannot load the encoder graph ({detail})") from exc
        tokenizer = Tokenizer.from_file(str(self.path / "tokenizer.json"))
        tokenizer.enable_truncation(max_tokens(self.path))
        tokenizer.no_padding()
        self.dim = int(session.get_outputs()[0].shape[-1])
        self._model = (session, tokenizer)
        note_load(self.name)
        return self._model

    def encode(self, texts: list[str]) -> Vectors:
        """Unit vectors, one per text, in order. Texts are batched by length, as sentence-transformers does, so
        little is spent on padding."""
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            session, tokenizer = self._load()
            pieces = [e.ids for e in tokenizer.encode_batch(texts)]
            lengths = np.array([len(p) for p in pieces])
            order = np.argsort(-lengths, kind="stable")
            out = np.empty((len(texts), self.dim), dtype=np.float32)
            for start in range(0, len(texts), self.batch_size):
                rows = order[start:start + self.batch_size]
                ids = np.zeros((len(rows), int(lengths[rows].max())), dtype=np.int64)
                mask = np.zeros_like(ids)
                for j, row in enumerate(rows):
                    ids[j, :lengths[row]] = pieces[row]
                    mask[j, :lengths[row]] = 1
                out[rows] = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return out

    def close(self) -> None:
        """Drop the session (its memory goes back); the next `encode` loads it again."""
        with self._lock:
            self._model = None
