"""Spec strings (`PROVIDER/MODEL`), the models config file, and the options a client is built from.

A spec names the provider before the first slash; the rest is the provider's model name, slashes
and all (`vllm/meta-llama/Llama-3.1-8B-Instruct`). A config file (`models.toml`, or JSON of the same
shape) gives aliases and per-model settings::

    [models.llama-8b]
    spec = "openai-compat/meta-llama/Llama-3.1-8B-Instruct"
    base_url = "http://gpu-box:8000/v1"
    api_key_env = "GPU_BOX_KEY"
    concurrency = 64
    price_in = 0.18          # per 1M prompt tokens
    price_out = 0.18         # per 1M completion tokens
    cutoff = 2023-12-31      # its knowledge cutoff (YYYY, YYYY-MM or a date): eval's pre/post-cutoff split

An entry's name may also be a full spec (`[models."openai/gpt-4o-mini"]`) to give that spec settings.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from chronokg.graph.dates import parse_date
from chronokg.models.cache import ResponseCache
from chronokg.models.client_errors import ModelConfigError
from chronokg.models.limits import Limits
from chronokg.models.retry import RetryPolicy
from chronokg.models.usage import Prices
from chronokg.settings import Settings


class ModelEntry(BaseModel):
    """One entry of the models config file; anything left out falls back to the settings."""

    model_config = ConfigDict(extra="forbid")

    spec: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    concurrency: int | None = Field(default=None, ge=1)
    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)
    timeout_s: float | None = Field(default=None, gt=0)
    max_retries: int | None = Field(default=None, ge=0)
    price_in: float | None = Field(default=None, ge=0)
    price_out: float | None = Field(default=None, ge=0)
    server_args: list[str] = Field(default_factory=list)
    headers: dict[str, str] = Field(default_factory=dict)
    cutoff: dt.date | None = Field(default=None, description="The model's knowledge cutoff, declared")

    @field_validator("cutoff", mode="before")
    @classmethod
    def _date(cls, value: Any) -> Any:
        """`2023`, `"2023-12"` or a date: the first day of the period, as `eval run --cutoff` reads it."""
        return parse_date(value)[0] if isinstance(value, str | int) and not isinstance(value, bool) else value


class ClientOptions(BaseModel):
    """Everything a client factory needs, resolved from the spec, the config file, settings and arguments."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    spec: str
    provider: str
    model: str
    base_url: str | None = None
    api_key: SecretStr | None = None
    api_key_env: str | None = None
    api_key_source: str | None = Field(default=None, description="Where the key was read from, for messages: the "
                                                                  "variable and who named it (never the key)")
    limits: Limits = Limits()
    retry: RetryPolicy = RetryPolicy()
    timeout_s: float = 300.0
    run_timeout_s: float | None = None
    cache: ResponseCache | None = None
    prices: Prices | None = None
    server_args: list[str] = Field(default_factory=list)
    headers: dict[str, str] = Field(default_factory=dict)
    cutoff: dt.date | None = None
    settings: Settings

    def described(self) -> dict[str, Any]:
        """What a run records of this client (run.json): the alias resolved, never the key (only the name of
        its variable) and only the names of extra headers (they may carry credentials)."""
        return {"spec": self.spec, "provider": self.provider, "model": self.model, "base_url": self.base_url,
                "api_key_env": self.api_key_env, "api_key_sent": self.api_key is not None,
                "concurrency": self.limits.concurrency, "requests_per_minute": self.limits.requests_per_minute,
                "tokens_per_minute": self.limits.tokens_per_minute, "timeout_s": self.timeout_s,
                "max_retries": self.retry.max_retries, "headers": sorted(self.headers),
                "prices": self.prices.model_dump() if self.prices is not None else None,
                **({"cutoff": self.cutoff.isoformat()} if self.cutoff is not None else {})}


def split_spec(spec: str) -> tuple[str, str]:
    """`provider/model` -> (provider, model); a spec without a slash is an error."""
    provider, sep, model = spec.partition("/")
    if not sep or not provider or not model:
        raise ModelConfigError(f"model spec {spec!r} is not PROVIDER/MODEL and is not an alias in the models file")
    return provider, model


