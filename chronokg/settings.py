"""The one place chronokg reads the environment.

Every other module receives a `Settings` instance (or values taken from one);
nothing else looks at `os.environ`.
"""

from __future__ import annotations

from pathlib import Path

from platformdirs import user_data_dir
from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_store_uri() -> str:
    """The embedded store under the user's data directory."""
    return f"kglite://{Path(user_data_dir('chronokg')) / 'store.kgl'}"


class Settings(BaseSettings):
    """Runtime settings, read from `CHRONOKG_*` environment variables."""

    model_config = SettingsConfigDict(env_prefix="CHRONOKG_", extra="ignore")

    store: str = Field(default_factory=default_store_uri, description="Store URI: kglite:///path or neo4j://host:port")
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
    lock_timeout: float = Field(
        default=30.0, ge=0, description="Seconds a writer waits for another writer of the same embedded store"
    )
