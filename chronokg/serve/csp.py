"""Content-Security-Policy for the pages the servers send: inline scripts and styles named by hash.

A page's own script and style are allowed by their SHA-256, never by `'unsafe-inline'`: a
stored string that reached the page as markup (`<img src=x onerror=...>`) still could not run.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable

_INLINE = {"script": re.compile(r"<script(?![^>]*\bsrc=)(?![^>]*type=\"application/json\")[^>]*>(.*?)</script>",
                                re.S | re.I),
           "style": re.compile(r"<style[^>]*>(.*?)</style>", re.S | re.I)}


def digest(text: str) -> str:
    """The CSP source naming an inline element whose text is `text`."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def inline_hashes(html: str, kind: str) -> list[str]:
    """The hash sources of every inline `<script>` (not data, not loaded from elsewhere) or `<style>` in `html`."""
    return [digest(body) for body in _INLINE[kind].findall(html)]


def policy(*, scripts: Iterable[str] = (), styles: Iterable[str] = (), images: Iterable[str] = ("data:",),
           connect: Iterable[str] = ("'self'",), meta: bool = False) -> str:
    """A policy allowing only these sources; `meta`: for a `<meta>` element, which cannot carry
    `frame-ancestors` (the header sends it)."""
    def sources(values: Iterable[str]) -> str:
        return " ".join(values) or "'none'"

    parts = ["default-src 'none'", f"script-src {sources(scripts)}", f"style-src {sources(styles)}",
             f"img-src {sources(images)}", f"connect-src {sources(connect)}", "base-uri 'none'", "form-action 'none'"]
    if not meta:
        parts.append("frame-ancestors 'none'")
    return "; ".join(parts)


def for_page(html: str, *, scripts: Iterable[str] = (), styles: Iterable[str] = (),
             images: Iterable[str] = ("data:",)) -> str:
    """The header policy of `html`: its inline scripts and styles by hash, plus the sources given."""
    return policy(scripts=[*inline_hashes(html, "script"), *scripts], styles=[*inline_hashes(html, "style"), *styles],
                  images=images)
