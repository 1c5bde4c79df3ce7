"""TempoMed-Bench, re-created from the graph: MCQ items, year-sweep probes, questions for new change pairs.

Seed: GuanZihan/TempoMed-Bench (MIT), `pubmed_trajectory/evaluation/pubmed_evaluation_5_option.py`,
`..._4_option.py` and `heatmap_exp/pubmed_inspect_questions.py`; paper arXiv 2605.13045. Every
difference between `--protocol seed` and `--protocol chronokg` is listed in docs/benchmarks.md
with the seed's file and line.

**MCQ items** (one stored TempoMed MCQ per change pair): two targets, the up-to-date one (key =
the current recommendation, target date = the current version's year) and the historical one
(the seed's stem rewrite: the first case-sensitive `issued in <Year_current>` becomes the prior
year, else the first standalone `<Year_current>`, else the stem is unchanged; key = the prior
recommendation, target date = the prior year), each under the seed's three positional
perturbations (reorder only, label shuffle, alternate labels), one permutation of A-D per item;
the abstain option E ("I do not know the answer") never moves. 6 items per MCQ.

**Year-sweep probes**: per change pair, per statement (prior, current), per target year (2000-2026 by
default), a yes/no/"I do not know" question; gold from the answer key: no recommendation in force
yet -> C, the statement's recommendation in force -> A (Yes), another one -> B (No).

**New change pairs** (loaded from difference files, no MCQ yet): an NBME-style stem and two
distractors written by an LLM with the seed's question-generation prompt when a model is given;
otherwise a template stem and distractors from the graph (recommendations of other pairs on a
similar clinical focus that were never valid in this trajectory), marked `template`.

Every item's answer key is the `decision-at` query: the recommendation in force for the item's
clinical decision on its target date, beside its trajectory's versions.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Iterator
from enum import StrEnum
from typing import Any

from pydantic import Field

from chronokg.bench.families.tempomed_probe_rows import probe_row
from chronokg.bench.families.tempomed_prompts import render, template
from chronokg.bench.families.tempomed_rules import (
    ABSTAIN_TEXT,
    FIXED_ALT_LABELS,
    LABELS,
    PERMUTATIONS,
    ROLES,
    SEED_ALT_LABELS,
    UNKNOWN,
    Perturbation,
    fixed_permutation,
    mcq_prompt,
    option_block,
    perturb,
    rewrite_stem,
)
from chronokg.bench.families.tempomed_table3 import table3_items
from chronokg.bench.family import OURS, Context, Family, FamilyOptions, Protocol, generator_info
from chronokg.bench.question import AnswerKey, Choice, Question, content_id
from chronokg.errors import ChronoKGError
from chronokg.queries.guidelines import DecisionRow, PairRow, at_date, in_force_text
from chronokg.queries.spec import all_queries

NAME = "tempomed"

class Target(StrEnum):
    up_to_date = "up_to_date"
    historical = "historical"


class TempoMedOptions(FamilyOptions):
    """What to build. Defaults reproduce the published 5-option run (`--choice_shuffle_method all`)."""

    options: int = Field(default=5, description="5 (with the fixed abstain option E) or 4 (the seed's 4-option "
                                                "script, no abstain option)")
    targets: list[Target] = Field(default_factory=lambda: list(Target), description="Which targets to build")
    perturbations: list[Perturbation] = Field(default_factory=lambda: list(Perturbation),
                                              description="Positional perturbations, in the seed's order")
    copies: int = Field(default=1, ge=1, le=24, description="Permutations drawn per item and perturbation")
    alt_labels: list[str] | None = Field(default=None, description="Labels of the alternate-labels copy "
                                                                   "(default: the seed's; chronokg: W,X,Y,Z,V)")
    mcq: bool = Field(default=True, description="Build the MCQ items")
    table3: bool = Field(default=False, description="Build Table 3's items as the seed's RAG evaluation asks "
                                                    "them: each released MCQ's 4 options in A-D order, up-to-date "
                                                    "and counterpart, its prompt (--protocol seed only)")
    probes: bool = Field(default=False, description="Build the year-sweep yes/no probes")
    probe_years: tuple[int, int] = Field(default=(2000, 2026), description="First and last target year of the "
                                                                           "probes (the paper's sweep)")
    new_pairs: bool = Field(default=True, description="Build MCQs for change pairs that have none (LLM when a "
                                                      "model is given, else template + graph distractors)")


# --- building ------------------------------------------------------------------------------------------------


def _key(ctx: Context, pair: PairRow, year: int, base: list[DecisionRow] | None = None) -> AnswerKey:
    """The item's answer key: `decision-at` for its decision on Jan 1 of `year` (from `base` rows when given)."""
    day = dt.date(year, 1, 1)
    rows = at_date(base, day) if base is not None else None
    return ctx.key("decision-at", {"decision": pair.decision, "date": day}, in_force_text, rows=rows)


