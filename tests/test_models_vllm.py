"""The `vllm/...` launcher, with a fake `vllm` executable on PATH.

The real vLLM cannot be installed on these machines (no GPU, no model weights), so the test puts
a two-line `vllm` script on PATH that runs chronokg.testing.fake_vllm: it parses the same
`serve MODEL --host --port --api-key ...` command line and starts the loopback OpenAI-compatible
server on the requested port. What chronokg starts, waits for, talks to and stops is the real thing.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from chronokg.errors import ModelError
from chronokg.models import ModelConfigError, ModelRequest, get_model
from chronokg.models.vllm import VLLMClient
from chronokg.settings import Settings


@pytest.fixture
def fake_vllm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "vllm"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m chronokg.testing.fake_vllm "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return tmp_path


def _refused(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=1)
    except urllib.error.URLError:
        return True
    return False


def test_starts_talks_to_and_stops_vllm_serve(fake_vllm: Path) -> None:
    argv_file = fake_vllm / "argv.json"
    settings = Settings(vllm_start_timeout_s=30)

    async def scenario() -> tuple[str, int]:
        client = get_model("vllm/org/tiny-model", settings=settings, cache=False,
                           server_args=["--record-argv", str(argv_file), "--max-model-len", "4096"])
        assert isinstance(client, VLLMClient)
        completion = await client.generate(ModelRequest.chat("hello", n=2))
        assert completion.model == "org/tiny-model" and len(completion.choices) == 2
        process = client.server.process
        assert process is not None and process.poll() is None
        health = client.server.url.removesuffix("/v1") + "/health"
        await client.aclose()
        assert process.poll() is not None and client.server.process is None
        return health, client.server.port

    health, port = asyncio.run(scenario())
    argv = json.loads(argv_file.read_text())
    assert argv[:2] == ["serve", "org/tiny-model"]
    assert argv[2:6] == ["--host", "127.0.0.1", "--port", str(port)]
    assert argv[6] == "--api-key" and len(argv[7]) > 20
    # hex: a random key starting with "-" was read by vllm's argparse as an option (seen in CI, about 1 run in 64)
    assert all(c in "0123456789abcdef" for c in argv[7])
    assert argv[8:] == ["--record-argv", str(argv_file), "--max-model-len", "4096"]
    assert _refused(health)


def _generate_once(spec: str, start_timeout_s: float, server_args: list[str]) -> None:
    async def scenario() -> None:
        client = get_model(spec, settings=Settings(vllm_start_timeout_s=start_timeout_s), cache=False,
                           server_args=server_args)
        try:
            await client.generate(ModelRequest.chat("hello"))
        finally:
            await client.aclose()

    asyncio.run(scenario())


def test_a_server_that_dies_at_start_reports_its_log(fake_vllm: Path) -> None:
    with pytest.raises(ModelError, match=r"(?s)exited with code 1 before it was ready.*out of GPU memory"):
        _generate_once("vllm/org/huge-model", 30, ["--fail-at-start"])


def test_a_server_that_is_never_healthy_times_out_with_its_log(fake_vllm: Path) -> None:
    # 4 s, not less: the fake must have started Python and printed its first log line by then, on a loaded machine
    with pytest.raises(ModelError, match=r"(?s)not healthy after 4 s.*serving org/slow-model"):
        _generate_once("vllm/org/slow-model", 4.0, ["--startup-delay", "30"])


def test_without_vllm_the_error_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ModelConfigError, match=r"pip install 'chronokg\[vllm\]'"):
        get_model("vllm/org/model", settings=Settings(), cache=False)
    client = get_model("vllm/org/model", settings=Settings(), cache=False, base_url="http://gpu:8000")
    assert not isinstance(client, VLLMClient) and client.spec == "vllm/org/model"
