"""A ChroKnowBench item as the seed's code reads it (a row, its years and objects), below both the family that
builds and renders items and the builders of its sources (`chroknow_wikidata.py`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from chronokg.bench.families.chroknow_prompts import liquid_text

INVARIANT = ("CommonSense", "Math")
INVARIANT_YEARS = ("2020", "2021", "2022", "2023", "2024")  # ChroKnowledge.py:709
ORIGIN_WIKIDATA = "wikidata"


@dataclass(frozen=True)
class Distractor:
    """One distractor as the seed's row holds it (a string, or an alias list) and where it came from."""

    value: Any
    source: str  # source | llm | graph


@dataclass
class Item:
    """One benchmark row (or few-shot row, or CFR cloze item) in the shape the seed's code reads."""

    id: str
    domain: str
    origin: str  # chroknowbench | fewshot | cfr | wikidata
    row: dict[str, Any]
    subject_id: str
    predicate: str
    source_id: str
    state: str | None = None
    split: str | None = None
    file_name: str | None = None
    record: int | None = None
    windows: dict[str, tuple[dt.date, dt.date]] = field(default_factory=dict)
    distractors: list[Distractor] = field(default_factory=list)
    quirks: list[str] = field(default_factory=list)
    derived: str = ""

    @property
    def legal(self) -> bool:
        return self.domain == "Legal"

    @property
    def invariant(self) -> bool:
        return self.domain in INVARIANT

    @property
    def prefix(self) -> str:
        return "answers" if self.legal else "objects"

    def years(self) -> list[str]:
        """The seed's years: fixed for time-invariant rows, else the distinct `str(release_date)[:4]`."""
        if self.invariant:
            return list(INVARIANT_YEARS)
        return sorted({str(v)[:4] for k, v in self.row.items() if k.startswith("release_date_")})

    def shown_year(self, year: str) -> str:
        """A Wikidata item shown as an exemplar for a year it was not asked about: its nearest year."""
        if self.origin != ORIGIN_WIKIDATA or f"release_date_{year}" in self.row:
            return year
        return nearest_year(self.years(), year) or year

    def gold(self, year: str) -> list[Any] | None:
        """The row's objects (answers) for `year` as the file gives them, or None."""
        year = self.shown_year(year)
        value = self.row.get("objects") if self.invariant else self.row.get(f"{self.prefix}_{year}")
        return value if isinstance(value, list) else None

    def t(self, year: str) -> str | None:
        """What the prompts print as the year: `str(row['release_date_YYYY'])[:4]`."""
        if self.invariant:
            return year
        key = f"release_date_{self.shown_year(year)}"
        return str(self.row[key])[:4] if key in self.row else None

    def text(self) -> str:
        """The subject (or the Legal question) as the prompts print it."""
        return liquid_text(self.row.get("question" if self.legal else "subject"))

    def known_years(self) -> list[str]:
        return [y for y in self.years() if self.gold(y)]


def nearest_year(years: list[str], year: str) -> str | None:
    """An exemplar's year for an asked year: its latest year not after it, else its first."""
    before = [y for y in years if y <= year]
    return before[-1] if before else (years[0] if years else None)
