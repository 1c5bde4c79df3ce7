"""Token accounting per model, and cost when the user gives prices.

Tokens served from the cache are counted apart: they cost nothing this time.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from chronokg.models.types import Usage


class Prices(BaseModel):
    """Prices in your currency per one million tokens, as providers publish them."""

    model_config = ConfigDict(frozen=True)

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_mtok + completion_tokens * self.output_per_mtok) / 1_000_000


class ModelUsage(BaseModel):
    """What one model did in this process: requests, retries, tokens (sent vs from cache), cost."""

    spec: str
    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    prices: Prices | None = None

    def add_sent(self, usage: Usage, retries: int) -> None:
        """One response from the server (after `retries` failed attempts)."""
        self.requests += 1
        self.retries += retries
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens

    def add_cached(self, usage: Usage) -> None:
        """One request answered from the cache."""
        self.cache_hits += 1
        self.cached_prompt_tokens += usage.prompt_tokens
        self.cached_completion_tokens += usage.completion_tokens

    @property
    def cost(self) -> float | None:
        """The cost of the tokens actually sent (None when no prices were given)."""
        return None if self.prices is None else self.prices.cost(self.prompt_tokens, self.completion_tokens)
