"""ChroKnowBench (dmis-lab/ChroKnowledge), re-created from the graph: Generation, MCQA and TF prompts per
(subject, relation, year) with known objects, and Legal cloze items from CFR changed spans.

Seed: dmis-lab/ChroKnowledge `ChroKnowledge.py` and `sources/template.py` (commit 37ff685), paper
arXiv 2410.09870 (ICLR 2025). Every difference between `--protocol seed` and `--protocol chronokg` is
listed in docs/benchmarks/chroknow.md with the seed's file and line.

**Rows.** Each loaded ChroKnowBench row (a SourceQuestion keeping the row exactly as read, see
`ingest/chroknow.py`) is one item; its years are the seed's (the distinct `str(release_date_YYYY)[:4]`,
2020-2024 for time-invariant rows), and a year is asked about when the row has objects for it. Per
(item, year) five few-shot draws of four exemplars from the loaded `Fewshots/` pool: same relation (and,
for General, rows that have the year), same question type for Legal. Each draw gives one prompt per
template (the same draws for every template, as the seed's separate runs make them).

**`--protocol seed`**: the seed's templates and assembly byte for byte (python-liquid rendering, alias
lists glued, the options (a)=d0, (b)=d2, (c)=d1, (d)=gold, the fixed few-shot label patterns, TF targets
always true, the Legal blank filled by `replace(' ____ ', x)`), and the draws replayed from one
`random.Random(seed)` per domain consumed in the seed's order (Dynamic file rows, then Static, years
ascending, five `sample(candidates, 4)` each). `--protocol chronokg`: per-(row, year, draw) RNG, few-shots
filtered by year everywhere, gold positions balanced (also in the exemplars), half the TF items false,
one clean object string rendered, the blank replaced where it is.

**Distractors**: the source's, in its order, unless one is a valid object of the subject at some time (then
it is dropped and said so); missing ones are written by a model with the paper's prompts when one is given,
else (and to fill up) taken from the graph: objects the same relation takes for other subjects that were
never valid for this subject. No shown distractor is ever a valid object for its subject.

**General items from Wikidata** (`chroknow_wikidata.py`): each timed (subject, property) of the statements
loaded with `ingest wikidata` is an item, as the paper builds ChroKnowBench from Wikidata.

**Legal cloze from CFR**: every CFR paragraph change with one short changed region (`cfr-changes`)
becomes a Legal item: the paragraph with the changed span blanked (`____`), its answer per edition year
the span's text in the edition of that year.

Every question's answer key is `facts-during`: the facts of the item's (subject, predicate) in its year
(a CFR item: on its edition's day).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import random
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import Field

from chronokg.bench.families.chroknow_item import INVARIANT as INVARIANT
from chronokg.bench.families.chroknow_item import INVARIANT_YEARS as INVARIANT_YEARS
from chronokg.bench.families.chroknow_item import ORIGIN_WIKIDATA, Distractor, Item
from chronokg.bench.families.chroknow_prompts import keyed, liquid_text, messages, render, template
from chronokg.bench.families.chroknow_wikidata import wikidata_items
from chronokg.bench.family import OURS, Context, Family, FamilyOptions, Protocol, generator_info
from chronokg.bench.question import AnswerKey, Choice, Question, content_id
from chronokg.ingest.chroknow import ANSWER, entity_id, question_id
from chronokg.queries.chroknow import CfrChangeRow, ChroKnowRow, RelationRow, shown

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


# --- rendering helpers ------------------------------------------------------------------------------------------


def canonical(value: Any) -> str:
    """One clean object string (chronokg protocol): the first alias of an alias list."""
    while isinstance(value, list):
        if not value:
            return ""
        value = value[0]
    return liquid_text(value)


def texts_of(value: Any) -> list[str]:
    """Every string an object value stands for (all its aliases)."""
    if isinstance(value, list):
        return [t for v in value for t in texts_of(v)]
    return [liquid_text(value)] if value is not None else []


def norm(text: str) -> str:
    return " ".join(text.casefold().split())


def gold_aliases(gold: list[Any]) -> list[str]:
    """The gold set the seed scores against (process.py `get_benchmark`): alias lists flattened, in order."""
    return list(dict.fromkeys(t for v in gold for t in texts_of(v)))


def raw_distractors(row: dict[str, Any]) -> list[Any]:
    """The row's distractors; CommonSense few-shot rows nest them as {"distractor": [...]} (seed lines 749-761)."""
    value = row.get("distractor")
    if isinstance(value, dict):
        value = value.get("distractor")
    return list(value) if isinstance(value, list) else []


