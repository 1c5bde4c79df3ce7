"""`vllm/<model>`: chronokg starts `vllm serve` itself, talks to it like any OpenAI-compatible server, stops it.

The command line it runs (extra arguments from `server_args` or a models file entry come last)::

    vllm serve MODEL --host 127.0.0.1 --port PORT --api-key RANDOM [server_args...]

The server's output goes to a log file; chronokg polls `GET /health` until it answers 200 (up to
`CHRONOKG_VLLM_START_TIMEOUT_S`, default 900 s, since large models take minutes to load), and if
the server exits or never gets healthy the error carries the tail of that log. The server runs in
its own process group and is stopped with SIGTERM, then SIGKILL after 15 s, at `aclose()` or at
interpreter exit. With `base_url=` the client uses an already running server and starts nothing.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from pydantic import SecretStr

from chronokg.errors import ModelError
from chronokg.models.client_errors import ModelConfigError
from chronokg.models.openai_compat import OpenAICompatClient
from chronokg.models.spec import ClientOptions
from chronokg.models.types import Completion, ModelRequest
from chronokg.settings import Settings

_RUNNING: set[VLLMServer] = set()
_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback never goes via a proxy


class VLLMServer:
    """One `vllm serve` subprocess on loopback."""

    def __init__(self, model: str, *, settings: Settings, args: list[str] | None = None,
                 executable: str = "vllm", port: int | None = None, start_timeout_s: float | None = None) -> None:
        self.model = model
        self.settings = settings
        self.args = list(args or [])
        self.executable = executable
        self.port = port or _free_port()
        self.api_key = secrets.token_hex(24)  # never starts with "-", which argparse would read as an option
        self.start_timeout_s = start_timeout_s or settings.vllm_start_timeout_s
        self.log_path = Path(tempfile.gettempdir()) / f"chronokg-vllm-{os.getpid()}-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [self.executable, "serve", self.model, "--host", "127.0.0.1", "--port", str(self.port),
                "--api-key", self.api_key, *self.args]

    async def start(self) -> None:
        """Start the server and wait until `/health` answers (or fail with the log's tail)."""
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, env=self.settings.subprocess_env(),
                                            start_new_session=True)
        _RUNNING.add(self)
        deadline = time.monotonic() + self.start_timeout_s
        health = f"http://127.0.0.1:{self.port}/health"
        while True:
            code = self.process.poll()
            if code is not None:
                self.stop()
                raise ModelError(f"vllm serve {self.model} exited with code {code} before it was ready; "
                                 f"log {self.log_path}:\n{self.log_tail()}")
            if await asyncio.to_thread(_healthy, health):
                return
            if time.monotonic() > deadline:
                self.stop()
                raise ModelError(f"vllm serve {self.model} was not healthy after {self.start_timeout_s:g} s "
                                 f"(CHRONOKG_VLLM_START_TIMEOUT_S); log {self.log_path}:\n{self.log_tail()}")
            await asyncio.sleep(0.25)

    def stop(self, grace_s: float = 15.0) -> None:
        """SIGTERM to the server's process group, SIGKILL if it is still there after `grace_s`."""
        _RUNNING.discard(self)
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(5)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


class VLLMClient(OpenAICompatClient):
    """An OpenAI-compatible client whose server chronokg starts on first use and stops at `aclose()`."""

    def __init__(self, options: ClientOptions, server: VLLMServer) -> None:
        super().__init__(options)
        self.server = server
        self._starting: asyncio.Lock | None = None
        # The port changes from run to run: cache under the model and its server arguments instead.
        self._scope = "vllm-serve " + " ".join(server.args)

    @property
    def base_url(self) -> str | None:
        return self._scope

    async def start(self) -> None:
        """Start the server now (otherwise the first `generate` does)."""
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self.server.process is None:
                await self.server.start()
                self.options = self.options.model_copy(update={
                    "base_url": self.server.url, "api_key": SecretStr(self.server.api_key)})
                self._loop = None  # connect to the new URL

    async def generate(self, request: ModelRequest) -> Completion:
        if self.server.process is None:
            await self.start()
        return await super().generate(request)

    async def aclose(self) -> None:
        await super().aclose()
        await asyncio.to_thread(self.server.stop)


def vllm_client(options: ClientOptions) -> OpenAICompatClient:
    """`vllm/<model>`: a running server at `base_url`, or one started from the `vllm` executable."""
    if options.base_url is not None:
        return OpenAICompatClient(options)
    executable = shutil.which("vllm", path=options.settings.subprocess_env().get("PATH"))
    if executable is None:
        raise ModelConfigError(f"{options.spec} needs vLLM to start a server: pip install 'chronokg[vllm]' "
                               "(on a machine with a GPU), or pass --base-url of a running vLLM server")
    return VLLMClient(options, VLLMServer(options.model, settings=options.settings, args=options.server_args,
                                          executable=executable))


def _healthy(url: str) -> bool:
    try:
        with _NO_PROXY.open(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@atexit.register
def _stop_all() -> None:
    for server in list(_RUNNING):
        server.stop()
