"""inspect_ai tasks for chronokg's generated benchmarks: `inspect eval chronokg/tempomed -T questions=FILE`.

Each task sends what chronokg's own runner sends: the family's profile (`chronokg.eval.profile`) builds the
seed's system and user messages and sampling settings, takes every call its protocol takes (ConflictMedQA's
clarification follow-up, MI-CXR's stages), and extracts and scores the answer by the family's rule. The calls go
to inspect's model (`--model`), through `InspectClient`, so a run made with inspect scores as `chronokg eval run`
would on the same outputs, and `chronokg eval score --predictions LOG` turns its log into a chronokg run.

Each sample's metadata carries the item's dates (`chronokg.eval.item_dates`: read from `-T store=URI`, else from
the settings' store where there is one, else from the evidence rows); `-T cutoff=DATE` adds chronokg's
pre/post-cutoff split and stale count as metrics, `-T store=URI` / `-T known_at=now|DATE` re-score against the
store (`chronokg.integrations.inspect_scoring`).

Differences the route cannot avoid: inspect has no raw-completion call, so a prompt chronokg would send to
`/v1/completions` (ChroKnow's few-shot prompts) is sent as one user message; the agent and RAG arms and the
BenchAge judge are chronokg runner options and are not offered here.
"""

from __future__ import annotations

import json
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
from inspect_ai.solver import Generate, Solver, TaskState, solver

from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError
from chronokg.eval.item_dates import Facts, fact_dates, iso, item_dates, needed_fact_ids, stored_facts
from chronokg.eval.profile import Outcome, profile_for
from chronokg.eval.runner import load_questions
from chronokg.integrations.inspect_scoring import OUTCOME, chronokg_scorer, day, open_reader, ours
from chronokg.models import Completion, ModelRequest
from chronokg.models import types as ck


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


def sample_metadata(question: Question, facts: Facts | None = None) -> dict[str, Any]:
    """What inspect shows and filters a sample by: family, variant, display labels and the item's dates as ISO
    days (`chronokg.eval.item_dates`, from the store's fact dates `facts` where given)."""
    return {"family": question.family, "variant": question.variant,
            "choice_labels": [c.label for c in question.choices], **iso(item_dates(question, facts))}


def _sample(question: Question, facts: Facts | None = None) -> Sample:
    """The question as inspect shows it in its log: the exact system and user messages, the options in order,
    the target as the display label the family's extractor returns."""
    messages: list[ChatMessage] = [ChatMessageSystem(content=question.system)] if question.system else []
    messages.append(ChatMessageUser(content=question.input))
    return Sample(id=question.id, input=messages, target=question.target, metadata=sample_metadata(question, facts))


@solver
def chronokg_protocol(family: str, protocol: str, questions: dict[str, Question],
                      options: dict[str, Any] | None = None, source: str | None = None) -> Solver:
    """Answer a sample as the family's profile does under `protocol` (every call it takes), with inspect's model;
    the outcome names its questions file (`source`) and protocol, for re-scoring."""
    profile = profile_for(family, options or None)

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        question = questions[str(state.sample_id)]
        outcome: Outcome = await profile.answer(InspectClient(get_model()), question, protocol, state.epoch - 1)
        state.output = ModelOutput.from_content(model=str(get_model()), content=outcome.output)
        state.messages.append(ChatMessageAssistant(content=outcome.output))
        state.metadata[OUTCOME] = {"answer": outcome.answer, "correct": outcome.correct, "score": outcome.score,
                                   "fields": json.loads(json.dumps(outcome.fields, default=str)),
                                   "steps": json.loads(json.dumps(outcome.steps, default=str)),
                                   "questions": source, "protocol": protocol}
        return state

    return solve