def _pairs(ctx: Context, options: TempoMedOptions) -> list[PairRow]:
    spec = all_queries().get("change-pair-list")
    rows: list[PairRow] = spec.run(ctx.store, {"sources": sorted(ctx.since) if ctx.since is not None else None})
    rows = [r for r in rows if r.current_year is not None and r.prior_year is not None and r.current_text
            and r.prior_text]

    def order(r: PairRow) -> tuple[Any, ...]:  # the released file's order: by record (idx), then pair id
        rec = r.record if isinstance(r.record, int) else 10**9
        return (r.question_id is None, rec, r.pair)

    rows.sort(key=order)
    return rows[: options.limit] if options.limit else rows


def _mcq_items(ctx: Context, options: TempoMedOptions, pair: PairRow, choices: list[str], stem: str,
               base_meta: dict[str, Any], counter: dict[str, int]) -> Iterator[Question]:
    """The items of one MCQ: targets x perturbations x copies, in the seed's order."""
    seed = options.protocol is Protocol.seed
    n_options = options.options
    texts = choices[:4] + ([choices[4] if len(choices) > 4 else ABSTAIN_TEXT] if n_options == 5 else [])
    alt = tuple(options.alt_labels) if options.alt_labels else (
        SEED_ALT_LABELS if seed else FIXED_ALT_LABELS)[n_options]
    assert pair.current_year is not None and pair.prior_year is not None
    record = base_meta.get("idx")
    sub_idx = 0  # the seed's `variant_sub_idx`: items of one record numbered in this order
    for method in options.perturbations:
        for target in options.targets:
            current = target is Target.up_to_date
            year = pair.current_year if current else pair.prior_year
            question, rule = (stem, "none") if current else rewrite_stem(stem, pair.current_year, pair.prior_year)
            key = _key(ctx, pair, year)
            original_gold = "A" if current else "B"  # the seed hard-codes B for the historical target
            quirks: list[str] = []
            keyed_text = texts[LABELS.index(original_gold)]
            if key.answer is not None and key.answer != keyed_text:
                quirks.append("key_differs_from_graph")  # same-year pairs: the update is in force all year
            if not current and rule == "unchanged":
                quirks.append("stem_not_rewritten")
            if not current and pair.current_year == pair.prior_year:
                quirks.append("same_year_pair")
            if not seed and quirks:
                ctx.notes.append(f"{pair.pair} {target.value}: left out under --protocol chronokg "
                                 f"({', '.join(quirks)})")
                continue
            for copy in range(options.copies):
                rng = ctx.rng(NAME, pair.pair, target.value, method.value, copy)
                if seed:
                    perm = PERMUTATIONS[rng.randrange(24)]
                else:  # gold positions balanced over items, never the identity
                    slot = counter.setdefault(method.value, 0)
                    counter[method.value] += 1
                    perm = fixed_permutation(rng.randrange(1000), original_gold, slot % 4)
                entries, gold, mapping = perturb(texts, original_gold, method, perm, alt, n_options)
                inverse = {v: k for k, v in mapping.items()}
                unknown_label = UNKNOWN if seed else inverse.get(UNKNOWN, UNKNOWN)
                prompt = mcq_prompt(question, entries, n_options, unknown_label)
                shown = [Choice(label=lab, text=text, role=ROLES[mapping[lab]], original=mapping[lab])
                         for lab, text in entries]
                variant = f"mcq{n_options}/{target.value}/{method.value}"
                meta = {
                    **base_meta, "question_variant": "current_guideline" if current else "prior_guideline",
                    "target": target.value, "year_current": pair.current_year, "year_previous": pair.prior_year,
                    "target_guideline_year": year, "shuffle_method": method.value, "copy": copy,
                    "permutation": list(perm), "option_order": [lab for lab, _ in entries],
                    "display_to_original_option": mapping, "original_to_display_option": inverse,
                    "current_guideline_option": inverse["A"], "prior_guideline_option": inverse["B"],
                    "interference_options": [inverse["C"], inverse["D"]],
                    "unknown_option": inverse.get(UNKNOWN), "stem_rule": rule, "quirks": quirks,
                    "protocol": options.protocol.value, "variant_sub_idx": sub_idx,
                }
                sub_idx += 1
                yield Question(
                    id=content_id("q", NAME, variant, pair.pair, prompt, gold, record), family=NAME,
                    variant=variant, input=prompt, system=template("MCQ5_SYSTEM"), choices=shown, target=gold,
                    target_date=dt.date(year, 1, 1), answer_key=key, snapshot=ctx.snapshot,
                    generator=generator_info(NAME, options), facts=[f for f in (pair.current_fact, pair.prior_fact)
                                                                    if f],
                    derived_from=_derived(pair), metadata=meta,
                )


