"""Model clients, piece by piece: specs and the models file, retry delays, rate limits, cache keys, usage.

Where a request is sent, a real OpenAI-compatible HTTP server on loopback stands in for the model
(no model can run on these machines).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chronokg.models import (
    CLIENTS,
    ModelConfigError,
    ModelRequest,
    ModelTimeout,
    Prices,
    ResponseCache,
    RetryPolicy,
    get_model,
)
from chronokg.models.cache import sample_keys
from chronokg.models.limits import TokenBucket
from chronokg.models.retry import parse_retry_after
from chronokg.models.spec import normalize_base_url, resolve_options
from chronokg.settings import Settings
from chronokg.testing.openai_server import Fault, OpenAIServer


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(models_file=tmp_path / "models.toml", response_cache=tmp_path / "cache.sqlite")


@pytest.fixture(scope="module")
def server() -> object:
    with OpenAIServer() as s:
        yield s


# --- specs, the models file, errors ---------------------------------------------------------------

def test_spec_keeps_slashes_in_the_model_name(settings: Settings) -> None:
    options = resolve_options("vllm/meta-llama/Llama-3.1-8B-Instruct", settings=settings)
    assert (options.provider, options.model) == ("vllm", "meta-llama/Llama-3.1-8B-Instruct")


def test_unknown_provider_lists_the_known_ones(settings: Settings) -> None:
    # other parts (the evaluation's baselines) may register providers of their own beside the three built in
    known = r"unknown provider 'anthropic' \(known: (baseline, )?openai, openai-compat, vllm"
    with pytest.raises(ModelConfigError, match=known):
        get_model("anthropic/claude", settings=settings)
    with pytest.raises(ModelConfigError, match="is not PROVIDER/MODEL"):
        get_model("gpt4", settings=settings)


def test_missing_key_names_the_variable(settings: Settings) -> None:
    with pytest.raises(ModelConfigError, match="set OPENAI_API_KEY"):
        get_model("openai/gpt-4o-mini", settings=settings)
    with pytest.raises(ModelConfigError, match="CHRONOKG_TEST_NO_SUCH_KEY is not set"):
        get_model("openai-compat/m", base_url="http://h:1", api_key_env="CHRONOKG_TEST_NO_SUCH_KEY",
                  settings=settings)
    with pytest.raises(ModelConfigError, match="needs a server: pass --base-url"):
        get_model("openai-compat/m", settings=settings)


def test_missing_package_names_the_package() -> None:
    code = ("import sys; sys.modules['httpx2'] = None\n"
            "from chronokg.models import get_model\n"
            "get_model('openai-compat/m', base_url='http://h:1', cache=False)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0 and "needs the 'httpx2' package: pip install httpx2" in result.stderr


def test_the_openai_compat_client_runs_without_the_openai_sdk(server: OpenAIServer) -> None:
    """The wire format is one JSON POST: a process that sends requests never pays for the SDK's import."""
    code = ("import sys, asyncio; sys.modules['openai'] = None\n"
            "from chronokg.models import get_model, ModelRequest\n"
            "async def main():\n"
            f"    client = get_model('openai-compat/m', base_url={server.url!r}, cache=False, api_key='k1')\n"
            "    print((await client.generate(ModelRequest.chat('hi'))).text)\n"
            "    await client.aclose()\n"
            "asyncio.run(main())")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip(), result.stderr
    assert server.model_requests == 1


def test_a_provider_registered_from_outside(settings: Settings) -> None:
    CLIENTS.register("ghost", "chronokg_ghost_package.client:make")
    try:
        with pytest.raises(ModelConfigError, match="needs the 'chronokg_ghost_package' package"):
            get_model("ghost/x", settings=settings)
    finally:
        CLIENTS._entries.pop("ghost")