def fill_blank(question: str, answer: str, seed: bool) -> str:
    """Legal TF statement: the seed's `replace(' ____ ', x)` (eats both spaces; other blanks stay), or the
    blank itself replaced where it is (chronokg)."""
    if seed:
        return question.replace(SEED_BLANK, answer)
    return re.sub(r"_{3,}", lambda _: answer, question, count=1)


# --- reading the graph ------------------------------------------------------------------------------------------


def _item(row: ChroKnowRow, fewshot: bool) -> Item | None:
    data = json.loads(row.row_json) if row.row_json else None
    if not isinstance(data, dict) or row.seed_domain not in DOMAINS:
        return None
    legal = row.seed_domain == "Legal"
    if fewshot:
        subject = question_id(str(data.get("question", ""))) if legal else entity_id(str(data.get("subject", "")))
    else:
        subject = row.subject or ""
    item = Item(id=row.id, domain=row.seed_domain, origin="fewshot" if fewshot else "chroknowbench", row=data,
                subject_id=subject, predicate=ANSWER if legal else str(row.relation or data.get("relation")),
                source_id=row.source_id, state=row.temporal_state, split=row.split, file_name=row.file_name,
                record=row.record, derived=f"SourceQuestion:{row.id}")
    for year in item.years():
        if item.invariant:
            item.windows[year] = (dt.date(1, 1, 1), dt.date(9999, 12, 31))
        else:
            item.windows[year] = (dt.date(int(year), 1, 1), dt.date(int(year) + 1, 1, 1))
    return item


def _seed_order(item: Item) -> tuple[Any, ...]:
    """The order the seed reads rows in: the Dynamic file, then the Static file, each in file order."""
    return (item.origin == "cfr", item.origin == ORIGIN_WIKIDATA, SPLIT_ORDER.get(item.split or "", 2),
            item.file_name or "", item.record or 0, item.id)


class Graph:
    """What the family reads from the store, through named queries, cached per run."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._relation: dict[str, list[RelationRow]] = {}

    def items(self, fewshot: bool) -> list[Item]:
        params: dict[str, Any] = {"fewshot": fewshot}
        rows: list[ChroKnowRow] = self.ctx.rows("chroknow-rows", params)
        items = [i for r in rows if (i := _item(r, fewshot)) is not None]
        unknown = sorted({r.file_name or r.source_id for r in rows if r.seed_domain not in DOMAINS})
        if unknown:
            self.ctx.notes.append(f"rows of {', '.join(unknown)} left out: the file name does not say which seed "
                                  "domain (templates) they belong to")
        return sorted(items, key=_seed_order)

    def relation(self, predicate: str) -> list[RelationRow]:
        if predicate not in self._relation:
            self._relation[predicate] = self.ctx.rows("relation-objects", {"predicate": predicate})
        return self._relation[predicate]

    def valid_texts(self, item: Item) -> set[str]:
        """Every text that names an object valid for the item's subject at some time (normalised)."""
        out = {norm(t) for y in item.years() for v in (item.gold(y) or []) for t in texts_of(v)}
        if item.origin == "cfr":
            return out
        for r in self.relation(item.predicate):
            if item.subject_id in r.subjects:
                out.update(norm(t) for t in _row_texts(r))
        return out


