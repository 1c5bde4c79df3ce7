"""ChroKnowBench prompt assembly: the few-shot draws and the Generation, MCQA and TF prompts of one item and
year (`Build`), as the seed's `ChroKnowledge.py` assembles them under `--protocol seed`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chronokg.bench.families.chroknow_item import INVARIANT as INVARIANT
from chronokg.bench.families.chroknow_item import INVARIANT_YEARS as INVARIANT_YEARS
from chronokg.bench.families.chroknow_item import ORIGIN_WIKIDATA, Item
from chronokg.bench.families.chroknow_options import (
    LABELS,
    QA_TEMPLATES,
    SEED_QA,
    SEED_QA_TARGET,
    SEED_TF,
    TF_TEMPLATES,
    G,
)
from chronokg.bench.families.chroknow_prompts import keyed, liquid_text, render, template
from chronokg.bench.families.chroknow_reading import canonical, fill_blank

# --- few-shot draws ---------------------------------------------------------------------------------------------


def option_candidates(item: Item, year: str, pool: Sequence[Item], seed: bool) -> list[Item]:
    """The seed's few-shot candidates: same relation (Legal: question type; CFR items: any), and for General
    (chronokg: every domain) only rows that have the year."""
    if item.origin == ORIGIN_WIKIDATA and all(f.origin == ORIGIN_WIKIDATA for f in pool):
        return sorted((f for f in pool if f.id != item.id), key=lambda f: f.id)  # each at its nearest year
    if item.origin == "cfr":
        found = [f for f in pool if f.id != item.id and f.gold(year)]
    elif item.legal:
        found = [f for f in pool if f.row.get("question_type") == item.row.get("question_type")]
    else:
        found = [f for f in pool if f.row.get("relation") == item.row.get("relation")]
    if item.domain == "General" and seed:
        found = [f for f in found if f"objects_{year}" in f.row]
    elif not seed and not item.invariant:
        found = [f for f in found if f.gold(year)]
    return found if seed else sorted(found, key=lambda f: f.id)


# --- building prompts -------------------------------------------------------------------------------------------


@dataclass
class Build:
    """What one prompt is built from."""

    item: Item
    year: str
    draw: int
    shots: list[Item]
    seed: bool
    counter: int  # position of this (item, year, draw) among the domain's prompts (balances the chronokg scheme)
    rng: random.Random

    def obj(self, x: Item) -> str:
        gold = x.gold(self.year) or [None]
        return liquid_text(gold[0]) if self.seed else canonical(gold[0])

    def dis(self, x: Item, k: int) -> str:
        value = x.distractors[k].value if k < len(x.distractors) else None
        return liquid_text(value) if self.seed else canonical(value)

    def t(self, x: Item) -> str:
        return x.t(self.year) or ""


def generation_prompt(b: Build) -> str:
    """`prompt_KT_t` (Legal: `prompt_GEN_Legal_t`) with the four exemplars and the item."""
    values: dict[str, Any] = {"t": b.t(b.item)}
    if b.item.legal:
        values["q"] = b.item.text()
        for k, f in enumerate(b.shots, start=1):
            values.update({f"t{k}": b.t(f), f"q{k}": f.text(), f"a{k}": b.obj(f)})
        return render(template("prompt_gen_legal_t"), **values)
    values.update(sub=b.item.text(), rel=b.item.row.get("relation"))
    for k, f in enumerate(b.shots, start=1):
        values.update({f"t{k}": b.t(f), f"sub{k}": f.text(), f"rel{k}": f.row.get("relation"), f"obj{k}": b.obj(f)})
    return render(template("prompt_kt_t"), **values)


def _qa_template(item: Item) -> str | None:
    if item.legal:
        return template("prompt_qa_legal_t")
    return keyed(QA_TEMPLATES[item.domain]).get(str(item.row.get("relation")))


def _tf_template(item: Item) -> str | None:
    if item.legal:
        return template("prompt_tf_legal_t")
    return keyed(TF_TEMPLATES[item.domain]).get(str(item.row.get("relation")))


def _layout(b: Build, k: int | None) -> tuple[int, ...]:
    """What Ans1..Ans4 hold for exemplar k (None: the item): the seed's tables, or a balanced position."""
    if b.seed:
        return SEED_QA_TARGET if k is None else SEED_QA[b.item.domain][k]
    position = b.counter % 4 if k is None else (b.counter + 1 + k) % 4
    order = [0, 1, 2]
    b.rng.shuffle(order)
    order.insert(position, G)
    return tuple(order)


def _qa_block(b: Build, tpl: str, x: Item, layout: tuple[int, ...]) -> tuple[str, list[str]]:
    options = [b.obj(x) if s == G else b.dis(x, s) for s in layout]
    head = {"q": x.text()} if x.legal else {"sub": x.text()}
    text = render(tpl, t=b.t(x), **head, **{f"Ans{j}": o for j, o in enumerate(options, start=1)})
    return text, options


def mcqa_prompt(b: Build) -> tuple[str, tuple[int, ...], list[str]] | None:
    """Four answered exemplars and the item's question; returns (prompt, the item's layout, its options)."""
    tpl = _qa_template(b.item)
    if tpl is None:
        return None
    parts = []
    for k, f in enumerate(b.shots):
        layout = _layout(b, k)
        block, _ = _qa_block(b, tpl, f, layout)
        parts.append(block + "\n" + f"({LABELS[layout.index(G)]}) " + b.obj(f) + "\n")
    layout = _layout(b, None)
    block, options = _qa_block(b, tpl, b.item, layout)
    return "\n".join(parts) + "\n" + block + "\n", layout, options


def _statement(b: Build, tpl: str, x: Item, which: int) -> str:
    shown_obj = b.obj(x) if which == G else b.dis(x, which)
    if x.legal:
        return render(tpl, t=b.t(x), q=fill_blank(x.text(), shown_obj, b.seed))
    return render(tpl, t=b.t(x), sub=x.text(), obj=shown_obj)


def tf_prompt(b: Build) -> tuple[str, int] | None:
    """Four labelled statements and the item's statement; returns (prompt, what the item's statement uses)."""
    tpl = _tf_template(b.item)
    if tpl is None:
        return None
    if b.seed:
        uses, target = list(SEED_TF[b.item.domain]), G
    else:
        uses = [G, b.rng.randrange(3), G, b.rng.randrange(3)]
        b.rng.shuffle(uses)
        target = G if b.counter % 2 == 0 else b.rng.randrange(3)
    parts = [_statement(b, tpl, f, u) + ("A. true" if u == G else "A. false") + "\n" for f, u in zip(b.shots, uses,
                                                                                                   strict=True)]
    return "\n".join(parts) + "\n" + _statement(b, tpl, b.item, target), target
