"""How a family's questions are asked and scored: one `Profile` per family, registered in `PROFILES`.

A profile builds the request for a question under a protocol (the seed's system prompt and generation
settings under `seed`), extracts the answer from the output as the seed does, scores it, and says which
fields the metrics group by. Most families need one call per sample (the default `answer`); a family
whose protocol takes several calls (a stage-wise protocol, an LLM judge, a clarification follow-up)
overrides `answer`. `render` writes an output the extractor reads as a given label: the reference
baselines answer through it, so they are scored by the same path as a model.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError
from chronokg.models import ChatMessage, Completion, GenerateConfig, ModelClient, ModelRequest
from chronokg.registry import Registry


@dataclass
class Outcome:
    """What answering one sample produced."""

    output: str
    answer: str | None
    correct: bool | None
    score: float | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    retries: int = 0
    cached: bool = False
    request_hash: str | None = None


class Profile:
    """The default: one chat request with the question's system and user messages, seed settings."""

    family = ""
    seed_keys: tuple[str, ...] = ()  # metadata fields that name one question in the seed's item and result rows
    # Its scored fields carry the valid time of the gold answer's fact and of the chosen one (`gold_from`,
    # `chosen_from`, `chosen_to`), so its answers split into pre- and post-cutoff (`chronokg.metrics.cutoff`).
    dated_gold = False

    def with_options(self, options: Mapping[str, Any]) -> Profile:
        """This profile under a run's options for its family (`RunOptions.family_options`), e.g. a protocol
        variant that takes several calls; a profile that takes none refuses any."""
        if options:
            raise ChronoKGError(f"the {self.family or 'default'} evaluation profile takes no options "
                                f"(given: {', '.join(sorted(options))})")
        return self

    def samples(self, question: Question, protocol: str, requested: int) -> int:
        """How many samples of this question to take (the seed's protocol may fix it)."""
        return requested

    def config(self, question: Question, protocol: str, sample: int) -> GenerateConfig:
        return GenerateConfig(temperature=0.0)

    def request(self, question: Question, protocol: str, sample: int) -> ModelRequest:
        messages = []
        if question.system:
            messages.append(ChatMessage(role="system", content=question.system))
        messages.append(ChatMessage(role="user", content=question.input))
        return ModelRequest(messages=messages, config=self.config(question, protocol, sample), epoch=sample,
                            metadata={"question_id": question.id, "family": question.family})

    def extract(self, question: Question, output: str, protocol: str) -> str | None:
        """The answer in `output` (a label, or text for open questions)."""
        return output.strip() or None

    def score(self, question: Question, answer: str | None, protocol: str) -> tuple[bool | None, float | None,
                                                                                   dict[str, Any]]:
        """(correct, score, fields for the metrics)."""
        correct = answer is not None and answer == question.target
        return correct, float(correct), {}

    def render(self, question: Question, label: str) -> str:
        """An output this profile's extractor reads as `label` (for the reference baselines)."""
        return label

    def seed_result(self, question: Question, record: Any) -> tuple[str, dict[str, Any]] | None:
        """(file name, record) of this sample in the seed's own result format, so the seed's scripts can
        re-score a chronokg run; None when the family has no such format."""
        return None

    def seed_results(self, items: Iterable[tuple[Question, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every (question, record) of a run in the seed's result format; by default `seed_result` of each, in
        the run's order. A family whose result rows are numbered or ordered overrides it."""
        for question, record in items:
            result = self.seed_result(question, record)
            if result is not None:
                yield result

    def seed_question_ids(self, source: Path, rows: Sequence[Mapping[str, Any]],
                          questions: Sequence[Question]) -> list[str | None]:
        """For rows of the seed's own result file `source` that name no chronokg id: the id of the question each
        answers, among this family's `questions` (None where it cannot tell). By default: the one question whose
        metadata `seed_keys` equal the row's fields of those names (the seed's result rows copy its item's
        fields; compared as text, since CSV gives text); none when the family declares no keys."""
        if not self.seed_keys:
            return [None] * len(rows)
        index: dict[tuple[str, ...], list[str]] = {}
        for q in questions:
            index.setdefault(tuple(str(q.metadata.get(k)) for k in self.seed_keys), []).append(q.id)
        found = [index.get(tuple(str(r.get(k)) for k in self.seed_keys), []) if all(k in r for k in self.seed_keys)
                 else [] for r in rows]
        return [ids[0] if len(ids) == 1 else None for ids in found]

    def seed_file(self, name: str, records: list[dict[str, Any]]) -> Any:
        """The content of seed-format file `name` from its records (default: the JSON list of them)."""
        return records

    def seed_positions(self, name: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Where each record lands in the content `seed_file` makes of them, for the side file of chronokg ids
        (default: `record`, its 0-based position). A family whose `seed_file` regroups records overrides it."""
        return [{"record": n} for n in range(len(records))]

    def context_fields(self, question: Question, given: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """Fields the metrics group by that come from what an arm gave the model (`given`: the sample's steps, the
        retrieval step of `--rag` first, then the profile's and the agent's), merged into the sample's fields
        (default: none)."""
        return {}

    def chosen_fact(self, question: Question, answer: str | None) -> str | None:
        """The id of the fact the chosen option states, if any (linked from the prediction in the graph)."""
        return None

    def failed(self, question: Question, protocol: str, error: str) -> Outcome | None:
        """What a request that failed (after its retries) counts as: None (the default) leaves a failed sample, which
        no metric counts and a resumed run asks again; a protocol whose seed scores a failed request (its own
        counting) returns that scored outcome, with `request_error` in its fields."""
        return None

    async def answer(self, client: ModelClient, question: Question, protocol: str, sample: int) -> Outcome:
        request = self.request(question, protocol, sample)
        start = time.perf_counter()
        completion = await client.generate(request)
        return self.outcome(question, protocol, completion, time.perf_counter() - start,
                            request_hash=request_hash(request))

    def outcome(self, question: Question, protocol: str, completion: Completion, elapsed: float,
                steps: list[dict[str, Any]] | None = None, request_hash: str | None = None) -> Outcome:
        text = completion.text
        answer = self.extract(question, text, protocol)
        correct, score, fields = self.score(question, answer, protocol)
        return Outcome(output=text, answer=answer, correct=correct, score=score, fields=fields,
                       steps=steps or [], prompt_tokens=completion.usage.prompt_tokens,
                       completion_tokens=completion.usage.completion_tokens,
                       latency_s=completion.latency_s or elapsed, retries=completion.retries,
                       cached=completion.cached, request_hash=request_hash)


def request_hash(request: ModelRequest) -> str:
    """What was sent, as a hash (messages or prompt, configuration, epoch; not the metadata)."""
    text = request.model_dump_json(exclude={"metadata"}, exclude_none=True)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


PROFILES: Registry[Profile] = Registry("evaluation profile", group="profiles")
PROFILES.register("tempomed", "chronokg.eval.profiles.tempomed:PROFILE")
PROFILES.register("conflictmedqa", "chronokg.eval.profiles.conflictmedqa:PROFILE")
PROFILES.register("chroknow", "chronokg.eval.profiles.chroknow:PROFILE")
PROFILES.register("benchage", "chronokg.eval.profiles.benchage:PROFILE")
PROFILES.register("micxr", "chronokg.eval.profiles.micxr:PROFILE")


def profile_for(family: str, options: Mapping[str, Any] | None = None) -> Profile:
    """The family's profile, under `options` (a run's options for that family) when given.

    A family without a profile is refused (a silent default would score its questions by rules it never chose).
    """
    if family not in PROFILES:
        raise ChronoKGError(f"no evaluation profile for family {family!r} (known: {', '.join(PROFILES.names())}); "
                            "a family declares one in chronokg.profiles (docs/extending.md)")
    profile = PROFILES.get(family)
    return profile.with_options(options) if options else profile
