"""`chronokg serve http|mcp`: the agent tools over HTTP (FastAPI) or MCP.

FastAPI, uvicorn and the MCP SDK are imported inside the commands (the `serve` extra),
so `import chronokg.cli` stays light.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from chronokg.cli.common import err, guarded, state
from chronokg.cli.explore import RunsOpt, run_report
from chronokg.errors import ChronoKGError
from chronokg.settings import Settings

HostOpt = Annotated[str, typer.Option("--host", help="Address to listen on; beyond loopback, bearer tokens are "
                                                     "required")]
WorkersOpt = Annotated[int | None, typer.Option(
    "--workers", min=0, help="Forked read workers (embedded engine): reads that run at once [default: CPUs, 2-8]")]
RateOpt = Annotated[float, typer.Option("--rate", min=0, help="Requests a second per token (0: no limit); "
                                                              "without tokens, for all callers together")]
BurstOpt = Annotated[int, typer.Option("--burst", min=1, help="Requests a token may send at once before --rate "
                                                              "applies")]
BodyOpt = Annotated[int, typer.Option("--max-body-kb", min=1, help="Largest request body")]
TokenFileOpt = Annotated[Path | None, typer.Option("--token-file", help="Bearer tokens, one a line (added to "
                                                                        "$CHRONOKG_SERVE_TOKENS)")]
RowsOpt = Annotated[int | None, typer.Option("--max-rows", min=1, help="Rows a tool returns at most [default: "
                                                                       "$CHRONOKG_READ_MAX_ROWS or 10000]")]
AllowedHostOpt = Annotated[list[str] | None, typer.Option(
    "--allowed-host", help="Also answer requests naming this host (NAME, or NAME:PORT for that port only), e.g. a "
                           "proxy's or the machine's name; others than the bound address and localhost are 421 "
                           "(repeat)")]
TimeoutOpt = Annotated[float | None, typer.Option("--timeout", min=0.001, help="Time limit of one read in seconds "
                                                                               "[default: $CHRONOKG_READ_TIMEOUT_S "
                                                                               "or 10]")]


class Transport(StrEnum):
    stdio = "stdio"
    http = "http"


def register(app: typer.Typer) -> None:
    serve_app = typer.Typer(help="Serve the read-only agent tools (queries, guarded Cypher, search) over HTTP or "
                                 "MCP.", no_args_is_help=True)
    app.add_typer(serve_app, name="serve")
    serve_app.command("http")(http)
    serve_app.command("mcp")(mcp)


def _need_extra() -> None:
    """The serve extra's packages are there; found, not imported (importing fastapi and uvicorn is a good part
    of a stdio server's start, and it uses neither)."""
    from importlib.util import find_spec

    missing = [name for name in ("fastapi", "mcp", "uvicorn") if find_spec(name) is None]
    if missing:
        raise ChronoKGError(f"the tool server needs its extra: pip install 'chronokg[serve]' (no module named "
                            f"{', '.join(missing)})")


def _serve_network(host: str, port: int, workers: int | None, token_file: Path | None, max_rows: int | None,
                   timeout: float | None, make_app: Callable[[Any, list[str], Any], Any], banner: Callable[[str,
                   Any, int, list[str]], str], lifespan: Literal["auto", "on", "off"] = "auto",
                   allowed_hosts: list[str] | None = None) -> None:
    """What both network servers do: tokens, the loopback rule, the socket, the names it answers to, the read
    workers, the banner."""
    _need_extra()
    from chronokg.serve.hosts import HostPolicy
    from chronokg.serve.launch import bind, check_bind, default_workers, load_tokens, open_host, run_uvicorn

    settings = Settings()
    tokens = load_tokens(settings, token_file)
    check_bind(host, tokens)
    try:
        HostPolicy.for_bind(host, port, allowed_hosts or [])  # a bad name stops here, before the port opens
    except ValueError as exc:
        raise ChronoKGError(str(exc)) from None
    sock = bind(host, port)
    hosts = HostPolicy.for_bind(host, sock.getsockname()[1], allowed_hosts or [])  # --port 0: the port it got
    n = default_workers() if workers is None else workers
    with open_host(settings, state.store_uri or settings.store, workers=n, max_rows=max_rows,
                   timeout_s=timeout) as tools:
        run_uvicorn(make_app(tools, tokens, hosts), sock, lifespan=lifespan,
                    on_ready=lambda url: err.print(banner(url, tools, n, tokens), soft_wrap=True))


