"""ChroKnowBench's fixed facts (domains, option tables of the seed's `ChroKnowledge.py`, decoding, answer format)
and what a build may choose (`ChroKnowOptions`).

Split out of `chroknow.py` so that each module holds one thing.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from chronokg.bench.families.chroknow_item import INVARIANT as INVARIANT
from chronokg.bench.families.chroknow_item import INVARIANT_YEARS as INVARIANT_YEARS
from chronokg.bench.family import FamilyOptions

NAME = "chroknow"
DOMAINS = ("General", "Biomedical", "Legal", "CommonSense", "Math")
LABELS = ("a", "b", "c", "d")
SPLIT_ORDER = {"Dynamic": 0, "Static": 1}
BLANK = "____"
SEED_BLANK = " ____ "  # what the seed's Legal TF replaces (ChroKnowledge.py:544-560)
G = -1  # "the gold object" in the option tables below; 0, 1, 2 are distractor indices
# MCQA: what Ans1..Ans4 hold for few-shot 1..4 (ChroKnowledge.py:91-109, 306-324, 522-540, 726-766).
SEED_QA: dict[str, tuple[tuple[int, ...], ...]] = {
    "Biomedical": ((0, G, 1, 2), (0, 1, G, 2), (2, 1, 0, G), (1, 0, 2, G)),
    "General": ((G, 2, 1, 0), (0, 1, G, 2), (2, 1, G, 0), (1, 0, 2, G)),
    "Legal": ((0, G, 1, 2), (G, 1, 2, 0), (G, 1, 0, 2), (1, 0, G, 2)),
    "CommonSense": ((0, 2, 1, G), (0, G, 2, 1), (2, 1, 0, G), (G, 0, 2, 1)),
    "Math": ((0, 2, 1, G), (0, G, 2, 1), (2, 1, 0, G), (G, 0, 2, 1)),
}
SEED_QA_TARGET = (0, 2, 1, G)  # the gold is always (d)
# TF: the object each few-shot statement uses (true only for the gold) (ChroKnowledge.py:112-131, 327-346, ...).
SEED_TF: dict[str, tuple[int, ...]] = {
    "Biomedical": (G, 0, 2, G), "General": (2, 0, 2, G), "Legal": (0, G, G, 1),
    "Math": (G, 0, G, 0), "CommonSense": (G, G, G, 0),
}
QA_TEMPLATES = {d: f"prompt_qa_{d.lower()}_t" for d in DOMAINS if d != "Legal"}
TF_TEMPLATES = {d: f"prompt_tf_{d.lower()}_t" for d in DOMAINS if d != "Legal"}
# How the seed's runs decode (ChroKnowledge.py:40-59, 859; README; paper A.4): for the evaluation runner.
DECODING = {"temperatures": [0.0, 0.7], "max_tokens": 50, "top_p": 1.0, "seed": 42, "stop": ["\n"],
            "raw_completion": True, "api_system": "You are a helpful assistant."}
ANSWER_FORMAT = {"prefix": "A. ", "first_line": True, "fuzzy": "rapidfuzz.fuzz.token_set_ratio", "threshold": 70,
                 "lowercase": True}
LLM_CONCURRENCY = 8
DISTRACTOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"distractors": {"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 3}},
    "required": ["distractors"],
}


class SeedDomain(StrEnum):
    """The seed's domains (its `--domain` values)."""

    General = "General"
    Biomedical = "Biomedical"
    Legal = "Legal"
    CommonSense = "CommonSense"
    Math = "Math"


class Template(StrEnum):
    generation = "generation"
    mcqa = "mcqa"
    tf = "tf"


class ChroKnowOptions(FamilyOptions):
    """What to build. Defaults build every template for every loaded domain, five draws each, as the seed."""

    templates: list[Template] = Field(default_factory=lambda: list(Template), description="Which prompt templates")
    domains: list[SeedDomain] | None = Field(default=None, description="Only these seed domains (default: every "
                                                                       "loaded one)")
    draws: int = Field(default=5, ge=1, le=50, description="Few-shot draws (prompts) per item, year and template")
    cfr: bool = Field(default=True, description="Also build Legal cloze items from CFR paragraph changes")
    wikidata: bool = Field(default=True, description="Also build General items from Wikidata facts loaded with "
                                                     "`ingest wikidata` (each timed subject and property)")
    cfr_max_words: int = Field(default=6, ge=1, description="Longest changed span (words, either side) a CFR "
                                                            "change may have to become a cloze item")