class Split:
    """The task arguments every family takes beside its own: `cutoff=DATE` (the pre/post split and the stale
    count as metrics), `store=URI` and `known_at=now|DATE` (re-scoring against the store:
    `chronokg.integrations.inspect_scoring`)."""

    def __init__(self, cutoff: str | None = None, store: str | None = None, known_at: str | None = None) -> None:
        if cutoff:
            day(cutoff, "cutoff")
        if known_at and known_at != "now":
            day(known_at, "known_at")
        self.cutoff, self.store, self.known_at = cutoff, store, known_at


def family_task(family: str, questions: str, protocol: str = "seed", samples: int = 1,
                options: dict[str, Any] | None = None, split: Split | None = None) -> Task:
    """The task of `family`'s questions in the canonical JSONL `questions` (other families' lines are left out)."""
    if protocol not in ("seed", "chronokg"):
        raise ChronoKGError(f"protocol {protocol!r}: give seed or chronokg")
    split = split or Split()
    chosen = [q for q in load_questions([Path(questions)], None) if q.family == family]
    if not chosen:
        raise ChronoKGError(f"{questions}: no {family} questions")
    epochs = profile_for(family, options or None).samples(chosen[0], protocol, samples)
    by_id = {q.id: q for q in chosen}
    if split.store is not None:
        with open_reader(split.store) as store:  # one clear error when the store named is not there
            facts: Facts | None = fact_dates(store, needed_fact_ids(chosen))
    else:
        facts = stored_facts(None, chosen)
    source = str(Path(questions).resolve())
    scoring = chronokg_scorer(questions=source, family=family, protocol=protocol, store=split.store,
                              known_at=split.known_at, cutoff=split.cutoff)
    return Task(dataset=MemoryDataset([_sample(q, facts) for q in chosen], name=f"chronokg-{family}"),
                solver=chronokg_protocol(family, protocol, by_id, options, source), scorer=scoring,
                epochs=Epochs(epochs, "mean"), name=f"chronokg/{family}",
                metadata={"chronokg_protocol": protocol, "chronokg_family": family, "chronokg_questions": questions,
                          "chronokg_cutoff": split.cutoff})


_chronokg_task = ours(task)


@_chronokg_task
def tempomed(questions: str, protocol: str = "seed", samples: int = 1, cutoff: str | None = None,
             store: str | None = None, known_at: str | None = None) -> Task:
    """TempoMed-Bench MCQs and year-sweep probes."""
    return family_task("tempomed", questions, protocol, samples, split=Split(cutoff, store, known_at))


@_chronokg_task
def conflictmedqa(questions: str, protocol: str = "seed", samples: int = 1, cutoff: str | None = None,
                  store: str | None = None, known_at: str | None = None) -> Task:
    """ConflictMedQA / DriftMed yes/no scenarios (the clarification follow-up included)."""
    return family_task("conflictmedqa", questions, protocol, samples, split=Split(cutoff, store, known_at))


@_chronokg_task
def chroknow(questions: str, protocol: str = "seed", samples: int = 1, cutoff: str | None = None,
             store: str | None = None, known_at: str | None = None) -> Task:
    """ChroKnowBench checks (the seed protocol's two temperatures as two epochs)."""
    return family_task("chroknow", questions, protocol, samples, split=Split(cutoff, store, known_at))


@_chronokg_task
def benchage(questions: str, protocol: str = "seed", samples: int = 1, cutoff: str | None = None,
             store: str | None = None, known_at: str | None = None) -> Task:
    """"When Benchmarks Age" QA items, scored by exact/alias match."""
    return family_task("benchage", questions, protocol, samples, split=Split(cutoff, store, known_at))


@_chronokg_task
def micxr(questions: str, protocol: str = "seed", samples: int = 1, stagewise: bool = False,
          image_root: str | None = None, cutoff: str | None = None, store: str | None = None,
          known_at: str | None = None) -> Task:
    """MI-CXR temporal questions (single-step, or stage-wise with `-T stagewise=true`)."""
    options: dict[str, Any] = {"stagewise": True} if stagewise else {}
    if image_root:
        options["image_root"] = image_root
    return family_task("micxr", questions, protocol, samples, options, Split(cutoff, store, known_at))
