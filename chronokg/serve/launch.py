"""Start a server: tokens, the loopback rule, read workers forked first, then uvicorn on a bound socket."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from chronokg.errors import ChronoKGError, InputError
from chronokg.serve.gate import ASGIApp, is_loopback
from chronokg.serve.host import ToolHost
from chronokg.settings import Settings

MIN_TOKEN = 16  # characters in a bearer token: too long to guess


def load_tokens(settings: Settings, token_file: Path | None) -> list[str]:
    """Tokens from `CHRONOKG_SERVE_TOKENS` (comma-separated) and a file (one a line, # comments); every token
    is one word of at least `MIN_TOKEN` characters, wherever it comes from."""
    tokens: list[str] = []
    if settings.serve_tokens is not None:
        for number, raw in enumerate(settings.serve_tokens.get_secret_value().split(","), 1):
            token = raw.strip()
            if token and (any(c.isspace() for c in token) or len(token) < MIN_TOKEN):
                raise ChronoKGError(f"CHRONOKG_SERVE_TOKENS: token {number} is not one word of at least "
                                    f"{MIN_TOKEN} characters")
            if token:
                tokens.append(token)
    if token_file is not None:
        try:
            lines = token_file.read_text().splitlines()
        except OSError as exc:
            raise InputError(token_file, None, f"cannot read the token file: {exc.strerror}") from None
        for number, line in enumerate(lines, 1):
            token = line.strip()
            if token and not token.startswith("#"):
                if any(c.isspace() for c in token) or len(token) < MIN_TOKEN:
                    raise InputError(token_file, f"line {number}",
                                     f"a token is one word of at least {MIN_TOKEN} characters")
                tokens.append(token)
    return tokens


def check_bind(host: str, tokens: list[str]) -> None:
    """Refuse to serve beyond loopback without bearer tokens."""
    if not is_loopback(host) and not tokens:
        raise ChronoKGError(f"binding {host} makes the tools reachable from other machines: set bearer tokens "
                            "first (CHRONOKG_SERVE_TOKENS or --token-file), or bind 127.0.0.1")


def default_workers() -> int:
    return max(2, min(8, os.cpu_count() or 2))


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise ChronoKGError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def run_uvicorn(app: ASGIApp, sock: socket.socket, *, lifespan: Literal["auto", "on", "off"] = "auto",
                on_ready: Callable[[str], None] | None = None) -> None:
    """Serve `app` on the already bound `sock` until interrupted."""
    import uvicorn

    host, port = sock.getsockname()[:2]
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    # loop="asyncio", not uvicorn's "auto": with uvloop installed (litellm[proxy] brings it) guarded Cypher over
    # MCP streamable HTTP failed with -32603 (tests/test_serve_mcp.py); the servers are tested on asyncio's loop.
    config = uvicorn.Config(app, lifespan=lifespan, log_level="warning", access_log=False, server_header=False,
                            loop="asyncio", limit_concurrency=1024, timeout_keep_alive=30)
    server = uvicorn.Server(config)
    if on_ready is not None:
        on_ready(url)
    server.run(sockets=[sock])


def open_host(settings: Settings, uri: str, *, workers: int, max_rows: int | None,
              timeout_s: float | None) -> ToolHost:
    """The store opened read-only once, with the read limits, and `workers` forked read workers (0: none); the
    search model, where search is served, starts loading in the background."""
    from chronokg.graph.guard import ReadLimits

    limits = ReadLimits.from_settings(settings)
    limits = limits.model_copy(update={k: v for k, v in (("max_rows", max_rows), ("timeout_s", timeout_s))
                                       if v is not None})
    return ToolHost.open(uri, settings, limits=limits, workers=workers, warm_search=True)
