"""The bounds on one read from outside and its result: below both the store protocol and the guard, which use them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ReadLimits(BaseModel):
    """Bounds on one read from outside. Defaults come from the settings object (`Settings.read_*`)."""

    model_config = ConfigDict(frozen=True)

    timeout_s: float = Field(default=10.0, gt=0, description="Wall-clock limit; the read is killed after it")
    max_rows: int = Field(default=10_000, ge=1, description="Rows returned; more are cut off (and said so)")
    max_result_mb: float = Field(default=16.0, gt=0, description="Size of the returned rows")
    max_work: int = Field(default=10_000_000, ge=1, description="Engine work budget (rows and items held)")
    memory_mb: int = Field(default=2048, ge=64, description="Memory the read may allocate (embedded engine)")

    @classmethod
    def from_settings(cls, settings: Any) -> ReadLimits:
        return cls(timeout_s=settings.read_timeout_s, max_rows=settings.read_max_rows,
                   max_result_mb=settings.read_max_result_mb, max_work=settings.read_max_work,
                   memory_mb=settings.read_memory_mb)


class LimitedResult(BaseModel):
    """The rows of a guarded read; `truncated` when `max_rows` cut them (never silently)."""

    rows: list[dict[str, Any]]  # store.Row, spelled out: the store protocol imports this module
    truncated: bool = False
    total_rows: int | None = None
    elapsed_s: float = 0.0
