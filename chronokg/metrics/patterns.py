"""TempoMed-Bench's temporal-consistency pattern of one difference, from its year-sweep probe answers.

Seed: `pubmed_trajectory/heatmap_exp/pubmed_summarize_prediction_patterns.py:193-310` (GuanZihan/TempoMed-Bench,
MIT). `classify_seed` decides exactly as that script (thresholds 0.7 / 0.3, switch-point search over >= 4
distinct years, candidates ascending excluding the first and last year, >= 2 years and >= 2 usable ratios
a side, the FIRST split that passes; gap <= 2 years from the current version -> correct transition, else
wrong; otherwise constant patterns at 0.9, requiring every answer to be Yes or No; else inconsistent).
The gold answers are never used.

`classify_fixed` (`--protocol chronokg`) keeps the thresholds but takes the split that agrees best with a
transition (the largest (lp - lc) + (rc - rp), ties to the split nearest the current version) and needs
one usable ratio a side, so a perfect oracle is a correct transition for every difference whose prior
version was in force for at least a year; abstentions (C) are left out of the constant patterns as they
are out of the ratios.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

CORRECT = "correct_transition"
WRONG = "wrong_transition"
ONLY_PRIOR = "only_know_prior"
ONLY_LATEST = "only_know_latest"
ALL_TRUE = "all_true"
ALL_FALSE = "all_false"
INCONSISTENT = "inconsistent"
ORDER = (CORRECT, WRONG, ONLY_PRIOR, ONLY_LATEST, ALL_TRUE, ALL_FALSE, INCONSISTENT)
SEED_NAMES = {  # the seed's code names, for its export format
    CORRECT: "correct_zigzag_transition", WRONG: "misaligned_zigzag", ONLY_PRIOR: "prior_only_yes",
    ONLY_LATEST: "current_only_yes", ALL_TRUE: "prior_and_current_yes", ALL_FALSE: "all_no", INCONSISTENT: "other",
}


@dataclass(frozen=True)
class Answer:
    """One probe answer: which statement, for which year, the extracted label (A = Yes, B = No, C, INVALID)."""

    source: str  # prior | current
    year: int
    prediction: str


@dataclass(frozen=True)
class Pattern:
    name: str
    split: int | None = None
    current_year: int | None = None
    gap: int | None = None


Ratios = dict[tuple[str, int], float]


def _ratios(answers: Sequence[Answer]) -> Ratios:
    """The share of Yes among the usable (A or B) answers of each (statement, year) that has one: read once per
    difference, not once per candidate split (`eval compare` classifies every difference in every draw)."""
    counts: dict[tuple[str, int], list[int]] = {}
    for a in answers:
        if a.prediction in ("A", "B"):
            cell = counts.setdefault((a.source, a.year), [0, 0])
            cell[0] += a.prediction == "A"
            cell[1] += 1
    return {key: yes / n for key, (yes, n) in counts.items()}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _sides(ratios: Ratios, years: Sequence[int], split: int) -> tuple[list[float], ...] | None:
    left = [y for y in years if y < split]
    right = [y for y in years if y >= split]
    out = []
    for side in (left, right):
        for source in ("prior", "current"):
            out.append([r for y in side if (r := ratios.get((source, y))) is not None])
    return tuple(out) if left and right else None


def _constant(answers: Sequence[Answer], threshold: float, strict: bool) -> str:
    if strict and any(a.prediction not in ("A", "B") or a.source not in ("prior", "current") for a in answers):
        return INCONSISTENT
    usable = [a for a in answers if a.prediction in ("A", "B")]
    prior = [a.prediction == "A" for a in usable if a.source == "prior"]
    current = [a.prediction == "A" for a in usable if a.source == "current"]
    if not prior or not current:
        return INCONSISTENT
    py, pc = sum(prior) / len(prior), sum(current) / len(current)
    if py >= threshold and 1 - pc >= threshold:
        return ONLY_PRIOR
    if 1 - py >= threshold and pc >= threshold:
        return ONLY_LATEST
    if py >= threshold and pc >= threshold:
        return ALL_TRUE
    if 1 - py >= threshold and 1 - pc >= threshold:
        return ALL_FALSE
    return INCONSISTENT


def classify_seed(answers: Iterable[Answer], current_year: int | None, high: float = 0.7, low: float = 0.3,
                  majority: float = 0.9, max_gap: int = 2) -> Pattern:
    """The seed's decision, step by step (see the module docstring)."""
    answers = list(answers)
    years = sorted({a.year for a in answers})
    ratios = _ratios(answers)
    if len(years) >= 4:
        for split in years[1:-1]:
            sides = _sides(ratios, years, split)
            if sides is None:
                continue
            lp, lc, rp, rc = sides
            if len([y for y in years if y < split]) < 2 or len([y for y in years if y >= split]) < 2:
                continue
            if any(len(s) < 2 for s in sides):
                continue
            if _mean(lp) >= high and _mean(lc) <= low and _mean(rp) <= low and _mean(rc) >= high:
                if current_year is None:
                    break
                gap = abs(split - current_year)
                return Pattern(CORRECT if gap <= max_gap else WRONG, split, current_year, gap)
    return Pattern(_constant(answers, majority, strict=True))


def classify_fixed(answers: Iterable[Answer], current_year: int | None, high: float = 0.7, low: float = 0.3,
                   majority: float = 0.9, max_gap: int = 2) -> Pattern:
    """chronokg's decision: the best-agreeing split, one usable ratio a side (see the module docstring)."""
    answers = list(answers)
    years = sorted({a.year for a in answers})
    best: tuple[float, int, int] | None = None  # (-score, distance to the current year, split)
    ratios = _ratios(answers)
    for split in years[1:]:
        sides = _sides(ratios, years, split)
        if sides is None or any(not s for s in sides):
            continue
        lp, lc, rp, rc = (_mean(s) for s in sides)
        if lp >= high and lc <= low and rp <= low and rc >= high:
            score = (lp - lc) + (rc - rp)
            distance = abs(split - current_year) if current_year is not None else 0
            candidate = (-score, distance, split)
            if best is None or candidate < best:
                best = candidate
    if best is not None:
        split = best[2]
        if current_year is None:
            return Pattern(CORRECT, split)
        gap = abs(split - current_year)
        return Pattern(CORRECT if gap <= max_gap else WRONG, split, current_year, gap)
    return Pattern(_constant(answers, majority, strict=False))
