"""ChroKnowBench metrics, as dmis-lab/ChroKnowledge computes them (`sources/process.py`, its notebooks).

- Per (fact, year, template): Correct / Partial (partial_correct1: greedy partly right; partial_correct2:
  only a sampled answer right) / Incorrect, from the five greedy (T = 0.0) and five sampled (T = 0.7)
  answers of the year's few-shot draws (`classify_knowledge_fuzz`, process.py:139-161). Under `seed`
  only parsed answers ("A. ..." outputs) count, so a year whose greedy answers were all dropped falls to
  the sampled branch (Q-S2); under `chronokg` unparsed answers count as wrong ones.
- Per (fact, template): Known / Cut-off / Partial_known / Unknown from the chronological list of the
  year categories (`classify_results_time_fine_graining`, process.py:267-351).
- ChroKnowPrompt's gain in Known (`run_evaluation.ipynb` `results_of_total_span`): 100 x facts moved
  from Partial_known to Known / facts in the sample; from a `chronokg eval chroknow-prompt` run.

Both the pure path and the Cypher path count samples per (template, domain, split, fact, year, decoding,
parsed); the categories are decided in `finish`, shared by both.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from chronokg.bench.families.chroknow_categories import FACT_CATEGORIES as FACT_CATEGORIES
from chronokg.bench.families.chroknow_categories import KNOWN_YEAR as KNOWN_YEAR
from chronokg.bench.families.chroknow_categories import YEAR_CATEGORIES as YEAR_CATEGORIES
from chronokg.bench.families.chroknow_categories import fact_category as fact_category
from chronokg.bench.families.chroknow_categories import year_category as year_category
from chronokg.eval.log import SampleRecord
from chronokg.metrics.spec import MetricSpec, Rows, count_by, counted_by, prediction_match, register

FAMILY = "chroknow"
BASE = prediction_match() + " AND p.family = 'chroknow'"
DECODING = "CASE WHEN p.sample = 0 THEN 'greedy' ELSE 'sampled' END"  # sample 0 is the greedy one
CHECK_KEYS = ("template", "domain", "split", "fact_key", "year", "decoding", "parsed", "protocol")


# --- counting ---------------------------------------------------------------------------------------------------


def _check_count(samples: Sequence[SampleRecord]) -> Rows:
    """Answers per (template, domain, split, fact, year, decoding, parsed): decoding is the sample index's
    (sample 0 is the greedy run, the others the T = 0.7 run)."""
    return count_by(_checks(samples), CHECK_KEYS, lambda s: True)


def _checks(samples: Sequence[SampleRecord]) -> list[SampleRecord]:
    """The knowledge-check samples, each with its decoding (sample 0 greedy, the others sampled) as a field."""
    return [s.model_copy(update={"fields": {**s.fields, "decoding": "greedy" if s.sample == 0 else "sampled"}})
            for s in samples if s.fields.get("kind") == "check"]


_check_cypher = counted_by(BASE + " AND p.f_kind = 'check'", ("template", "domain", "split", "fact_key", "year",
                           "decoding", "parsed", "protocol"), decoding=DECODING)


Fact = tuple[str, str, str | None, str]  # template, domain, split, fact key


def years_of(rows: Rows) -> dict[Fact, dict[int, str]]:
    """Every (template, fact)'s year categories, years ascending."""
    tally: dict[Fact, dict[int, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    for r in rows:
        key: Fact = (str(r["template"]), str(r["domain"]), r["split"], str(r["fact_key"]))
        cell = tally[key][int(r["year"])]
        if r["decoding"] == "greedy":
            if r["parsed"] or r["protocol"] != "seed":  # seed: unparsed greedy answers are dropped (Q-S2)
                cell[0] += int(r["n"])
            cell[1] += int(r["correct"])
        else:
            cell[2] += int(r["correct"])
    return {fact: {y: year_category(*years[y]) for y in sorted(years)} for fact, years in tally.items()}


def _group(fact: Fact) -> str:
    template, domain, split, _ = fact
    return "/".join(p for p in (template, domain, split) if p)


def _years_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    per = years_of(rows)
    groups: dict[str, dict[str, Any]] = {}
    total: Counter[str] = Counter()
    for fact, years in per.items():
        by_year = groups.setdefault(_group(fact), {})
        for year, category in years.items():
            cell = by_year.setdefault(str(year), dict.fromkeys(YEAR_CATEGORIES, 0))
            cell[category] += 1
            total[category] += 1
    for by_year in groups.values():
        for cell in by_year.values():
            n = sum(cell[c] for c in YEAR_CATEGORIES)
            cell.update(n=n, percent_correct=100 * cell["correct"] / n,
                        percent_partial=100 * (cell["partial_correct1"] + cell["partial_correct2"]) / n)
    n = sum(total.values())
    ordered = {g: dict(sorted(v.items())) for g, v in sorted(groups.items())}
    return (total["correct"] / n if n else None), ordered, {c: total[c] for c in YEAR_CATEGORIES} | {"n": n}


YEAR_SPLIT = register(MetricSpec(
    "chroknow.year_categories", FAMILY, "Per year: facts Correct / Partial (greedy partly right; only sampled "
    "right) / Incorrect, and the percentage Correct, by template, domain and split; value: share Correct.", True,
    _check_count, _years_finish, _check_cypher, kind="accuracy"))


def _facts_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    per = years_of(rows)
    groups: dict[str, dict[str, Any]] = {}
    total: Counter[str] = Counter()
    for fact, years in per.items():
        category = fact_category([years[y] for y in sorted(years)])
        cell = groups.setdefault(_group(fact), dict.fromkeys(FACT_CATEGORIES, 0))
        cell[category] += 1
        total[category] += 1
    for cell in groups.values():
        n = sum(cell[c] for c in FACT_CATEGORIES)
        cell.update({f"share_{c}": cell[c] / n for c in FACT_CATEGORIES}, n=n)
    n = sum(total.values())
    return (total["Known"] / n if n else None), dict(sorted(groups.items())), {
        c: total[c] for c in FACT_CATEGORIES} | {"n": n}


FACT_SPLIT = register(MetricSpec(
    "chroknow.fact_categories", FAMILY, "Per fact: Known (correct every year) / Cut-off (known, then lost; or "
    "unknown, then known) / Partial_known / Unknown (never), by template, domain and split; value: share Known.",
    True, _check_count, _facts_finish, _check_cypher, kind="accuracy"))


# --- answers ------------------------------------------------------------------------------------------------


def _answers_count(samples: Sequence[SampleRecord]) -> Rows:
    return count_by(_checks(samples), ("template", "decoding", "parsed"), lambda s: True)


_answers_cypher = counted_by(BASE + " AND p.f_kind = 'check'", ("template", "decoding", "parsed"), decoding=DECODING)


def _answers_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for r in rows:
        cell = groups.setdefault(f"{r['template']}/{r['decoding']}", {"n": 0, "correct": 0, "unparsed": 0})
        cell["n"] += int(r["n"])
        cell["correct"] += int(r["correct"])
        cell["unparsed"] += 0 if r["parsed"] else int(r["n"])
    n = sum(c["n"] for c in groups.values())
    for cell in groups.values():
        cell.update(accuracy=cell["correct"] / cell["n"], unparsed_rate=cell["unparsed"] / cell["n"])
    unparsed = sum(c["unparsed"] for c in groups.values())
    return (unparsed / n if n else None), dict(sorted(groups.items())), {"n": n}


ANSWERS = register(MetricSpec(
    "chroknow.answers", FAMILY, "Single answers by template and decoding: share matching the gold, and share "
    "not read (no leading 'A. ', dropped by the seed); value: the unparsed rate.", False,
    _answers_count, _answers_finish, _answers_cypher, kind="rate"))


# --- ChroKnowPrompt -----------------------------------------------------------------------------------------

PROMPT_KEYS = ("template", "domain", "split", "before", "after", "after_previous")


def _prompt_count(samples: Sequence[SampleRecord]) -> Rows:
    return count_by(samples, PROMPT_KEYS, lambda s: s.fields.get("kind") == "prompt")


_prompt_cypher = counted_by(BASE + " AND p.f_kind = 'prompt'", ("template", "domain", "split", "before", "after",
                                                                "after_previous"))


def _gain(cell: dict[str, int]) -> dict[str, Any]:
    n = cell["n"]
    return {"facts": n, "known_before": cell["known"], "moved": cell["moved"],
            "moved_previous": cell["moved_previous"], "known_after": cell["known"] + cell["moved"],
            "percent_known_before": 100 * cell["known"] / n if n else None,
            "gain": 100 * cell["moved"] / n if n else None,
            "gain_previous": 100 * cell["moved_previous"] / n if n else None}


def _prompt_finish(rows: Rows) -> tuple[float | None, dict[str, Any], dict[str, Any]]:
    cells: dict[str, dict[str, int]] = {}
    total = {"n": 0, "known": 0, "moved": 0, "moved_previous": 0}
    for r in rows:
        key = "/".join(p for p in (r["template"], r["domain"], r["split"]) if p)
        cell = cells.setdefault(key, {"n": 0, "known": 0, "moved": 0, "moved_previous": 0})
        for c in (cell, total):
            c["n"] += int(r["n"])
            c["known"] += int(r["n"]) if r["before"] == "Known" else 0
            c["moved"] += int(r["n"]) if r["before"] == "Partial_known" and r["after"] == "Known" else 0
            c["moved_previous"] += int(r["n"]) if (r["before"] == "Partial_known"
                                                   and r["after_previous"] == "Known") else 0
    overall = _gain(total)
    return overall["gain"], {k: _gain(v) for k, v in sorted(cells.items())}, overall


PROMPT_GAIN = register(MetricSpec(
    "chroknow.prompt_gain", FAMILY, "ChroKnowPrompt: percentage points of the sampled facts moved from "
    "Partial_known to Known (every year correct or answered right by the traversal; total span, and the "
    "previous span only).", True, _prompt_count, _prompt_finish, _prompt_cypher, kind="score"))
