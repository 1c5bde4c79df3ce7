"""`CLIENTS` (spec prefix -> factory) and `get_model`, the one way to turn a spec string into a client.

A package (or a higher layer of this one) adds a provider by declaring it in its pyproject.toml; listing
providers imports nothing, and the entry point is read on `CLIENTS`' first lookup (docs/extending.md)::

    [project.entry-points."chronokg.model_providers"]
    baseline = "chronokg.eval.baselines:baseline_client"

A factory takes the resolved `ClientOptions` (`options.model` is the part after the first slash)
and returns a `ModelClient`; it imports its optional packages inside, so a missing one is reported
by `get_model` as one error naming the pip extra to install.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from chronokg.models.client_errors import ModelConfigError
from chronokg.models.protocol import ModelClient
from chronokg.models.spec import ClientOptions, load_entries, resolve_options
from chronokg.registry import Registry, UnknownEntry
from chronokg.settings import Settings

ClientFactory = Callable[[ClientOptions], ModelClient]

CLIENTS: Registry[ClientFactory] = Registry("model provider", group="model_providers")
CLIENTS.register("openai", "chronokg.models.openai_compat:openai_client")
CLIENTS.register("openai-compat", "chronokg.models.openai_compat:compat_client")
CLIENTS.register("vllm", "chronokg.models.vllm:vllm_client")

# Optional packages the built-in providers need, and the extra that installs each (any other missing package is
# named with its own `pip install`).
EXTRAS = {"aiohttp": "testing"}


def get_model(spec: str, *, settings: Settings | None = None, config_file: Path | None = None,
              **options: Any) -> ModelClient:
    """A client for `spec` (`PROVIDER/MODEL` or an alias from the models file).

    Options (all optional; a models file entry and the settings fill the rest): `base_url`,
    `api_key`, `api_key_env`, `concurrency`, `requests_per_minute`, `tokens_per_minute`,
    `timeout_s` (per attempt), `run_timeout_s` (all requests of this client), `max_retries` or
    `retry` (a `RetryPolicy`), `cache` (True: the user cache, False: none, a path, or a
    `ResponseCache`), `prices` (a `Prices`), `server_args` (vllm), `headers`.
    """
    settings = settings or Settings()
    resolved = resolve_options(spec, settings=settings, config_file=config_file, **options)
    try:
        factory = CLIENTS.get(resolved.provider)
    except UnknownEntry:
        raise ModelConfigError(f"model spec {resolved.spec!r}: unknown provider {resolved.provider!r} "
                               f"(known: {', '.join(CLIENTS.names())}; another package's provider is found through its "
                               "chronokg.model_providers entry point once that package is installed)") from None
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        how = f"pip install 'chronokg[{EXTRAS[missing]}]'" if missing in EXTRAS else f"pip install {missing}"
        raise ModelConfigError(f"{resolved.spec} needs the {missing!r} package: {how}") from exc
    return factory(resolved)


def known_models(settings: Settings | None = None, config_file: Path | None = None) -> dict[str, str]:
    """Aliases from the models file -> the spec each stands for."""
    settings = settings or Settings()
    return {name: entry.spec or name for name, entry in load_entries(config_file or settings.models_file).items()}