def _row_texts(r: RelationRow) -> list[str]:
    texts = [t for t in (r.caption, *(r.aliases or [])) if t]
    if r.object is None and r.value is not None:
        texts.append(str(r.value))
    return texts


# --- distractors ------------------------------------------------------------------------------------------------


def _resolve_distractors(ctx: Context, graph: Graph, items: Sequence[Item], pools: dict[str, list[str]]) -> None:
    """Give every item three distractors never valid for its subject: the source's, then a model's, then the
    graph's (see the module docstring)."""
    valid = {item.id: graph.valid_texts(item) for item in items}
    for item in items:
        kept: list[Distractor] = []
        for value in raw_distractors(item.row):
            if not any(t.strip() for t in texts_of(value)):
                continue
            if any(norm(t) in valid[item.id] for t in texts_of(value)):
                item.quirks.append("source_distractor_valid_for_subject")
                ctx.notes.append(f"{item.id}: source distractor {canonical(value)!r} is a valid object of its "
                                 "subject; replaced")
                continue
            kept.append(Distractor(value, "source"))
        item.distractors = kept
    needy = [i for i in items if len(i.distractors) < 3]
    if ctx.model is not None and needy:
        written = asyncio.run(_llm_distractors(ctx, needy))
        for item, texts in zip(needy, written, strict=True):
            _add(item, texts, "llm", valid[item.id])
    for item in items:
        if len(item.distractors) < 3:
            candidates = pools.get(item.id) if item.origin == "cfr" else _graph_candidates(graph, item)
            rng = ctx.rng(NAME, "distractors", item.id)
            shuffled = sorted(candidates or [])
            rng.shuffle(shuffled)
            if item.origin == "cfr":  # spans of a similar length read as plausible fills
                width = len(canonical(item.gold(item.known_years()[0]) or "").split())
                shuffled.sort(key=lambda s: abs(len(s.split()) - width))
            _add(item, shuffled, "graph", valid[item.id])


def _add(item: Item, texts: Iterable[str], source: str, valid: set[str]) -> None:
    seen = {norm(t) for d in item.distractors for t in texts_of(d.value)}
    for text in texts:
        if len(item.distractors) >= 3:
            return
        key = norm(text)
        if key and key not in valid and key not in seen:
            item.distractors.append(Distractor(text, source))
            seen.add(key)


def _graph_candidates(graph: Graph, item: Item) -> list[str]:
    """Objects of the same relation valid for other subjects (the caller drops those valid for this one)."""
    return [r.caption or str(r.value) for r in graph.relation(item.predicate)
            if any(s != item.subject_id for s in r.subjects) and (r.caption or r.value is not None)]


async def _llm_distractors(ctx: Context, items: Sequence[Item]) -> list[list[str]]:
    """Three distractors per item from the model, with the paper's prompts (Tables 10 and 12)."""
    from chronokg.bench.llm import ask_json

    limit = asyncio.Semaphore(LLM_CONCURRENCY)

    async def one(item: Item) -> list[str]:
        async with limit:
            reply = await ask_json(ctx.model, distractor_messages(item), DISTRACTOR_SCHEMA)
        return [str(d).strip() for d in reply.get("distractors", []) if str(d).strip()]

    return list(await asyncio.gather(*(one(i) for i in items)))


def distractor_messages(item: Item) -> list[dict[str, str]]:
    """The paper's distractor prompt for an item: its two shots, then the item's question and answers."""
    answers = list(dict.fromkeys(t for y in item.known_years() for t in gold_aliases(item.gold(y) or [])))
    quoted = ", ".join(f"'{a}'" for a in answers)
    msgs = messages("distractor_legal" if item.legal else "distractor_general")
    last = msgs[-1]["content"]
    if item.legal:
        last = last.replace("[Q]", item.text()).replace("'[01]', '[02]', ... , '[0n]'", quoted)
    else:
        last = last.replace("[Q]", _question_text(item)).replace("'[O1]', '[O2]', ..., '[On]'", quoted)
    msgs[-1] = {"role": "user", "content": last}
    return msgs


