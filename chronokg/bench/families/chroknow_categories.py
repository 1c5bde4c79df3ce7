"""ChroKnowledge's knowledge categories, per year and per fact (dmis-lab/ChroKnowledge `sources/process.py`).

Facts of the benchmark, below both the runner (ChroKnowPrompt picks the facts to prompt by them) and the
metrics (which count them), so neither imports the other for them.
"""

from __future__ import annotations

from collections.abc import Sequence

YEAR_CATEGORIES = ("correct", "partial_correct1", "partial_correct2", "incorrect")
KNOWN_YEAR = frozenset({"correct", "partial_correct1", "partial_correct2"})
FACT_CATEGORIES = ("Known", "Cut-off", "Partial_known", "Unknown")


def year_category(greedy: int, greedy_right: int, sampled_right: int) -> str:
    """`classify_knowledge_fuzz` (process.py:139-161) on counts: `greedy` answers considered (seed: the parsed
    ones), how many of them match, how many sampled answers match."""
    if greedy == 0:
        return "partial_correct2" if sampled_right > 0 else "incorrect"
    if greedy_right == greedy:
        return "correct"
    if greedy_right > 0:
        return "partial_correct1"
    if sampled_right > 0:
        return "partial_correct2"
    return "incorrect"


def fact_category(categories: Sequence[str]) -> str:
    """`classify_results_time_fine_graining` (process.py:310-349) on the year categories in year order."""
    first_known = next((i for i, c in enumerate(categories) if c in KNOWN_YEAR), None)
    first_unknown = next((i for i, c in enumerate(categories) if c == "incorrect"), None)
    if all(c == "correct" for c in categories):
        return "Known"
    if all(c == "incorrect" for c in categories):
        return "Unknown"
    if first_known is not None and first_unknown is not None:
        if first_known < first_unknown and all(c == "incorrect" for c in categories[first_unknown:]):
            return "Cut-off"
        if first_unknown < first_known and all(c in KNOWN_YEAR for c in categories[first_known:]):
            return "Cut-off"
    return "Partial_known"
