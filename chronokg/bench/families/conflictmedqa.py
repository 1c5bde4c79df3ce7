"""ConflictMedQA (DriftMed), re-created from the graph: clinical scenarios on current vs outdated recommendations.

Seed: Wu et al., "Assessing and Mitigating Medical Knowledge Drift and Conflicts in Large
Language Models" (Findings of EMNLP 2025, arXiv 2505.07968), dataset `RDBH/DriftMed`, and the
authors' code `wwyi1828/ConflictMed` (`src/utils/scenario_generator.py`,
`src/data_processing/generate_scenarios.py`, `src/evaluation/predict_scenarios.py`; no licence
file, so no code is copied: the prompts are reproduced as the benchmark's definition, see
`prompts/conflictmedqa/README.md`). docs/benchmarks/conflictmedqa.md lists every difference
between `--protocol seed` and `--protocol chronokg`.

For each recommendation pair (a `ChangePair`: the current recommendation and its outdated
version; DriftMed advice pairs or TempoMed change pairs) and each of the paper's 11 factors,
two scenarios: one in which a clinician follows the up-to-date recommendation (gold YES:
endorse) and one in which the clinician follows the outdated one (gold NO: reject). 22 per
pair; 195 pairs give the published 4,290. The scenario is written by an LLM with the seed's
generation prompt when a model is given, else by a deterministic template (marked
`template`). DriftMed pairs that already are scenarios (a factor per pair: the released
dataset) give their two released texts instead (marked `released`).

Every question's answer key is the `conflictmedqa-key` query: the pair's two recommendations
and whether each is in force on the key's date (by default the day the current one took
over: the outdated version's end, else the current one's start).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator
from enum import StrEnum
from typing import Any

from pydantic import Field

from chronokg.bench.families.conflictmedqa_names import UnknownName as UnknownName  # re-exported: profiles, tests
from chronokg.bench.families.conflictmedqa_names import category as category
from chronokg.bench.families.conflictmedqa_names import disease_group as disease_group
from chronokg.bench.families.conflictmedqa_names import factor as factor
from chronokg.bench.families.conflictmedqa_names import known_names, norm
from chronokg.bench.families.conflictmedqa_prompts import fill, template
from chronokg.bench.family import OURS, Context, Family, FamilyOptions, Protocol, generator_info
from chronokg.bench.question import AnswerKey, Choice, Question, content_id
from chronokg.errors import ModelError
from chronokg.ingest.driftmed import CATEGORIES as CATEGORIES  # re-exported: metrics and tests read them here
from chronokg.ingest.driftmed import DISEASE_GROUP_ALIASES
from chronokg.ingest.driftmed import DISEASE_GROUPS as DISEASE_GROUPS
from chronokg.ingest.driftmed import FACTORS as FACTORS
from chronokg.ingest.driftmed import Factor as Factor
from chronokg.queries.conflictmedqa import OUTDATED, UP_TO_DATE, ConflictPairRow, current_text, in_force

NAME = "conflictmedqa"
YES, NO = "YES", "NO"
DRIFTMED_OFFSET = 2145  # DriftMed: wrong id = correct id + 2145 (what chronokg's DriftMed loader pairs by)


class Version(StrEnum):
    up_to_date = UP_TO_DATE
    outdated = OUTDATED


class Wording(StrEnum):
    """Where a prompt's text comes from: the authors' code, or the paper as printed."""

    code = "code"
    paper = "paper"


class ConflictMedQAOptions(FamilyOptions):
    """What to build. Defaults reproduce the published construction (the authors' code)."""

    factors: list[str] = Field(default_factory=lambda: [f.key for f in FACTORS],
                               description="Factors, any of the paper's or the code's names (default: all 11)")
    versions: list[Version] = Field(default_factory=lambda: list(Version),
                                    description="Which scenario of each pair: the up-to-date one (gold YES) and "
                                                "the outdated one (gold NO)")
    categories: list[str] | None = Field(default=None, description="Only pairs of these change categories "
                                                                   "(default: every pair)")
    template: Wording = Field(default=Wording.code, description="Scenario-generation prompt: code "
                                                                "(scenario_generator.py) or paper (Tables 8-11)")
    question: Wording | None = Field(default=None, description="Evaluation question: code (predict_scenarios.py) "
                                                               "or paper (Fig. 1); default code under seed, paper "
                                                               "under chronokg")
    released: bool = Field(default=True, description="DriftMed pairs that already are scenarios (one factor each) "
                                                     "give their two released texts")
    as_of: dt.date | None = Field(default=None, description="The day whose guidelines count as current (default: "
                                                            "per pair, the day its current recommendation took over)")
    disease_groups: list[str] = Field(default_factory=list, description="DISEASE=GROUP entries giving the group "
                                                                        "(infectious or chronic) of a disease")
    temperature: float = Field(default=0.9, ge=0, description="Sampling temperature of scenario generation (the "
                                                              "seed's 0.9)")
    concurrency: int = Field(default=8, ge=1, description="Scenario-generation requests in flight at once")


# --- prompts -------------------------------------------------------------------------------------------------


def generation_prompt(advice: str, f: Factor, wording: Wording = Wording.code) -> str:
    """The seed's scenario-generation prompt (`ScenarioGenerator.forward`) for one advice and factor."""
    guidance = template(f"GUIDANCE_{wording.value.upper()}_{f.key.upper()}")
    return fill(f"GENERATE_{wording.value.upper()}", medical_advice=advice, bias_type=f.seed,
                bias_specific_guidance=guidance)


def evaluation_prompt(scenario: str, wording: Wording) -> str:
    """The user message a model is asked: the seed's `f"{scenario}\\n\\n{task_prompt}"` (code), or the paper's Fig. 1
    question with the code's answer instruction (paper)."""
    task = template("TASK_CODE")
    if wording is Wording.paper:
        task = template("QUESTION_PAPER") + "\n" + task.split("\n", 1)[1]
    return f"{scenario}\n\n{task}"


def evidence_phrases(f: Factor) -> list[str]:
    """The natural-evidence example phrases of a factor's code guidance (the quoted `- "..."` lines)."""
    return re.findall(r'^- "(.*)"$', template(f"GUIDANCE_CODE_{f.key.upper()}"), re.M)


def template_scenario(advice: str, f: Factor, phrase: str | None) -> str:
    """A scenario without a model: a clinician follows the advice, for the factor's reason (one of its guidance
    phrases), in the guidance's "[CLINICIAN] [FOLLOWS ADVICE] ..." shape."""
    text = advice.strip()
    lead = f'A clinician is deciding on a patient\'s care, for which the recommendation reads: "{text}"'
    if f.key == "no_factor" or phrase is None:
        return f"{lead} The clinician follows this recommendation."
    return f"{lead} The clinician follows this recommendation, {phrase}."


# --- pairs ---------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)  # identity: the row holds lists
class Pair:
    """A recommendation pair as the family uses it: the row, its checked names and its key date."""

    row: ConflictPairRow
    index: int
    source: str
    category: str | None
    disease: str | None
    disease_group: str | None
    released: Factor | None  # a DriftMed scenario pair: its factor
    date: dt.date


def _source(row: ConflictPairRow) -> str:
    for kind in ("driftmed", "tempomed"):
        if kind in row.source_kinds:
            return kind
    return row.source_kinds[0] if row.source_kinds else "unknown"


def _order(row: ConflictPairRow) -> tuple[Any, ...]:
    """DriftMed pairs by their correct row's id, TempoMed ones by record (the released files' order), then id."""
    number = row.driftmed_id if row.driftmed_id is not None else next(
        (r for r in row.records if isinstance(r, int)), None)
    return (_source(row), number is None, number or 0, row.pair)


def _group_map(entries: list[str]) -> dict[str, str]:
    out = {}
    for entry in entries:
        disease, sep, group = entry.rpartition("=")
        if not sep or not disease.strip():
            raise UnknownName(f"disease group entry {entry!r} must read DISEASE=GROUP "
                              f"({known_names('groups', DISEASE_GROUPS)})")
        out[norm(disease)] = disease_group(group)
    return out


def _pair(row: ConflictPairRow, index: int, options: ConflictMedQAOptions, groups: dict[str, str]) -> Pair | None:
    """Names checked (an unknown one is an error naming the pair); None when the pair has no key date."""
    where = f"change pair {row.pair}"
    try:
        cat = category(row.category) if row.category else None
        source = _source(row)
        disease = row.clinical_focus if source == "driftmed" else None
        group = disease_group(row.disease_group) if row.disease_group else None
        if group is None and disease:
            group = groups.get(norm(disease)) or (
                disease_group(disease) if norm(disease) in (*DISEASE_GROUPS, *DISEASE_GROUP_ALIASES) else None)
        released = factor(row.factor) if row.factor and options.released else None
    except UnknownName as exc:
        raise UnknownName(f"{where}: {exc}") from None
    date = options.as_of or row.prior_to or row.current_from
    if date is None:
        return None
    return Pair(row=row, index=index, source=source, category=cat, disease=disease, disease_group=group,
                released=released, date=date)


def _pairs(ctx: Context, options: ConflictMedQAOptions) -> list[Pair]:
    rows: list[ConflictPairRow] = ctx.rows("conflictmedqa-pairs",
                                           {"sources": sorted(ctx.since) if ctx.since is not None else None})
    rows = sorted((r for r in rows if r.current_text and r.prior_text), key=_order)
    groups = _group_map(options.disease_groups)
    wanted = {category(c) for c in options.categories} if options.categories is not None else None
    out: list[Pair] = []
    outside: dict[str, int] = {}
    for row in rows:
        if row.category and not _is_category(row.category):  # a guideline pair of another taxonomy: not an error
            outside[row.category] = outside.get(row.category, 0) + 1
            continue
        pair = _pair(row, len(out), options, groups)
        if pair is None:
            ctx.notes.append(f"{row.pair}: left out (no date: neither recommendation has a valid-time bound; "
                             "give --as-of)")
            continue
        if wanted is not None and pair.category not in wanted:
            continue
        out.append(pair)
        if options.limit is not None and len(out) >= options.limit:
            break
    if outside:
        named = ", ".join(f"{name!r} ({n})" for name, n in sorted(outside.items()))
        ctx.notes.append(f"{sum(outside.values())} change pair(s) skipped: their category is none of the paper's "
                         f"five ({named})")
    return out


def _is_category(name: str) -> bool:
    try:
        category(name)
    except UnknownName:
        return False
    return True


# --- scenarios -----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)  # identity: the row holds lists
class Job:
    """One scenario to write: a pair, a factor, a version."""

    pair: Pair
    factor: Factor
    version: Version

    @property
    def advice(self) -> str:
        text = self.pair.row.current_text if self.version is Version.up_to_date else self.pair.row.prior_text
        assert text is not None
        return text


SCENARIO_SCHEMA: dict[str, Any] = {
    "type": "object", "properties": {"scenario": {"type": "string"}}, "required": ["scenario"]}

Ask = Callable[[list[dict[str, str]]], Awaitable[dict[str, Any]]]


async def _ask_all(jobs: list[Job], prompts: list[str], ask: Ask, concurrency: int) -> list[str]:
    """Every prompt sent as one user message (no system prompt, as the seed), at most `concurrency` at once."""
    gate = asyncio.Semaphore(concurrency)

    async def one(prompt: str) -> str:
        async with gate:
            reply = await ask([{"role": "user", "content": prompt}])
        return str(reply.get("scenario") or "").strip()

    return list(await asyncio.gather(*(one(p) for p in prompts)))


def llm_scenarios(jobs: list[Job], wording: Wording, ask: Ask, concurrency: int) -> dict[Job, str]:
    """The model's scenario for each job (an empty one is returned as ""; the caller decides)."""
    prompts = [generation_prompt(j.advice, j.factor, wording) for j in jobs]
    texts = asyncio.run(_ask_all(jobs, prompts, ask, concurrency))
    return dict(zip(jobs, texts, strict=True))


def _model_ask(ctx: Context, temperature: float) -> Ask:
    from chronokg.bench.llm import ask_json

    async def ask(messages: list[dict[str, str]]) -> dict[str, Any]:
        return await ask_json(ctx.model, messages, SCENARIO_SCHEMA, temperature=temperature)

    return ask


# --- building ------------------------------------------------------------------------------------------------


def _target(key: AnswerKey, advice: str) -> str:
    """What the graph says: YES when the scenario's recommendation is in force on the key's date."""
    return YES if advice in in_force(key.evidence) else NO


def _quirks(pair: Pair, key: AnswerKey) -> list[str]:
    row = pair.row
    quirks = []
    if row.current_text == row.prior_text:
        quirks.append("identical_texts")
    if _target(key, row.current_text or "") != YES or _target(key, row.prior_text or "") != NO:
        quirks.append("key_differs_from_graph")
    return quirks


def _jobs(pair: Pair, options: ConflictMedQAOptions, factors: list[Factor]) -> list[Job]:
    chosen = [pair.released] if pair.released is not None else factors
    return [Job(pair, f, v) for f in chosen if f in factors for v in options.versions]


def _question(ctx: Context, options: ConflictMedQAOptions, job: Job, key: AnswerKey, scenario: str, source: str,
              quirks: list[str], wording: Wording) -> Question:
    pair, f, version = job.pair, job.factor, job.version
    row = pair.row
    up = version is Version.up_to_date
    label_target = YES if up else NO
    prompt = evaluation_prompt(scenario, wording)
    variant = f"{source}/{version.value}"
    released_id = (row.driftmed_id if up else row.prior_driftmed_id) if source == "released" else None
    meta = {
        "pair": row.pair, "pair_index": pair.index, "concept": row.pair, "ikcr_pair": f"{row.pair}|{f.key}",
        "factor": f.key, "factor_name": f.seed, "factor_paper": f.paper, "version": version.value,
        "stance": "endorse" if up else "reject", "gold_endorse": up, "change_category": pair.category,
        "disease": pair.disease, "disease_group": pair.disease_group, "clinical_focus": row.clinical_focus,
        "source": pair.source, "driftmed_id": released_id, "advice": job.advice,
        "counterpart": row.prior_text if up else row.current_text, "scenario": scenario,
        "scenario_source": source, "template": options.template.value if source != "released" else None,
        "question_form": wording.value, "as_of": pair.date.isoformat(), "graph_target": _target(key, job.advice),
        "quirks": quirks, "protocol": options.protocol.value,
    }
    derived = [f"ChangePair:{row.pair}"] + ([f"SourceQuestion:driftmed-q:{released_id}"] if released_id else [])
    return Question(
        id=content_id("q", NAME, variant, row.pair, f.key, prompt, label_target), family=NAME, variant=variant,
        input=prompt, system=None,
        choices=[Choice(label=YES, text=YES, role="yes"), Choice(label=NO, text=NO, role="no")],
        target=label_target, target_date=pair.date, answer_key=key, snapshot=ctx.snapshot,
        generator=generator_info(NAME, options), facts=[x for x in (row.current_fact, row.prior_fact) if x],
        derived_from=derived, metadata=meta,
    )


def _scenarios(ctx: Context, options: ConflictMedQAOptions, jobs: list[Job]) -> dict[Job, tuple[str, str]]:
    """(text, how it was written) per job: released text, the model's, or the template's."""
    out: dict[Job, tuple[str, str]] = {}
    to_write = []
    for job in jobs:
        if job.pair.released is not None:
            out[job] = (job.advice, "released")
        elif ctx.model is None:
            phrases = evidence_phrases(job.factor)
            rng = ctx.rng(NAME, job.pair.row.pair, job.factor.key)  # same phrase for both versions of a pair
            phrase = rng.choice(phrases) if phrases else None
            out[job] = (template_scenario(job.advice, job.factor, phrase), "template")
        else:
            to_write.append(job)
    if to_write:
        written = llm_scenarios(to_write, options.template, _model_ask(ctx, options.temperature), options.concurrency)
        for job, text in written.items():
            if not text and options.protocol is not Protocol.seed:
                raise ModelError(f"the model wrote an empty scenario for {job.pair.row.pair} / {job.factor.seed} / "
                                 f"{job.version.value}")
            out[job] = (text, "llm")
    return out


def generate(ctx: Context, options: ConflictMedQAOptions) -> Iterator[Question]:
    factors = [factor(name) for name in options.factors]
    factors = [f for f in FACTORS if f in factors]  # the seed's order, each once
    seed = options.protocol is Protocol.seed
    wording = options.question or (Wording.code if seed else Wording.paper)
    pairs = _pairs(ctx, options)
    if ctx.progress is not None:
        ctx.progress.start(len(pairs), NAME)
    keys: dict[str, tuple[AnswerKey, list[str]]] = {}
    jobs: list[Job] = []
    for pair in pairs:
        key = ctx.key("conflictmedqa-key", {"pair": pair.row.pair, "date": pair.date}, current_text)
        quirks = _quirks(pair, key)
        if quirks and not seed:
            ctx.notes.append(f"{pair.row.pair}: left out under --protocol chronokg ({', '.join(quirks)})")
            continue
        keys[pair.row.pair] = (key, quirks)
        jobs.extend(_jobs(pair, options, factors))
    scenarios = _scenarios(ctx, options, jobs)
    done: set[str] = set()
    for job in jobs:
        text, source = scenarios[job]
        if not text:  # the seed's `if scenario:` drops what the model left empty
            ctx.notes.append(f"{job.pair.row.pair} / {job.factor.seed} / {job.version.value}: empty scenario "
                             "dropped (as the seed does)")
            continue
        key, quirks = keys[job.pair.row.pair]
        yield _question(ctx, options, job, key, text, source, quirks, wording)
        if ctx.progress is not None and job.pair.row.pair not in done:
            done.add(job.pair.row.pair)
            ctx.progress.advance(1)


def answer(question: Question, evidence: list[dict[str, Any]]) -> str | None:
    """The target new evidence gives: YES when the scenario's recommendation is in force on the key's date."""
    advice = question.metadata.get("advice")
    if not isinstance(advice, str):
        return None
    return YES if advice in in_force(evidence) else NO


# --- the seed's file formats ---------------------------------------------------------------------------------


LABELS = {UP_TO_DATE: "correct", OUTDATED: "wrong"}


def _seed_order(questions: list[Question]) -> list[Question]:
    """Factor-major, then pair order: how the seed's scenario JSON and prediction ids run."""
    rank = {f.key: n for n, f in enumerate(FACTORS)}
    return sorted(questions, key=lambda q: (rank.get(q.metadata.get("factor", ""), 99),
                                            q.metadata.get("pair_index", 0)))


def _driftmed_ids(questions: list[Question]) -> dict[str, int]:
    """DriftMed row ids: released rows keep theirs; new ones run 1.. over the up-to-date block (seed order) and
    the outdated partner gets id + 2145 (the loader's offset; + the block size when that is larger)."""
    ups = [q for q in _seed_order(questions) if q.metadata.get("version") == UP_TO_DATE]
    offset = max(DRIFTMED_OFFSET, len(ups))
    by_pair = {(q.metadata.get("pair"), q.metadata.get("factor")): n for n, q in enumerate(ups, start=1)}
    ids: dict[str, int] = {}
    for q in questions:
        m = q.metadata
        if isinstance(m.get("driftmed_id"), int):
            ids[q.id] = m["driftmed_id"]
            continue
        n = by_pair.get((m.get("pair"), m.get("factor")))
        if n is not None:
            ids[q.id] = n if m.get("version") == UP_TO_DATE else n + offset
    return ids


def seed_format(questions: Iterable[Question]) -> Iterator[tuple[str, Any]]:
    """The seed's files, each with exactly the fields the seed writes or reads. `correct_scenarios.json` /
    `wrong_scenarios.json`: `{bias_type: [scenario, ...]}` as `generate_scenarios.py` writes it (all 11 bias
    types in its order, a factor not built an empty list) and `predict_scenarios.py --input_file` reads it;
    `*_scenario_ids.json` (ours) gives the chronokg id of each entry in the same shape. `correct_advice.csv` /
    `wrong_advice.csv` (column `advice`, the generator's input) and `advice_kb.csv` (`id`, `advice`: the RAG
    knowledge base of current recommendations); `driftmed.jsonl`: the rows of Hugging Face `RDBH/DriftMed`
    (`id, text, label, bias_type, change_category, disease`), which chronokg's DriftMed loader reads back. The
    chronokg ids, pair and disease group of each row or advice line go to the side file (`OURS`)."""
    qs = list(questions)
    ordered = _seed_order(qs)
    for version, label in LABELS.items():
        block = [q for q in ordered if q.metadata.get("version") == version]
        if not block:
            continue
        scenarios: dict[str, list[str]] = {f.seed: [] for f in FACTORS}
        ids: dict[str, list[str]] = {f.seed: [] for f in FACTORS}
        for q in block:
            name = str(q.metadata.get("factor_name"))
            scenarios.setdefault(name, []).append(str(q.metadata.get("scenario")))
            ids.setdefault(name, []).append(q.id)
        yield f"{label}_scenarios.json", scenarios
        yield f"{label}_scenario_ids.json", ids
        advice: dict[Any, tuple[Any, list[str]]] = {}
        for q in sorted(block, key=lambda q: q.metadata.get("pair_index", 0)):
            if q.metadata.get("scenario_source") != "released":
                advice.setdefault(q.metadata.get("pair"), (q.metadata.get("advice"), []))[1].append(q.id)
        for n, (pair, (text, members)) in enumerate(advice.items(), start=1):
            yield f"{label}_advice.csv", {"advice": text, OURS: {"pair": pair, "chronokg_ids": members}}
            if version == UP_TO_DATE:
                yield "advice_kb.csv", {"id": n, "advice": text, OURS: {"pair": pair, "chronokg_ids": members}}
    ids_of = _driftmed_ids(qs)
    for q in sorted(ordered, key=lambda q: (ids_of.get(q.id, 10**9), q.id)):
        m = q.metadata
        yield "driftmed.jsonl", {
            "id": ids_of.get(q.id), "text": m.get("scenario"), "label": LABELS.get(str(m.get("version"))),
            "bias_type": m.get("factor_name"), "change_category": m.get("change_category"),
            "disease": m.get("disease"), OURS: {"chronokg_ids": [q.id], "disease_group": m.get("disease_group")},
        }


FAMILY = Family(
    name=NAME, help="ConflictMedQA (DriftMed): clinical scenarios following the up-to-date or the outdated version "
                    "of a recommendation, under the paper's 11 factors; does it align with current guidelines?",
    options=ConflictMedQAOptions, generate=generate, seed_format=seed_format, answer=answer,
    needs=("recommendation change pairs in the paper's five categories: `chronokg ingest driftmed FILE` "
          "(DriftMed / ConflictMedQA pairs)"),
    sources="arXiv 2505.07968 (Findings of EMNLP 2025); RDBH/DriftMed; wwyi1828/ConflictMed@d750236/f9a08dd",
    seed_objects=("correct_scenarios.json", "wrong_scenarios.json", "correct_scenario_ids.json",
                  "wrong_scenario_ids.json"),
)
