"""`chronokg models check|list` and `chronokg cache stats|clear`, as a user runs them.

No model can run on these machines: a real OpenAI-compatible HTTP server on loopback stands in.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.models import ModelRequest, get_model
from chronokg.testing.openai_server import OpenAIServer

runner = CliRunner()


def test_models_check_prints_what_the_server_supports() -> None:
    with OpenAIServer(served_model="llama-3.1-8b-instruct-awq") as server:
        result = runner.invoke(app, ["models", "check", "openai-compat/llama", "--base-url", server.url])
        assert result.exit_code == 0, result.output
        assert "llama-3.1-8b-instruct-awq" in result.output
        for feature in ("tool calls", "logprobs", "JSON schema", "completions endpoint", "latency"):
            assert feature in result.output
        assert "no" not in result.output.split()
        assert server.model_requests == 5
        result = runner.invoke(app, ["models", "check", "openai-compat/llama", "--base-url", server.url,
                                     "--format", "json"])
        report = json.loads(result.output)
        assert report["server_model"] == "llama-3.1-8b-instruct-awq"
        assert all(f["works"] for f in report["features"]) and len(report["features"]) == 5


def test_models_check_reports_missing_features_and_auth_errors() -> None:
    with OpenAIServer(api_key="right-key") as server:
        result = runner.invoke(app, ["models", "check", "openai-compat/m", "--base-url", server.url])
        assert result.exit_code == 2 and "HTTP 401" in result.output and "--api-key-env" in result.output
    with OpenAIServer(script=lambda req: "plain text only") as server:
        result = runner.invoke(app, ["models", "check", "openai-compat/m", "--base-url", server.url, "-f", "json"])
        features = {f["feature"]: f["works"] for f in json.loads(result.output)["features"]}
        assert features == {"chat": True, "tool calls": False, "logprobs": True, "JSON schema": False,
                            "completions endpoint": True}


def test_unknown_spec_is_one_red_line() -> None:
    result = runner.invoke(app, ["models", "check", "nope/model"])
    assert result.exit_code == 2
    assert "unknown provider 'nope'" in result.output and "openai-compat" in result.output


def test_models_list_shows_providers() -> None:
    result = runner.invoke(app, ["models", "list", "--format", "json"])
    assert result.exit_code == 0
    names = {row["name"] for row in json.loads(result.output)}
    assert {"openai", "openai-compat", "vllm"} <= names


def test_cache_stats_and_clear(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    with OpenAIServer() as server:
        async def fill() -> None:
            for spec in ("openai-compat/a", "openai-compat/b"):
                client = get_model(spec, base_url=server.url, cache=path)
                await client.generate(ModelRequest.chat("q", n=3, temperature=1.0))
                await client.aclose()
        asyncio.run(fill())
    result = runner.invoke(app, ["cache", "stats", "--cache", str(path), "-f", "json"])
    assert result.exit_code == 0, result.output
    assert {r["spec"]: r["entries"] for r in json.loads(result.output)} == {"openai-compat/a": 3,
                                                                           "openai-compat/b": 3}
    result = runner.invoke(app, ["cache", "clear", "--model", "openai-compat/a", "--cache", str(path)])
    assert result.exit_code == 0 and "deleted 3 cached samples" in result.output
    result = runner.invoke(app, ["cache", "stats", "--cache", str(path), "-f", "json"])
    assert [r["spec"] for r in json.loads(result.output)] == ["openai-compat/b"]
    result = runner.invoke(app, ["cache", "clear", "--cache", str(path)])
    assert "deleted 3" in result.output