def _question_text(item: Item) -> str:
    """The MCQA question without its year ("What office does X hold?"), else "What is the R of X?"."""
    table = keyed(QA_TEMPLATES[item.domain]) if item.domain in QA_TEMPLATES else {}
    relation = str(item.row.get("relation"))
    if relation in table:
        line = render(table[relation].split("\n", 1)[0], t="", sub=item.text()).removeprefix("In , ")
        return line[:1].upper() + line[1:]
    return f"What is the {relation} of {item.text()}?"


# --- CFR cloze items --------------------------------------------------------------------------------------------


def _cfr_items(ctx: Context, options: ChroKnowOptions) -> list[Item]:
    """Legal cloze items from CFR paragraph changes: the changed span blanked, its text per edition year."""
    params: dict[str, Any] = {"sources": sorted(ctx.since) if ctx.since is not None else None}
    changes: list[CfrChangeRow] = ctx.rows("cfr-changes", params)
    editions: dict[int, list[dt.date]] = {}
    items = []
    for ch in changes:
        if not ch.new.strip() or not ch.old.strip() or ch.text[ch.span_start: ch.span_end] != ch.new:
            continue  # an insertion or deletion has no answer on one side
        start, end = word_span(ch.text, ch.span_start, ch.span_end)
        old_text = ch.text[:start] + ch.from_text[start: len(ch.from_text) - (len(ch.text) - end)]
        if max(len(ch.text[start:end].split()), len(old_text[start:].split())) > options.cfr_max_words:
            continue
        title = int(ch.section.split(":")[1])
        if title not in editions:
            editions[title] = [r.release_date for r in ctx.rows("cfr-editions", {"title": title})]
        item = _cfr_item(ctx, ch, start, end, editions[title])
        if item is not None:
            items.append(item)
    return items


def word_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The changed characters widened to whole words ("$1,019", not "019"), closing punctuation left out."""
    lo, hi = start, end
    while lo > 0 and not text[lo - 1].isspace():
        lo -= 1
    while hi < len(text) and not text[hi].isspace():
        hi += 1
    while hi > end and text[hi - 1] in ".,;:!?)]\"'”’":
        hi -= 1
    while lo < start and text[lo] in "([\"'“‘":
        lo += 1
    return lo, hi


def _cfr_item(ctx: Context, ch: CfrChangeRow, start: int, end: int, editions: list[dt.date]) -> Item | None:
    before, after = ch.text[:start], ch.text[end:]
    versions = ctx.rows("timeline", {"subject": ch.section, "predicate": ch.predicate})
    by_year: dict[int, dt.date] = {}
    for day in editions:  # the year's edition is its latest one
        by_year[day.year] = max(day, by_year.get(day.year, day))
    row: dict[str, Any] = {"question": before + BLANK + after, "question_type": None}
    windows: dict[str, tuple[dt.date, dt.date]] = {}
    for year, day in sorted(by_year.items()):
        text = next((str(v.value) for v in versions if (v.valid_from is None or v.valid_from <= day)
                     and (v.valid_to is None or v.valid_to > day)), None)
        if text is None or not (text.startswith(before) and text.endswith(after)):
            continue
        span = text[len(before): len(text) - len(after)] if after else text[len(before):]
        if not span.strip() or len(text) < len(before) + len(after):
            continue
        row[f"answers_{year}"] = [span]
        row[f"release_date_{year}"] = day.isoformat()
        windows[str(year)] = (day, day + dt.timedelta(days=1))
    if len({json.dumps(v) for k, v in row.items() if k.startswith("answers_")}) < 2:
        return None  # the change is not seen in two loaded editions
    return Item(id=f"cfr-{ch.fact_id}", domain="Legal", origin="cfr", row=row, subject_id=ch.section,
                predicate=ch.predicate, source_id=ch.text_source, state="dynamic", split="Dynamic",
                windows=windows, derived=f"Fact:{ch.fact_id}")


def _cfr_pools(items: Sequence[Item]) -> dict[str, list[str]]:
    """Distractor candidates of each CFR item: the spans of the other CFR items."""
    spans = {i.id: {liquid_text(a) for y in i.known_years() for a in (i.gold(y) or [])} for i in items}
    return {i.id: sorted({s for other, ss in spans.items() if other != i.id for s in ss}) for i in items}


# --- few-shot draws ---------------------------------------------------------------------------------------------


def _candidates(item: Item, year: str, pool: Sequence[Item], seed: bool) -> list[Item]:
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


# --- questions --------------------------------------------------------------------------------------------------


def _key_answer(evidence: list[dict[str, Any]]) -> str | None:
    return " | ".join(dict.fromkeys(shown(r) for r in evidence)) or None


def _answer_key(ctx: Context, item: Item, year: str) -> AnswerKey:
    start, end = item.windows[year]
    return ctx.key("facts-during", {"subject": item.subject_id, "predicate": item.predicate, "from": start,
                                    "to": end}, _key_answer)


def _shot_record(f: Item, year: str) -> dict[str, Any]:
    """What the seed-format export needs to write an exemplar's few-shot row back."""
    head = {"question": f.row.get("question"), "question_type": f.row.get("question_type")} if f.legal else {
        "subject": f.row.get("subject"), "relation": f.row.get("relation")}
    return {"id": f.id, **head, "release_date": f.row.get(f"release_date_{f.shown_year(year)}",
                                                                 year if f.invariant else None),
            "objects": f.gold(year), "distractor": [d.value for d in f.distractors]}


