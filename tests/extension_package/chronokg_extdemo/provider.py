"""A model provider: `extdemo/<text>` answers every request with <text> (found through `chronokg.model_providers`)."""

from __future__ import annotations

from chronokg.models import ClientOptions, Completion, ModelRequest
from chronokg.models.types import Choice


class EchoClient:
    def __init__(self, options: ClientOptions) -> None:
        self.options = options

    @property
    def spec(self) -> str:
        return self.options.spec

    async def generate(self, request: ModelRequest) -> Completion:
        return Completion(spec=self.spec, choices=[Choice(index=0, text=self.options.model)])

    async def aclose(self) -> None:
        return None


def extdemo_client(options: ClientOptions) -> EchoClient:
    return EchoClient(options)