def _auth(tokens: list[str]) -> str:
    return "bearer tokens" if tokens else "no auth: loopback only"


def http(
    host: HostOpt = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: any free one)")] = 8765,
    workers: WorkersOpt = None,
    rate: RateOpt = 20.0,
    burst: BurstOpt = 40,
    max_body_kb: BodyOpt = 1024,
    token_file: TokenFileOpt = None,
    max_rows: RowsOpt = None,
    timeout: TimeoutOpt = None,
    runs: RunsOpt = None,
    allowed_host: AllowedHostOpt = None,
) -> None:
    """Every tool as POST /tools/NAME, GET /tools (OpenAI schemas), /health and the OpenAPI page (/docs); the
    explorer at / (docs/explorer.md)."""
    def body() -> None:
        from chronokg.cli.progress import LineProgress

        report = None
        if runs:  # built before the port opens (a bad folder stops here, in one line), its steps said on stderr
            with LineProgress(err) as steps:
                report = run_report(runs, steps)

        def make_app(tools: Any, tokens: list[str], hosts: Any) -> Any:
            from chronokg.serve.http import create_app

            return create_app(tools, hosts=hosts, tokens=tokens, rate=rate, burst=burst,
                              max_body_bytes=max_body_kb * 1024, run_report=report)

        _serve_network(host, port, workers, token_file, max_rows, timeout, make_app, lambda url, tools, n, tokens:
                       f"chronokg tools: serving {url} ({len(tools.tools())} tools, {n} read workers, "
                       f"{_auth(tokens)}); the explorer at {url}/, the API docs at {url}/docs",
                       allowed_hosts=allowed_host)
    guarded(body)


def mcp(
    transport: Annotated[Transport, typer.Option(help="stdio (a client starts this command) or streamable http")]
    = Transport.stdio,
    host: HostOpt = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port for --transport http (0: any free one)")] = 8766,
    workers: WorkersOpt = None,
    rate: RateOpt = 20.0,
    burst: BurstOpt = 40,
    max_body_kb: BodyOpt = 1024,
    token_file: TokenFileOpt = None,
    max_rows: RowsOpt = None,
    timeout: TimeoutOpt = None,
    allowed_host: AllowedHostOpt = None,
) -> None:
    """The tools over MCP: stdio (default) or streamable HTTP at /mcp."""
    def stdio() -> None:
        _need_extra()
        import anyio

        from chronokg.serve.launch import open_host
        from chronokg.serve.mcp_server import run_stdio

        settings = Settings()
        # one client, one call at a time: no workers needed (calls are serialised in process)
        with open_host(settings, state.store_uri or settings.store, workers=workers or 0, max_rows=max_rows,
                       timeout_s=timeout) as tools:
            anyio.run(run_stdio, tools)

    def make_app(tools: Any, tokens: list[str], hosts: Any) -> Any:
        from chronokg.serve.mcp_server import streamable_http_app

        return streamable_http_app(tools, bind=host, hosts=hosts, tokens=tokens, rate=rate, burst=burst,
                                   max_body_bytes=max_body_kb * 1024)

    if transport is Transport.stdio:
        guarded(stdio)
        return
    guarded(lambda: _serve_network(host, port, workers, token_file, max_rows, timeout, make_app, lambda url, tools, n,
                                   tokens: f"chronokg tools: MCP at {url}/mcp ({len(tools.tools())} tools, {n} read "
                                           f"workers, {_auth(tokens)})", lifespan="on",
                                   allowed_hosts=allowed_host))