def _base_metadata(b: Build, options: ChroKnowOptions, key: AnswerKey) -> dict[str, Any]:
    item, year = b.item, b.year
    gold = item.gold(year) or []
    years = [int(y) for y in item.known_years()]
    meta: dict[str, Any] = {
        "protocol": options.protocol.value, "domain": item.domain, "origin": item.origin, "fact_key": item.id,
        "subject": None if item.legal else item.row.get("subject"), "subject_id": item.subject_id,
        "relation": None if item.legal else item.row.get("relation"), "predicate": item.predicate,
        "question": item.row.get("question") if item.legal else None,
        "question_type": item.row.get("question_type") if item.legal else None,
        "year": int(year), "years": years, "t": b.t(item), "release_date": item.row.get(f"release_date_{year}"),
        "draw": b.draw, "draws": options.draws, "temporal_state": item.state, "split": item.split,
        "gold_text": canonical(gold[0]) if gold else None, "gold_aliases": gold_aliases(gold), "gold_objects": gold,
        "distractors": [{"text": canonical(d.value), "value": d.value, "aliases": texts_of(d.value),
                         "source": d.source} for d in item.distractors[:3]],
        "fewshots": [_shot_record(f, year) for f in b.shots],
        "quirks": list(item.quirks), "seed_row": {"file_name": item.file_name, "record": item.record},
        "decoding": DECODING, "answer_format": ANSWER_FORMAT,
        "graph_gold": key.answer,
    }
    if isinstance(gold[0] if gold else None, list) and b.seed:
        meta["quirks"].append("alias_list_rendered_glued")
    return meta


