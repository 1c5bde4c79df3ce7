"""chronokg against a real OpenAI-compatible server not written here: LiteLLM's proxy on loopback, its models
answering from `mock_response` / `mock_tool_calls` (no network), one answering a real 429 (`litellm.RateLimitError`).
Faults a proxy cannot produce (dropped connections, malformed JSON, Retry-After values) stay with chronokg's own
stand-in (tests/test_models_conformance.py)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from chronokg.bench import snapshot
from chronokg.bench.family import generate
from chronokg.bench.question import write_jsonl
from chronokg.cli.app import app
from chronokg.demo.corpus import load_demo
from chronokg.errors import ModelError
from chronokg.eval import runner
from chronokg.eval.log import latest
from chronokg.graph.kglite_store import KgliteStore
from chronokg.models import ModelRequest, get_model

ANSWER = "##Explanation: mock\n##Answer: A"
CONFIG = {
    "model_list": [
        {"model_name": "mock-answer", "litellm_params": {"model": "openai/mock-answer", "api_key": "sk-mock",
                                                         "mock_response": ANSWER}},
        {"model_name": "mock-tools", "litellm_params": {
            "model": "openai/mock-tools", "api_key": "sk-mock",
            "mock_tool_calls": [{"id": "call_1", "type": "function",
                                 "function": {"name": "stats", "arguments": "{}"}}]}},
        {"model_name": "mock-429", "litellm_params": {"model": "openai/mock-429", "api_key": "sk-mock",
                                                      "mock_response": "litellm.RateLimitError"}},
    ],
    "litellm_settings": {"num_retries": 0},
    "general_settings": {"dangerously_permit_weak_or_unset_master_key": True},  # loopback only, no key
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`litellm --config cfg --port FREE` on loopback; fails (not skips) under CI when it cannot start."""
    import importlib.util

    if importlib.util.find_spec("litellm") is None:
        if os.environ.get("CI"):
            pytest.fail("litellm[proxy] (the integrations extra) is not installed")
        pytest.skip("litellm[proxy] is not installed")
    folder = tmp_path_factory.mktemp("litellm")
    cfg = folder / "config.yaml"
    cfg.write_text(json.dumps(CONFIG))  # JSON is YAML
    port = _free_port()
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_TELEMETRY="False", NO_DOCS="True")
    env.pop("DATABASE_URL", None)
    log = (folder / "proxy.log").open("w")
    proc = subprocess.Popen([sys.executable, "-c", "from litellm.proxy.proxy_cli import run_server; run_server()",
                             "--config", str(cfg), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300  # the proxy imports a lot: ~50 s on a busy 2-core machine
    try:
        while True:
            try:
                if httpx.get(f"{url}/health/liveliness", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"LiteLLM's proxy did not start: {(folder / 'proxy.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield f"{url}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_models_check_against_the_proxy(proxy: str) -> None:
    done = CliRunner().invoke(app, ["models", "check", "openai-compat/mock-answer", "--base-url", proxy,
                                    "--format", "json"])
    assert done.exit_code == 0, done.output
    assert "mock-answer" in done.output


def test_a_real_429_is_retried_then_fails_with_the_reason(proxy: str) -> None:
    async def go() -> None:
        async with get_model("openai-compat/mock-429", base_url=proxy, max_retries=2, cache=False) as model:
            with pytest.raises(ModelError) as caught:
                await model.generate(ModelRequest.chat("hello"))
            assert "429" in str(caught.value) or "rate" in str(caught.value).lower()

    asyncio.run(go())


def test_mock_tool_calls_reach_chronokg_as_tool_calls(proxy: str) -> None:
    async def go() -> None:
        from chronokg.models import GenerateConfig, ToolSpec

        async with get_model("openai-compat/mock-tools", base_url=proxy, cache=False) as model:
            request = ModelRequest.chat("counts?").model_copy(update={"config": GenerateConfig(
                tools=[ToolSpec(name="stats", description="counts")], tool_choice="auto")})
            completion = await model.generate(request)
            assert [c.name for c in completion.choices[0].tool_calls] == ["stats"]

    asyncio.run(go())


def test_eval_run_through_the_proxy(proxy: str, tmp_path: Path) -> None:
    store_path = tmp_path / "store.kgl"
    with KgliteStore(store_path) as store:
        load_demo(store)
        questions, _ = generate("tempomed", store, snapshot.current(store), {})
    path = tmp_path / "q.jsonl"
    write_jsonl(path, questions[:8])
    options = runner.RunOptions(protocol="seed", concurrency=4, cache=False)
    folder, info = runner.prepare(tmp_path / "runs", [path], [runner.ModelEntry(spec="openai-compat/mock-answer",
                                                                                base_url=proxy)], options)
    info, _ = runner.run(folder, info, runner.load_questions([path], None), None)
    assert info.status == "complete"
    records = list(latest(folder / "samples.jsonl").values())
    assert len(records) == 8 and all(r.output == ANSWER and r.answer == "A" for r in records)
    assert sum(bool(r.correct) for r in records) == sum(q.target == "A" for q in questions[:8])
