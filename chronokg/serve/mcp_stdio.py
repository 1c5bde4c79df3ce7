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

JSON-RPC 2.0 answers every request: one whose id is no string or integer (null, 1.5, an object, a list, true) read
as a notification by the SDK and went unanswered; it is answered here with -32600 Invalid Request, id null (the
line is checked as read: the SDK keeps no trace of the id it dropped). A request whose id is that of a request still
in flight (MCP: a requester uses an id once per session) is refused with -32600 and that id; the first is answered
as usual. So stdin is read here (from a copy of fd 0, fd 0 itself pointed at the null device as the SDK does) and
the SDK keeps stdout.
"""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, cast

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

DRAIN_S = 300.0  # longest wait at end of input for handlers still running (the read workers' own limits are shorter)

RequestId = int | str
BAD_ID = "chronokg.bad_request_id"  # the key of the line put in place of a request whose id is not one


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
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    parse = any(e.get("type") == "json_invalid" for e in errors)
    bad_id = next((e["input"][BAD_ID] for e in errors if isinstance(e.get("input"), dict) and BAD_ID in e["input"]),
                  None)
    if parse or not isinstance(exc, ValidationError):
        error = types.ErrorData(code=types.PARSE_ERROR, message="Parse error: the line is not valid JSON")
    elif bad_id is not None:
        error = types.ErrorData(code=types.INVALID_REQUEST, message=f"Invalid Request: a request id is a string or "
                                                                    f"an integer, not {bad_id}")
    else:
        error = types.ErrorData(code=types.INVALID_REQUEST, message="Invalid Request: not a JSON-RPC 2.0 message")
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=error)


def in_use(request_id: RequestId) -> types.JSONRPCError:
    """The answer to a request whose id a request still in flight has (the first keeps it and is answered)."""
    shown = json.dumps(request_id)
    shown = shown if len(shown) <= 40 else shown[:40] + "…"
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(
        code=types.INVALID_REQUEST, message=f"Invalid Request: id {shown} belongs to a request not answered yet "
                                            "(an id is used once)"))


def checked_line(line: str) -> str:
    """`line`, or, for a request whose id JSON-RPC does not allow, a line the SDK refuses and `unreadable` answers
    as that (the SDK itself read it as a notification and dropped the id)."""
    if '"id"' not in line:  # by far most lines: nothing to parse twice
        return line
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return line  # the SDK finds it unreadable too and says so
    if not isinstance(message, dict) or "method" not in message or "id" not in message:
        return line
    request_id = message["id"]
    if type(request_id) is int or isinstance(request_id, str):
        return line
    shown = json.dumps(request_id)
    return json.dumps({BAD_ID: shown if len(shown) <= 40 else shown[:40] + "…"}) + "\n"


class _CheckedLines:
    """The lines of the wire's stdin, each through `checked_line`, as the SDK's transport iterates its input."""

    def __init__(self, wire: Any) -> None:
        self._wire = wire

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._wire:
            yield checked_line(line)


@contextmanager
def _wire_stdin() -> Iterator[Any]:
    """The process's stdin as the wire (UTF-8 text, read in a thread), fd 0 pointed at the null device meanwhile so
    that nothing else in the process reads the client's messages; fd 0 restored at the end. The copy is never
    closed: a thread may still wait on it."""
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        yield anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire, "rb", closefd=False), encoding="utf-8",
                                               errors="replace"))
    finally:
        os.dup2(wire, 0)


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
                if message.id in flight.pending:
                    await reply.send(SessionMessage(in_use(message.id)))
                    continue
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
    with _wire_stdin() as wire_in:
        async with _draining(cast(anyio.AsyncFile[str], _CheckedLines(wire_in))) as streams:
            yield streams


@asynccontextmanager
async def _draining(stdin: anyio.AsyncFile[str]) -> AsyncIterator[tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]]:
    async with stdio_server(stdin=stdin) as (wire_read, wire_write):
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
