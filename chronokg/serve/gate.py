"""What every HTTP request passes before a tool sees it: its Host and Origin, bearer token, rate limit, body size.

One plain ASGI middleware in front of both the FastAPI app and the MCP streamable-HTTP
app, so both servers refuse the same way, with the same JSON error body
(`{"error": {"type": ..., "message": ...}}`), and every answer carries the same security
headers (a page that sets its own Content-Security-Policy keeps it).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import math
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from typing import Any

from chronokg.serve.fair import CALLER, CLIENT_HEADER
from chronokg.serve.hosts import HostPolicy

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BUCKETS = 10_000  # distinct callers remembered by the rate limiter
SCOPE_CALLER = "chronokg.caller"  # the request scope's copy of the caller key the gate set
# An answer is data for this origin only: no script, style or frame from anywhere unless a page names its own.
DEFAULT_CSP = b"default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
SECURITY_HEADERS = ((b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"), (b"cross-origin-resource-policy", b"same-origin"))


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server on this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass
class RateLimiter:
    """A token bucket per caller: `rate` requests a second on average, bursts of `burst`; rate 0: no limit."""

    rate: float
    burst: int
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)  # caller -> (tokens, at)

    def take(self, caller: str, now: float | None = None) -> float:
        """0 if the caller may go on, else the seconds until it may."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        tokens, at = self._buckets.get(caller, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - at) * self.rate)
        if tokens < 1.0:
            self._buckets[caller] = (tokens, now)
            return (1.0 - tokens) / self.rate
        if len(self._buckets) >= MAX_BUCKETS and caller not in self._buckets:
            self._buckets.clear()  # forgetting callers only ever gives them a fresh burst
        self._buckets[caller] = (tokens - 1.0, now)
        return 0.0


class Gate:
    """ASGI middleware: the names the server answers to (`hosts`: a `Host` it does not own is 421, a page of
    another origin 403), bearer tokens (when any are set), a rate limit per token, a request size limit, and the
    security headers on every answer.

    `open_paths` (health, the OpenAPI page) need no token but are rate-limited like the rest.
    Without tokens (only allowed on loopback) every caller shares one anonymous bucket.
    `hosts=None` leaves Host and Origin to the app behind (the MCP SDK checks them itself on loopback).
    """

    def __init__(self, app: ASGIApp, *, tokens: Iterable[str] = (), rate: float = 20.0, burst: int = 40,
                 max_body_bytes: int = 1 << 20, open_paths: Iterable[str] = (),
                 hosts: HostPolicy | None = None) -> None:
        self.app = app
        self.tokens = [t.encode() for t in tokens if t]
        self.limiter = RateLimiter(rate, burst)
        self.max_body = max_body_bytes
        self.open_paths = frozenset(open_paths)
        self.hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_security_headers(send)
        if self.hosts is not None and not await self._names_ok(scope, send):
            return
        caller = "anonymous"
        if self.tokens and scope.get("path") not in self.open_paths:
            token = _bearer(scope)
            if token is None or not any(hmac.compare_digest(token, t) for t in self.tokens):
                await _error(send, 401, "unauthorized", "a valid bearer token is required (Authorization: Bearer "
                             "TOKEN)" if token is None else "the bearer token is not valid",
                             [(b"www-authenticate", b'Bearer realm="chronokg"')])
                return
            caller = "token:" + _fingerprint(token)
        wait = self.limiter.take(caller)
        if wait > 0:
            await _error(send, 429, "rate_limited", f"too many requests: at most {self.limiter.rate:g} a second "
                         f"(bursts of {self.limiter.burst}); retry in {wait:.2f} s",
                         [(b"retry-after", str(max(1, math.ceil(wait))).encode())])
            return
        key = caller_key(scope, caller)
        CALLER.set(key)  # who the read workers share by (chronokg.serve.fair)
        scope[SCOPE_CALLER] = key  # and for a handler that runs outside this request's context (MCP)
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body:
            await _error(send, 413, "too_large", f"the request body is {declared:,} bytes (at most "
                         f"{self.max_body:,})")
            return
        if scope.get("method") in {"POST", "PUT", "PATCH"}:
            chunks: list[bytes] = []
            size = 0
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return  # the client went away
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_body:
                    await _error(send, 413, "too_large", f"the request body is over {self.max_body:,} bytes")
                    return
                chunks.append(chunk)
                if not message.get("more_body"):
                    break
            receive = _replay(b"".join(chunks), receive)
        await self.app(scope, receive, send)


    async def _names_ok(self, scope: Scope, send: Send) -> bool:
        """Whether the request names this server (Host) and, sent by a page, came from one of its pages
        (Origin); else answer 421 or 403."""
        assert self.hosts is not None
        host, origin = _header(scope, b"host"), _header(scope, b"origin")
        if not self.hosts.host_ok(host):
            shown = "none" if host is None else repr(host.decode("latin-1")[:200])
            await _error(send, 421, "misdirected", f"this server does not answer to the Host {shown}: it answers "
                         f"to its own address, localhost, 127.0.0.1 and [::1] at port {self.hosts.port}, and to "
                         "names given with --allowed-host")
            return False
        if not self.hosts.origin_ok(origin):
            assert origin is not None
            await _error(send, 403, "cross_origin", f"a page of another origin "
                         f"({origin.decode('latin-1')[:200]!r}) may not read this server")
            return False
        return True


def _with_security_headers(send: Send) -> Send:
    """`send` adding the security headers to the answer's start (a Content-Security-Policy the app set is
    kept: the explorer page names its own script and style by hash)."""
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            names = {bytes(name).lower() for name, _ in headers}
            extra = [(k, v) for k, v in ((b"content-security-policy", DEFAULT_CSP), *SECURITY_HEADERS)
                     if k not in names]
            message = {**message, "headers": [*headers, *extra]}
        await send(message)

    return sending


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value)
    return None


def caller_key(scope: Scope, token: str = "anonymous") -> str:
    """Whom a request's reads count against: its MCP session, else the client's own id header, else its
    connection (peer address and port: local agents share 127.0.0.1, and keyed by address alone one heavy agent
    made every local caller heavy); under its token when there are tokens (a caller cannot borrow another
    token's share)."""
    headers = dict(scope.get("headers", []))
    for name, kind in ((b"mcp-session-id", "mcp"), (CLIENT_HEADER, "client")):
        value = bytes(headers.get(name, b"")).strip()[:128]
        if value:
            return f"{token}|{kind}:{value.decode('latin-1')}"
    peer = scope.get("client") or ("unknown", 0)
    return f"{token}|conn:{peer[0]}:{peer[1]}"


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _bearer(scope: Scope) -> bytes | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            kind, _, token = bytes(value).partition(b" ")
            if kind.lower() == b"bearer" and token.strip():
                return token.strip()
    return None


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _fingerprint(token: bytes) -> str:
    import hashlib

    return hashlib.sha256(token).hexdigest()[:16]


async def _error(send: Send, status: int, type_: str, message: str,
                 headers: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"error": {"type": type_, "message": message}}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            *(headers or [])]})
    await send({"type": "http.response.body", "body": body})