def _derived(pair: PairRow) -> list[str]:
    refs = [f"ChangePair:{pair.pair}"]
    if pair.question_id:
        refs.append(f"SourceQuestion:{pair.question_id}")
    return refs


def _stored_mcq(pair: PairRow) -> tuple[str, list[str]] | None:
    if pair.question is None or not pair.choices or len(pair.choices) < 4:
        return None
    return pair.question, list(pair.choices)


def _template_mcq(ctx: Context, pair: PairRow, pool: list[PairRow]) -> tuple[str, list[str]]:
    """A template stem and two graph distractors: recommendations of other pairs on a similar clinical focus
    that were never valid in this trajectory (marked `template` in the metadata)."""
    focus = pair.clinical_focus or pair.topic or "this clinical decision"
    org = pair.organization or "the issuing organization"
    stem = (f"According to the {org} guideline issued in {pair.current_year}, which of the following is recommended "
            f"for {focus[:1].lower() + focus[1:]}?")
    words = set(re.findall(r"[a-z]{4,}", focus.lower()))
    own = {pair.current_text, pair.prior_text}
    trajectory = {pair.current_pmid, pair.prior_pmid}
    candidates = []
    for other in pool:
        if other.pair == pair.pair or {other.current_pmid, other.prior_pmid} & trajectory:
            continue
        overlap = len(words & set(re.findall(r"[a-z]{4,}", (other.clinical_focus or other.topic or "").lower())))
        for text in (other.current_text, other.prior_text):
            if text and text not in own:
                candidates.append((-overlap, text))
    rng = ctx.rng(NAME, "distractors", pair.pair)
    rng.shuffle(candidates)
    candidates.sort(key=lambda c: c[0])
    distractors = list(dict.fromkeys(text for _, text in candidates))[:2]
    while len(distractors) < 2:
        distractors.append("No specific recommendation is made for this decision")
    assert pair.current_text is not None and pair.prior_text is not None
    return stem, [pair.current_text, pair.prior_text, *distractors, ABSTAIN_TEXT]


def _nbme_mcq(ctx: Context, pair: PairRow) -> tuple[str, list[str]]:
    """An NBME-style MCQ written by the model with the seed's question-generation prompt."""
    import asyncio

    from chronokg.bench.llm import ask_json

    user = render("NBME_USER", clinical_focus=pair.clinical_focus or "", prior_recommendation=pair.prior_text or "",
                  prior_recommendation_raw_text="", current_recommendation=pair.current_text or "",
                  current_recommendation_raw_text="", change_summary=pair.summary or "",
                  organization=[pair.organization] if pair.organization else [], current_year=pair.current_year,
                  prior_year=pair.prior_year)
    messages = [{"role": "system", "content": template("NBME_SYSTEM")},
                {"role": "assistant", "content": template("NBME_EXAMPLE")}, {"role": "user", "content": user}]
    item = asyncio.run(ask_json(ctx.model, messages, NBME_SCHEMA))
    return str(item["Question"]).strip(), [str(item[f"Choice_{c}"]) for c in "ABCD"] + [ABSTAIN_TEXT]


NBME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"question_type": {"type": "string"}, "Question": {"type": "string"},
                   **{f"Choice_{c}": {"type": "string"} for c in "ABCD"}, "Correct_Answer": {"type": "string"},
                   "Explanation": {"type": "string"}},
    "required": ["Question", "Choice_A", "Choice_B", "Choice_C", "Choice_D", "Correct_Answer", "Explanation"],
}


