"""Editions of a title (files grouped by date), their ids, and the changed span of a changed paragraph."""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from chronokg.errors import InputError
from chronokg.graph.model import Source
from chronokg.ingest.cfr.xml_reader import DESIGNATION, KIND, PARAGRAPH, TOKEN, CfrFile, CfrPart, CfrSection

# --- editions ------------------------------------------------------------------------------------------


@dataclass
class Edition:
    """All files of one title at one date."""

    title: int
    date: dt.date
    files: list[CfrFile]

    @property
    def source(self) -> Source:
        digests = sorted(f.sha256 for f in self.files)
        checksum = digests[0] if len(digests) == 1 else hashlib.sha256("".join(digests).encode()).hexdigest()
        origin = ", ".join(sorted({f.date_from for f in self.files}))
        return Source(
            id=source_id(self.title, self.date), kind=KIND,
            caption=f"CFR title {self.title}, edition of {self.date.isoformat()} (date: {origin})",
            version=self.date.isoformat(), release_date=self.date, checksum=f"sha256:{checksum}",
            path="; ".join(str(f.path) for f in self.files),
        )

    @property
    def parts(self) -> list[CfrPart]:
        return [p for f in self.files for p in f.parts]

    @property
    def sections(self) -> list[CfrSection]:
        return [s for f in self.files for s in f.sections]


def source_id(title: int, date: dt.date) -> str:
    return f"{KIND}:title-{title}@{date.isoformat()}"


def section_id(title: int, number: str) -> str:
    return f"{KIND}:{title}:{number}"


def part_id(title: int, number: str) -> str:
    return f"{KIND}:{title}:part-{number}"


def paragraph_predicate(key: int) -> str:
    return f"{PARAGRAPH}:{key:03d}"


def group_editions(files: Iterable[CfrFile]) -> list[Edition]:
    """Files of the same title and date form one edition (volumes); oldest first."""
    groups: dict[tuple[int, dt.date], list[CfrFile]] = {}
    for f in files:
        same = groups.setdefault((f.title, f.edition_date), [])
        if any(g.sha256 == f.sha256 for g in same):
            continue  # the same file given twice
        numbers = {s.number for g in same for s in g.sections}
        if dup := next((s for s in f.sections if s.number in numbers), None):
            raise InputError(f.path, f"section {dup.label}", f"also in another file of the title {f.title} "
                                                             f"edition of {f.edition_date}")
        same.append(f)
    return [Edition(t, d, fs) for (t, d), fs in sorted(groups.items())]


# --- the changed span of a changed value ---------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    """The changed words: `new[start:end]` replaced `old` (empty where words were only deleted)."""

    start: int
    end: int
    old: str
    new: str
    regions: int


def changed_span(old: str, new: str) -> Span:
    """The smallest run of words in `new` (with the words of `old` it replaced) holding every change."""
    ot = [(m.group(), m.start(), m.end()) for m in TOKEN.finditer(old)]
    nt = [(m.group(), m.start(), m.end()) for m in TOKEN.finditer(new)]
    ops = [op for op in difflib.SequenceMatcher(None, [t[0] for t in ot], [t[0] for t in nt],
                                                autojunk=False).get_opcodes() if op[0] != "equal"]
    if not ops:
        return Span(0, len(new), old, new, 1)
    i1, i2, j1, j2 = ops[0][1], ops[-1][2], ops[0][3], ops[-1][4]
    if j1 < j2:
        start, end = nt[j1][1], nt[j2 - 1][2]
    else:
        start = end = nt[j1 - 1][2] if j1 > 0 else 0
    old_text = old[ot[i1][1]: ot[i2 - 1][2]] if i1 < i2 else ""
    return Span(start, end, old_text, new[start:end], len(ops))


def align(old: Sequence[str], new: Sequence[str]) -> list[tuple[int | None, int | None]]:
    """Pairs (old index, new index) of the same paragraph; None on one side for a removed/added one.

    Equal runs pair up, and so does a single paragraph replaced by a single one (revised in place).
    In a larger replaced run each new paragraph pairs, in order, with the most similar remaining old
    one if they are similar (difflib ratio >= 0.5), else with one of the same designation ("(b)").
    """
    out: list[tuple[int | None, int | None]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if op == "equal" or (op == "replace" and i2 - i1 == 1 and j2 - j1 == 1):
            out.extend(zip(range(i1, i2), range(j1, j2), strict=True))
            continue
        used: set[int] = set()
        last = i1 - 1
        compare = (i2 - i1) * (j2 - j1) <= 2500  # large rewritten runs (tables): designations only
        for j in range(j1, j2):
            candidates = range(last + 1, i2)
            best, best_ratio = None, 0.0
            for i in candidates if compare else ():
                ratio = difflib.SequenceMatcher(None, old[i], new[j], autojunk=False).ratio()
                if ratio > best_ratio:
                    best, best_ratio = i, ratio
            if best is None or best_ratio < 0.5:
                label = DESIGNATION.match(new[j])
                best = next((i for i in candidates if label and old[i].startswith(label.group(0))), None)
            if best is not None:
                out.append((best, j))
                used.add(best)
                last = best
            else:
                out.append((None, j))
        out.extend((i, None) for i in range(i1, i2) if i not in used)
    return out
