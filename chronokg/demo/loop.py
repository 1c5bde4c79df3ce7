"""The demo's research loop data: two releases of a small self-authored TempoMed-format file.

Release 1 (dated 2024-01-01) holds two guideline trajectories; release 2 (2025-06-01) is the whole file again
plus a newer guideline in the first trajectory and a third trajectory, so that after loading it
`generate --since` gives the new change pairs and `bench verify` names the old keys the new guideline changed.
The guidelines, organizations and PMIDs are invented (9000000x) and the texts are written for the demo; no row
is copied from TempoMed-Bench.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RELEASES = ("2024-01-01", "2025-06-01")


def _row(idx: int, current: tuple[str, int], prior: tuple[str, int], org: str, question: str,
         choices: list[str], correct: str, why: str) -> dict[str, Any]:
    answer: dict[str, Any] = {f"Choice_{label}": text for label, text in zip("ABCD", choices, strict=True)}
    answer.update(Correct=correct, Explanation=why, Choice_E="I do not know the answer")
    return {"idx": idx, "PMID_current": current[0], "Year_current": current[1], "PMID_prior": prior[0],
            "Year_prior": prior[1], "Question": f"{question} According to the {org} guideline issued in "
                                                f"{current[1]}, which of the following is recommended?",
            "Answer": answer}


ROWS: list[dict[str, Any]] = [
    _row(1, ("90000002", 2016), ("90000001", 2012), "Demo Society of Cardiology",
         "A 52-year-old man with no cardiovascular disease asks how often his blood pressure should be checked.",
         ["Every year, with home readings to confirm a raised office value",
          "Every five years, office readings only",
          "Only when symptoms appear",
          "Every month, ambulatory monitoring for everyone"],
         "A", "The 2016 demo guideline moved from five-yearly office checks to yearly checks confirmed at home."),
    _row(2, ("90000012", 2018), ("90000011", 2013), "Demo Infectious Diseases Board",
         "A healthy 30-year-old traveller asks about a booster before a trip.",
         ["No booster if the primary series was completed",
          "A booster every 10 years",
          "A booster before every trip",
          "Two boosters one month apart"],
         "B", "The 2018 demo guideline replaced 'no booster' with a booster every 10 years."),
    # release 2 only: a newer guideline in the first trajectory, and a new trajectory
    _row(3, ("90000003", 2022), ("90000002", 2016), "Demo Society of Cardiology",
         "A 52-year-old man with no cardiovascular disease asks how often his blood pressure should be checked.",
         ["Every year, with home readings to confirm a raised office value",
          "Every three years if the last reading was normal, yearly otherwise",
          "Only when symptoms appear",
          "Every month, ambulatory monitoring for everyone"],
         "B", "The 2022 demo guideline relaxed yearly checks to three-yearly after a normal reading."),
    _row(4, ("90000022", 2023), ("90000021", 2017), "Demo Nutrition Council",
         "An adult asks how much added sugar per day is acceptable.",
         ["Less than 10 % of daily energy", "Less than 5 % of daily energy",
          "No limit if physically active", "Less than 25 % of daily energy"],
         "B", "The 2023 demo guideline halved the limit from 10 % to 5 % of daily energy."),
]


def write_releases(folder: Path) -> tuple[Path, Path]:
    """release-1.jsonl (the first two rows) and release-2.jsonl (all four), in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    first, second = folder / "release-1.jsonl", folder / "release-2.jsonl"
    first.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:2]), encoding="utf-8")
    second.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return first, second