def _questions(ctx: Context, b: Build, options: ChroKnowOptions) -> Iterator[Question]:
    item, year = b.item, b.year
    key = _answer_key(ctx, item, year)
    facts = [str(r["fact_id"]) for r in key.evidence]
    base = _base_metadata(b, options, key)
    common = {"family": NAME, "target_date": item.windows[year][0] if not item.invariant else None,
              "answer_key": key, "snapshot": ctx.snapshot, "generator": generator_info(NAME, options),
              "facts": facts, "derived_from": [item.derived]}
    ready = all(len(x.distractors) >= 3 for x in (item, *b.shots))  # MCQA and TF need three distractors each
    for tpl in options.templates:
        variant = f"{item.domain.lower()}/{tpl.value}"
        meta = {**base, "template": tpl.value}
        choices: list[Choice] = []
        if tpl is Template.generation:
            prompt, target = generation_prompt(b), str(base["gold_text"])
        elif tpl is Template.mcqa:
            if not ready or (built := mcqa_prompt(b)) is None:
                continue
            prompt, layout, texts = built
            target = LABELS[layout.index(G)]
            choices = [Choice(label=LABELS[j], text=texts[j], role="gold" if s == G else "distractor")
                       for j, s in enumerate(layout)]
            gold_value = (item.gold(year) or [None])[0]
            meta["options"] = [{"label": LABELS[j], "role": "gold" if s == G else "distractor",
                                "aliases": texts_of(gold_value if s == G else item.distractors[s].value)}
                               for j, s in enumerate(layout)]
        else:
            if not ready or (tf := tf_prompt(b)) is None:
                continue
            prompt, uses = tf
            target = "true" if uses == G else "false"
            choices = [Choice(label="true", text="true", role="yes"), Choice(label="false", text="false", role="no")]
            meta.update(expected=target, statement=b.obj(item) if uses == G else b.dis(item, uses),
                        statement_aliases=texts_of((item.gold(year) or [None])[0] if uses == G
                                                   else item.distractors[uses].value))
        yield Question(id=content_id("q", NAME, variant, item.id, year, b.draw, prompt, target), variant=variant,
                       input=prompt, choices=choices, target=target, metadata=meta, **common)


def _fewshot_note(ctx: Context, item: Item, years: list[str], seed: bool) -> None:
    pool = "CFR cloze items" if item.origin == "cfr" else "few-shot rows"
    ctx.notes.append(f"{item.id}: fewer than 4 {pool} to draw exemplars from for {', '.join(years)}; left out"
                     + (" (the seed's random.sample would raise)" if seed and item.origin != "cfr" else ""))


def _domain_questions(ctx: Context, options: ChroKnowOptions, items: list[Item], pool: list[Item],
                      selected: Callable[[Item], bool], budget: list[int]) -> Iterator[Question]:
    """All questions of one domain, drawing the few-shots in the seed's order (seed protocol: one RNG)."""
    seed = options.protocol is Protocol.seed
    stream = random.Random(options.seed)  # the seed's global `random`, re-seeded per run (one domain a run)
    counter = 0
    for item in items:
        if budget[0] <= 0:
            return
        wanted = selected(item)
        short: list[str] = []
        for year in item.years():
            own = item.origin in ("cfr", ORIGIN_WIKIDATA) and not pool  # no loaded pool: the items of its origin
            found = _candidates(item, year, [i for i in items if i.origin == item.origin] if own else pool, seed)
            if not item.gold(year):
                continue  # no known objects that year (the seed would render an empty object or raise)
            if len(found) < 4:
                short.append(year)
                continue
            for draw in range(options.draws):
                rng = ctx.rng(NAME, item.id, year, draw)
                shots = stream.sample(found, 4) if seed else rng.sample(found, 4)
                if not wanted:
                    continue
                if any(not s.gold(year) for s in shots):
                    ctx.notes.append(f"{item.id} {year} draw {draw}: a drawn exemplar has no objects for {year} "
                                     "(the seed raises KeyError); left out")
                    continue
                yield from _questions(ctx, Build(item, year, draw, shots, seed, counter, rng), options)
                counter += 1
        if wanted and short:
            _fewshot_note(ctx, item, short, seed)
        if wanted:
            budget[0] -= 1
            if ctx.progress is not None:
                ctx.progress.advance(1)


