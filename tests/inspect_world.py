"""A small TempoMed store in two releases, self-authored in TempoMed-Bench's trajectory and difference-file formats
(fictional PMIDs 9100000x, invented texts), for the inspect route's dates, cutoff split, re-scoring and log export.

Release 1 (2024-01-01): three trajectories, each a guideline superseding an earlier one, one difference each:
pair A (2019 over 2012), B (2018 over 2010), C (2017 over 2011). Release 2 (2025-06-01): B's difference file
corrected (the 2018 guideline keeps the 2010 recommendation: the 2018 item's key now gives that option, so
verdicts flip right -> wrong), and a new trajectory D (2022 over 2014).

TempoMed's loader keys a decision by its change pair (current and prior guideline), so a newer guideline of its
own never changes an existing item's answer key; only a release that restates the same pair does.

The model is frozen at CUTOFF: it answers the option in force on the question's date, or on CUTOFF for a later
date (a recommendation issued after its cutoff it does not know), in the format the family's extractor reads.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from chronokg.bench import snapshot
from chronokg.bench.family import generate
from chronokg.bench.question import Question, read_jsonl, write_jsonl
from chronokg.eval.profile import profile_for
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import tempomed

CUTOFF = dt.date(2018, 12, 31)
RELEASES = (dt.date(2024, 1, 1), dt.date(2025, 6, 1))
BETWEEN = "2024-06-01"
MODEL = "baseline/frozen:2018-12-31"

PAIRS = {  # name: (current pmid, year, prior pmid, year, focus, current text, prior text)
    "A": ("91000002", 2019, "91000001", 2012, "Fever treatment first-line drug", "Offer drug B first.",
          "Offer drug A first."),
    "B": ("91000012", 2018, "91000011", 2010, "Fever treatment duration", "Treat for three days.",
          "Treat for five days."),
    "C": ("91000022", 2017, "91000021", 2011, "Fever treatment threshold", "Treat from 38.5 C.",
          "Treat from 38.0 C."),
    "D": ("91000032", 2022, "91000031", 2014, "Fever treatment in older adults", "Review drugs every month.",
          "Review drugs every year."),
}
RESTATED = "B"  # release 2 corrects this pair: its current guideline's recommendation is the prior's text


def _trajectory(name: str) -> dict[str, Any]:
    cur, year, prior, pyear, focus, *_ = PAIRS[name]
    return {"Topic": focus, "Title": f"{focus}: guideline {year}", "year_of_current_guidance": year, "PMID": cur,
            "Organization": ["Fictional Society of Medicine"], "prior_guidelines": [{"year": pyear, "PMID": prior}]}


def _diff(name: str, current: str | None = None) -> tuple[str, str]:
    cur, _, prior, _, focus, cur_text, prior_text = PAIRS[name]
    record = {"clinical_focus": focus, "current_recommendation": current or cur_text,
              "prior_recommendation": prior_text, "change_summary": f"{focus}: changed"}
    return f"{cur}_{prior}_extracted_diffs.json", json.dumps([record])


def write_releases(folder: Path) -> tuple[Path, Path]:
    first, second = folder / "release-1", folder / "release-2"
    for path, names, diffs in ((first, "ABC", [_diff(n) for n in "ABC"]),
                               (second, "ABCD", [_diff(RESTATED, PAIRS[RESTATED][6]), _diff("D")])):
        path.mkdir(parents=True)
        (path / "trajectories.json").write_text(json.dumps([_trajectory(n) for n in names]), encoding="utf-8")
        for name, text in diffs:
            (path / name).write_text(text, encoding="utf-8")
    return first, second


def load(store: Path, release: Path, day: dt.date) -> None:
    with KgliteStore(store) as s:
        tempomed.load(s, [release], release_date=day)


def questions_now(store: Path, out: Path) -> list[Question]:
    with KgliteStore(store, read_only=True) as s:
        qs = generate("tempomed", s, snapshot.current(s), {"protocol": "chronokg"})[0]
    write_jsonl(out, qs)
    return qs


def read(path: Path) -> list[Question]:
    return list(read_jsonl(path))


def in_force(question: Question, label: str, day: dt.date) -> bool:
    text = next(c.text for c in question.choices if c.label == label)
    return any(r.get("kind") == "recommendation" and r.get("text") == text and str(r["valid_from"]) <= day.isoformat()
               and (r.get("valid_to") is None or str(r["valid_to"]) > day.isoformat())
               for r in question.answer_key.evidence)


def frozen_label(question: Question) -> str:
    """The option in force on the question's date, or on CUTOFF for a later date (the abstain option when none
    is)."""
    day = min(question.target_date or CUTOFF, CUTOFF)
    return next((c.label for c in question.choices if c.role != "unknown" and in_force(question, c.label, day)),
                next(c.label for c in question.choices if c.role == "unknown"))


def frozen_output(question: Question) -> str:
    return profile_for(question.family).render(question, frozen_label(question))


def pair_of(question: Question) -> str:
    return next(n for n, p in PAIRS.items() if question.metadata.get("PMID_current") == p[0])
