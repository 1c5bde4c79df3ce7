"""TempoMed Table 3's items as the seed's RAG evaluation asks them (`--table3`, under `--protocol seed`).

Seed: GuanZihan/TempoMed-Bench at commit 74b6f2246dd44df0612e3e1b24d56f6837d6428c,
`pubmed_trajectory/rag_evaluation/main.py`: each released MCQ once per scope, its four options in the
released A-D order (no perturbation, no abstain option E), the user prompt `USER_PROMPT_TEMPLATE`
(`str.format`ted by `build_prompt`, lines 35-46) and the system prompt `SYSTEM_PROMPT` (lines 28-32; the
templates are `prompts/tempomed/rag_*.txt`). Scope `original_current_guideline`: the released stem, gold
the released `Correct` (always A); scope `counterpart_prior_guideline` (`--counterpart`,
`build_counterpart_items`): the stem rewritten to the prior year as the 5-option script does, gold B.
The answer reader is `chronokg.eval.extract.tempomed_rag_seed`.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import Any

from chronokg.bench.families.tempomed_prompts import template
from chronokg.bench.families.tempomed_rules import LABELS, ROLES, rewrite_stem
from chronokg.bench.family import Context, generator_info
from chronokg.bench.question import AnswerKey, Choice, Question, content_id
from chronokg.queries.guidelines import PairRow

NAME = "tempomed"
UNKNOWN_LABEL = "UNKNOWN"  # the seed's abstention: a label of the reader, never an option
SCOPES = {"up_to_date": "original_current_guideline", "historical": "counterpart_prior_guideline"}
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def rag_prompt(question: str, choices: list[str]) -> str:
    """The seed's user prompt for one item: every `{name}` of the template replaced in one pass, as
    `str.format` does (a stem holding "{choice_a}" stays as it is)."""
    values = {"question": question, **{f"choice_{c.lower()}": text for c, text in zip(LABELS, choices, strict=True)}}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template("RAG_USER"))


def table3_items(ctx: Context, options: Any, pair: PairRow, stem: str, choices: list[str],
                 base_meta: dict[str, Any], key_of: Any, derived: list[str]) -> Iterator[Question]:
    """The two items of one released MCQ: up-to-date (the released stem) then its counterpart (the prior year's
    stem). `key_of(ctx, pair, year)` is the family's answer key for the pair on a year."""
    assert pair.current_year is not None and pair.prior_year is not None
    texts = choices[:4]
    for target, scope in SCOPES.items():
        current = target == "up_to_date"
        year = pair.current_year if current else pair.prior_year
        question, rule = (stem, "none") if current else rewrite_stem(stem, pair.current_year, pair.prior_year)
        gold = "A" if current else "B"  # the released `Correct`, and the seed's `QuestionVariantCorrect`
        key: AnswerKey = key_of(ctx, pair, year)
        prompt = rag_prompt(question, texts)
        meta = {**base_meta, "question_variant": "current_guideline" if current else "prior_guideline",
                "evaluation_scope": scope, "question": question, "target": target, "year_current": pair.current_year,
                "year_previous": pair.prior_year, "target_guideline_year": year,
                "opposite_original_option": "B" if current else "A",
                "display_to_original_option": {c: c for c in LABELS}, "stem_rule": rule,
                "protocol": options.protocol.value}
        variant = f"table3/{target}"
        yield Question(
            id=content_id("q", NAME, variant, pair.pair, prompt, gold, base_meta.get("idx")), family=NAME,
            variant=variant, input=prompt, system=template("RAG_SYSTEM"),
            choices=[Choice(label=c, text=t, role=ROLES[c], original=c) for c, t in zip(LABELS, texts, strict=True)],
            target=gold, target_date=dt.date(year, 1, 1), answer_key=key, snapshot=ctx.snapshot,
            generator=generator_info(NAME, options), facts=[f for f in (pair.current_fact, pair.prior_fact) if f],
            derived_from=derived,
            metadata=meta,
        )
