"""The judge model of a run (`chronokg eval run --judge SPEC`), for families scored by an LLM judge.

BenchAge scores free-form answers by asking a judge model whether two answers state the same fact. The
runner opens the judge client once per run and makes it the *current judge* for every sample of that run
(a context variable: each run's tasks see their own judge, so two runs in one process do not mix);
a profile's `answer` reads it with `current_judge()`. Without `--judge` there is no current judge and
such a profile falls back to its documented non-LLM scoring.

`Judge.once` computes a value once per run however many samples ask for it concurrently (BenchAge's
gold-versus-up-to-date comparison is one judgement per question, shared by every model and sample).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from chronokg.errors import ChronoKGError
from chronokg.models import ModelClient, get_model


@dataclass
class Judge:
    """A run's judge: its client, its spec, and the judgements shared within the run."""

    client: ModelClient
    spec: str
    _shared: dict[Hashable, asyncio.Future[Any]] = field(default_factory=dict, repr=False)

    async def once(self, key: Hashable, make: Callable[[], Awaitable[Any]]) -> tuple[Any, bool]:
        """(value, computed by this call): `make()` runs once per key; concurrent callers wait for it. A
        failure is not remembered: every waiter sees it, and the next call tries again."""
        pending = self._shared.get(key)
        if pending is not None:
            return await asyncio.shield(pending), False
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._shared[key] = future
        try:
            value = await make()
        except BaseException as exc:
            self._shared.pop(key, None)
            if isinstance(exc, Exception):
                future.set_exception(exc)
                future.exception()  # retrieved: no "never retrieved" warning when nobody waited
            else:
                future.cancel()
            raise
        future.set_result(value)
        return value, True


_CURRENT: ContextVar[Judge | None] = ContextVar("chronokg_eval_judge", default=None)


def current_judge() -> Judge | None:
    """The judge of the run this task belongs to (None: the run has no `--judge`)."""
    return _CURRENT.get()


def set_judge(judge: Judge | None) -> Any:
    """Make `judge` current in this context (and the tasks it starts); returns the token for `reset_judge`."""
    return _CURRENT.set(judge)


def reset_judge(token: Any) -> None:
    _CURRENT.reset(token)


def open_judge(spec: str | None, base_url: str | None = None, cache: bool = True,
               concurrency: int = 32, api_key_env: str | None = None) -> Judge | None:
    """The judge client for `--judge SPEC` (None without one). A reference baseline cannot judge."""
    if not spec:
        return None
    if spec.startswith("baseline/"):
        raise ChronoKGError(f"--judge {spec}: a judge must be a model (openai/..., openai-compat/..., vllm/...), "
                            "not a reference baseline")
    client = get_model(spec, base_url=base_url, api_key_env=api_key_env, cache=cache, concurrency=concurrency)
    return Judge(client=client, spec=spec)
