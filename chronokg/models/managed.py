"""What every HTTP-backed client shares: cache, limits, retries, usage and the run's deadline.

A backend subclasses `ManagedClient` and implements `_send(request, n)`: one HTTP attempt asking
for `n` choices, raising `TransientModelError` or `ModelRequestError`. The rest happens here:

1. look the request's samples up in the cache; if all are there, no request is sent;
2. otherwise ask for the missing ones (again if a server returns fewer than asked, as servers
   that ignore `n` do), within the concurrency and rate limits, retrying transient failures;
3. store the new samples (one transaction per response) and count the tokens.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from typing import Any

from chronokg.models.cache import CachedSample, sample_keys
from chronokg.models.client_errors import ModelTimeout
from chronokg.models.limits import Limiter
from chronokg.models.retry import call_with_retries
from chronokg.models.spec import ClientOptions
from chronokg.models.types import Completion, ModelRequest, Usage
from chronokg.models.usage import ModelUsage


class ManagedClient(ABC):
    """Base class for clients that send requests over the network (see the module docstring)."""

    def __init__(self, options: ClientOptions) -> None:
        self.options = options
        self.usage = ModelUsage(spec=options.spec, prices=options.prices)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._limiter: Limiter | None = None
        self._deadline: float | None = None

    @property
    def spec(self) -> str:
        return self.options.spec

    @property
    def base_url(self) -> str | None:
        return self.options.base_url

    async def __aenter__(self) -> ManagedClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:  # noqa: B027 - an optional hook
        """Release connections (subclasses add their own resources)."""

    @abstractmethod
    async def _send(self, request: ModelRequest, n: int) -> Completion:
        """One attempt for `n` choices; `Completion.retries` and `cached` are filled in by the caller."""

    def _on_new_loop(self, loop: asyncio.AbstractEventLoop) -> None:  # noqa: B027 - an optional hook
        """Called when the client is first used from an event loop (connections belong to one loop)."""

    def _bind_loop(self) -> Limiter:
        loop = asyncio.get_running_loop()
        if loop is not self._loop or self._limiter is None:
            self._loop = loop
            self._limiter = Limiter(self.options.limits)
            self._on_new_loop(loop)
        return self._limiter

    async def generate(self, request: ModelRequest) -> Completion:
        limiter = self._bind_loop()
        if self.options.run_timeout_s is None:
            return await self._generate(request, limiter)
        if self._deadline is None:
            self._deadline = time.monotonic() + self.options.run_timeout_s
        remaining = self._deadline - time.monotonic()
        try:
            async with asyncio.timeout(max(remaining, 0.0)):
                return await self._generate(request, limiter)
        except TimeoutError:
            raise ModelTimeout(f"{self.spec}: the run's time budget of {self.options.run_timeout_s:g} s "
                               "ran out") from None

    async def _generate(self, request: ModelRequest, limiter: Limiter) -> Completion:
        cache = self.options.cache
        n = request.config.n
        if cache is None:
            completion = await self._fetch(request, n, limiter)
            self.usage.add_sent(completion.usage, completion.retries)
            return completion
        keys = sample_keys(self.spec, self.base_url, request)
        found = cache.get_many(keys)
        if len(found) == n:
            completion = _from_cache(self.spec, [found[k] for k in keys])
            self.usage.add_cached(completion.usage)
            return completion
        samples: dict[str, CachedSample] = dict(found)
        last: Completion | None = None
        retries = 0
        for _ in range(n):  # a server that ignores `n` answers one at a time
            missing = [k for k in keys if k not in samples]
            if not missing:
                break
            last = await self._fetch(request, len(missing), limiter)
            retries += last.retries
            self.usage.add_sent(last.usage, last.retries)
            fresh = {key: CachedSample(choice=choice, model=last.model, request_id=last.request_id,
                                       usage=last.usage)
                     for key, choice in zip(missing, last.choices, strict=False)}
            if not fresh:
                break
            cache.put_many(self.spec, fresh)
            samples.update(fresh)
        ordered = [samples[k] for k in keys if k in samples]
        choices = [s.choice.model_copy(update={"index": i}) for i, s in enumerate(ordered)]
        assert last is not None  # at least one sample was missing, so at least one request was sent
        return last.model_copy(update={"choices": choices, "usage": _usage_of(ordered), "retries": retries})

    async def _fetch(self, request: ModelRequest, n: int, limiter: Limiter) -> Completion:
        async with limiter.slot(_estimate_tokens(request) if limiter.counts_tokens else 0) as report:
            completion, retries = await call_with_retries(lambda: self._send(request, n), self.options.retry,
                                                          spec=self.spec)
            report(completion.usage.total_tokens)
        return completion.model_copy(update={"retries": retries}) if retries else completion


def _from_cache(spec: str, samples: list[CachedSample]) -> Completion:
    first = samples[0]
    return Completion(spec=spec, choices=[s.choice.model_copy(update={"index": i}) for i, s in enumerate(samples)],
                      usage=_usage_of(samples), model=first.model, request_id=first.request_id, cached=True)


def _usage_of(samples: list[CachedSample]) -> Usage:
    """The usage of the distinct responses the samples came from."""
    by_request: dict[Any, Usage] = {}
    for i, s in enumerate(samples):
        by_request.setdefault(s.request_id or i, s.usage)
    return sum(by_request.values(), Usage())


def _estimate_tokens(request: ModelRequest) -> int:
    """Prompt characters / 4 plus the completion budget (for tokens/min limits before the answer)."""
    if request.messages is not None:
        chars = sum(len(m.content) if isinstance(m.content, str) else 256 for m in request.messages)
    else:
        chars = len(request.prompt or "")
    return chars // 4 + (request.config.max_tokens or 256) * request.config.n
