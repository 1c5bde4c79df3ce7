"""The model client conformance suite against the loopback OpenAI-compatible server.

No model can run on these machines, so a real HTTP server on loopback speaking the OpenAI wire
format (chronokg.testing.openai_server) stands in for one; the clients under test speak real HTTP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from chronokg.models import ModelClient, RetryPolicy, get_model
from chronokg.settings import Settings
from chronokg.testing.client_conformance import ModelClientConformance
from chronokg.testing.openai_server import OpenAIServer


class TestOpenAICompat(ModelClientConformance):
    """`openai-compat/<model>` with a base URL: vLLM, SGLang, llama.cpp, Ollama, ..."""

    spec = "openai-compat/loopback-model"


class TestOpenAI(ModelClientConformance):
    """`openai/<model>` with the key and base URL from the settings (`OPENAI_BASE_URL` pointing at loopback)."""

    spec = "openai/gpt-loopback"

    def make_client(self, server: OpenAIServer, *, cache: Path | bool = False, timeout_s: float = 5.0,
                    max_retries: int | None = None) -> ModelClient:
        settings = Settings(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=server.url)
        retry = RetryPolicy(max_retries=self.max_retries if max_retries is None else max_retries,
                            initial_delay_s=0.005, max_delay_s=0.05)
        return get_model(self.spec, settings=settings, cache=cache, retry=retry, timeout_s=timeout_s)

    def process_options(self, server: OpenAIServer) -> tuple[dict[str, Any], dict[str, str]]:
        return {}, {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.url}
