"""The family's evaluation profile: the default request, the answer read as the reply's first line."""

from __future__ import annotations

from chronokg.bench.question import Question
from chronokg.eval.profile import Profile


class ExtdemoProfile(Profile):
    def extract(self, question: Question, output: str, protocol: str) -> str | None:
        line = output.strip().splitlines()[0].strip() if output.strip() else ""
        return line or None


PROFILE = ExtdemoProfile()