def generate(ctx: Context, options: ChroKnowOptions) -> Iterator[Question]:
    graph = Graph(ctx)
    rows = graph.items(fewshot=False)
    fewshots = graph.items(fewshot=True)
    cfr = _cfr_items(ctx, options) if options.cfr else []
    rows += wikidata_items(ctx) if options.wikidata else []
    since = ctx.since

    def selected(item: Item) -> bool:  # `--since` compares evidence afterwards (bench.since) for derived items
        return since is None or item.origin in ("cfr", ORIGIN_WIKIDATA) or item.source_id in since

    _resolve_distractors(ctx, graph, [*rows, *fewshots], {})
    _resolve_distractors(ctx, graph, cfr, _cfr_pools(cfr))
    domains = [d.value for d in options.domains] if options.domains else list(DOMAINS)
    budget = [options.limit if options.limit is not None else 10**12]
    if ctx.progress is not None:
        todo = sum(1 for i in [*rows, *cfr] if selected(i) and i.domain in domains)
        ctx.progress.start(min(budget[0], todo), NAME)
    for domain in domains:
        items = [i for i in [*rows, *cfr] if i.domain == domain]
        pool = [f for f in fewshots if f.domain == domain]
        unknown = sorted({str(i.row.get("relation")) for i in items if not i.legal and
                          str(i.row.get("relation")) not in keyed(QA_TEMPLATES[domain])})
        if unknown and (Template.mcqa in options.templates or Template.tf in options.templates):
            ctx.notes.append(f"{domain}: no MCQA/TF template for relation(s) {', '.join(unknown)} in the seed; "
                             "only generation prompts for them")
        yield from _domain_questions(ctx, options, items, pool, selected, budget)


# --- re-answering and the seed's format -------------------------------------------------------------------------


def _evidence_texts(question: Question, evidence: list[dict[str, Any]]) -> set[str]:
    """Every text naming an object in `facts-during` evidence (a CFR item's: the span that fills its blank)."""
    out: set[str] = set()
    q = str(question.metadata.get("question") or "")
    before, _, after = q.partition(BLANK)
    for r in evidence:
        if question.metadata.get("origin") == "cfr":
            text = str(r.get("value") or "")
            if text.startswith(before) and text.endswith(after) and len(text) >= len(before) + len(after):
                out.add(norm(text[len(before): len(text) - len(after)] if after else text[len(before):]))
            continue
        out.update(norm(t) for t in (r.get("caption"), *(r.get("aliases") or []), shown(r)) if t)
    return out


def answer(question: Question, evidence: list[dict[str, Any]]) -> str | None:
    """The target the new evidence gives: the gold still valid (else the first valid object), the option
    naming a valid object, or whether the statement's object is valid."""
    valid = _evidence_texts(question, evidence)
    meta = question.metadata
    if meta.get("template") == Template.mcqa.value:
        for option in meta.get("options") or []:
            if any(norm(a) in valid for a in option.get("aliases") or []):
                return str(option["label"])
        return None
    if meta.get("template") == Template.tf.value:
        return "true" if any(norm(a) in valid for a in meta.get("statement_aliases") or []) else "false"
    if any(norm(a) in valid for a in meta.get("gold_aliases") or []):
        return question.target
    return _key_answer(evidence)


def _seed_file(meta: dict[str, Any]) -> str:
    domain = meta["domain"]
    if domain in INVARIANT:
        return f"ChroKnowBench/TimeInvariant_{domain}.jsonl"
    split = meta.get("split") or ("Static" if meta.get("temporal_state") == "static" else "Dynamic")
    return f"ChroKnowBench/TimeVariant_{domain}_{split}.jsonl"


def _seed_head(meta: dict[str, Any]) -> dict[str, Any]:
    if meta["domain"] == "Legal":
        return {"question": meta.get("question"), "question_type": meta.get("question_type")}
    return {"subject": meta.get("subject"), "relation": meta.get("relation")}


