"""The explorer's HTTP routes, mounted on the tool server's app: the page at `/`, its reads under `/explore/api`.

The page itself holds no data, so `/` is open like `/docs`; every read is behind the gate
(a bearer token, when the server has any, goes in the page's address as `#token=...` and
the page sends it). Answers come from a read-only store opened once, so they are kept
(a bounded cache): the trajectory list is read once per server, not once per visitor.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from chronokg.errors import ChronoKGError
from chronokg.serve.explorer import page, page_policy, quality, readable, run_report_rows, verify
from chronokg.serve.host import ToolHost
from chronokg.serve.tools import ToolError, ToolResult

OPEN_PATHS = ("/",)
CACHE_ENTRIES = 512


class _Failed(Exception):
    def __init__(self, result: ToolResult) -> None:
        self.result = result


def mount(app: FastAPI, host: ToolHost, respond: Callable[[ToolResult], JSONResponse],
          run_report: str | None = None) -> None:
    """Add `GET /` (the page) and `GET /explore/api/{query}` to `app`; errors answer as the tools' do.
    `run_report` (HTML elements, built by the CLI from `--runs` folders) is what `run-report` answers."""
    allowed = set(readable())
    cache: OrderedDict[str, ToolResult] = OrderedDict()
    lock = threading.Lock()

    def result(name: str, params: Mapping[str, Any]) -> ToolResult:
        key = json.dumps([name, params], sort_keys=True, default=str)
        with lock:
            if key in cache:
                cache.move_to_end(key)
                return cache[key]
        got = host.call_query(name, params)
        if got.error is not None:
            raise _Failed(got)
        with lock:
            cache[key] = got
            if len(cache) > CACHE_ENTRIES:
                cache.popitem(last=False)
        return got

    def call(name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        return result(name, params).rows

    def answer(name: str, params: dict[str, Any]) -> dict[str, Any]:
        if name == "quality":
            return {"rows": quality(call)}
        if name == "run-report":
            if params:
                raise ToolError("invalid_arguments", "run-report takes no parameters")
            return {"rows": run_report_rows(run_report)}
        if name == "verify":
            if set(params) != {"question"}:
                raise ToolError("invalid_arguments", "verify: give exactly one parameter, question")
            return {"rows": verify(call, str(params["question"]))}
        got = result(name, params)
        return {"rows": got.rows, "truncated": got.truncated, "total_rows": got.total_rows}

    bodies: OrderedDict[str, bytes] = OrderedDict()  # encoded answers: a long list is encoded once, not per visit

    def run(name: str, params: dict[str, Any]) -> Response:
        key = json.dumps([name, params], sort_keys=True, default=str)
        with lock:
            if key in bodies:
                bodies.move_to_end(key)
                return Response(bodies[key], media_type="application/json")
        response = answered(name, params)
        if response.status_code == 200:
            with lock:
                bodies[key] = bytes(response.body)
                if len(bodies) > CACHE_ENTRIES:
                    bodies.popitem(last=False)
        return response

    def answered(name: str, params: dict[str, Any]) -> JSONResponse:
        if name not in allowed:
            return respond(ToolResult.failed(name, ToolError(
                "unknown_tool", f"the explorer reads no query {name!r} (it reads: {', '.join(sorted(allowed))})")))
        try:
            body = answer(name, params)
        except _Failed as exc:
            return respond(exc.result)
        except ToolError as exc:
            return respond(ToolResult.failed(name, exc))
        except ChronoKGError as exc:
            return respond(ToolResult.failed(name, ToolError("query_failed", str(exc))))
        return JSONResponse(body)

    def warm() -> None:  # the first view's read, done before the first visitor asks for it
        run("trajectory-list", {})  # a failure is not kept: the page will ask again and show why

    threading.Thread(target=warm, name="explorer-warm", daemon=True).start()

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def explorer_page() -> HTMLResponse:
        return HTMLResponse(page({"mode": "live"}), headers={"content-security-policy": page_policy()})

    @app.get("/explore/api/{name}", tags=["explorer"], summary="A catalog query the explorer reads",
             description="Query-string parameters are the query's parameters; the answer is `{rows}`.")
    async def explorer_query(name: str, request: Request) -> Response:
        import anyio.to_thread

        params = {k: v for k, v in request.query_params.items() if v != ""}
        return await anyio.to_thread.run_sync(run, name, params)
