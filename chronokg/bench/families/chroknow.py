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

import random
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from chronokg.bench.families.chroknow_assembly import (
    Build,
    generation_prompt,
    mcqa_prompt,
    option_candidates,
    tf_prompt,
)
from chronokg.bench.families.chroknow_item import INVARIANT as INVARIANT
from chronokg.bench.families.chroknow_item import INVARIANT_YEARS as INVARIANT_YEARS
from chronokg.bench.families.chroknow_item import ORIGIN_WIKIDATA, Item
from chronokg.bench.families.chroknow_options import (
    ANSWER_FORMAT,
    BLANK,
    DECODING,
    DOMAINS,
    LABELS,
    NAME,
    QA_TEMPLATES,
    ChroKnowOptions,
    G,
    Template,
)
from chronokg.bench.families.chroknow_prompts import keyed
from chronokg.bench.families.chroknow_reading import (
    Graph,
    canonical,
    cfr_items,
    cfr_pools,
    gold_aliases,
    norm,
    resolve_distractors,
    texts_of,
)
from chronokg.bench.families.chroknow_reading import word_span as word_span  # re-exported: tests import it here
from chronokg.bench.families.chroknow_wikidata import wikidata_items
from chronokg.bench.family import OURS, Context, Family, Protocol, generator_info
from chronokg.bench.question import AnswerKey, Choice, Question, content_id
from chronokg.queries.chroknow import shown

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
            found = option_candidates(item, year, [i for i in items if i.origin == item.origin] if own else pool, seed)
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
    cfr = cfr_items(ctx, options) if options.cfr else []
    rows += wikidata_items(ctx) if options.wikidata else []
    since = ctx.since

    def selected(item: Item) -> bool:  # `--since` compares evidence afterwards (bench.since) for derived items
        return since is None or item.origin in ("cfr", ORIGIN_WIKIDATA) or item.source_id in since

    resolve_distractors(ctx, graph, [*rows, *fewshots], {})
    resolve_distractors(ctx, graph, cfr, cfr_pools(cfr))
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
