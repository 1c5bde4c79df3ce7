"""The `ModelClient` protocol: the one interface every model backend implements.

OpenAI, any OpenAI-compatible server, a vLLM server chronokg starts itself, and the evaluation
runner's reference baselines all look like this to their callers.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from chronokg.models.types import Completion, ModelRequest


@runtime_checkable
class ModelClient(Protocol):
    """Async generation for one model, named by its spec string (`openai/gpt-4o-mini`, ...).

    A client may hold connections or a server process: call `aclose()` (or use `async with`
    where the implementation supports it) when done.
    """

    @property
    def spec(self) -> str: ...

    async def generate(self, request: ModelRequest) -> Completion: ...

    async def aclose(self) -> None: ...