def _seed_row(head: dict[str, Any], prefix: str, years: dict[int, tuple[Any, Any]] | None, objects: Any,
              distractor: Any) -> dict[str, Any]:
    """A row in the released key order: the head, then `{prefix}_YYYY` for every year ascending, then
    `release_date_YYYY` for every year, then `distractor` (time-invariant rows: `objects` for the years)."""
    row = dict(head)
    if years is None:
        row["objects"] = objects
    else:
        row.update({f"{prefix}_{y}": years[y][0] for y in sorted(years)})
        row.update({f"release_date_{y}": years[y][1] for y in sorted(years)})
    if distractor is not None:
        row["distractor"] = distractor
    return row


def seed_format(questions: Iterable[Question]) -> Iterator[tuple[str, Any]]:
    """The seed's own data files (`ChroKnowBench/TimeVariant_{domain}_{split}.jsonl`, `TimeInvariant_{domain}
    .jsonl`, `Fewshots/Fewshot_{domain}.jsonl`), rows in the schema and key order of the released files that
    `ChroKnowledge.py` reads (time-invariant rows `subject, relation, objects`, then `distractor` when shown).
    The ids of the chronokg questions built from each row go to the side file (`OURS`). Few-shot rows hold the
    years they were used for."""
    rows: dict[str, dict[str, Any]] = {}
    shots: dict[str, dict[str, Any]] = {}
    for q in questions:
        m = q.metadata
        legal, invariant = m["domain"] == "Legal", m["domain"] in INVARIANT
        row = rows.setdefault(m["fact_key"], {
            "file": _seed_file(m), "head": _seed_head(m), "years": None if invariant else {}, "objects": None,
            "distractor": [d["value"] for d in m.get("distractors") or []] or (None if invariant else []),
            "ids": []})
        if invariant:
            row["objects"] = m["gold_objects"]
        else:
            row["years"][m["year"]] = (m["gold_objects"], m["release_date"])
        row["ids"].append(q.id)
        for shot in m.get("fewshots") or []:
            srow = shots.setdefault(shot["id"], {
                "file": f"ChroKnowBench/Fewshots/Fewshot_{m['domain']}.jsonl",
                "head": {k: shot.get(k) for k in (("question", "question_type") if legal else ("subject", "relation"))},
                "years": None if invariant else {}, "objects": None, "distractor": shot.get("distractor"), "ids": []})
            if invariant:
                srow["objects"] = shot.get("objects")
            else:
                srow["years"][m["year"]] = (shot.get("objects"), shot.get("release_date"))
    for row in rows.values():
        yield row["file"], {**_seed_row(row["head"], "answers" if "question" in row["head"] else "objects",
                                        row["years"], row["objects"], row["distractor"]),
                            OURS: {"chronokg_ids": row["ids"]}}
    for srow in shots.values():
        yield srow["file"], _seed_row(srow["head"], "answers" if "question" in srow["head"] else "objects",
                                      srow["years"], srow["objects"], srow["distractor"])


FAMILY = Family(
    name=NAME, help="ChroKnowBench: Generation, MCQA and TF prompts per (subject, relation, year) with the seed's "
                    "few-shot draws; General items from loaded Wikidata statements; Legal cloze items from CFR "
                    "changes.",
    options=ChroKnowOptions, generate=generate, seed_format=seed_format, answer=answer,
    needs=("ChroKnowBench rows with a few-shot pool (`chronokg ingest chroknow DIR`), Wikidata statements with "
          "time qualifiers of five or more (subject, property) pairs (`chronokg ingest wikidata FILE "
          "--properties timed`) or CFR editions that differ (`chronokg download cfr`, `chronokg ingest cfr`)"),
    sources="dmis-lab/ChroKnowledge@37ff685 (no licence file); data dmis-lab/ChroKnowBench (CC BY 4.0); "
            "arXiv 2410.09870",
)
