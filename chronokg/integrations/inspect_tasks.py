"""inspect_ai tasks for chronokg's generated benchmarks: `inspect eval chronokg/tempomed -T questions=FILE`.

Each task sends what chronokg's own runner sends: the family's profile (`chronokg.eval.profile`) builds the
seed's system and user messages and sampling settings, takes every call its protocol takes (ConflictMedQA's
clarification follow-up, MI-CXR's stages), and extracts and scores the answer by the family's rule. The calls go
to inspect's model (`--model`), through `InspectClient`, so a run made with inspect scores as `chronokg eval run`
would on the same outputs, and `chronokg eval score --predictions LOG` turns its log into a chronokg run.

Differences the route cannot avoid: inspect has no raw-completion call, so a prompt chronokg would send to
`/v1/completions` (ChroKnow's few-shot prompts) is sent as one user message; the agent and RAG arms and the
BenchAge judge are chronokg runner options and are not offered here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    ContentImage,
    ContentText,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.model import GenerateConfig as InspectConfig
from inspect_ai.scorer import Score, Scorer, Target, accuracy, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import registry_info

from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError
from chronokg.eval.profile import Outcome, profile_for
from chronokg.eval.runner import load_questions
from chronokg.models import Completion, ModelRequest
from chronokg.models import types as ck

OUTCOME = "chronokg"  # the key of the sample's outcome in the task state's metadata


class InspectClient:
    """chronokg's `ModelClient` protocol over an inspect `Model`: the profile's requests, sent by inspect."""

    def __init__(self, model: Model) -> None:
        self.model = model

    @property
    def spec(self) -> str:
        return f"inspect/{self.model}"

    async def generate(self, request: ModelRequest) -> Completion:
        messages = request.messages or [ck.ChatMessage(role="user", content=request.prompt or "")]
        c = request.config
        config = InspectConfig(temperature=c.temperature, top_p=c.top_p, max_tokens=c.max_tokens, stop_seqs=c.stop,
                               seed=c.seed, num_choices=c.n if c.n > 1 else None)
        output = await self.model.generate([_message(m) for m in messages], config=config)
        choices = [ck.Choice(index=i, text=choice.message.text, finish_reason=str(choice.stop_reason))
                   for i, choice in enumerate(output.choices)] or [ck.Choice(index=0, text="")]
        usage = output.usage
        return Completion(spec=self.spec, choices=choices,
                          usage=ck.Usage(prompt_tokens=usage.input_tokens if usage else 0,
                                         completion_tokens=usage.output_tokens if usage else 0))

    async def aclose(self) -> None:
        return None


def _message(message: ck.ChatMessage) -> ChatMessage:
    content: Any = message.content or ""
    if isinstance(content, list):
        content = [ContentImage(image=part["image_url"]["url"]) if part.get("type") == "image_url"
                   else ContentText(text=str(part.get("text", ""))) for part in content]
    if message.role == "system":
        return ChatMessageSystem(content=content)
    if message.role == "assistant":
        return ChatMessageAssistant(content=content)
    return ChatMessageUser(content=content)


def _sample(question: Question) -> Sample:
    """The question as inspect shows it in its log: the exact system and user messages, the options in order,
    the target as the display label the family's extractor returns."""
    messages: list[ChatMessage] = [ChatMessageSystem(content=question.system)] if question.system else []
    messages.append(ChatMessageUser(content=question.input))
    return Sample(id=question.id, input=messages, target=question.target,
                  metadata={"family": question.family, "variant": question.variant,
                            "choice_labels": [c.label for c in question.choices]})


@solver
def chronokg_protocol(family: str, protocol: str, questions: dict[str, Question],
                      options: dict[str, Any] | None = None) -> Solver:
    """Answer a sample as the family's profile does under `protocol` (every call it takes), with inspect's model."""
    profile = profile_for(family, options or None)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        question = questions[str(state.sample_id)]
        outcome: Outcome = await profile.answer(InspectClient(get_model()), question, protocol, state.epoch - 1)
        state.output = ModelOutput.from_content(model=str(get_model()), content=outcome.output)
        state.messages.append(ChatMessageAssistant(content=outcome.output))
        state.metadata[OUTCOME] = {"answer": outcome.answer, "correct": outcome.correct, "score": outcome.score,
                                   "fields": json.loads(json.dumps(outcome.fields, default=str)),
                                   "steps": json.loads(json.dumps(outcome.steps, default=str))}
        return state

    return solve


