"""One async interface to the tools wherever they run: in process, over HTTP, over MCP.

An agent loop takes a `ToolBox` and does not care which:

    async with HttpTools("http://127.0.0.1:8765", token=...) as tools:   # or LocalTools(host), McpTools(...)
        specs = await tools.specs()                                         # list[ToolSpec] for the model
        result = await tools.call("facts_as_of", '{"date": "2016-06-01"}')  # ToolResult; failures as data

A refused query, a limit or bad arguments come back as `ToolResult(ok=False)` on every
transport; only a transport failure (server down, bad token) raises `ToolTransportError`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from contextlib import AsyncExitStack
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from chronokg.errors import ChronoKGError
from chronokg.models.types import ToolSpec
from chronokg.serve.tools import ToolFailure, ToolResult

if TYPE_CHECKING:
    from chronokg.serve.host import ToolHost

Arguments = Mapping[str, Any] | str | None


class ToolTransportError(ChronoKGError):
    """The tools could not be reached (connection, authentication, rate limit, a malformed answer)."""


class ToolBox(Protocol):
    async def specs(self) -> list[ToolSpec]: ...

    async def call(self, name: str, arguments: Arguments = None) -> ToolResult: ...

    async def aclose(self) -> None: ...


class _Closing:
    async def aclose(self) -> None:
        return None

    async def __aenter__(self) -> _Closing:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


class LocalTools(_Closing):
    """The tools of a `ToolHost` in this process."""

    def __init__(self, host: ToolHost) -> None:
        self.host = host

    async def specs(self) -> list[ToolSpec]:
        return self.host.tool_specs()

    async def call(self, name: str, arguments: Arguments = None) -> ToolResult:
        return await self.host.acall_tool(name, arguments)


def _arguments(arguments: Arguments) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return arguments  # sent as it is; the server says why it is not valid
    return dict(arguments or {})


class HttpTools(_Closing):
    """The tools of `chronokg serve http` at `base_url`; a 429 is retried after the server's Retry-After."""

    def __init__(self, base_url: str, *, token: str | None = None, timeout_s: float = 120.0,
                 rate_limit_retries: int = 5) -> None:
        import httpx

        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.AsyncClient(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout_s)
        self._retries = rate_limit_retries

    async def specs(self) -> list[ToolSpec]:
        response = await self._get("/tools")  # OpenAI-shaped: {"type": "function", "function": {...}}
        return [ToolSpec.model_validate(s.get("function", s) if isinstance(s, dict) else s) for s in response]

    async def call(self, name: str, arguments: Arguments = None) -> ToolResult:
        import httpx

        body = _arguments(arguments)
        content = (body if isinstance(body, str) else json.dumps(body)).encode()
        for attempt in range(self._retries + 1):
            try:
                response = await self._client.post(f"/tools/{name}", content=content,
                                                   headers={"content-type": "application/json"})
            except httpx.HTTPError as exc:
                raise ToolTransportError(f"tool server {self._client.base_url}: {exc}") from exc
            if response.status_code != 429 or attempt == self._retries:
                break
            await asyncio.sleep(_retry_after(response))  # the server's rate limit: wait as it asks
        payload = _json(response)
        if response.status_code == 200:
            return ToolResult.model_validate(payload)
        error = payload.get("error") if isinstance(payload, dict) else None
        if response.status_code in {401, 413, 429} or not isinstance(error, dict):
            raise ToolTransportError(f"tool server {self._client.base_url}: HTTP {response.status_code}: "
                                     f"{(error or {}).get('message', response.text[:200])}")
        return ToolResult(tool=name, ok=False, error=ToolFailure.model_validate(error))

    async def _get(self, path: str) -> Any:
        import httpx

        try:
            response = await self._client.get(path)
        except httpx.HTTPError as exc:
            raise ToolTransportError(f"tool server {self._client.base_url}: {exc}") from exc
        if response.status_code != 200:
            raise ToolTransportError(f"tool server {self._client.base_url}{path}: HTTP {response.status_code}")
        return _json(response)

    async def aclose(self) -> None:
        await self._client.aclose()


def _retry_after(response: Any) -> float:
    try:
        return min(60.0, max(0.05, float(response.headers.get("retry-after", "1"))))
    except ValueError:
        return 1.0


def _json(response: Any) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise ToolTransportError(f"tool server answered HTTP {response.status_code} without JSON") from exc


class McpTools(_Closing):
    """The tools of `chronokg serve mcp`: a URL (streamable HTTP) or a command line to start (stdio).

    Use as `async with McpTools(...) as tools:` (the MCP session lives inside it).
    """

    def __init__(self, target: str | list[str], *, token: str | None = None, env: dict[str, str] | None = None,
                 timeout_s: float = 120.0) -> None:
        self._target = target
        self._token = token
        self._env = env
        self._timeout = timeout_s
        self._stack: AsyncExitStack | None = None
        self._client: Any = None

    async def __aenter__(self) -> McpTools:
        from mcp import Client, StdioServerParameters

        stack = AsyncExitStack()
        try:
            server: Any
            if isinstance(self._target, str):
                import httpx2
                from mcp.client.streamable_http import streamable_http_client

                headers = {"Authorization": f"Bearer {self._token}"} if self._token else {}
                http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers,
                                                                          timeout=self._timeout))
                server = streamable_http_client(self._target, http_client=http)
            else:
                server = StdioServerParameters(command=self._target[0], args=self._target[1:], env=self._env)
            self._client = await stack.enter_async_context(Client(server, read_timeout_seconds=self._timeout))
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def specs(self) -> list[ToolSpec]:
        listed = await self._session().list_tools()
        return [ToolSpec(name=t.name, description=t.description or "", parameters=t.input_schema)
                for t in listed.tools]

    async def call(self, name: str, arguments: Arguments = None) -> ToolResult:
        from mcp import MCPError

        body = _arguments(arguments)
        if isinstance(body, str) or not isinstance(body, dict):
            return ToolResult(tool=name, ok=False, error=ToolFailure(type="invalid_arguments", message=(
                f"{name}: the arguments must be a JSON object")))
        try:
            result = await self._session().call_tool(name, body)
        except MCPError as exc:
            if exc.message.startswith("no tool"):  # the one error our server raises itself
                return ToolResult(tool=name, ok=False, error=ToolFailure(type="unknown_tool", message=exc.message))
            # anything else came from the transport (a 429 from the rate limit, a 401, a 5xx): not an answer
            raise ToolTransportError(f"MCP tool server: {exc.message}") from exc
        text = "".join(getattr(block, "text", "") for block in result.content)
        if isinstance(result.structured_content, dict):  # the envelope; the rows are in the text, once
            try:
                rows = json.loads(text).get("rows", []) if not result.is_error else []
            except (ValueError, AttributeError):
                rows = None
            if isinstance(rows, list):
                return ToolResult.model_validate({**result.structured_content, "rows": rows})
        return ToolResult(tool=name, ok=False, error=ToolFailure(type="internal", message=text[:2000]))

    def _session(self) -> Any:
        if self._client is None:
            raise ToolTransportError("McpTools is used outside `async with`")
        return self._client

    async def aclose(self) -> None:
        if self._stack is not None:
            stack, self._stack, self._client = self._stack, None, None
            await stack.aclose()