def test_models_file_aliases_and_overrides(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    settings.models_file.write_text(
        '[models.small]\nspec = "openai-compat/meta-llama/Llama-3.2-1B"\nbase_url = "http://gpu:8000"\n'
        'api_key_env = "CHRONOKG_TEST_GPU_KEY"\nconcurrency = 7\nprice_in = 0.5\nprice_out = 1.5\n'
        'server_args = ["--max-model-len", "4096"]\n'
        '[models."openai/gpt-4o-mini"]\nrequests_per_minute = 500\n')
    monkeypatch.setenv("CHRONOKG_TEST_GPU_KEY", "secret")
    options = resolve_options("small", settings=Settings(models_file=settings.models_file))
    assert options.spec == "openai-compat/meta-llama/Llama-3.2-1B" and options.base_url == "http://gpu:8000/v1"
    assert options.api_key is not None and options.api_key.get_secret_value() == "secret"
    assert options.limits.concurrency == 7 and options.prices == Prices(input_per_mtok=0.5, output_per_mtok=1.5)
    assert options.server_args == ["--max-model-len", "4096"]
    assert resolve_options("small", settings=settings, concurrency=3).limits.concurrency == 3
    assert resolve_options("openai/gpt-4o-mini", settings=settings).limits.requests_per_minute == 500


def test_models_file_json_and_errors(tmp_path: Path, settings: Settings) -> None:
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"models": {"m": {"spec": "openai-compat/x", "base_url": "http://h:1/v1"}}}))
    assert resolve_options("m", settings=settings, config_file=path).model == "x"
    path.write_text(json.dumps({"models": {"m": {"spec": "openai-compat/x", "colour": "red"}}}))
    with pytest.raises(ModelConfigError, match=r"models file .*models.json, \[models.m\] colour: Extra inputs"):
        resolve_options("m", settings=settings, config_file=path)


def test_base_url_normalization() -> None:
    assert normalize_base_url("http://localhost:8000") == "http://localhost:8000/v1"
    assert normalize_base_url("https://openrouter.ai/api/v1/") == "https://openrouter.ai/api/v1"
    with pytest.raises(ModelConfigError):
        normalize_base_url("localhost:8000")


def test_importing_the_cli_loads_no_http_client() -> None:
    code = ("import sys, chronokg.cli, chronokg.models\n"
            "print([m for m in ('openai', 'httpx', 'httpx2', 'aiohttp') if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


# --- retries and limits ---------------------------------------------------------------------------

def test_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "3"}) == 3.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    value = parse_retry_after({"retry-after": later})
    assert value is not None and 25 < value <= 30
    assert parse_retry_after({}) is None and parse_retry_after({"retry-after": "soon"}) is None


def test_backoff_grows_is_jittered_and_capped() -> None:
    policy = RetryPolicy(initial_delay_s=1, multiplier=2, max_delay_s=10, jitter=0.5)
    for retry, base in [(0, 1), (1, 2), (2, 4), (6, 10)]:
        delays = [policy.delay(retry) for _ in range(200)]
        assert all(base * 0.5 <= d <= base for d in delays) and len(set(delays)) > 1
    assert policy.delay(3, retry_after=7.5) == 7.5
    assert RetryPolicy(max_retry_after_s=60).delay(0, retry_after=3600) == 60


def test_token_bucket_waits_for_refill_and_takes_corrections() -> None:
    now = [0.0]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    async def scenario() -> None:
        bucket = TokenBucket(60, clock=lambda: now[0], sleep=sleep)  # one a second, a minute's burst
        for _ in range(60):
            await bucket.take(1)
        assert slept == []
        await bucket.take(3)
        assert sum(slept) == pytest.approx(3.0)
        bucket.correct(10)  # the request used 10 more than estimated: the next caller waits for them
        await bucket.take(1)
        assert sum(slept) == pytest.approx(14.0)

    asyncio.run(scenario())


def test_concurrency_is_bounded_per_model(server: OpenAIServer) -> None:
    server.reset()

    async def scenario() -> None:
        client = get_model("openai-compat/m", base_url=server.url, cache=False, concurrency=3)
        server.fail_next(Fault.slow(0.05), times=12)
        await asyncio.gather(*[client.generate(ModelRequest.chat(f"q{i}")) for i in range(12)])
        await client.aclose()

    asyncio.run(scenario())
    assert server.model_requests == 12 and server.max_in_flight == 3


# --- cache, usage, timeouts -----------------------------------------------------------------------

def test_cache_key_covers_everything_that_changes_the_answer() -> None:
    base = ModelRequest.chat("q", temperature=0.7, n=2)
    keys = sample_keys("openai-compat/m", "http://h/v1", base)
    assert len(set(keys)) == 2
    assert sample_keys("openai-compat/m", "http://h/v1", base.with_config(n=3))[:2] == keys
    assert sample_keys("openai-compat/m", "http://h/v1", base.with_config(timeout=5))[:2] == keys
    changed = [
        sample_keys("openai-compat/other", "http://h/v1", base),
        sample_keys("openai-compat/m", "http://other/v1", base),
        sample_keys("openai-compat/m", "http://h/v1", base.with_config(temperature=0.8)),
        sample_keys("openai-compat/m", "http://h/v1", base.with_config(stop=["\n"])),
        sample_keys("openai-compat/m", "http://h/v1", base.with_config(extra_body={"top_k": 3})),
        sample_keys("openai-compat/m", "http://h/v1", base.model_copy(update={"epoch": 1})),
        sample_keys("openai-compat/m", "http://h/v1", ModelRequest.chat("q ", temperature=0.7, n=2)),
        sample_keys("openai-compat/m", "http://h/v1", ModelRequest.completion("q", temperature=0.7, n=2)),
    ]
    assert all(not set(k) & set(keys) for k in changed)


