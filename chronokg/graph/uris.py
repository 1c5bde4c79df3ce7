"""Store URIs as they may be shown: never with the credentials a user put in them."""

from __future__ import annotations

import re
from urllib.parse import unquote

_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#@]*@)")


def redact(uri: str) -> str:
    """`bolt://user:pw@host:7687` as `bolt://***@host:7687`; anything without user info unchanged."""
    return _USERINFO.sub(lambda m: m.group("scheme") + "***@", uri)


def credentials_from_uri(uri: str, user: str, password: str) -> tuple[str, str, str]:
    """`bolt://user:pw@host` gives (`bolt://host`, user, pw): the driver wants them apart."""
    m = _USERINFO.match(uri)
    if m is None:
        return uri, user, password
    name, sep, secret = unquote(m.group("userinfo")[:-1]).partition(":")
    return m.group("scheme") + uri[m.end():], name or user, secret if sep else password
