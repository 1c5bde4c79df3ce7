"""The family's inspect_ai task (chronokg's generic `family_task`, under this family's name)."""

from __future__ import annotations

from typing import Any


def extdemo(questions: str, protocol: str = "seed", samples: int = 1) -> Any:
    from chronokg.integrations.inspect_tasks import family_task

    return family_task("extdemo", questions, protocol, samples)