def _statement(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().rstrip(" .!?;:") or "the recommendation applies"


def _reference(*parts: str | None, default: str) -> str:
    """The seed's `build_reference_fallback`: normalised parts, trailing 'guideline' dropped, no repeats."""
    out: list[str] = []
    for part in parts:
        if not part:
            continue
        text = re.sub(r"\s+", " ", part).strip()
        text = re.sub(r"\s*guideline$", "", text, flags=re.I).strip(" ,;:-")
        if text and not any(text.lower() in p.lower() for p in out):
            out.append(text)
    return " ".join(out) or default


def _probes(ctx: Context, options: TempoMedOptions, pair: PairRow) -> Iterator[Question]:
    """Yes/no/"I do not know" probes for both statements of a pair over the target years."""
    first, last = options.probe_years
    base = ctx.rows("decision-at", {"decision": pair.decision, "date": dt.date(first, 1, 1)})
    if sum(1 for r in base if r.kind == "recommendation") != 2:
        # The paper probes differences of two-version trajectories: with a third version of the decision, the
        # statement in force after the sweep's middle is neither of the pair's, and no pattern applies.
        ctx.notes.append(f"{pair.pair}: no probes (its decision has more than two versions)")
        return
    topic = _reference(pair.topic, pair.clinical_focus, default="relevant topic")
    org = _reference(pair.organization, default="relevant organization")
    for source, text, year_of in (("prior", pair.prior_text, pair.prior_year),
                                  ("current", pair.current_text, pair.current_year)):
        assert text is not None
        question_template = re.sub(r"\s+", " ", template("PROBE_FALLBACK") % (topic, org, _statement(text)))
        for year in range(first, last + 1):
            key = _key(ctx, pair, year, base)
            in_force = key.answer
            gold = "C" if in_force is None else ("A" if _same(in_force, text) else "B")
            stem = question_template.replace("{year}", str(year))
            prompt = render("PROBE_USER", question=stem)
            variant = f"probe/{source}"
            latest = _latest(key)
            meta = {"pair_id": pair.pair, "difference_idx": 0, "statement_source": source,
                    "statement_guideline_year": year_of, "question_target_year": year, "target_year": year,
                    "statement_text": text, "latest_guideline_year": latest[0], "template": "fallback",
                    "protocol": options.protocol.value, "topic": pair.topic, "organization": pair.organization,
                    "clinical_focus": pair.clinical_focus,
                    "statement_guideline_pmid": pair.prior_pmid if source == "prior" else pair.current_pmid,
                    "latest_guideline_pmid": latest[1],
                    "recommendation_source": {pair.prior_pmid: "prior", pair.current_pmid: "current"}.get(latest[1])
                    if latest[1] is not None else None}
            yield Question(
                id=content_id("q", NAME, variant, pair.pair, prompt, gold), family=NAME, variant=variant,
                input=prompt, system=template("PROBE_SYSTEM"),
                choices=[Choice(label="A", text="Yes", role="yes"), Choice(label="B", text="No", role="no"),
                         Choice(label="C", text="I do not know", role="unknown")],
                target=gold, target_date=dt.date(year, 1, 1), answer_key=key, snapshot=ctx.snapshot,
                generator=generator_info(NAME, options), facts=[f for f in (pair.current_fact, pair.prior_fact) if f],
                derived_from=[f"ChangePair:{pair.pair}"], metadata=meta,
            )


def _probe_organizations(ctx: Context, pairs: list[PairRow], whole: bool) -> Callable[[PairRow], str | None]:
    """The organisation a pair's probes name: one per current guideline, as the seed's probe rows carry one
    organisation string per guideline (an MCQ stem keeps the one its own question names, and a guideline's
    questions may name it in two ways): the first by name of those its questions name. `whole`: `pairs` are all
    the store's pairs; otherwise (`--since`, `--limit`) a guideline's pairs are read again, so that a subset
    names the same organisation as the whole."""
    named: dict[str, set[str]] = {}
    if whole:
        for p in pairs:
            if p.current_pmid is not None and p.organization:
                named.setdefault(p.current_pmid, set()).add(p.organization)

    def pick(pair: PairRow) -> str | None:
        pmid = pair.current_pmid
        if pmid is None:
            return pair.organization
        if pmid not in named:
            rows: list[PairRow] = ctx.rows("change-pair-list", {"guideline": pmid})
            named[pmid] = {r.organization for r in rows if r.organization}
        return min(named[pmid]) if named[pmid] else pair.organization

    return pick


def _same(a: str, b: str) -> bool:
    """The seed's `recommendations_match`: equal after collapsing whitespace, case-insensitively."""
    return " ".join(a.split()).lower() == " ".join(b.split()).lower()


def _latest(key: AnswerKey) -> tuple[int | None, str | None]:
    """Year and guideline (PMID) of the recommendation in force: the seed's `latest_guideline_year` / `_pmid`."""
    found = [(r["year"], r["guideline"]) for r in key.evidence if r.get("kind") == "recommendation"
             and r.get("in_force")]
    return found[-1] if found else (None, None)


def generate(ctx: Context, options: TempoMedOptions) -> Iterator[Question]:
    if options.options not in (4, 5):
        raise ChronoKGError(f"--options {options.options}: give 4 or 5")
    if not (options.mcq or options.probes or options.table3):
        raise ChronoKGError("--no-mcq without --probes or --table3: no kind of item is asked for")
    if options.table3 and not options.mcq and "options" in options.model_fields_set:
        raise ChronoKGError(f"--options {options.options} with --table3 --no-mcq: Table 3 asks each released MCQ's "
                            "4 options in A-D order, as the seed does; --options sets the MCQ items, and --no-mcq "
                            "builds none")
    if options.table3 and options.protocol is not Protocol.seed:
        raise ChronoKGError("--table3 builds the seed's Table 3 items (--protocol seed); under --protocol chronokg "
                         "Table 3 is computed from the MCQ items (eval run --rag)")
    pairs = _pairs(ctx, options)
    probe_org = _probe_organizations(ctx, pairs, whole=ctx.since is None and not options.limit)
    if ctx.progress is not None:
        ctx.progress.start(len(pairs), "tempomed")
    counter: dict[str, int] = {}
    for pair in pairs:
        if options.mcq or options.table3:
            stored = _stored_mcq(pair)
            kind = "released"
            if stored is None and options.new_pairs and options.mcq:
                if ctx.model is not None:
                    stored, kind = _nbme_mcq(ctx, pair), "llm"
                else:
                    stored, kind = _template_mcq(ctx, pair, pairs), "template"
            if stored is not None:
                stem, choices = stored
                meta = {"idx": pair.record, "PMID_current": pair.current_pmid, "PMID_prior": pair.prior_pmid,
                        "decision": pair.decision, "mcq_source": kind, "stem": stem, "source_choices": choices,
                        "explanation": pair.explanation if kind == "released" else None}
                if options.mcq:
                    yield from _mcq_items(ctx, options, pair, choices, stem, meta, counter)
                if options.table3 and kind == "released":  # the seed asks the released file only
                    yield from table3_items(ctx, options, pair, stem, choices, meta, _key, _derived(pair))
        if options.probes:
            if options.protocol is Protocol.chronokg and pair.current_year == pair.prior_year:
                # At year precision the prior version was never in force: there is no transition to probe.
                ctx.notes.append(f"{pair.pair}: no probes under --protocol chronokg (same-year versions)")
            else:
                yield from _probes(ctx, options, pair.model_copy(update={"organization": probe_org(pair)}))
        if ctx.progress is not None:
            ctx.progress.advance(1)


def answer(question: Question, evidence: list[dict[str, Any]]) -> str | None:
    """The target the new evidence gives: the option whose text is in force (MCQ), or Yes/No/C (probe)."""
    text = in_force_text(evidence)
    if question.variant.startswith("probe/"):
        statement = str(question.metadata.get("statement_text", ""))
        return "C" if text is None else ("A" if _same(text, statement) else "B")
    for choice in question.choices:
        if text is not None and choice.text == text:
            return choice.label
    return None


# --- the seed's file formats ----------------------------------------------------------------------------------


def seed_format(questions: Iterable[Question]) -> Iterator[tuple[str, Any]]:
    """The seed's files: the released MCQ records (what the seed's `--data_path` reads), the evaluation items (its
    result records without model outputs) and the probe rows (its `generated_questions.jsonl`: `idx` numbered 0..
    as the seed's generator numbers rows, a subset of its fields: those the graph holds). Each record's chronokg
    question id(s) go to the side file (`OURS`).

    Items follow `P/evaluation/pubmed_evaluation_5_option.py` (`_4_option.py` for 4-option items): one list
    ordered perturbation-major (`main`: every record's reorder_only items, then shuffle_labels, then
    alternate_labels), each record's current then prior variant, `variant_sub_idx` numbered 0, 1, 2 ... per `idx`
    in that order (`assign_variant_sub_indices`), fields in `run_choice_mode`'s order, `question` the whole
    (rewritten) stem."""
    records: dict[tuple[Any, Any], dict[str, Any]] = {}
    mcq: list[Question] = []
    probes = 0
    for q in questions:
        m = q.metadata
        if q.variant.startswith(("mcq", "table3/")):  # Table 3's items ask the same released records
            if q.variant.startswith("mcq"):
                mcq.append(q)
            record = records.get((m.get("idx"), m.get("decision")))
            if record is None:
                choices = m.get("source_choices") or []
                answer_block: dict[str, Any] = {f"Choice_{c}": t for c, t in zip("ABCD", choices[:4], strict=False)}
                answer_block.update(Correct="A", Explanation=m.get("explanation") or "")
                if len(choices) > 4:
                    answer_block["Choice_E"] = choices[4]
                record = records[m.get("idx"), m.get("decision")] = {
                    "idx": m.get("idx"), "PMID_current": m.get("PMID_current"), "Year_current": m.get("year_current"),
                    "PMID_prior": m.get("PMID_prior"), "Year_prior": m.get("year_previous"),
                    "Question": m.get("stem"), "Answer": answer_block, OURS: {"chronokg_ids": []},
                }
            record[OURS]["chronokg_ids"].append(q.id)
        else:
            probes += 1
            yield "generated_questions.jsonl", probe_row(q, probes - 1, question_of(q))
    yield from _seed_items(mcq)
    for record in records.values():
        yield "questions.jsonl", record


def _seed_items(items: list[Question]) -> Iterator[tuple[str, Any]]:
    """The evaluation items in the seed's order and shape (see `seed_format`)."""
    methods = [p.value for p in Perturbation]
    ordered = sorted(items, key=lambda q: methods.index(str(q.metadata.get("shuffle_method"))))  # stable
    counts: dict[tuple[str, Any], int] = {}
    for q in ordered:
        m = q.metadata
        question = question_of(q)
        group = ("idx", m["idx"]) if m.get("idx") is not None else ("question", question)
        sub_idx = counts.get(group, 0)
        counts[group] = sub_idx + 1
        row: dict[str, Any] = {
            "year_previous": m.get("year_previous"), "year_current": m.get("year_current"),
            "target_guideline_year": m.get("target_guideline_year"), "question_variant": m.get("question_variant"),
            "question": question, "choices": {c.label: c.text for c in q.choices},
            "option_order": m.get("option_order"), "gold": q.target, "shuffle_method": m.get("shuffle_method"),
            "variant_sub_idx": sub_idx,
            "display_to_original_option": m.get("display_to_original_option"),
            "original_to_display_option": m.get("original_to_display_option"),
            "current_guideline_option": m.get("current_guideline_option"),
            "prior_guideline_option": m.get("prior_guideline_option"),
            "interference_options": m.get("interference_options"),
        }
        if len(q.choices) == 5:  # the 4-option script writes no unknown option
            row["unknown_option"] = m.get("unknown_option")
        if m.get("idx") is not None:
            row["idx"] = m["idx"]
        row[OURS] = {"chronokg_ids": [q.id]}
        yield "items.json", row


def question_of(q: Question) -> str:
    """The whole question text inside a seed prompt: between "Question:" and the blank line before its options
    (a stem may itself hold blank lines)."""
    body = q.input.split("Question:\n", 1)[-1]
    block = "\n\n" + option_block([(c.label, c.text) for c in q.choices]) + "\n\n"
    cut = body.rfind(block) if q.choices else -1
    return body[:cut] if cut >= 0 else body.split("\n\n", 1)[0]


FAMILY = Family(
    name=NAME, help="TempoMed-Bench: MCQs on guideline changes (up-to-date and historical targets, the seed's "
                    "perturbations), year-sweep yes/no probes, questions for new change pairs.",
    options=TempoMedOptions, generate=generate, seed_format=seed_format, answer=answer,
    seed_blocks=("questions.jsonl",),  # the released file; generated_questions.jsonl: one `json.dumps` line each
    needs=("guideline change pairs: `chronokg ingest tempomed DIR` (TempoMed-Bench MCQs, trajectories, "
          "difference files) or `chronokg bench trajectory`"),
    sources="GuanZihan/TempoMed-Bench@74b6f224 (MIT); arXiv 2605.13045",
)
