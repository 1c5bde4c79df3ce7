"""chronokg against a real OpenAI-compatible server not written here: LiteLLM's proxy on loopback, guarded by a
master key (every call sends it through `--api-key-env` / `api_key_env`), its models answering from
`mock_response` / `mock_tool_calls` (no network), one answering a real 429 (`litellm.RateLimitError`). A proxy
callback (`recorder.py`, written beside the config) records what each request carried (model, tools, tool_choice).
Faults a proxy cannot produce (dropped connections, malformed JSON, Retry-After values) stay with chronokg's own
stand-in (tests/test_models_conformance.py)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import Result
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

pytestmark = pytest.mark.slow  # a LiteLLM proxy

ANSWER = "##Explanation: mock\n##Answer: A"
MASTER_KEY = "sk-chronokg-proxy-test"
KEY_VAR = "CHRONOKG_TEST_LITELLM_KEY"
COUNT = {"query": "MATCH (f:Fact) RETURN count(f) AS n"}  # a tool chronokg serves: guarded Cypher
COUNT_CALL = [{"id": "call_1", "type": "function", "function": {"name": "cypher", "arguments": json.dumps(COUNT)}}]
RECORDER = """
import json
from litellm.integrations.custom_logger import CustomLogger


class Recorder(CustomLogger):
    async def async_pre_call_hook(self, user_api_key_dict, cache, data, call_type):
        with open(PATH, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"model": data.get("model"), "tool_choice": data.get("tool_choice"),
                                 "tools": [t["function"]["name"] for t in data.get("tools") or []],
                                 "roles": [m.get("role") for m in data.get("messages") or []]}) + "\\n")
        return data


recorder = Recorder()
"""
CONFIG = {
    "model_list": [
        {"model_name": "mock-answer", "litellm_params": {"model": "openai/mock-answer", "api_key": "sk-mock",
                                                         "mock_response": ANSWER}},
        {"model_name": "mock-tools", "litellm_params": {
            "model": "openai/mock-tools", "api_key": "sk-mock",
            "mock_tool_calls": [{"id": "call_1", "type": "function",
                                 "function": {"name": "stats", "arguments": "{}"}}]}},
        {"model_name": "mock-agent", "litellm_params": {"model": "openai/mock-agent", "api_key": "sk-mock",
                                                        "mock_response": ANSWER, "mock_tool_calls": COUNT_CALL}},
        {"model_name": "mock-judge", "litellm_params": {"model": "openai/mock-judge", "api_key": "sk-mock",
                                                        "mock_response": "true"}},
        {"model_name": "mock-429", "litellm_params": {"model": "openai/mock-429", "api_key": "sk-mock",
                                                      "mock_response": "litellm.RateLimitError"}},
    ],
    "litellm_settings": {"num_retries": 0, "callbacks": "recorder.recorder"},
    "general_settings": {"master_key": MASTER_KEY},
}


@dataclass
class Proxy:
    url: str  # .../v1
    requests: Path  # what the recorder saw, one JSON line per request

    def received(self, model: str) -> list[dict[str, Any]]:
        lines = self.requests.read_text(encoding="utf-8").splitlines() if self.requests.exists() else []
        return [r for r in map(json.loads, lines) if r["model"] == model]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    """`litellm --config cfg --port FREE` on loopback; fails (not skips) under CI when it cannot start."""
    import importlib.util

    if importlib.util.find_spec("litellm") is None:
        if os.environ.get("CI"):
            pytest.fail("litellm[proxy] (the integrations extra) is not installed")
        pytest.skip("litellm[proxy] is not installed")
    folder = tmp_path_factory.mktemp("litellm")
    cfg = folder / "config.yaml"
    cfg.write_text(json.dumps(CONFIG))  # JSON is YAML
    requests = folder / "requests.jsonl"
    (folder / "recorder.py").write_text(f"PATH = {str(requests)!r}\n{RECORDER}")
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
        yield Proxy(f"{url}/v1", requests)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    """The proxy's key in the variable every call names (read through chronokg.settings)."""
    monkeypatch.setenv(KEY_VAR, MASTER_KEY)
    return KEY_VAR


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def test_models_check_against_the_proxy(proxy: Proxy, key: str) -> None:
    done = invoke("models", "check", "openai-compat/mock-answer", "--base-url", proxy.url, "--api-key-env", key,
                  "--format", "json")
    assert done.exit_code == 0, done.output
    assert "mock-answer" in done.output
    refused = invoke("models", "check", "openai-compat/mock-answer", "--base-url", proxy.url, "--format", "json")
    # without its key the proxy refuses (LiteLLM without a database answers 400 "No connected db.")
    assert refused.exit_code != 0 and "HTTP 40" in refused.output, refused.output


