"""What a benchmark family is: one module in `bench/families/` with a `FAMILY` spec, registered in `FAMILIES`.

A family turns graph content into `Question`s, reading the graph only through
named queries (`QUERIES`), so every answer key is re-runnable. It declares its
options as a pydantic model (the CLI builds `chronokg generate NAME` from it), and
how to write its questions in the seed benchmark's own file format.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

import chronokg
from chronokg.bench.question import AnswerKey, Question
from chronokg.graph.store import GraphStore
from chronokg.progress import Progress
from chronokg.queries.spec import QUERIES, all_queries, evidence_hash
from chronokg.registry import Registry


class Protocol(StrEnum):
    """`seed` reproduces the published benchmark exactly, quirks included; `chronokg` fixes the quirks."""

    seed = "seed"
    chronokg = "chronokg"


class FamilyOptions(BaseModel):
    """Options every family takes (a family's own options model extends this)."""

    model_config = ConfigDict(extra="forbid")

    protocol: Protocol = Field(default=Protocol.seed, description="seed: the published construction, quirks "
                                                                  "included; chronokg: quirks fixed")
    seed: int = Field(default=0, description="Seed of every random choice (generation is deterministic for it)")
    limit: int | None = Field(default=None, ge=1, description="Build from at most this many source items")


@dataclass
class Context:
    """What a family generates with: the store (a reader is enough), where it came from, and helpers."""

    store: GraphStore
    snapshot: str
    since: set[str] | None = None  # only items loaded from these releases (`--since SNAPSHOT`)
    model: Any = None  # a ModelClient for the steps that need an LLM (None: template paths)
    progress: Progress | None = None
    notes: list[str] = field(default_factory=list)  # what the CLI prints after generating

    def key(self, query: str, params: Mapping[str, Any], answer: Callable[[list[dict[str, Any]]], str | None],
            rows: list[Any] | None = None) -> AnswerKey:
        """Run the registered `query` and keep its evidence as an answer key; `answer` reads the answer from it.

        `rows` may give the query's rows when they were derived without running it (see
        `queries.guidelines.at_date`); the same key is cached for the same query and parameters.
        """
        spec = all_queries().get(query)
        checked = spec.validate(dict(params)).model_dump(mode="json", by_alias=True)
        memo = (query, json.dumps(checked, sort_keys=True))
        if memo in self._keys:
            return self._keys[memo]
        if rows is None:
            rows = spec.run(self.store, dict(params))
        evidence = [r.model_dump(mode="json") for r in rows]
        key = AnswerKey(query=query, params=checked, evidence=evidence, evidence_hash=evidence_hash(evidence),
                        answer=answer(evidence))
        self._keys[memo] = key
        return key

    def rows(self, query: str, params: Mapping[str, Any]) -> list[Any]:
        """The typed rows of a registered query (for a family's own reading of the graph)."""
        return all_queries().get(query).run(self.store, dict(params))

    def rng(self, *scope: object) -> random.Random:
        """A random generator seeded by (options seed, scope): the same item draws the same way every run."""
        return random.Random(f"{self.options_seed}|" + "|".join(map(str, scope)))

    options_seed: int = 0
    _keys: dict[tuple[str, str], AnswerKey] = field(default_factory=dict)


@dataclass(frozen=True)
class Family:
    """A registered benchmark family."""

    name: str
    help: str
    options: type[FamilyOptions]
    generate: Callable[[Context, Any], Iterator[Question]]
    seed_format: Callable[[Iterable[Question]], Iterator[tuple[str, Any]]] | None = None  # (file name, record)
    answer: Callable[[Question, list[dict[str, Any]]], str | None] | None = None  # target from new evidence
    sources: str = ""  # citation of the seed (code and paper) the family reproduces
    needs: str = ""  # what the family builds from and which loader fills it (said when a store gives 0 questions)
    seed_blocks: tuple[str, ...] = ()  # seed .jsonl files of pretty-printed blocks separated by blank lines
    seed_objects: tuple[str, ...] = ()  # seed .json files holding the one object yielded for them, not a list
    seed_ascii: bool = False  # the seed's .jsonl lines escape non-ASCII text (`json.dumps`' default)
    seed_json_indent: int = 2  # the indent of the seed's `.json` lists (BenchAge's `json.dump(..., indent=4)`)
    seed_json_ascii: bool = False  # the seed's `.json` lists escape non-ASCII text (`json.dump`'s default)


# In a record a family's `seed_format` yields: what the seed does not write (the chronokg ids the record was built
# from, as `{"chronokg_ids": [...]}`, and any other field of ours). `write_seed` moves it to a side file, so seed
# files hold exactly the seed's fields.
OURS = "_chronokg"

FAMILIES: Registry[Family] = Registry("benchmark family", group="families")
FAMILIES.register("tempomed", "chronokg.bench.families.tempomed:FAMILY")
FAMILIES.register("conflictmedqa", "chronokg.bench.families.conflictmedqa:FAMILY")
FAMILIES.register("chroknow", "chronokg.bench.families.chroknow:FAMILY")
FAMILIES.register("micxr", "chronokg.bench.families.micxr:FAMILY")
FAMILIES.register("benchage", "chronokg.bench.families.benchage:FAMILY")


def generator_info(family: str, options: FamilyOptions) -> dict[str, Any]:
    return {"family": family, "options": options.model_dump(mode="json"), "chronokg": chronokg.__version__}


def generate(family: str, store: GraphStore, snapshot: str, options: FamilyOptions | Mapping[str, Any],
             since: set[str] | None = None, model: Any = None, progress: Progress | None = None
             ) -> tuple[list[Question], Context]:
    """All questions of `family` for `store` (deterministic for the options' seed)."""
    spec = FAMILIES.get(family)
    opts = options if isinstance(options, spec.options) else spec.options.model_validate(dict(options))
    ctx = Context(store=store, snapshot=snapshot, since=since, model=model, progress=progress,
                  options_seed=opts.seed)
    questions = list(spec.generate(ctx, opts))
    return questions, ctx


def registered_queries() -> list[str]:
    return QUERIES.names()
