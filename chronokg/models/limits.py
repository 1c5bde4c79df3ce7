"""Per-model bounded concurrency and optional requests/min and tokens/min limits.

Token buckets refill continuously. Tokens are charged before a request from an estimate
(prompt characters / 4 plus max_tokens) and corrected with the server's usage afterwards, so a
tokens/min limit holds on average without knowing the tokenizer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from pydantic import BaseModel, ConfigDict, Field


class Limits(BaseModel):
    """`concurrency` requests in flight; optional `requests_per_minute` and `tokens_per_minute`."""

    model_config = ConfigDict(frozen=True)

    concurrency: int = Field(default=32, ge=1)
    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)


class TokenBucket:
    """`per_minute` units a minute, bursting up to one minute's worth; may go negative after a correction."""

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.capacity = per_minute
        self.rate = per_minute / 60.0
        self.level = per_minute
        self._clock = clock
        self._sleep = sleep
        self._stamp = clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self.level = min(self.capacity, self.level + (now - self._stamp) * self.rate)
        self._stamp = now

    async def take(self, amount: float) -> None:
        """Wait until `amount` is available (one minute's worth at most is ever asked for) and take it."""
        amount = min(amount, self.capacity)
        async with self._lock:  # first come, first served
            self._refill()
            while self.level < amount:
                await self._sleep((amount - self.level) / self.rate)
                self._refill()
            self.level -= amount

    def correct(self, delta: float) -> None:
        """Charge `delta` more (or give back, if negative) once the real amount is known."""
        self._refill()
        self.level = min(self.capacity, self.level - delta)


class Limiter:
    """The limits of one model within one event loop."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._slots = asyncio.Semaphore(limits.concurrency)
        self._requests = TokenBucket(limits.requests_per_minute) if limits.requests_per_minute else None
        self._tokens = TokenBucket(limits.tokens_per_minute) if limits.tokens_per_minute else None

    @property
    def counts_tokens(self) -> bool:
        return self._tokens is not None

    @asynccontextmanager
    async def slot(self, estimated_tokens: int) -> AsyncIterator[Callable[[int], None]]:
        """Hold one of the concurrency slots; yields `report(actual_tokens)` to correct the estimate."""
        if self._requests is not None:
            await self._requests.take(1)
        if self._tokens is not None:
            await self._tokens.take(estimated_tokens)
        tokens = self._tokens

        def report(actual: int) -> None:
            if tokens is not None:
                tokens.correct(actual - estimated_tokens)

        async with self._slots:
            yield report
