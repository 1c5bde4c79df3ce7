"""`chronokg serve http`: every tool as `POST /tools/NAME` (FastAPI), behind the gate.

The request body is the tool's arguments (a JSON object, described in the OpenAPI page
by the tool's own schema); the answer is a `ToolResult`. A call that fails is a 4xx
with `{"error": {"type", "message"}}` naming why: a refused query is 403, a query
stopped by a limit 422, invalid arguments 422, an unknown tool 404, a query the engine
cannot run 400, a busy or broken read worker 503. Validation happens in one place
(`Tool.validate`), so the messages match the in-process and MCP calls.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException

from chronokg.serve import csp
from chronokg.serve.explorer import routes as explorer
from chronokg.serve.gate import ASGIApp, Gate
from chronokg.serve.host import ToolHost
from chronokg.serve.hosts import HostPolicy
from chronokg.serve.tools import ErrorType, Tool, ToolFailure, ToolResult

STATUS: dict[ErrorType, int] = {
    "unknown_tool": 404, "invalid_arguments": 422, "refused": 403, "limit_exceeded": 422, "query_failed": 400,
    "unavailable": 503, "internal": 500,
}
HTTP_ERRORS = {404: "not_found", 405: "method_not_allowed"}  # FastAPI's own refusals, in our shape
OPEN_PATHS = ("/health", "/docs", "/openapi.json")
SWAGGER = "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/"  # where FastAPI's OpenAPI page loads its viewer from


class ErrorBody(BaseModel):
    """The body of every 4xx/5xx answer."""

    error: ToolFailure


class Health(BaseModel):
    status: str
    engine: str
    tools: list[str]
    search: str
    workers: int | None = None
    workers_alive: int | None = None
    worker_restarts: int | None = None
    reads_outgrown: int | None = None  # reads that ran past their first slice (their caller counts as heavy)
    reads_preempted: int | None = None  # of those, reads stopped and queued again in the heavy lane


def result_response(result: ToolResult) -> JSONResponse:
    if result.error is None:
        return JSONResponse(result.model_dump(mode="json"))
    return JSONResponse({"error": result.error.model_dump()}, status_code=STATUS[result.error.type])


def create_app(host: ToolHost, *, hosts: HostPolicy, tokens: list[str] | None = None, rate: float = 20.0,
               burst: int = 40, max_body_bytes: int = 1 << 20, run_report: str | None = None) -> ASGIApp:
    """The FastAPI app for `host`, wrapped in the gate (the names it answers to, tokens, rate limit, body size);
    `run_report` is the report of the run folders given to `serve http --runs` (HTML elements), which the explorer
    shows."""
    app = FastAPI(
        docs_url=None, redoc_url=None,  # the OpenAPI page below, under its own policy
        title="chronokg tools", version="1",
        description="Read-only tools over a bitemporal fact graph, for agents: the named queries, guarded Cypher "
                    "and (where an index exists) time-aware passage search. The same tools are offered over MCP "
                    "(`chronokg serve mcp`) and in process (`chronokg.serve.ToolHost`).",
    )
    app.add_exception_handler(HTTPException, _http_error)
    errors: dict[int | str, dict[str, Any]] = {code: {"model": ErrorBody} for code in (400, 401, 403, 404, 413,
                                                                                      422, 429, 503)}

    @app.get("/health", response_model=Health, tags=["server"])
    async def health() -> Health:  # async: never waits behind tool calls for a thread
        pool = host.workers
        return Health(status="ok" if pool is None or pool.alive() == pool.size else "degraded",
                      engine=host.store.engine, tools=[t.name for t in host.tools()], search=host.search_note,
                      workers=pool.size if pool else None, workers_alive=pool.alive() if pool else None,
                      worker_restarts=pool.restarts if pool else None,
                      reads_outgrown=pool.scheduler.outgrown if pool else None,
                      reads_preempted=pool.scheduler.preempted if pool else None)

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        """FastAPI's OpenAPI page: its viewer from the CDN, its one inline script by hash."""
        page = get_swagger_ui_html(openapi_url="/openapi.json", title="chronokg tools",
                                   swagger_js_url=SWAGGER + "swagger-ui-bundle.js",
                                   swagger_css_url=SWAGGER + "swagger-ui.css", swagger_favicon_url="data:,")
        text = bytes(page.body).decode()
        return HTMLResponse(text, headers={"content-security-policy": csp.for_page(
            text, scripts=[SWAGGER], styles=[SWAGGER], images=["data:", "'self'"])})

    @app.get("/tools", tags=["server"])
    async def list_tools() -> list[dict[str, Any]]:
        """Every tool as an OpenAI tool-calling declaration, as the OpenAI API takes it in `tools`:
        `{"type": "function", "function": {name, description, parameters}}`."""
        return [{"type": "function", "function": s.model_dump(mode="json")} for s in host.tool_specs()]

    for tool in host.tools():
        _add_tool_route(app, host, tool, errors)

    @app.post("/tools/{name}", include_in_schema=False)
    async def unknown_tool(name: str) -> JSONResponse:
        return result_response(await host.acall_tool(name, {}))  # names the tools there are

    explorer.mount(app, host, result_response, run_report)  # the explorer page at / (docs/explorer.md)
    return Gate(app, tokens=tokens or [], rate=rate, burst=burst, max_body_bytes=max_body_bytes,
                open_paths=(*OPEN_PATHS, *explorer.OPEN_PATHS), hosts=hosts)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """A path or method FastAPI has no route for, answered `{"error": {...}}` like every other refusal."""
    status = exc.status_code if isinstance(exc, HTTPException) else 400
    message = f"{request.method} {request.url.path}: {exc.detail if isinstance(exc, HTTPException) else exc}"
    return JSONResponse({"error": {"type": HTTP_ERRORS.get(status, "bad_request"), "message": message}},
                        status_code=status, headers=getattr(exc, "headers", None))


def _add_tool_route(app: FastAPI, host: ToolHost, tool: Tool, errors: dict[int | str, dict[str, Any]]) -> None:
    name = tool.name

    async def call(request: Request) -> JSONResponse:
        raw = await request.body()
        try:
            arguments = json.loads(raw) if raw.strip() else {}
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return JSONResponse({"error": {"type": "invalid_arguments", "message": f"{name}: the body is not JSON "
                                           f"({exc})"}}, status_code=422)
        except RecursionError:
            return JSONResponse({"error": {"type": "invalid_arguments", "message": f"{name}: the body is nested "
                                           "too deep"}}, status_code=422)
        return result_response(await host.acall_tool(name, arguments))

    app.add_api_route(
        f"/tools/{name}", call, methods=["POST"], name=name, summary=name, description=tool.description,
        response_model=ToolResult, responses=errors, tags=[tool.kind],
        openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
            "schema": tool.schema()}}}},
    )
