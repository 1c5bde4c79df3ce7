"""`chronokg serve mcp`: the same tools over the Model Context Protocol (the official `mcp` SDK, 2.x).

stdio for a client that starts the server itself (one client, calls one at a time in
process; every request read before end of input is answered, an unreadable line gets -32700:
`mcp_stdio.py`), streamable HTTP for a shared server (forked read workers, behind the same
gate as the HTTP server). A call's answer is its rows as JSON text, sent once (the
`structuredContent` beside it is the envelope without the rows: `ToolResult.envelope`), at most
`tools.MAX_ANSWER_BYTES` of them, the rest by `offset`. A failed call is a tool result with `isError` and the error
as JSON text, so the model can read why and try again; an unknown tool is a protocol
error, as the MCP specification asks.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError

from chronokg.serve.fair import CALLER
from chronokg.serve.gate import SCOPE_CALLER, ASGIApp, Gate
from chronokg.serve.host import ToolHost
from chronokg.serve.hosts import HostPolicy
from chronokg.serve.mcp_stdio import draining_stdio

INSTRUCTIONS = (
    "Read-only tools over a bitemporal fact graph: what was true on a date (facts_as_of), a subject's history "
    "(timeline), what guidelines recommended on a date (recommended_on), what changed between two dates "
    "(changed_between), a guideline's supersession chain (trajectory), your own read-only Cypher (cypher) and, "
    "where an index exists, time-aware passage search (search). Dates are YYYY-MM-DD (or a bare year, YYYY). "
    "An answer holds at most 512 KiB of rows: when it says truncated with a next_offset, call again with that "
    "offset for the next rows."
)


def build_server(host: ToolHost) -> Server[Any]:
    """An MCP server whose tools are `host`'s (listed from the same declarations as the HTTP endpoints)."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.schema(),
                       annotations=types.ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                                         idempotent_hint=True, open_world_hint=False))
            for t in host.tools()
        ])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        caller = mcp_caller(ctx)
        if caller is not None:
            CALLER.set(caller)
        result = await host.acall_tool(params.name, params.arguments or {})
        if result.error is not None and result.error.type == "unknown_tool":
            raise MCPError(types.INVALID_PARAMS, result.error.message)
        # the rows once, in the text every client gives its model; beside it the envelope without them
        return types.CallToolResult(content=[types.TextContent(text=result.content())],
                                    structured_content=result.envelope(), is_error=not result.ok)

    return Server("chronokg", version="1", instructions=INSTRUCTIONS, on_list_tools=list_tools,
                  on_call_tool=call_tool)


def mcp_caller(ctx: Any) -> str | None:
    """Whom an MCP tool call counts against in the read workers' fair share.

    Over streamable HTTP: the key the gate gave the HTTP request that carried the call (its token and its MCP
    session id, else its client id header or peer address: `gate.caller_key`); the handler may run in the
    session's own task, outside that request's context, so the key is read from the request's scope. Otherwise
    (stdio, in process): the client's connection. Not the request's `ctx.session`: the SDK makes one per request,
    so keying by it made every call a caller of its own (measured: benchmarks/README.md).
    """
    scope = getattr(getattr(ctx, "request", None), "scope", None)
    if isinstance(scope, dict) and isinstance(scope.get(SCOPE_CALLER), str):
        return str(scope[SCOPE_CALLER])
    session = getattr(ctx, "session", None)
    if session is None:
        return None
    return f"mcp:{id(getattr(session, '_connection', session)):x}"


async def run_stdio(host: ToolHost) -> None:
    """Serve one client over this process's stdin and stdout until it closes them, answering every request read
    before that (`mcp_stdio`)."""
    server = build_server(host)
    async with draining_stdio() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def streamable_http_app(host: ToolHost, *, bind: str, hosts: HostPolicy, tokens: list[str] | None = None,
                        rate: float = 20.0, burst: int = 40, max_body_bytes: int = 1 << 20,
                        path: str = "/mcp") -> ASGIApp:
    """The streamable-HTTP MCP app at `path`, behind the gate, which answers only to the names `hosts` allows
    (`Host` and `Origin`, the same check as `serve http`'s); the SDK's own check, which took any port of a
    loopback name, is off."""
    server = build_server(host)
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(streamable_http_path=path, host=bind, transport_security=security,
                                     max_request_body_size=max_body_bytes)
    return Gate(app, tokens=tokens or [], rate=rate, burst=burst, max_body_bytes=max_body_bytes, hosts=hosts)
