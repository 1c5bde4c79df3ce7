"""Retries with exponential backoff and jitter, honouring the server's Retry-After.

Backends raise `TransientModelError` for what may succeed later (429, 5xx, timeouts, dropped
connections, garbled bodies) and `ModelRequestError` for what cannot (bad request, auth, unknown
model); only the first is retried here. Every retry is logged on `chronokg.models` and counted.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field

from chronokg.models.client_errors import RetriesExhausted, TransientModelError

log = logging.getLogger("chronokg.models")
T = TypeVar("T")


class RetryPolicy(BaseModel):
    """`max_retries` retries after the first attempt; delays grow `initial_delay_s * multiplier**k`.

    Full jitter takes up to `jitter` (a fraction) off each delay so that many tasks that failed
    together do not come back together. A server's Retry-After replaces the computed delay,
    capped at `max_retry_after_s`.
    """

    model_config = ConfigDict(frozen=True)

    max_retries: int = Field(default=8, ge=0)
    initial_delay_s: float = Field(default=1.0, ge=0)
    multiplier: float = Field(default=2.0, ge=1)
    max_delay_s: float = Field(default=60.0, ge=0)
    jitter: float = Field(default=0.5, ge=0, le=1)
    max_retry_after_s: float = Field(default=300.0, ge=0)

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (0-based)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after_s)
        base = min(self.max_delay_s, self.initial_delay_s * self.multiplier**retry)
        return base * (1.0 - self.jitter * random.random())


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from `retry-after-ms`, or `Retry-After` as seconds or an HTTP date; None if absent."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


async def call_with_retries(attempt: Callable[[], Awaitable[T]], policy: RetryPolicy, *, spec: str,
                            on_retry: Callable[[TransientModelError], None] | None = None) -> tuple[T, int]:
    """Run `attempt` until it succeeds; return its result and how many retries it took.

    Raises `RetriesExhausted` once `policy.max_retries` retries have failed; any other exception
    (a `ModelRequestError`, a cancellation) passes through at once.
    """
    retry = 0
    while True:
        try:
            return await attempt(), retry
        except TransientModelError as exc:
            if retry >= policy.max_retries:
                raise RetriesExhausted(spec, retry + 1, exc) from exc
            wait = policy.delay(retry, exc.retry_after)
            source = "Retry-After" if exc.retry_after is not None else "backoff"
            log.warning("%s: retry %d/%d after %s; waiting %.3f s (%s)", spec, retry + 1, policy.max_retries,
                        exc.reason, wait, source)
            if on_retry is not None:
                on_retry(exc)
            retry += 1
            await asyncio.sleep(wait)
