"""Which names a server answers to: the Host and Origin checks that close it to DNS rebinding.

A page at `http://evil.example:8765` whose name the attacker points at 127.0.0.1 is, for the
browser, its own origin: it may send requests to a loopback server and read the answers. What it
cannot change is the name it uses: its requests carry `Host: evil.example:8765` and, when made by
a script, `Origin: http://evil.example:8765`. So a server answers only requests naming its bound
address, a loopback name, or a name the operator allowed (`--allowed-host`), at its port, and
refuses a request a page of another origin sent.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("0.0.0.0", "::")


def _canonical(name: str) -> str:
    """A host name as compared: lower case without a final dot, an IP address in its one spelling."""
    name = name.strip().strip("[]").rstrip(".").lower()
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return name


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def split_host(value: str) -> tuple[str, int | None] | None:
    """`name[:port]` (an IPv6 address in brackets) as (canonical name, port); None when it is not one."""
    value = value.strip()
    if not value or any(c in value for c in "/?#@\\ \t"):
        return None
    try:
        parts = urlsplit("//" + value)
        name, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not name:
        return None
    return _canonical(name), port


@dataclass(frozen=True)
class HostPolicy:
    """The names a server bound to `address:port` answers to.

    `names` are answered at the server's own port; `allowed` (from `--allowed-host NAME`) at any port, or
    only at the port given (`NAME:PORT`, as `allowed_at` holds them). Bound to every address (0.0.0.0, ::), any
    IP address in `Host` names the server: a rebinding page has a DNS name, never an address.
    """

    port: int
    names: frozenset[str]
    allowed: frozenset[str] = frozenset()
    allowed_at: frozenset[tuple[str, int]] = frozenset()
    any_address: bool = False

    @classmethod
    def for_bind(cls, address: str, port: int, allowed: Iterable[str] = ()) -> HostPolicy:
        """The policy of a server bound to `address:port`; `allowed`: extra names, `NAME` or `NAME:PORT`.
        Raises ValueError naming an allowed name that is not a host name."""
        anywhere: set[str] = set()
        at: set[tuple[str, int]] = set()
        for raw in allowed:
            parsed = split_host(raw)
            if parsed is None:
                raise ValueError(f"--allowed-host {raw!r} is not a host name (NAME or NAME:PORT)")
            name, only = parsed
            if only is None:
                anywhere.add(name)
            else:
                at.add((name, only))
        bound = _canonical(address)
        return cls(port=port, names=frozenset({bound, *(_canonical(n) for n in LOOPBACK_NAMES)}),
                   allowed=frozenset(anywhere), allowed_at=frozenset(at), any_address=bound in WILDCARDS)

    def allows(self, name: str, port: int | None) -> bool:
        """Whether `name:port` (port None: the default port, 80) names this server."""
        port = 80 if port is None else port
        if name in self.allowed or (name, port) in self.allowed_at:
            return True
        return port == self.port and (name in self.names or (self.any_address and _is_ip(name)))

    def host_ok(self, header: bytes | None) -> bool:
        """The request's `Host` names this server (no Host at all does not)."""
        if header is None:
            return False
        parsed = split_host(header.decode("latin-1"))
        return parsed is not None and self.allows(*parsed)

    def origin_ok(self, header: bytes | None) -> bool:
        """A request without `Origin` (not sent by a page of another origin), or one whose page this server
        served (http or https, behind a proxy); `Origin: null` (a file, a sandboxed frame) is another origin."""
        if header is None:
            return True
        try:
            parts = urlsplit(header.decode("latin-1").strip())
            name, port = parts.hostname, parts.port
        except ValueError:
            return False
        if parts.scheme not in ("http", "https") or not name or parts.path not in ("", "/"):
            return False
        if port is None and parts.scheme == "https":
            port = 443
        return self.allows(_canonical(name), port)