def test_a_real_429_is_retried_then_fails_with_the_reason(proxy: Proxy) -> None:
    async def go() -> None:
        async with get_model("openai-compat/mock-429", base_url=proxy.url, api_key=MASTER_KEY, max_retries=2,
                             cache=False) as model:
            with pytest.raises(ModelError) as caught:
                await model.generate(ModelRequest.chat("hello"))
            assert "429" in str(caught.value) or "rate" in str(caught.value).lower()

    before = len(proxy.received("mock-429"))
    asyncio.run(go())
    assert len(proxy.received("mock-429")) - before == 3  # the first try and two retries reached the proxy


def test_mock_tool_calls_reach_chronokg_as_tool_calls(proxy: Proxy) -> None:
    async def go() -> None:
        from chronokg.models import GenerateConfig, ToolSpec

        async with get_model("openai-compat/mock-tools", base_url=proxy.url, api_key=MASTER_KEY,
                             cache=False) as model:
            request = ModelRequest.chat("counts?").model_copy(update={"config": GenerateConfig(
                tools=[ToolSpec(name="stats", description="counts")], tool_choice="auto")})
            completion = await model.generate(request)
            assert [c.name for c in completion.choices[0].tool_calls] == ["stats"]

    asyncio.run(go())


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The demo store and 8 of its TempoMed questions."""
    root = tmp_path_factory.mktemp("demo")
    store_path = root / "store.kgl"
    with KgliteStore(store_path) as store:
        load_demo(store)
        questions, _ = generate("tempomed", store, snapshot.current(store), {})
    path = root / "q.jsonl"
    write_jsonl(path, questions[:8])
    return store_path, path


def test_eval_run_through_the_proxy(proxy: Proxy, demo: tuple[Path, Path], key: str, tmp_path: Path) -> None:
    path = demo[1]
    options = runner.RunOptions(protocol="seed", concurrency=4, cache=False)
    entry = runner.ModelEntry(spec="openai-compat/mock-answer", base_url=proxy.url, api_key_env=key)
    folder, info = runner.prepare(tmp_path / "runs", [path], [entry], options)
    info, _ = runner.run(folder, info, runner.load_questions([path], None), None)
    assert info.status == "complete"
    records = list(latest(folder / "samples.jsonl").values())
    questions = runner.load_questions([path], None)
    assert len(records) == 8 and all(r.output == ANSWER and r.answer == "A" for r in records)
    assert sum(bool(r.correct) for r in records) == sum(q.target == "A" for q in questions)
    # which variable holds the key is not part of the run: the same run with the key in another variable
    assert runner.run_id([entry.model_copy(update={"api_key_env": "OTHER"})], info.questions, options) == info.run_id


def test_a_models_file_alias_is_recorded_resolved_and_the_key_never(proxy: Proxy, demo: tuple[Path, Path],
                                                                   key: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    models_file = tmp_path / "models.toml"
    models_file.write_text(f'[models.proxied]\nspec = "openai-compat/mock-answer"\nbase_url = "{proxy.url}"\n'
                           f'api_key_env = "{key}"\ntimeout_s = 30\n', encoding="utf-8")
    monkeypatch.setenv("CHRONOKG_MODELS_FILE", str(models_file))
    monkeypatch.setenv("CHRONOKG_STORE", f"kglite://{tmp_path / 'none.kgl'}")
    done = invoke("eval", "run", str(demo[1]), "-m", "proxied", "--no-cache", "--no-write",
                  "--log-dir", str(tmp_path / "runs"))
    assert done.exit_code == 0, done.output
    folder = next((tmp_path / "runs").iterdir())
    info = json.loads((folder / "run.json").read_text())
    model = info["models"][0]
    assert model["spec"] == "proxied" and model["base_url"] is None  # as given
    assert {k: model["resolved"][k] for k in ("spec", "provider", "model", "base_url", "api_key_env",
                                              "api_key_sent", "timeout_s")} == {
        "spec": "openai-compat/mock-answer", "provider": "openai-compat", "model": "mock-answer",
        "base_url": proxy.url, "api_key_env": key, "api_key_sent": True, "timeout_s": 30.0}
    for written in folder.iterdir():
        assert MASTER_KEY not in written.read_text(), written


def test_an_unset_key_variable_is_one_line_before_any_run_folder(proxy: Proxy, demo: tuple[Path, Path],
                                                                 tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHRONOKG_TEST_UNSET_KEY", raising=False)
    monkeypatch.setenv("CHRONOKG_STORE", f"kglite://{tmp_path / 'none.kgl'}")
    common = [str(demo[1]), "--base-url", proxy.url, "--no-cache", "--log-dir", str(tmp_path / "runs")]
    for args in (["-m", "openai-compat/mock-answer", "--api-key-env", "CHRONOKG_TEST_UNSET_KEY"],
                 ["-m", "baseline/random", "--judge", "openai-compat/mock-judge",
                  "--judge-api-key-env", "CHRONOKG_TEST_UNSET_KEY"]):
        done = invoke("eval", "run", *common, *args)
        assert done.exit_code != 0
        lines = [line for line in done.output.splitlines() if "CHRONOKG_TEST_UNSET_KEY" in line]
        assert len(lines) == 1 and "is not set" in lines[0] and "Traceback" not in done.output, done.output
        assert not (tmp_path / "runs").exists()


def test_every_command_taking_a_model_takes_api_key_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other commands that take a model read --api-key-env the same way: unset, one error line naming it."""
    monkeypatch.delenv("CHRONOKG_TEST_UNSET_KEY", raising=False)
    monkeypatch.setenv("CHRONOKG_STORE", f"kglite://{tmp_path / 'none.kgl'}")
    manifest = tmp_path / "manifest.json"
    manifest.write_text("{}", encoding="utf-8")
    model = ["--model", "openai-compat/m", "--base-url", "http://127.0.0.1:9/v1", "--api-key-env",
             "CHRONOKG_TEST_UNSET_KEY"]
    for args in (["generate", "benchage", "--out", str(tmp_path / "q.jsonl"), *model],
                 ["bench", "trajectory", str(manifest), "--out", str(tmp_path / "t"), *model],
                 ["retrieve", "web", "a question?", "--wiki", "none", "--chain", "none", *model]):
        done = invoke(*args)
        assert done.exit_code == 2, (args, done.output)
        assert "CHRONOKG_TEST_UNSET_KEY is not set" in done.output and "Traceback" not in done.output, done.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]  # nothing made