@scorer(metrics=[accuracy(), stderr()])
def chronokg_scorer() -> Scorer:
    """The family's own score of the sample (computed by the solver, which knows every call's output)."""

    async def score(state: TaskState, target: Target) -> Score:
        got = state.metadata.get(OUTCOME) or {}
        value = got.get("score")
        return Score(value=float(value) if value is not None else 0.0, answer=got.get("answer"),
                     explanation=state.output.completion, metadata=got.get("fields"))

    return score


def family_task(family: str, questions: str, protocol: str = "seed", samples: int = 1,
                options: dict[str, Any] | None = None) -> Task:
    """The task of `family`'s questions in the canonical JSONL `questions` (other families' lines are left out)."""
    if protocol not in ("seed", "chronokg"):
        raise ChronoKGError(f"protocol {protocol!r}: give seed or chronokg")
    chosen = [q for q in load_questions([Path(questions)], None) if q.family == family]
    if not chosen:
        raise ChronoKGError(f"{questions}: no {family} questions")
    epochs = profile_for(family, options or None).samples(chosen[0], protocol, samples)
    by_id = {q.id: q for q in chosen}
    return Task(dataset=MemoryDataset([_sample(q) for q in chosen], name=f"chronokg-{family}"),
                solver=chronokg_protocol(family, protocol, by_id, options), scorer=chronokg_scorer(),
                epochs=Epochs(epochs, "mean"), name=f"chronokg/{family}",
                metadata={"chronokg_protocol": protocol, "chronokg_family": family, "chronokg_questions": questions})


def _chronokg_task(func: Callable[..., Task]) -> Callable[..., Task]:
    """`@task`, always registered as "chronokg/<name>". inspect namespaces a package's tasks only when it takes the
    package for an installed one; with a checkout's root on sys.path (pytest, `python -m inspect_ai` run there) the
    `chronokg.egg-info` the editable install leaves in it hides the install's record, the tasks would be registered
    bare and `chronokg/<family>` would not be found ("No inspect tasks were found at the specified paths")."""
    registered: Callable[..., Task] = task(func)
    if registry_info(registered).name.startswith("chronokg/"):
        return registered
    named: Callable[..., Task] = task(name=f"chronokg/{func.__name__}")(func)
    return named


@_chronokg_task
def tempomed(questions: str, protocol: str = "seed", samples: int = 1) -> Task:
    """TempoMed-Bench MCQs and year-sweep probes."""
    return family_task("tempomed", questions, protocol, samples)


@_chronokg_task
def conflictmedqa(questions: str, protocol: str = "seed", samples: int = 1) -> Task:
    """ConflictMedQA / DriftMed yes/no scenarios (the clarification follow-up included)."""
    return family_task("conflictmedqa", questions, protocol, samples)


@_chronokg_task
def chroknow(questions: str, protocol: str = "seed", samples: int = 1) -> Task:
    """ChroKnowBench checks (the seed protocol's two temperatures as two epochs)."""
    return family_task("chroknow", questions, protocol, samples)


@_chronokg_task
def benchage(questions: str, protocol: str = "seed", samples: int = 1) -> Task:
    """"When Benchmarks Age" QA items, scored by exact/alias match."""
    return family_task("benchage", questions, protocol, samples)


@_chronokg_task
def micxr(questions: str, protocol: str = "seed", samples: int = 1, stagewise: bool = False,
          image_root: str | None = None) -> Task:
    """MI-CXR temporal questions (single-step, or stage-wise with `-T stagewise=true`)."""
    options: dict[str, Any] = {"stagewise": True} if stagewise else {}
    if image_root:
        options["image_root"] = image_root
    return family_task("micxr", questions, protocol, samples, options)
