"""ChroKnowBench items read from the graph: the loaded rows, the relations that give distractors, the Legal
cloze items from CFR changes, and the text helpers their prompts share.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from chronokg.bench.families.chroknow_item import INVARIANT as INVARIANT
from chronokg.bench.families.chroknow_item import INVARIANT_YEARS as INVARIANT_YEARS
from chronokg.bench.families.chroknow_item import ORIGIN_WIKIDATA, Distractor, Item
from chronokg.bench.families.chroknow_options import (
    BLANK,
    DISTRACTOR_SCHEMA,
    DOMAINS,
    LLM_CONCURRENCY,
    NAME,
    QA_TEMPLATES,
    SEED_BLANK,
    SPLIT_ORDER,
    ChroKnowOptions,
)
from chronokg.bench.families.chroknow_prompts import keyed, liquid_text, messages, render
from chronokg.bench.family import Context
from chronokg.ingest.chroknow import ANSWER, entity_id, question_id
from chronokg.queries.chroknow import CfrChangeRow, ChroKnowRow, RelationRow

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


def resolve_distractors(ctx: Context, graph: Graph, items: Sequence[Item], pools: dict[str, list[str]]) -> None:
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


def cfr_items(ctx: Context, options: ChroKnowOptions) -> list[Item]:
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


def cfr_pools(items: Sequence[Item]) -> dict[str, list[str]]:
    """Distractor candidates of each CFR item: the spans of the other CFR items."""
    spans = {i.id: {liquid_text(a) for y in i.known_years() for a in (i.gold(y) or [])} for i in items}
    return {i.id: sorted({s for other, ss in spans.items() if other != i.id for s in ss}) for i in items}
