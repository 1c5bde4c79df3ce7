"""Answer extraction: the seeds' rules with their quirks, and chronokg's fixed rules (cases from the seed notes)."""

from __future__ import annotations

import pytest

from chronokg.eval.extract import (
    INVALID,
    tempomed_mcq_fixed,
    tempomed_mcq_seed,
    tempomed_probe_fixed,
    tempomed_probe_seed,
)

LABELS = ["C", "A", "B", "D", "E"]


@pytest.mark.parametrize("text,seed,fixed", [
    ("##Explanation: because\n##Answer: B", "B", "B"),
    ("## answer : c)", "C", "C"),
    ("##Answer:B", "B", "B"),
    ("B", "B", "B"),
    ("b", "B", INVALID),                        # the seed upper-cases the first line; chronokg wants a label
    ("B.", "B", "B"),                            # seed: the single-token fallback finds B; chronokg: "B." line
    ("The answer is B", "B", "B"),
    ("B. I think a patient needs it", INVALID, "B"),  # seed: "A" from the article makes two tokens
    ("##Answer: [B]", "B", "B"),                 # seed: only via the single-token fallback
    ("##Answer: e.g. A", "E", "A"),              # seed: IGNORECASE reads the "e" of e.g.
    ("##Answer: (A)", "A", "A"),
    ("", INVALID, INVALID),
    ("   \n  ", INVALID, INVALID),               # the seed crashes (IndexError); chronokg: INVALID
    (None, INVALID, INVALID),
    ("##Answer: A\n##Answer: D", "A", "D"),      # seed: first; chronokg: the last answer given
])
def test_tempomed_mcq(text: str | None, seed: str, fixed: str) -> None:
    assert tempomed_mcq_seed(text, LABELS) == seed
    assert tempomed_mcq_fixed(text, LABELS) == fixed


@pytest.mark.parametrize("text,seed,fixed", [
    ("##Answer: A\n##Explanation: yes", "A", "A"),
    ("##Answer: C", INVALID, "C"),                          # the seed never accepts C after ##Answer
    ("##Answer: C\n##Explanation: a guideline says", "A", "C"),  # the seed scores an abstention as Yes
    ("## Answer: A", "A", "A"),
    ("Yes", INVALID, INVALID),
    ("A) Yes", "A", "A"),
    ("c", "C", INVALID),
])
def test_tempomed_probe(text: str, seed: str, fixed: str) -> None:
    assert tempomed_probe_seed(text) == seed
    assert tempomed_probe_fixed(text) == fixed