def test_failed_samples_are_summarised_by_reason(proxy: Proxy, demo: tuple[Path, Path], key: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A real 429 (retried, then given up) and a model the proxy does not serve: two reasons on the terminal, each
    with its count and its first message."""
    monkeypatch.setenv("CHRONOKG_MODEL_MAX_RETRIES", "1")
    monkeypatch.setenv("CHRONOKG_STORE", f"kglite://{tmp_path / 'none.kgl'}")
    before = len(proxy.received("mock-429"))
    done = invoke("eval", "run", str(demo[1]), "-m", "openai-compat/mock-429", "-m", "openai-compat/no-such-model",
                  "-m", "openai-compat/mock-answer", "--base-url", proxy.url, "--api-key-env", key, "--no-cache",
                  "--no-write", "--log-dir", str(tmp_path / "runs"))
    assert done.exit_code == runner.EXIT_INCOMPLETE, done.output
    assert len(proxy.received("mock-429")) - before == 16  # 8 samples, each tried twice
    records = list(latest(next((tmp_path / "runs").glob("*/samples.jsonl"))).values())
    reasons: dict[str, list[str]] = {}
    for r in records:
        if r.error:
            reasons.setdefault(r.error.split(": ", 1)[0], []).append(r.error)
    assert len(reasons) == 2 and sorted(map(len, reasons.values())) == [8, 8]
    assert "failed samples by reason" in done.output
    # the table folds long cells over lines: read it without its borders, a folded cell then reads on
    text = " ".join(done.output.replace("│", " ").split())
    for reason, errors in reasons.items():
        first = " ".join(errors[0].split(": ", 1)[1].split())  # "SPEC: what the server said"
        assert f"{reason} 8 {first[:70]}" in text, (reason, first, done.output)


def test_the_judge_runs_against_the_proxy(proxy: Proxy, shared_data: Path, key: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """BenchAge with `--judge openai-compat/mock-judge` (its key from --api-key-env): every judgement is the
    proxy's reply, sent with the seed's judge settings."""
    from chronokg.ingest import qasets

    store_path = tmp_path / "store.kgl"
    with KgliteStore(store_path) as store:
        qasets.load(store, [shared_data / "selfaware" / "SelfAware.subset.json"])
        questions, _ = generate("benchage", store, snapshot.current(store),
                                {"detector": "keywords", "benchmarks": ["selfaware"], "limit": 4})
    path = tmp_path / "q.jsonl"
    write_jsonl(path, questions)
    monkeypatch.setenv("CHRONOKG_STORE", f"kglite://{store_path}")
    before = len(proxy.received("mock-judge"))
    done = invoke("eval", "run", str(path), "-m", "openai-compat/mock-answer", "--judge", "openai-compat/mock-judge",
                  "--base-url", proxy.url, "--api-key-env", key, "--no-cache", "--no-write",
                  "--log-dir", str(tmp_path / "runs"))
    assert done.exit_code == 0, done.output
    folder = next((tmp_path / "runs").iterdir())
    info = json.loads((folder / "run.json").read_text())
    assert info["judge"]["base_url"] == proxy.url and info["judge"]["api_key_env"] == key
    assert info["judge"]["api_key_sent"] and MASTER_KEY not in (folder / "run.json").read_text()
    records = list(latest(folder / "samples.jsonl").values())
    judged = [s for r in records for s in r.steps if s.get("step") == "judge" or "llm_output" in s]
    assert len(records) == len(questions) and judged
    assert all(s["llm_output"] == "true" and s["result"] == 1 for s in judged)
    assert len(proxy.received("mock-judge")) - before == len(judged)


def agent_run(proxy: Proxy, demo: tuple[Path, Path], key: str, tmp: Path, tools_url: str | None) -> list[Any]:
    store_path, path = demo
    options = runner.RunOptions(protocol="seed", concurrency=4, cache=False, limit=3, agent="tools",
                                tools_url=tools_url, agent_max_steps=2)
    entry = runner.ModelEntry(spec="openai-compat/mock-agent", base_url=proxy.url, api_key_env=key)
    folder, info = runner.prepare(tmp / "runs", [path], [entry], options,
                                  store_uri=f"kglite://{store_path}" if tools_url is None else None)
    loaded = runner.load_questions([path], 3)
    if tools_url is None:
        with KgliteStore(store_path, read_only=True) as store:
            info, _ = runner.run(folder, info, loaded, store)
    else:
        info, _ = runner.run(folder, info, loaded, None)
    assert info.status == "complete"
    return list(latest(folder / "samples.jsonl").values())


def test_the_agent_arm_runs_against_the_proxy(proxy: Proxy, demo: tuple[Path, Path], key: str,
                                              tmp_path: Path) -> None:
    """`--agent tools` in process, over `serve http` and over `serve mcp`, the model the proxy's mock_tool_calls
    (a guarded Cypher count):
    the tool call runs, and the last call (as docs/eval.md says) still lists the tools with tool_choice "none"."""
    pytest.importorskip("mcp")
    from tests.serve_helpers import serve

    runs = {"in process": agent_run(proxy, demo, key, tmp_path / "local", None)}
    with serve(demo[0], "http") as url:
        runs["serve http"] = agent_run(proxy, demo, key, tmp_path / "http", url)
    with serve(demo[0], "mcp", "--transport", "http", "--rate", "0") as base:
        runs["serve mcp"] = agent_run(proxy, demo, key, tmp_path / "mcp", f"mcp+{base}/mcp")
    for where, records in runs.items():
        assert len(records) == 3, where
        for r in records:
            calls = [s for s in r.steps if s["step"] == "tool_call"]
            assert [(c["tool"], c["ok"]) for c in calls] == [("cypher", True)], (where, r.steps)
            assert json.loads(calls[0]["result"])["rows"][0]["n"] > 0, where
            assert r.output == ANSWER and r.answer == "A", where
    sent = proxy.received("mock-agent")
    assert len(sent) == 3 * 3 * 2  # three arms x three samples x max_steps calls
    first = [s for s in sent if "tool" not in s["roles"]]
    last = [s for s in sent if "tool" in s["roles"]]
    assert len(first) == len(last) == 9
    assert all(s["tool_choice"] == "auto" and "cypher" in s["tools"] for s in first)
    assert all(s["tool_choice"] == "none" and s["tools"] == first[0]["tools"] for s in last)


def test_a_missing_or_wrong_key_is_one_line_naming_where_it_was_read(proxy: Proxy, key: str, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """LiteLLM's proxy refuses a missing key and a wrong one (its own words: "No connected db." for a key it
    cannot check); chronokg prints one line that says the key was refused and where it read it: the variable named
    by --api-key-env, the models file's api_key_env field, or that none was set."""
    monkeypatch.setenv("CHRONOKG_TEST_WRONG_KEY", "sk-not-the-proxy-key")
    models = tmp_path / "models.toml"
    models.write_text(f'[models.proxied]\nspec = "openai-compat/mock-answer"\nbase_url = "{proxy.url}"\n'
                      'api_key_env = "CHRONOKG_TEST_WRONG_KEY"\n', encoding="utf-8")
    monkeypatch.setenv("CHRONOKG_MODELS_FILE", str(models))
    cases = [
        (["openai-compat/mock-answer", "--base-url", proxy.url], "no API key was set"),
        (["openai-compat/mock-answer", "--base-url", proxy.url, "--api-key-env", "CHRONOKG_TEST_WRONG_KEY"],
         "chronokg read it from CHRONOKG_TEST_WRONG_KEY (--api-key-env"),
        (["proxied"], f'chronokg read it from CHRONOKG_TEST_WRONG_KEY (api_key_env of [models."proxied"] in {models})'),
    ]
    for args, says in cases:
        done = invoke("models", "check", *args)
        assert done.exit_code != 0, done.output
        text = " ".join(done.output.split())  # a line the terminal folded reads as one
        assert re.search(r"HTTP 40[013]", text) and says in text and "the server refused the API key" in text, text
        refused = [line for line in done.output.splitlines() if "refused the API key" in line]
        assert len(refused) <= 1 and "Traceback" not in done.output, done.output
        assert "sk-not-the-proxy-key" not in done.output
    assert invoke("models", "check", "openai-compat/mock-answer", "--base-url", proxy.url,
                  "--api-key-env", key).exit_code == 0  # the right key passes: the refusal was the key's


@pytest.mark.parametrize(("status", "body", "about_the_key"), [
    (400, "No connected db.", True), (401, "anything at all", True),
    (400, "Authentication Error, Invalid proxy server token passed.", True),
    (403, "Incorrect API key provided: sk-xx***", True), (400, "invalid_api_key", True),
    (403, "You have insufficient permissions for model gpt-x", False),
    (400, "max_tokens is too large", False), (404, "invalid api key", False), (500, "Authentication Error", False)])
def test_key_refused_reads_the_server_words(status: int, body: str, about_the_key: bool) -> None:
    from chronokg.models.client_errors import key_refused

    assert key_refused(status, body) is about_the_key
