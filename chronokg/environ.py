"""The environment reads that must stay light: part of the settings layer, beside chronokg/settings.py.

`chronokg query ...` first asks a live local query process (chronokg.cli.query_client) and must do so
without pydantic: the few values it needs are read here with the standard library alone, and
chronokg/settings.py takes the same names and defaults from here, so each is declared once. Nothing
else in chronokg reads (or, for the query process answering a caller, swaps) the environment.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

PREFIX = "CHRONOKG_"
STORE = "CHRONOKG_STORE"
DAEMON_IDLE = "CHRONOKG_QUERY_DAEMON_IDLE_S"
DEFAULT_DAEMON_IDLE_S = 300.0
# What else decides the bytes a query prints: the interpreter's text encoding and where it finds chronokg.
_ENCODING = ("LANG", "LC_ALL", "LC_CTYPE", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONPATH", "PYTHONHOME")


def default_data_dir() -> str:
    """The user data directory (platformdirs), where the default embedded store lives."""
    from platformdirs import user_data_dir

    return user_data_dir("chronokg")


def store_uri() -> str | None:
    """`CHRONOKG_STORE`, or None when unset or blank (blank means the default, as in Settings)."""
    value = os.environ.get(STORE, "")
    return value if value.strip() else None


def daemon_idle_s() -> float:
    """`CHRONOKG_QUERY_DAEMON_IDLE_S`: seconds a query process waits for its next caller; 0 (or a value that is
    not a number >= 0, which Settings then reports) turns the query process off."""
    raw = os.environ.get(DAEMON_IDLE)
    if raw is None or not raw.strip():
        return DEFAULT_DAEMON_IDLE_S
    try:
        value = float(raw)
    except ValueError:
        return 0.0
    return value if value >= 0 and value == value else 0.0


def fingerprint() -> str:
    """A digest of what makes one caller's answer differ from another's on the same store: every
    `CHRONOKG_*` setting but the store itself (the process is keyed by the store's path apart), the text
    encoding, the interpreter and this package's place."""
    items = sorted((k, v) for k, v in os.environ.items()
                   if (k.startswith(PREFIX) and k != STORE) or k in _ENCODING)
    items += [("executable", sys.executable), ("package", os.path.dirname(os.path.abspath(__file__)))]
    return hashlib.sha256(repr(items).encode()).hexdigest()


def runtime_dir() -> str:
    """Where a user's query process sockets live: `$XDG_RUNTIME_DIR/chronokg`, else `$TMPDIR/chronokg-<uid>`
    (or /tmp); made 0700 by the client."""
    base = os.environ.get("XDG_RUNTIME_DIR", "")
    if base and os.path.isdir(base):
        return os.path.join(base, "chronokg")
    return os.path.join(os.environ.get("TMPDIR") or "/tmp", f"chronokg-{os.getuid()}")


def snapshot() -> dict[str, str]:
    """The whole environment, as a caller sends it to the query process that answers for it."""
    return dict(os.environ)


@contextmanager
def swapped(env: Mapping[str, str]) -> Iterator[None]:
    """The environment is `env` for the block (the query process answering one caller), then as it was."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
