"""ChroKnowPrompt (Park et al., ICLR 2025 §5; dmis-lab/ChroKnowledge `ChroKnowPrompt.py`,
`sources/utils.py:236-572`, `sources/process.py:354-418`, `run_evaluation.ipynb`) over a finished run.

    chronokg eval chroknow-prompt runs/run-abc123 [--template generation] [--fraction 0.1] \
        [--prev-span 3] [--next-span 3]

It is a second pass, not part of the knowledge-check run: which facts it prompts, and with what, depends
on the categories of *every* year of a fact (all its questions, both decodings), and the traversal of
one year reads the answers the traversal gave for the fact's earlier-processed years. So it runs after
the knowledge check, per model of the run, on a seeded 10 % sample of each (domain, split)'s facts per
category (`sampling_results`), and writes a run folder of its own (`run.json`, `samples.jsonl`), one
sample per sampled fact (its unit is the fact's first question, sample 0), with every call in `steps`.
The gain in Known is the metric `chroknow.prompt_gain` of that run; a killed pass resumes like a run.

The traversal of a target year (a Partial_known fact's incorrect, partial_correct2, partial_correct1
years, in that order): the previous span (t-1, t-2, t-3, nearest first; each new year's question and
answer placed above) and then the next span (t+1, t+2, t+3, nearest first, placed below), one chat call
per span year at T = 0 with the seed's system prompts, the target's "Candidate A." line carrying the
answer so far. A year is then known if the last (cleaned) answer fuzzy-matches its gold; a fact moves
to Known when every year is correct or known so.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chronokg
from chronokg.bench.families.chroknow_categories import KNOWN_YEAR, fact_category, year_category
from chronokg.bench.families.chroknow_prompts import render, template
from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError
from chronokg.eval.log import RunInfo, SampleLog, SampleRecord, latest, read_info, write_info
from chronokg.eval.profile import request_hash
from chronokg.eval.profiles.chroknow import fuzzy, golds
from chronokg.eval.runner import ModelEntry, RunOptions
from chronokg.models import ChatMessage, GenerateConfig, ModelClient, ModelRequest, get_model

TIME_VARIANT = ("General", "Biomedical", "Legal")  # create_prompt has no branch for the others (utils.py:309-394)
# utils.py:282-307, tried in this order with re.search; the first match's group 1, stripped.
PATTERNS = tuple(re.compile(p) for p in (
    r"A\. (.*)", r"Candidate A\. (.*)", r"Answer\. (.*)", r"Final Answer\. (.*)", r"Correct Answer\. (.*)",
    r"Candidate Answer\. (.*)", r".*the answer is (.*)", r".*the correct answer is (.*)", r".*Answer:\s*(.*)",
    r".*A\.\s*(.*)", r"Answer to question is (.*)", r"The correct answer is (.*)", r"\d{4}, [^,]+, [^,]+, (.*)"))
# process.py:407-418 `clean_chrono_ans_list`: no word boundary in the seed (drops "Norwich City", Q-CP7).
_REFUSAL = "Sure|Understood|Here|Thank you|Okay|OK|Yes|No|I am ready|I can help"
CLEAN_SEED = re.compile(rf"^\s*({_REFUSAL})", re.I)
CLEAN_FIXED = re.compile(rf"^\s*({_REFUSAL})\b", re.I)


class PromptOptions(RunOptions):
    """The pass's options (the run's protocol, concurrency and cache are taken over from the run)."""

    source_run: str = ""
    template: str = "generation"
    fraction: float = 0.1
    prev_span: int = 3
    next_span: int = 3
    seed: int = 0


@dataclass
class Year:
    category: str
    greedy: list[str]  # the parsed greedy answers, draw order (`temp0_ans`)
    sampled: list[str]  # the parsed sampled answers (`temp7_ans`)
    golds: list[Any]
    question_id: str
    chrono: list[str] | None = None


@dataclass
class FactState:
    key: str
    meta: dict[str, Any]
    years: dict[int, Year] = field(default_factory=dict)
    directions: dict[int, list[str]] = field(default_factory=dict)  # per prompted year, each step's side

    @property
    def category(self) -> str:
        return fact_category([self.years[y].category for y in sorted(self.years)])

    @property
    def unit(self) -> str:
        return self.years[min(self.years)].question_id


def extract(raw: str) -> str | None:
    for pattern in PATTERNS:
        m = pattern.search(raw)
        if m:
            return m.group(1).strip()
    return None


def most_common(answers: Sequence[str] | None) -> str:
    """`most_common_entity`: the most frequent lower-cased answer (ties: the first seen); "None" if none."""
    if not answers:
        return "None"
    return Counter(a.lower() for a in answers).most_common(1)[0][0]


def clean(answers: Sequence[str], protocol: str) -> list[str]:
    rule = CLEAN_SEED if protocol == "seed" else CLEAN_FIXED
    return [a.strip() for a in answers if not rule.match(a)]


# --- facts from a run --------------------------------------------------------------------------------------------


def facts_of(questions: dict[str, Question], samples: Sequence[SampleRecord], model: str, template: str,
             protocol: str) -> dict[str, FactState]:
    """Each fact's per-year answers and category from the run's samples (as `chroknow.year_categories`)."""
    cells: dict[tuple[str, int], dict[str, list[tuple[int, str | None, bool]]]] = defaultdict(
        lambda: {"greedy": [], "sampled": []})
    first: dict[tuple[str, int], Question] = {}
    for s in samples:
        q = questions.get(s.question_id)
        if q is None or s.model != model or not s.ok or s.fields.get("kind") != "check" \
                or s.fields.get("template") != template:
            continue
        key = (str(s.fields["fact_key"]), int(s.fields["year"]))
        cells[key]["greedy" if s.sample == 0 else "sampled"].append((int(s.fields.get("draw") or 0), s.answer,
                                                                      bool(s.correct)))
        if key not in first or (q.metadata.get("draw") or 0) < (first[key].metadata.get("draw") or 0):
            first[key] = q
    facts: dict[str, FactState] = {}
    for (fact, year), cell in sorted(cells.items()):
        q = first[(fact, year)]
        state = facts.setdefault(fact, FactState(fact, q.metadata))
        greedy = sorted(cell["greedy"], key=lambda t: t[0])
        sampled = sorted(cell["sampled"], key=lambda t: t[0])
        counted = [g for g in greedy if g[1] is not None or protocol != "seed"]
        category = year_category(len(counted), sum(g[2] for g in counted), sum(s[2] for s in sampled))
        state.years[year] = Year(category, [g[1] for g in greedy if g[1] is not None],
                                 [s[1] for s in sampled if s[1] is not None], golds(q, protocol), q.id)
    return facts


def sample_facts(facts: dict[str, FactState], fraction: float, seed: int, model: str) -> list[FactState]:
    """`sampling_results` (process.py:354-380) per (domain, split): max(1, int(fraction x count)) facts of each
    category, drawn with a seeded RNG over the facts sorted by key (the seed's draw is unseeded, Q-S7)."""
    groups: dict[tuple[str, str, str], list[FactState]] = defaultdict(list)
    for f in facts.values():
        if f.meta.get("domain") in TIME_VARIANT:
            groups[(str(f.meta.get("domain")), str(f.meta.get("split")), f.category)].append(f)
    chosen: list[FactState] = []
    for (domain, split, category), members in sorted(groups.items()):
        members.sort(key=lambda f: f.key)
        rng = random.Random(f"{seed}|{model}|{domain}|{split}|{category}")
        chosen.extend(rng.sample(members, max(1, int(len(members) * fraction))))
    return chosen


# --- one target year ----------------------------------------------------------------------------------------------


@dataclass
class Traversal:
    """The seed's `generate_chrono_ans` for one fact (its fixed reading under `chronokg`)."""

    fact: FactState
    model: str
    protocol: str
    prev_span: int
    next_span: int
    call: Callable[[list[ChatMessage], str], Any]  # async (messages, question id) -> raw text
    steps: list[dict[str, Any]] = field(default_factory=list)

    @property
    def seed(self) -> bool:
        return self.protocol == "seed"

    @property
    def gemma(self) -> bool:
        return "gemma" in self.model.lower()

    def ref_ok(self, year: int) -> bool:
        y = self.fact.years[year]
        return y.category in KNOWN_YEAR or y.chrono is not None

    def example(self, year: int) -> str:
        """`create_example`: the year's traversal answers, else its greedy answers if correct, else sampled."""
        y = self.fact.years[year]
        if y.chrono is not None:
            return most_common(y.chrono)
        return most_common(y.greedy if y.category == "correct" else y.sampled)

    def question(self, year: int) -> str:
        m = self.fact.meta
        if m.get("domain") == "Legal":  # seed: `sub=` for a `{{q}}` template, the question is lost (Q-CP4)
            values = {"sub": m.get("question")} if self.seed else {"q": m.get("question")}
            return render(template("prompt_gen_zs_t"), t=str(year), **values)
        return render(template("prompt_kt_zs_t"), t=str(year), sub=m.get("subject"), rel=m.get("relation"))

    def messages(self, year: int, target: int, acc: str, cand: str | None, direction: str
                 ) -> tuple[list[ChatMessage], str]:
        """`create_prompt` (utils.py:309-394): the span year's line added above (previous) or below (next) the
        accumulated prompt, whose target line carries the candidate answer."""
        example = self.example(year)
        shot = self.question(year) + (f"A. {example}\n" if example else "")
        tq = self.question(target)
        tail = f"Candidate A. {cand}\n" if cand else "Candidate A. [Object]\n"
        if tq in acc:
            pattern = re.escape(tq) + r"Candidate A\..*?\n"
            # seed: the replacement string is a regex template (backslashes in answers are read, Q-CP9)
            acc = re.sub(pattern, tq + tail, acc) if self.seed else re.sub(pattern, lambda _: tq + tail, acc)
        else:
            acc = tq + tail
        content = shot + "\n" + acc if direction == "previous" else acc + "\n" + shot
        system = template("chrono_cand_system") if cand else template("chrono_none_system")
        if self.gemma:  # no system role: one user message
            return [ChatMessage(role="user", content=system + "\n\n" + content)], content
        return [ChatMessage(role="system", content=system), ChatMessage(role="user", content=content)], content

    def spans(self, target: int) -> tuple[list[int], list[int]]:
        years = sorted(self.fact.years)
        before = [y for y in years if y < target]
        after = [y for y in years if y > target]
        prev = list(reversed(before[-self.prev_span:]))
        nxt = after[: self.next_span]
        if self.seed:  # a side is used if any year on it is a reference, and then every span year (Q-CP5)
            return (prev if any(self.ref_ok(y) for y in before) else [],
                    nxt if any(self.ref_ok(y) for y in after) else [])
        return [y for y in prev if self.ref_ok(y)], [y for y in nxt if self.ref_ok(y)]

    async def run(self, target: int) -> list[str] | None:
        prev, nxt = self.spans(target)
        if not prev and not nxt:
            return None  # "No reference data found": nothing stored
        acc, cand, cands = "", None, []
        for direction, years in (("previous", prev), ("next", nxt)):
            for year in years:
                messages, content = self.messages(year, target, acc, cand, direction)
                raw = str(await self.call(messages, self.fact.years[target].question_id))
                found = extract(raw)
                flagged = found is None
                if found is None:
                    found = raw if self.seed else raw.strip().split("\n")[0].strip()  # Q-CP10
                if cand is None or found.lower() != cand.lower():
                    cand = found
                cands.append(cand)
                self.steps.append({"target": target, "year": year, "direction": direction,
                                   "messages": [m.model_dump(exclude_none=True) for m in messages], "output": raw,
                                   "candidate": cand, "unmatched": flagged})
                if self.gemma and self.seed:  # the system text cut out, then a strip: the trailing newline goes
                    acc = re.sub("|".join(re.escape(template(n)) for n in ("chrono_cand_system", "chrono_none_system")),
                                 "", str(messages[0].content)).strip()  # (Q-CP6)
                else:
                    acc = content
        return cands


def passes(protocol: str, split: str | None) -> tuple[str, ...]:
    """ChroKnowPrompt.py:79 / 103: the Dynamic pass spells `parital_correct2`, so those years are never
    prompted there under `seed` (Q-CP3)."""
    second = "parital_correct2" if protocol == "seed" and split == "Dynamic" else "partial_correct2"
    return ("incorrect", second, "partial_correct1")


def known_after(fact: FactState, protocol: str, previous_only: bool = False, prev_span: int = 3,
                next_span: int = 3) -> tuple[str, dict[int, bool]]:
    """`results_of_total_span` (run_evaluation.ipynb cell 2): a prompted year is known when the last cleaned
    answer fuzzy-matches its gold; the fact is Known when every year is correct or known so. With
    `previous_only` (cell 3), the last answer of a previous-span step: under `seed` the steps are paired
    by position with `["previous"] * len(previous span) + ["next"] * len(next span)` computed over every
    span year whether or not that side was traversed, after cleaning (Q-CP8)."""
    known: dict[int, bool] = {}
    for year, y in fact.years.items():
        if y.chrono is None:
            continue
        answers = clean(y.chrono, protocol)
        if previous_only:
            if protocol == "seed":
                years = sorted(fact.years)
                steps = (["previous"] * len([v for v in years if v < year][-prev_span:])
                         + ["next"] * len([v for v in years if v > year][:next_span]))
                answers = [a for a, s in zip(answers, steps, strict=False) if s == "previous"]
            else:
                paired = zip(y.chrono, fact.directions.get(year, []), strict=False)
                answers = clean([a for a, s in paired if s == "previous"], protocol)
        known[year] = bool(answers) and fuzzy(answers[-1], y.golds)
    moved = all(y.category == "correct" or known.get(year, False) for year, y in fact.years.items())
    return ("Known" if moved else fact.category), known


# --- the pass -----------------------------------------------------------------------------------------------------


def prompt_run_id(source: RunInfo, options: PromptOptions) -> str:
    key = json.dumps({"source": source.run_id, **options.model_dump(include={
        "template", "fraction", "prev_span", "next_span", "seed", "protocol"})}, sort_keys=True)
    return "run-" + hashlib.sha256(key.encode()).hexdigest()[:12]


def prepare(source_folder: Path, log_dir: Path | None, options: PromptOptions) -> tuple[Path, RunInfo]:
    source = read_info(source_folder)
    base = RunOptions.model_validate(source.options)
    options = options.model_copy(update={"source_run": source.run_id, "protocol": base.protocol})
    rid = prompt_run_id(source, options)
    folder = (log_dir or source_folder.parent) / rid
    if (folder / "run.json").exists():
        return folder, read_info(folder)
    folder.mkdir(parents=True, exist_ok=True)
    info = RunInfo(run_id=rid, models=source.models, questions=source.questions, protocol=base.protocol,
                   samples=1, options={**options.model_dump(), "chroknow_prompt": True},
                   snapshot=source.snapshot, store=source.store, chronokg=chronokg.__version__,
                   started=_now())
    write_info(folder, info)
    return folder, info


def _now() -> str:
    import datetime as dt

    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _config() -> GenerateConfig:
    """ChroKnowPrompt.py:59 + run_chroknow_prompt.sh: T = 0, top_p 1, seed 42, max_tokens 50, stop at newline."""
    return GenerateConfig(temperature=0.0, top_p=1.0, max_tokens=50, stop=["\n"], seed=42)


async def prompt_fact(client: ModelClient, fact: FactState, options: PromptOptions) -> SampleRecord:
    """Every traversal of one sampled fact, then its category after ChroKnowPrompt."""
    usage = {"prompt_tokens": 0, "completion_tokens": 0}

    async def call(messages: list[ChatMessage], question_id: str) -> str:
        request = ModelRequest(messages=messages, config=_config(),
                               metadata={"question_id": question_id, "family": "chroknow"})
        completion = await client.generate(request)
        usage["prompt_tokens"] += completion.usage.prompt_tokens
        usage["completion_tokens"] += completion.usage.completion_tokens
        return completion.text

    before = fact.category
    traversal = Traversal(fact, client.spec, options.protocol, options.prev_span, options.next_span, call)
    if before == "Partial_known":
        for category in passes(options.protocol, fact.meta.get("split")):
            for year in sorted(fact.years):
                if fact.years[year].category == category:
                    answers = await traversal.run(year)
                    if answers is not None:
                        fact.years[year].chrono = answers
                        fact.directions[year] = [s["direction"] for s in traversal.steps if s["target"] == year]
    after, known = known_after(fact, options.protocol)
    after_previous, _ = known_after(fact, options.protocol, True, options.prev_span, options.next_span)
    m = fact.meta
    timestamp = {f"objects_{y}": {"category": v.category, "temp0_ans": v.greedy, "temp7_ans": v.sampled,
                                  **({"chrono_ans": v.chrono} if v.chrono is not None else {}),
                                  **({"chrono_known": known[y]} if y in known else {})}
                 for y, v in sorted(fact.years.items())}
    return SampleRecord(
        question_id=fact.unit, model=client.spec, sample=0, family="chroknow",
        variant=f"chroknow-prompt/{options.template}", output=json.dumps(timestamp, ensure_ascii=False),
        steps=traversal.steps, answer=after, correct=after == "Known", score=float(after == "Known"),
        fields={"kind": "prompt", "template": options.template, "domain": m.get("domain"), "split": m.get("split"),
                "fact_key": fact.key, "before": before, "after": after, "after_previous": after_previous,
                "prompted_years": len(fact.directions), "calls": len(traversal.steps), "protocol": options.protocol,
                "seed_row": (m.get("seed_row") or {}).get("record"), "origin": m.get("origin")},
        prompt_tokens=usage["prompt_tokens"], completion_tokens=usage["completion_tokens"],
        request_hash=request_hash(ModelRequest(messages=[ChatMessage(role="user", content=fact.key)],
                                               config=_config())))


def run_pass(folder: Path, info: RunInfo, source_samples: Sequence[SampleRecord], questions: Sequence[Question],
             store: Any = None, models: Sequence[str] | None = None,
             on_record: Callable[[SampleRecord], None] | None = None) -> tuple[RunInfo, dict[str, int]]:
    """Sample the facts of each model and prompt them (facts already in `samples.jsonl` are skipped)."""
    options = PromptOptions.model_validate(info.options)
    by_id = {q.id: q for q in questions}
    entries = [ModelEntry.model_validate(m) for m in info.models if models is None or m["spec"] in models]
    path = folder / "samples.jsonl"
    log = SampleLog(path)
    counts = {"facts": 0, "prompted": 0, "skipped": 0}
    try:
        done = {unit for unit, rec in latest(path).items() if rec.ok}
        todo: list[tuple[str, FactState]] = []
        for entry in entries:
            facts = facts_of(by_id, source_samples, entry.spec, options.template, options.protocol)
            for fact in sample_facts(facts, options.fraction, options.seed, entry.spec):
                counts["facts"] += 1
                if (fact.unit, entry.spec, 0) in done:
                    counts["skipped"] += 1
                else:
                    todo.append((entry.spec, fact))
        clients = _open(entries, options, questions, store, {spec for spec, _ in todo})
        asyncio.run(_execute(log, todo, clients, options, counts, on_record))
    finally:
        log.close()
    records = latest(path)
    ok = [r for r in records.values() if r.ok]
    info.totals = {"samples": len(ok), "failed": len(records) - len(ok),
                   "moved": sum(1 for r in ok if r.fields.get("before") == "Partial_known" and r.correct)}
    info.status = "complete" if len(ok) == counts["facts"] else "incomplete"
    info.finished = _now()
    write_info(folder, info)
    return info, counts


def _open(entries: Sequence[ModelEntry], options: PromptOptions, questions: Sequence[Question], store: Any,
          wanted: set[str]) -> dict[str, ModelClient]:
    clients: dict[str, ModelClient] = {}
    for m in entries:
        if m.spec not in wanted:
            continue
        client = get_model(m.spec, base_url=m.base_url, api_key_env=m.api_key_env, cache=options.cache,
                           concurrency=options.concurrency)
        bind = getattr(client, "bind", None)
        if bind is not None:
            bind(questions=questions, store=store, protocol=options.protocol)
        clients[m.spec] = client
    return clients


async def _execute(log: SampleLog, todo: Sequence[tuple[str, FactState]], clients: dict[str, ModelClient],
                   options: PromptOptions, counts: dict[str, int],
                   on_record: Callable[[SampleRecord], None] | None) -> None:
    limit = asyncio.Semaphore(options.concurrency)

    async def one(spec: str, fact: FactState) -> None:
        async with limit:
            try:
                record = await prompt_fact(clients[spec], fact, options)
            except (ChronoKGError, OSError, TimeoutError, ValueError, re.error) as exc:
                record = SampleRecord(question_id=fact.unit, model=spec, sample=0, family="chroknow",
                                      variant=f"chroknow-prompt/{options.template}",
                                      error=f"{type(exc).__name__}: {exc}")
        log.write(record)
        counts["prompted"] += 1
        if on_record is not None:
            on_record(record)

    try:
        await asyncio.gather(*(one(spec, fact) for spec, fact in todo))
    finally:
        for client in clients.values():
            await client.aclose()
