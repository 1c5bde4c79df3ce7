"""`chronokg models check|list` and `chronokg cache stats|clear`.

chronokg.models is imported inside the commands, so `import chronokg.cli` loads no HTTP client.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import BaseModel

from chronokg.cli.common import FormatOpt, console, guarded
from chronokg.cli.render import Format, emit, json_text, say, table, text

if TYPE_CHECKING:
    from chronokg.settings import Settings


def _settings() -> Settings:
    from chronokg.settings import Settings  # pydantic-settings: only when a command runs

    return Settings()

CacheOpt = Annotated[Path | None, typer.Option(
    "--cache", help="Response cache file [default: $CHRONOKG_RESPONSE_CACHE, else under the user cache dir]")]


class ProviderRow(BaseModel):
    name: str
    spec: str


def register(app: typer.Typer) -> None:
    """Add the `models` and `cache` groups to the root app."""
    models_app = typer.Typer(help="Model clients: check a server, list providers and aliases.", no_args_is_help=True)
    cache_app = typer.Typer(help="The model response cache.", no_args_is_help=True)
    app.add_typer(models_app, name="models")
    app.add_typer(cache_app, name="cache")
    models_app.command("check")(check)
    models_app.command("list")(list_models)
    cache_app.command("stats")(cache_stats)
    cache_app.command("clear")(cache_clear)


def check(
    spec: Annotated[str, typer.Argument(help="PROVIDER/MODEL (openai/…, openai-compat/…, vllm/…) or an alias")],
    base_url: Annotated[str | None, typer.Option(help="The server's OpenAI base URL, e.g. http://host:8000/v1")] = None,
    api_key_env: Annotated[str | None, typer.Option(help="Environment variable holding the API key")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds per request")] = 60.0,
    fmt: FormatOpt = Format.table,
) -> None:
    """Send one short request per feature; print the server's model name, latency and what works there."""
    from chronokg.models import get_model
    from chronokg.models.check import check_model

    async def run() -> None:
        client = get_model(spec, base_url=base_url, api_key_env=api_key_env, timeout_s=timeout, cache=False,
                           max_retries=2)
        try:
            result = await check_model(client)
        finally:
            await client.aclose()
        if fmt is Format.json:
            print(json_text(result.model_dump(mode="json")))
            return
        rows: list[list[Any]] = [["server model", result.server_model or "—", "as the server reports it"],
                                 ["latency", f"{result.latency_s * 1000:.0f} ms", "one short chat request"]]
        rows += [[f.feature, text("yes", "green") if f.works else text("no", "red"), f.detail]
                 for f in result.features]
        table(console, ["check", "result", "detail"], rows, title=result.spec)

    import asyncio

    guarded(lambda: asyncio.run(run()))


def list_models(fmt: FormatOpt = Format.table) -> None:
    """Registered providers (spec prefixes) and the aliases in the models file."""
    from chronokg.models import CLIENTS, known_models

    def body() -> None:
        rows = [ProviderRow(name=name, spec=f"{name}/<model>") for name in CLIENTS.names()]
        rows += [ProviderRow(name=alias, spec=spec) for alias, spec in known_models().items()]
        emit(console, rows, fmt, title=f"providers and aliases ({_settings().models_file})")
    guarded(body)


class CacheRow(BaseModel):
    spec: str
    entries: int
    oldest: str
    newest: str


def cache_stats(cache: CacheOpt = None, fmt: FormatOpt = Format.table) -> None:
    """Cached samples per model, and the cache's size on disk."""
    from chronokg.models import ResponseCache

    def body() -> None:
        store = ResponseCache(cache or _settings().response_cache)
        try:
            rows = [CacheRow(spec=s.spec, entries=s.entries, oldest=_when(s.oldest), newest=_when(s.newest))
                    for s in store.stats()]
            size = store.size_bytes()
        finally:
            store.close()
        emit(console, rows, fmt, title=f"{store.path} ({size / 1e6:.1f} MB)")
    guarded(body)


def cache_clear(
    model: Annotated[str | None, typer.Option("--model", help="Only this spec's entries")] = None,
    cache: CacheOpt = None,
) -> None:
    """Delete cached responses (all, or one model's)."""
    from chronokg.models import ResponseCache

    def body() -> None:
        store = ResponseCache(cache or _settings().response_cache)
        try:
            deleted = store.clear(model)
        finally:
            store.close()
        of = f" of {model}" if model else ""
        say(console, ("deleted", "green"), f" {deleted} cached samples{of} from {store.path}")
    guarded(body)


def _when(stamp: float) -> str:
    return dt.datetime.fromtimestamp(stamp).isoformat(sep=" ", timespec="seconds")