def load_entries(path: Path) -> dict[str, ModelEntry]:
    """The `[models.*]` entries of a TOML or JSON config file; an absent file has none."""
    if not path.exists():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
        raw: Any = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
        models = raw.get("models", {}) if isinstance(raw, dict) else None
        if not isinstance(models, dict):
            raise ModelConfigError(f"{path}: expected a 'models' table of entries")
    except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
        raise ModelConfigError(f"models file {path}: {exc}") from exc
    entries: dict[str, ModelEntry] = {}
    for name, entry in models.items():
        try:
            entries[name] = ModelEntry.model_validate(entry)
        except ValidationError as exc:  # the entry and the field, as the file spells them
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error["loc"])
            key = name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)
            message = str(error["msg"]).removeprefix("Value error, ")
            raise ModelConfigError(f"models file {path}, [models.{key}]{' ' + where if where else ''}: "
                                   f"{message}") from None
    return entries


def normalize_base_url(url: str) -> str:
    """`http://host:8000` -> `http://host:8000/v1` (OpenAI-compatible servers serve under /v1)."""
    url = checked_url(url)
    return url if urlsplit(url).path not in ("", "/") else f"{url}/v1"


def checked_url(url: str, what: str = "base URL") -> str:
    """`url` without a trailing slash. A URL no request can go to is refused here, in one line naming `what` gave
    it, rather than retried as a failed connection."""
    url = url.rstrip("/")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- reading it checks it: a port that is not a number raises
    except ValueError as exc:
        raise ModelConfigError(f"{what} {url!r} is not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ModelConfigError(f"{what} {url!r} is not an http(s) URL")
    return url


def resolve_options(spec: str, *, settings: Settings | None = None, config_file: Path | None = None,
                    base_url: str | None = None, api_key: str | None = None, api_key_env: str | None = None,
                    concurrency: int | None = None, requests_per_minute: float | None = None,
                    tokens_per_minute: float | None = None, timeout_s: float | None = None,
                    max_retries: int | None = None, retry: RetryPolicy | None = None,
                    run_timeout_s: float | None = None, cache: bool | str | Path | ResponseCache = True,
                    prices: Prices | None = None, server_args: list[str] | None = None,
                    headers: dict[str, str] | None = None) -> ClientOptions:
    """Arguments win over the config file entry, which wins over the settings."""
    settings = settings or Settings()
    entries = load_entries(config_file or settings.models_file)
    entry = entries.get(spec, ModelEntry())
    full_spec = entry.spec or spec
    provider, model = split_spec(full_spec)
    key_env = api_key_env or entry.api_key_env
    key = api_key
    source = "the api_key given" if api_key is not None else None
    if key is None and key_env is not None:
        source = (f"{key_env} (--api-key-env or api_key_env=)" if api_key_env else
                  f"{key_env} (api_key_env of [models.\"{spec}\"] in {config_file or settings.models_file})")
    if key is None and key_env is not None:
        key = settings.env_value(key_env)
        if key is None:
            raise ModelConfigError(f"{full_spec}: the API key variable {key_env} is not set")
    if prices is None and entry.price_in is not None and entry.price_out is not None:
        prices = Prices(input_per_mtok=entry.price_in, output_per_mtok=entry.price_out)
    url = base_url or entry.base_url
    policy = retry or RetryPolicy(max_retries=max_retries if max_retries is not None
                                  else entry.max_retries if entry.max_retries is not None
                                  else settings.model_max_retries)
    return ClientOptions(
        spec=full_spec, provider=provider, model=model,
        base_url=normalize_base_url(url) if url else None,
        api_key=SecretStr(key) if key is not None else None, api_key_env=key_env, api_key_source=source,
        limits=Limits(concurrency=concurrency or entry.concurrency or settings.model_concurrency,
                      requests_per_minute=requests_per_minute or entry.requests_per_minute,
                      tokens_per_minute=tokens_per_minute or entry.tokens_per_minute),
        retry=policy, timeout_s=timeout_s or entry.timeout_s or settings.model_timeout_s,
        run_timeout_s=run_timeout_s, cache=_cache(cache, settings), prices=prices,
        server_args=[*entry.server_args, *(server_args or [])], headers={**entry.headers, **(headers or {})},
        cutoff=entry.cutoff, settings=settings,
    )


def _cache(cache: bool | str | Path | ResponseCache, settings: Settings) -> ResponseCache | None:
    if isinstance(cache, ResponseCache):
        return cache
    if cache is False:
        return None
    return ResponseCache(settings.response_cache if cache is True else Path(cache))
