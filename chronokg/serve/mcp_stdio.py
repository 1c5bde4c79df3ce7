"""MCP over stdio that answers every request it read, and every line it could not read.

The SDK's `stdio_server` closes the server's read stream at end of input, and its dispatcher then cancels the
handlers still running: a client that writes its requests and closes stdin at once (a pipe, a script, a test)
lost the answers to the last ones. A line that is not JSON (or nested past the parser's depth limit) reached the
dispatcher as an exception, which it only logs: the client got no answer at all.

This wraps the SDK's transport (kept for its guard of fd 0/1 against stray output) between the wire and the
server: requests are counted in as read and out as answered, end of input waits until every one is answered
(or cancelled by the client, or `DRAIN_S` passed) before the server sees it, and an unreadable line is answered
on the spot with JSON-RPC's -32700 Parse error (-32600 Invalid Request for JSON that is no JSON-RPC message), id
null, the server serving on.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

DRAIN_S = 300.0  # longest wait at end of input for handlers still running (the read workers' own limits are shorter)

RequestId = int | str


class InFlight:
    """The requests read and not yet answered; `idle` is set while there are none."""

    def __init__(self) -> None:
        self.pending: set[RequestId] = set()
        self.idle = anyio.Event()
        self.idle.set()

    def received(self, request_id: RequestId) -> None:
        if not self.pending:
            self.idle = anyio.Event()
        self.pending.add(request_id)

    def settled(self, request_id: Any) -> None:
        self.pending.discard(request_id)
        if not self.pending:
            self.idle.set()


def unreadable(exc: Exception) -> types.JSONRPCError:
    """The answer to a line the transport could not read as a JSON-RPC message (id null: none could be read)."""
    parse = isinstance(exc, ValidationError) and any(e.get("type") == "json_invalid" for e in exc.errors())
    if parse or not isinstance(exc, ValidationError):
        error = types.ErrorData(code=types.PARSE_ERROR, message="Parse error: the line is not valid JSON")
    else:
        error = types.ErrorData(code=types.INVALID_REQUEST, message="Invalid Request: not a JSON-RPC 2.0 message")
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=error)


async def _inbound(wire: MemoryObjectReceiveStream[SessionMessage | Exception] | Any,
                   to_server: MemoryObjectSendStream[SessionMessage | Exception],
                   reply: MemoryObjectSendStream[SessionMessage], flight: InFlight) -> None:
    """Wire → server; at end of input, close the server's side only once every request read is answered."""
    async with to_server:
        async for item in wire:
            if isinstance(item, Exception):
                await reply.send(SessionMessage(unreadable(item)))
                continue
            message = item.message
            if isinstance(message, types.JSONRPCRequest):
                flight.received(message.id)
            elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
                flight.settled((message.params or {}).get("requestId"))  # a cancelled request is never answered
            await to_server.send(item)
        with anyio.move_on_after(DRAIN_S):
            await flight.idle.wait()


async def _outbound(from_server: MemoryObjectReceiveStream[SessionMessage],
                    wire: MemoryObjectSendStream[SessionMessage] | Any, flight: InFlight) -> None:
    """Server → wire, marking each request answered once its answer is handed to the writer."""
    async with from_server:
        async for item in from_server:
            await wire.send(item)
            if isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
                flight.settled(item.message.id)


@asynccontextmanager
async def draining_stdio() -> AsyncIterator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception],
                                                  MemoryObjectSendStream[SessionMessage]]]:
    """(read, write) streams for `Server.run` over this process's stdin/stdout, as described above."""
    async with stdio_server() as (wire_read, wire_write):
        to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](math.inf)
        server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](math.inf)
        replies, pending_replies = anyio.create_memory_object_stream[SessionMessage](math.inf)
        flight = InFlight()

        async def write_all() -> None:
            async with wire_write, pending_replies, anyio.create_task_group() as tg:
                tg.start_soon(_outbound, from_server, wire_write, flight)
                async for error in pending_replies:
                    await wire_write.send(error)

        async def read_all() -> None:
            async with replies:
                await _inbound(wire_read, to_server, replies, flight)

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_all)
            tg.start_soon(write_all)
            yield server_reads, server_writes
