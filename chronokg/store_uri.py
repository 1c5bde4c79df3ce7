"""A store URI, parsed once: `kglite:///path/store.kgl?durable=off`, `kglite://:memory:`, `neo4j://user:pw@host:7687`.

Standard library only (and `chronokg.errors`), so `chronokg.cli.query_client`, which must start in milliseconds,
parses store URIs the same way as everything else. Code never slices or appends to a URI string: it parses it,
asks its parts (`scheme`, `location`, `option`, `file`) and makes a changed copy (`with_option`). Shown to a
person, a URI goes through `redacted()`: the credentials a user put in it never reach a message or a log.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from urllib.parse import unquote, urlsplit

from chronokg.errors import StoreError

# The engine of the default store (`default_store`): its location is a file path. The local query process and the
# CLI's early open hold stores of this engine only; which engine a scheme opens is `chronokg.graph.engines`'s.
EMBEDDED = "kglite"
MEMORY = ":memory:"  # an embedded store that lives in memory only: no file


@dataclass(frozen=True)
class StoreURI:
    """`scheme://[userinfo@]location[?key=value&...]`; `str()` gives the same text back (credentials included)."""

    scheme: str
    location: str  # a file path (embedded engines, `:memory:`) or `host[:port]` (servers)
    options: tuple[tuple[str, str], ...] = ()
    userinfo: str = field(default="", repr=False)  # `user:password` as written (percent-encoded), never shown

    @classmethod
    def parse(cls, text: str | StoreURI) -> StoreURI:
        """The parts of `text`; a StoreError naming the expected forms when it is not a store URI."""
        if isinstance(text, StoreURI):
            return text
        scheme, sep, rest = text.partition("://")
        if not sep or not scheme or not (scheme[0].isalpha() and all(c.isalnum() or c in "+.-" for c in scheme)):
            raise StoreError(f"not a store URI: {_redact_text(text)!r} (expected kglite:///path/to/store.kgl or "
                             "neo4j://host:7687)")
        if scheme == EMBEDDED:  # an embedded store's location is a path, whatever it holds
            rest, _, query = rest.partition("?")
            if not rest:
                raise StoreError(f"{text!r} names no file: write kglite:///path/to/store.kgl or kglite://{MEMORY}")
            return cls(scheme, os.path.expanduser(rest) if rest.startswith("~") else rest, _options(query, text))
        # A server's userinfo ends at the last '@': a password may hold '/', '?', '#' or '@' as typed, not encoded.
        userinfo, _, rest = rest.rpartition("@")
        rest, _, query = rest.partition("?")
        host = rest.partition("/")[0]
        _check_port(scheme, host, text)
        return cls(scheme, rest, _options(query, text), userinfo)

    def __str__(self) -> str:
        user = f"{self.userinfo}@" if self.userinfo else ""
        query = "&".join(f"{k}={v}" for k, v in self.options)
        return f"{self.scheme}://{user}{self.location}{'?' + query if query else ''}"

    def redacted(self) -> str:
        """The URI as it may be shown: `bolt://***@host:7687` when it holds credentials."""
        return str(replace(self, userinfo="***")) if self.userinfo else str(self)

    def credentials(self) -> tuple[str | None, str | None]:
        """(user, password) written in the URI (None where absent): the driver wants them apart."""
        if not self.userinfo:
            return None, None
        name, sep, secret = unquote(self.userinfo).partition(":")
        return name or None, secret if sep else None

    def without_credentials(self) -> StoreURI:
        return replace(self, userinfo="")

    def option(self, name: str, default: str | None = None) -> str | None:
        return dict(self.options).get(name, default)

    def with_option(self, name: str, value: str) -> StoreURI:
        """A copy with option `name` set to `value` (replaced where the URI already has it)."""
        kept = tuple((k, v) for k, v in self.options if k != name)
        return replace(self, options=(*kept, (name, value)))

    @property
    def embedded(self) -> bool:
        """A store of the default embedded engine (`EMBEDDED`), on file or in memory."""
        return self.scheme == EMBEDDED

    @property
    def file(self) -> str | None:
        """The file an embedded store URI names (as written: relative to the cwd or absolute); None for a store in
        memory or on a server."""
        return self.location if self.embedded and self.location not in ("", MEMORY) else None

    @property
    def plain_file(self) -> str | None:
        """The absolute path of an embedded store file named with no options, else None: the stores the local query
        process and the CLI's early open hold (a URI with options is opened as its command asks)."""
        return os.path.abspath(self.file) if self.file is not None and not self.options else None


def embedded_file(path: str | os.PathLike[str]) -> StoreURI:
    """The URI of the embedded store file at `path`."""
    return StoreURI(EMBEDDED, os.fspath(path))


def default_store() -> StoreURI:
    """The default store: an embedded file under the user's data directory (the one place it is named)."""
    from chronokg import environ

    return embedded_file(os.path.join(environ.default_data_dir(), "store.kgl"))


def redact(uri: str | StoreURI) -> str:
    """Any text as it may be shown: a store URI's credentials hidden; text that is no URI unchanged."""
    if isinstance(uri, StoreURI):
        return uri.redacted()
    return _redact_text(uri)


def _options(query: str, text: str) -> tuple[tuple[str, str], ...]:
    """`key=value&...`: a key once, and never empty (which value would count is not for the parser to guess)."""
    options = tuple((k, v) for k, _, v in (part.partition("=") for part in query.split("&") if part))
    names = [k for k, _ in options]
    for name in names:
        if not name or names.count(name) > 1:
            raise StoreError(f"not a usable store URI {_redact_text(text)!r}: "
                             + (f"option {name} given twice" if name else "an option with no name"))
    return options


def _check_port(scheme: str, host: str, text: str) -> None:
    """A server's port is a number from 1 to 65535: the driver would wrap 99999 round to another port."""
    try:
        port = urlsplit(f"{scheme}://{host}").port
    except ValueError as exc:
        raise StoreError(f"not a usable store URI {_redact_text(text)!r}: {exc}") from None
    if port == 0:
        raise StoreError(f"not a usable store URI {_redact_text(text)!r}: port 0")


def _redact_text(text: str) -> str:
    scheme, sep, rest = text.partition("://")
    if scheme == EMBEDDED or "@" not in text:
        return text
    if not sep:  # not a URI at all, yet it may hold a login: show nothing before its last '@'
        return f"***@{text.rpartition('@')[2]}"
    return f"{scheme}://***@{rest.rpartition('@')[2]}"
