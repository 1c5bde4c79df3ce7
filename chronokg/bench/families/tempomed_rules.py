"""TempoMed-Bench's option rules as the seed scripts apply them: labels, the historical stem rewrite, the MCQ
user prompt and the positional perturbations (`build_choice_mode_data`) of one item.

Split out of `tempomed.py` so that each module holds one thing; `tempomed` imports them back.
"""

from __future__ import annotations

import itertools
import re
from enum import StrEnum

from chronokg.bench.families.tempomed_prompts import render

LABELS = ("A", "B", "C", "D")
UNKNOWN = "E"
ABSTAIN_TEXT = "I do not know the answer"  # the released data's Choice_E (no trailing period)
ROLES = {"A": "up_to_date", "B": "outdated", "C": "distractor", "D": "distractor", "E": "unknown"}
SEED_ALT_LABELS = {5: ("A", "B", "C", "D", "E"), 4: ("B", "C", "D", "E")}  # the seed scripts' defaults
FIXED_ALT_LABELS = {5: ("W", "X", "Y", "Z", "V"), 4: ("W", "X", "Y", "Z")}  # disjoint from A-E
PERMUTATIONS = list(itertools.permutations(range(4)))  # lexicographic, identity first (as the seed lists them)


class Perturbation(StrEnum):
    reorder_only = "reorder_only"
    shuffle_labels = "shuffle_labels"
    alternate_labels = "alternate_labels"


# --- the seed's rules ---------------------------------------------------------------------------------------


def rewrite_stem(question: str, year_current: int, year_prior: int) -> tuple[str, str]:
    """The seed's historical stem (`build_counterpart_question`, 5-option script lines 68-79) and which rule."""
    new, n = re.subn(rf"(issued in ){re.escape(str(year_current))}(\b)", rf"\g<1>{year_prior}\g<2>", question,
                     count=1)
    if n:
        return new, "issued_in"
    new, n = re.subn(rf"\b{re.escape(str(year_current))}\b", str(year_prior), question, count=1)
    if n:
        return new, "first_year"
    return question, "unchanged"


def option_block(entries: list[tuple[str, str]]) -> str:
    return "\n".join(f"{label}) {text}" for label, text in entries)


def mcq_prompt(question: str, entries: list[tuple[str, str]], options: int, unknown_label: str = UNKNOWN) -> str:
    """The seed's user prompt (`build_choice_prompt`); the 5-option one names the abstain label."""
    labels = "/".join(label for label, _ in entries)
    if options == 5:
        return render("MCQ5_USER", question=question, option_block=option_block(entries),
                      unknown_label=unknown_label, label_text=labels)
    return render("MCQ4_USER", question=question, option_block=option_block(entries), label_text=labels)


def perturb(texts: list[str], gold: str, method: Perturbation, perm: tuple[int, ...], alt: tuple[str, ...],
            options: int) -> tuple[list[tuple[str, str]], str, dict[str, str]]:
    """(displayed (label, text) entries, displayed gold label, display -> original label) for one item.

    `texts` are the original A-D (and E) option texts; as `build_choice_mode_data` does it.
    """
    correct = LABELS.index(gold)
    tail = [(UNKNOWN, texts[4])] if options == 5 else []
    if method is Perturbation.reorder_only:
        entries = [(LABELS[i], texts[i]) for i in perm] + tail
        mapping = {LABELS[i]: LABELS[i] for i in perm}
        shown_gold = gold
    elif method is Perturbation.shuffle_labels:
        entries = [(LABELS[i], texts[perm[i]]) for i in range(4)] + tail
        mapping = {LABELS[i]: LABELS[perm[i]] for i in range(4)}
        shown_gold = LABELS[perm.index(correct)]
    else:
        n = len(alt)
        entries = [(alt[i], texts[i]) for i in range(n)]
        mapping = {alt[i]: (*LABELS, UNKNOWN)[i] for i in range(n)}
        shown_gold = alt[correct]
        return entries, shown_gold, mapping
    if options == 5:
        mapping[UNKNOWN] = UNKNOWN
    return entries, shown_gold, mapping


def fixed_permutation(rng_draw: int, gold: str, position: int) -> tuple[int, ...]:
    """chronokg protocol: a non-identity permutation that puts the gold option at `position`."""
    fitting = [p for p in PERMUTATIONS[1:] if p[position] == LABELS.index(gold)]
    return fitting[rng_draw % len(fitting)]
