"""The sentence-transformers backend (`CHRONOKG_EMBEDDING_BACKEND=sentence-transformers`): torch, any device.

For a GPU, or a model the ONNX builder does not know. sentence-transformers (and torch) load in a child process
when the first text is encoded, never at import time; a missing package is one error naming the extra.
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
from typing import TYPE_CHECKING, Any

from chronokg.errors import ChronoKGError
from chronokg.retrieval.embed_common import BATCH, DIM, TORCH_EXTRA, default_model_path, model_name, note_load
from chronokg.settings import Settings

if TYPE_CHECKING:
    from chronokg.retrieval.embed_common import Vectors


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
            raise ChronoKGError(f"no sentence-transformers model at {self.path} ({TORCH_EXTRA})")
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close(): lives as long as the worker)
        cmd = [sys.executable, "-m", "chronokg.retrieval._embed_worker", str(self.path), self.device,
               str(self.batch_size)]
        self._proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log)
        atexit.register(self.close)
        n, dim = self._header(self._proc)
        if n != 0:
            raise ChronoKGError(f"the embedding worker did not start: {self._error(self._proc)}")
        self.dim = dim
        note_load(self.name)
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
            return ("\n".join(tail) or "no output") + (f" ({TORCH_EXTRA})" if missing else "")
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