def test_usage_and_cost_per_model(server: OpenAIServer, tmp_path: Path) -> None:
    server.reset()
    prices = Prices(input_per_mtok=2.0, output_per_mtok=8.0)

    async def scenario() -> None:
        client = get_model("openai-compat/m", base_url=server.url, cache=tmp_path / "c.sqlite", prices=prices)
        request = ModelRequest.chat("how many tokens is this", n=2)
        first = await client.generate(request)
        again = await client.generate(request)
        usage = client.usage  # type: ignore[attr-defined]
        assert (usage.requests, usage.cache_hits) == (1, 1)
        assert usage.prompt_tokens == first.usage.prompt_tokens > 0
        assert usage.completion_tokens == first.usage.completion_tokens > 0
        assert usage.cached_completion_tokens == again.usage.completion_tokens == first.usage.completion_tokens
        expected = (usage.prompt_tokens * 2.0 + usage.completion_tokens * 8.0) / 1e6
        assert usage.cost == pytest.approx(expected)
        await client.aclose()

    asyncio.run(scenario())


def test_run_timeout_stops_the_run_and_the_cache_stays_consistent(server: OpenAIServer, tmp_path: Path) -> None:
    server.reset()
    path = tmp_path / "c.sqlite"

    async def scenario() -> int:
        client = get_model("openai-compat/m", base_url=server.url, cache=path, run_timeout_s=1.0)
        server.fail_next(Fault.slow(30), times=5)  # five requests hang; the others answer at once
        results = await asyncio.gather(*[client.generate(ModelRequest.chat(f"q{i}")) for i in range(20)],
                                       return_exceptions=True)
        await client.aclose()
        assert sum(isinstance(r, ModelTimeout) for r in results) == 5
        return sum(not isinstance(r, BaseException) for r in results)

    answered = asyncio.run(scenario())
    assert answered == 15
    cache = ResponseCache(path)
    assert sum(s.entries for s in cache.stats()) == 15
    cache.close()
    server.reset()

    async def resume() -> None:
        client = get_model("openai-compat/m", base_url=server.url, cache=path)
        results = await asyncio.gather(*[client.generate(ModelRequest.chat(f"q{i}")) for i in range(20)])
        assert sum(r.cached for r in results) == 15
        await client.aclose()

    asyncio.run(resume())
    assert server.model_requests == 5


def test_cache_survives_a_killed_writer(tmp_path: Path) -> None:
    """A process killed in the middle of writing leaves whole entries only (one transaction each)."""
    path = tmp_path / "c.sqlite"
    code = f"""
from chronokg.models import ResponseCache, Choice
from chronokg.models.cache import CachedSample
cache = ResponseCache({str(path)!r})
i = 0
print("ready", flush=True)
while True:
    cache.put_many("spec", {{f"k{{i}}-{{j}}": CachedSample(choice=Choice(index=j, text="x" * 5000))
                            for j in range(8)}})
    i += 1
"""
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    cache = ResponseCache(path)
    while not cache.stats():
        time.sleep(0.01)
    time.sleep(0.2)
    proc.kill()
    proc.wait()
    stats = cache.stats()
    assert len(stats) == 1 and stats[0].entries > 0 and stats[0].entries % 8 == 0
    assert cache.clear("spec") == stats[0].entries and cache.stats() == []
    cache.close()


class _BusyOnce:
    """A connection whose journal-mode switch reports a lock `busy` times (what SQLite gives a second process
    opening a new cache at once, without calling its busy handler), then succeeds."""

    def __init__(self, busy: int, message: str = "database is locked") -> None:
        self.busy, self.message, self.calls = busy, message, 0

    def execute(self, sql: str) -> None:
        self.calls += 1
        if self.calls <= self.busy:
            raise sqlite3.OperationalError(self.message)


def test_the_cache_waits_for_the_wal_switch_and_gives_up_at_its_timeout() -> None:
    from chronokg.models.cache import set_wal

    waited = _BusyOnce(busy=3)
    set_wal(waited, timeout_s=5.0)  # type: ignore[arg-type]
    assert waited.calls == 4
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        set_wal(_BusyOnce(busy=10**6), timeout_s=0.1)  # type: ignore[arg-type]
    other = _BusyOnce(busy=1, message="disk I/O error")
    with pytest.raises(sqlite3.OperationalError, match="disk"):
        set_wal(other, timeout_s=5.0)  # type: ignore[arg-type]
    assert other.calls == 1  # not a lock: raised at once
