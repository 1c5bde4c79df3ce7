"""MI-CXR, re-created from chest-X-ray timelines in the graph: TEL, ICR and GTS questions over 5-study windows.

Seed: "MI-CXR: A Benchmark for Longitudinal Reasoning over Multi-Interval Chest X-rays" (Cho, Han, Do;
Findings of ACL 2026; the anonymous submission is `../shared/papers/mi-cxr.txt`) and its released questions
(anonymousetrap12/MI-CXR `micxr_test.jsonl`, format `{q_id, group_type, qtype, images{T1..T5}, question,
choices{A..E}, answer}`). No construction or evaluation code is public; every rule below that the paper
does not state is chronokg's, listed with its default in docs/benchmarks/micxr.md.

**Windows** (paper A.4, Table 5): five consecutive studies of a patient, stride 1, study indices strictly
contiguous (`cxr-windows`). Per window and abnormality (a finding, all lateralities together) the binary
presence sequence x1..x5 (present if any observation of the study says so); an abnormality with a missing
state at any study is dropped from that window (A.5.1). Interval k is Tk -> Tk+1; an emergence is
neg -> pos, a resolution pos -> neg (A.8.2).

**Question types** (the released `qtype`s, Table 9):

* TEL, options the four intervals (fixed order) and E "There is no ...": `single_emergence` /
  `single_resolution` (windows with at most one such event), `multiple_emergence_1|2` /
  `multiple_resolution_1|2` (first / second event of the kind; E when there is none);
  `emergence_to_resolution` / `resolution_to_emergence`: options four study pairs "Ti, Tj", the key being
  (first study where the abnormality is present after absence, first later study where it is absent
  again), or the reverse; E when no such pair exists.
* ICR `icr_multi_abn`: A-D one statement per interval ("Between Tk and Tk+1, ..."), each about an
  abnormality of the window; exactly one true, or none (E).
* GTS `single_entity_interval_summary` (four trajectory summaries of one abnormality) and
  `multi_entity_interval_summary` (four summaries, each of a different abnormality); one true or none.

False statements and summaries are change-type flips of the true ones (new <-> resolved, worsened <->
improved, resolved <-> unchanged, ...; A.6), chosen so they contradict the timeline at some interval.

**Keys** are computed from the timeline and re-derived by `answer` from the rows of the named query
`cxr-window` (patient, T1 study, the question's findings): the answer key of every question.

**Selection**: per-type quotas (default: the paper's Table 9 counts), answer letters balanced (globally
under `--protocol seed`, within each type under `chronokg`), at most `max_null_share` of each type's
questions answered E ("no change"), at most `max_flat_share` of TEL questions from uniformly positive or
negative windows, at most `max_abnormality_share` of a type's quota about one abnormality.

**Prompts**: the paper's evaluation and stage-wise prompts are unpublished; the single-step prompt
(`input`, `system`) and the two stage-wise prompts in `metadata["stagewise"]` (stage 1: interval
descriptions from the images; stage 2: the answer from those descriptions only) are chronokg's own.
Summaries and statements are template sentences (chronokg's); with a model, GTS summaries are realised by
the model with the paper's prompts (Figures 5-8), the keys staying rule-based.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from itertools import pairwise
from types import SimpleNamespace
from typing import Any
from typing import Protocol as Structural

from pydantic import Field, field_validator

from chronokg.bench.families.micxr_prompts import questions as question_templates
from chronokg.bench.families.micxr_prompts import render, template
from chronokg.bench.family import OURS, Context, Family, FamilyOptions, Protocol, generator_info
from chronokg.bench.question import Choice, Question, content_id
from chronokg.errors import ChronoKGError
from chronokg.ingest.micxr_types import GROUP_OF
from chronokg.ingest.micxr_types import QType as QType  # re-exported: the metrics and profile read it here
from chronokg.queries.micxr import WINDOW_SIZE, CxrStateRow, CxrWindowRow, window_rows

NAME = "micxr"
LETTERS = ("A", "B", "C", "D", "E")
NONE = "E"
KEY_QUERY = "cxr-window"
INTERVAL_TEXT = tuple(f"T{k} \u2192 T{k + 1}" for k in range(1, WINDOW_SIZE))  # "T1 → T2", as released
PAIRS = tuple((i, j) for i in range(1, WINDOW_SIZE + 1) for j in range(i + 1, WINDOW_SIZE + 1))
GTS_MULTI = 4  # abnormalities per multi-entity summary question (one per option A-D)
LLM_CONCURRENCY = 8
GLOBAL_SLACK = 0.02  # chronokg protocol: letters balanced per type while no two differ by > 2% of all questions


Q = QType  # the released `qtype`s: `chronokg.ingest.micxr_types` (the loader checks them too)
TEL_INTERVAL = (Q.single_emergence, Q.single_resolution, Q.multiple_emergence_1, Q.multiple_emergence_2,
                Q.multiple_resolution_1, Q.multiple_resolution_2)
TEL_PAIR = (Q.emergence_to_resolution, Q.resolution_to_emergence)
GROUP = GROUP_OF
TABLE1_COLUMN = {  # the paper's Table 1 columns (the metrics' subtypes)
    **dict.fromkeys((Q.single_emergence, Q.single_resolution), "TEL Single (E/R)"),
    **dict.fromkeys(TEL_INTERVAL[2:], "TEL Multiple (E/R)"),
    **dict.fromkeys(TEL_PAIR, "TEL E\u2192R / R\u2192E"),
    Q.icr_multi_abn: "ICR",
    Q.single_entity_interval_summary: "GTS Single Abnormality",
    Q.multi_entity_interval_summary: "GTS Multi Abnormality",
}
TABLE9 = {  # released counts per type (paper Table 9): the default quotas (multiple_resolution_2 reached 244)
    Q.single_emergence: 500, Q.single_resolution: 500, Q.multiple_emergence_1: 250, Q.multiple_emergence_2: 250,
    Q.multiple_resolution_1: 250, Q.multiple_resolution_2: 250, Q.emergence_to_resolution: 500,
    Q.resolution_to_emergence: 500, Q.icr_multi_abn: 317, Q.single_entity_interval_summary: 1000,
    Q.multi_entity_interval_summary: 1000,
}


class Change(StrEnum):
    """What happens to an abnormality over one interval (mutually exclusive, except `present`)."""

    new = "new"  # absent -> present
    resolved = "resolved"  # present -> absent
    absent = "absent"  # absent -> absent
    worsened = "worsened"  # present -> present, worse (annotated, else by severity)
    improved = "improved"
    unchanged = "unchanged"
    present = "present"  # present -> present, direction unknown


DIRECTIONS = (Change.worsened, Change.improved, Change.unchanged)
# Change-type flips (paper A.6: "'improves' versus 'worsens', 'resolves' versus 'persists'"): each flip is
# certainly false when the true change is the key; the first is the directional opposite.
FLIPS: dict[Change, tuple[Change, ...]] = {
    Change.new: (Change.resolved, Change.absent, Change.unchanged),
    Change.resolved: (Change.new, Change.unchanged, Change.absent),
    Change.absent: (Change.new, Change.resolved),
    Change.worsened: (Change.improved, Change.unchanged, Change.resolved),
    Change.improved: (Change.worsened, Change.unchanged, Change.resolved),
    Change.unchanged: (Change.worsened, Change.improved, Change.resolved),
    Change.present: (Change.resolved, Change.new, Change.absent),
}
# Severity words of MIMIC-Ext-CXR-QBA modifiers, ranked (chronokg's scale; unknown words rank nothing).
SEVERITY_RANK = {
    "trace": 0, "minimal": 0, "tiny": 0, "small": 1, "mild": 1, "mild to moderate": 1.5, "small to moderate": 1.5,
    "moderate": 2, "moderate to large": 2.5, "moderate to severe": 2.5, "large": 3, "severe": 3, "massive": 4,
}
ICR_SENTENCE = {  # chronokg's interval statements (the paper's are report sentences flipped by GPT-5.1)
    Change.new: "The {x} is new.", Change.resolved: "The {x} has resolved.", Change.worsened: "The {x} has worsened.",
    Change.improved: "The {x} has improved.", Change.unchanged: "The {x} is unchanged.",
    Change.present: "The {x} persists.", Change.absent: "There is still no {x}.",
}
SUMMARY_CLAUSE = {  # chronokg's summary clauses, one per run of intervals
    Change.new: "newly appears", Change.resolved: "resolves", Change.worsened: "worsens",
    Change.improved: "improves", Change.unchanged: "remains unchanged", Change.present: "persists",
    Change.absent: "is absent",
}
EVENTS = (Change.new, Change.resolved)  # not merged over several intervals in a summary


# --- the timeline of one window ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Track:
    """One abnormality over one window: its presence at T1..T5 and its change over each interval."""

    finding: str
    laterality: str | None
    present: tuple[bool, ...]
    changes: tuple[Change, ...]
    facts: tuple[str, ...]

    @property
    def name(self) -> str:
        """How statements name it: with its laterality when the window has exactly one."""
        return f"{self.laterality} {self.finding}" if self.laterality else self.finding

    @property
    def flat(self) -> bool:
        """Uniformly positive or uniformly negative over the window."""
        return len(set(self.present)) == 1

    @property
    def pattern(self) -> str:
        return "".join("1" if p else "0" for p in self.present)


def _severity(values: Iterable[Any]) -> float | None:
    ranks = [SEVERITY_RANK[str(v).strip().lower()] for v in values if str(v).strip().lower() in SEVERITY_RANK]
    return max(ranks) if ranks else None


def _change(before: bool, after: bool, annotated: set[str], sev_before: float | None,
            sev_after: float | None) -> Change:
    """The interval's change: presence first; for present -> present the annotated direction of the later study,
    else the severity ranks, else `present` (direction unknown)."""
    if before != after:
        return Change.new if after else Change.resolved
    if not after:
        return Change.absent
    named = annotated & {c.value for c in DIRECTIONS}
    if len(named) == 1:
        return Change(named.pop())
    if sev_before is not None and sev_after is not None:
        return (Change.worsened if sev_after > sev_before else Change.improved if sev_after < sev_before
                else Change.unchanged)
    return Change.present


class StateLike(Structural):
    """The fields of a `cxr-window` row that keys are read from (a row, or its evidence dict as attributes)."""

    @property
    def slot(self) -> int: ...
    @property
    def study_index(self) -> int | None: ...
    @property
    def fact_id(self) -> str | None: ...
    @property
    def finding(self) -> str | None: ...
    @property
    def laterality(self) -> str | None: ...
    @property
    def predicate(self) -> str | None: ...
    @property
    def value(self) -> bool | str | None: ...
    @property
    def change_type(self) -> str | None: ...


def read_tracks(rows: Iterable[StateLike], first_slot: int = 1) -> dict[str, Track] | None:
    """Each complete abnormality of a window, from `cxr-window` rows (or from a whole timeline's rows, the window
    starting at `first_slot`); None when the rows are not one window of WINDOW_SIZE contiguous studies. An
    abnormality with no `finding_present` fact at some study is dropped."""
    shift = first_slot - 1
    rows = [r for r in rows if first_slot <= r.slot < first_slot + WINDOW_SIZE]
    studies: dict[int, int | None] = {}
    for r in rows:
        studies.setdefault(r.slot - shift, r.study_index)
    slots = list(range(1, WINDOW_SIZE + 1))
    if sorted(studies) != slots:
        return None
    indices = [studies[k] for k in slots]
    first = indices[0]
    if first is None or indices != list(range(first, first + WINDOW_SIZE)):
        return None
    present: dict[str, dict[int, list[bool]]] = defaultdict(lambda: defaultdict(list))
    severity: dict[str, dict[int, list[Any]]] = defaultdict(lambda: defaultdict(list))
    annotated: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    sides: dict[str, set[str | None]] = defaultdict(set)
    facts: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        if r.finding is None or r.fact_id is None:
            continue
        slot = r.slot - shift
        if r.predicate == "finding_present" and isinstance(r.value, bool):
            present[r.finding][slot].append(r.value)
            sides[r.finding].add(r.laterality)
            facts[r.finding].append(r.fact_id)
            if r.value and r.change_type:
                annotated[r.finding][slot].add(r.change_type)
        elif r.predicate == "finding_severity" and r.value is not None:
            severity[r.finding][slot].append(r.value)
    out: dict[str, Track] = {}
    for finding in sorted(present):
        if any(not present[finding][k] for k in slots):
            continue  # a missing state: dropped from this window (A.5.1)
        states = tuple(any(present[finding][k]) for k in slots)
        changes = tuple(_change(states[k - 1], states[k], annotated[finding][k + 1],
                                _severity(severity[finding][k]), _severity(severity[finding][k + 1]))
                        for k in range(1, WINDOW_SIZE))
        side = next(iter(sides[finding])) if len(sides[finding]) == 1 else None
        out[finding] = Track(finding, side, states, changes, tuple(sorted(set(facts[finding]))))
    return out


# --- keys ----------------------------------------------------------------------------------------------------


def events(present: Sequence[bool], emergence: bool) -> list[int]:
    """Intervals (1 = T1 -> T2) where the abnormality appears (`emergence`) or disappears."""
    return [k for k, (a, b) in enumerate(pairwise(present), start=1) if (not a and b if emergence else a and not b)]


def interval_key(qtype: QType, present: Sequence[bool]) -> str | None:
    """The key letter of a fixed-interval TEL question (E: no such event), or None when it is not asked
    (single_*: windows with two events of the kind)."""
    emergence = qtype in (Q.single_emergence, Q.multiple_emergence_1, Q.multiple_emergence_2)
    found = events(present, emergence)
    if qtype in (Q.single_emergence, Q.single_resolution):
        if len(found) > 1:
            return None
        nth = 0
    else:
        nth = 0 if qtype in (Q.multiple_emergence_1, Q.multiple_resolution_1) else 1
    return LETTERS[found[nth] - 1] if len(found) > nth else NONE


def pair_key(qtype: QType, present: Sequence[bool]) -> tuple[int, int] | None:
    """The key study pair of an E->R (R->E) question: (first study present after absence, first later study absent
    again), or the reverse; None when there is no such sequence."""
    emergence = qtype is Q.emergence_to_resolution
    found = events(present, emergence)
    if not found:
        return None
    i = found[0] + 1  # the study where it has just appeared (disappeared)
    later = [s for s in range(i + 1, len(present) + 1) if present[s - 1] != emergence]
    return (i, later[0]) if later else None


def pair_text(pair: Sequence[int]) -> str:
    return f"T{pair[0]}, T{pair[1]}"


def contradicts(truth: Change, claim: Change) -> bool:
    """Whether a claimed interval change is certainly false (an unknown direction contradicts no direction)."""
    if claim == truth:
        return False
    return not (truth is Change.present and claim in DIRECTIONS)


def verdict(truth: Sequence[Change], claim: Sequence[Change]) -> bool | None:
    """True when the claim equals the timeline, False when some interval contradicts it, None when undecided."""
    if tuple(truth) == tuple(claim):
        return True
    if any(contradicts(t, c) for t, c in zip(truth, claim, strict=True)):
        return False
    return None


def _target(meta: dict[str, Any], tracks: dict[str, Track]) -> str | None:
    """The key letter the timeline gives for a question described by its metadata; None when undecidable."""
    qtype = QType(meta["qtype"])
    if qtype in TEL_INTERVAL or qtype in TEL_PAIR:
        track = tracks.get(meta["abnormality"])
        if track is None:
            return None
        if qtype in TEL_INTERVAL:
            return interval_key(qtype, track.present)
        pair = pair_key(qtype, track.present)
        if pair is None:
            return NONE
        return next((o["label"] for o in meta["options"] if o.get("pair") == list(pair)), None)
    results = []
    for o in meta["options"]:
        if o.get("none"):
            continue
        track = tracks.get(o["abnormality"])
        if track is None:
            return None
        if qtype is Q.icr_multi_abn:
            claimed = Change(o["change"])
            truth = track.changes[o["interval"] - 1]
            result = True if claimed == truth else (False if contradicts(truth, claimed) else None)
        else:
            result = verdict(track.changes, [Change(c) for c in o["changes"]])
        if result is None:
            return None
        results.append((o["label"], result))
    true = [label for label, ok in results if ok]
    return NONE if not true else true[0] if len(true) == 1 else None


def evidence_tracks(evidence: list[dict[str, Any]]) -> dict[str, Track] | None:
    """`read_tracks` of an answer key's evidence (the rows' JSON dicts)."""
    fields = CxrStateRow.model_fields
    return read_tracks(SimpleNamespace(**{k: e.get(k) for k in fields}) for e in evidence)


def answer_from(meta: dict[str, Any], evidence: list[dict[str, Any]]) -> str | None:
    """The target `cxr-window` evidence gives for a question's metadata (None: the window or an abnormality no
    longer supports one)."""
    tracks = evidence_tracks(evidence)
    return None if tracks is None else _target(meta, tracks)


def answer(question: Question, evidence: list[dict[str, Any]]) -> str | None:
    """The target new evidence gives (`bench verify` calls it)."""
    return answer_from(question.metadata, evidence)


# --- wording -------------------------------------------------------------------------------------------------


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def icr_statement(interval: int, track_name: str, change: Change, protocol: Protocol) -> str:
    """'Between Tk and Tk+1, <sentence>'; the seed keeps the sentence's own capital (as released)."""
    sentence = ICR_SENTENCE[change].format(x=track_name)
    if protocol is Protocol.chronokg:
        sentence = sentence[:1].lower() + sentence[1:]
    return f"Between T{interval} and T{interval + 1}, {sentence}"


def summary(track_name: str, changes: Sequence[Change]) -> str:
    """One sentence over all intervals in order; runs of the same state are merged ('from T2 to T5')."""
    runs: list[tuple[Change, int, int]] = []  # (change, first study, last study)
    for k, change in enumerate(changes, start=1):
        if runs and runs[-1][0] == change and change not in EVENTS:
            runs[-1] = (change, runs[-1][1], k + 1)
        else:
            runs.append((change, k, k + 1))
    clauses = [f"{SUMMARY_CLAUSE[c]} from T{a} to T{b}" for c, a, b in runs]
    return f"{_capital(track_name)} " + ", then ".join(clauses) + "."


def _with_states(track: Track, states: Sequence[bool]) -> tuple[Change, ...]:
    """The changes of another presence sequence, keeping the track's direction where both ends stay present."""
    out = []
    for k, (a, b) in enumerate(pairwise(states)):
        if a and b:
            same = track.present[k] and track.present[k + 1]
            out.append(track.changes[k] if same else Change.unchanged)
        else:
            out.append(Change.new if b else Change.resolved if a else Change.absent)
    return tuple(out)


def distractors(track: Track, rng: Any, n: int) -> list[tuple[Change, ...]]:
    """`n` false change sequences for a summary, by change-type flips that keep the sequence plausible first:
    one study's presence flipped (its two intervals change together) or one direction flipped (worsened <->
    improved <-> unchanged), then single-interval flips of any kind (FLIPS)."""
    plausible: list[tuple[Change, ...]] = []
    for s in range(WINDOW_SIZE):
        states = list(track.present)
        states[s] = not states[s]
        plausible.append(_with_states(track, states))
    for k, change in enumerate(track.changes):
        if change in DIRECTIONS:
            for other in FLIPS[change]:
                if other in DIRECTIONS:
                    plausible.append((*track.changes[:k], other, *track.changes[k + 1:]))
    rng.shuffle(plausible)
    rest = [(*track.changes[:k], flip, *track.changes[k + 1:]) for k, change in enumerate(track.changes)
            for flip in FLIPS[change]]
    rng.shuffle(rest)
    out: list[tuple[Change, ...]] = []
    for seq in [*plausible, *rest]:
        if seq not in out and verdict(track.changes, seq) is False:
            out.append(seq)
        if len(out) == n:
            break
    return out


# --- options -------------------------------------------------------------------------------------------------


def _parse_quotas(values: list[str]) -> dict[QType, int]:
    out: dict[QType, int] = {}
    for item in values:
        name, sep, number = item.partition("=")
        if not sep:
            raise ValueError(f"quota {item!r}: write TYPE=N")
        try:
            qtype = QType(name.strip())
        except ValueError:
            raise ValueError(f"unknown question type {name.strip()!r} (known: {', '.join(QType)})") from None
        if not number.strip().isdigit():
            raise ValueError(f"quota {item!r}: N must be a whole number")
        out[qtype] = int(number)
    return out


class MicxrOptions(FamilyOptions):
    """What to build. Defaults: every type, the paper's Table 9 counts as quotas, chronokg's caps."""

    qtypes: list[QType] = Field(default_factory=lambda: list(QType), description="Question types to build")
    quota: int | None = Field(default=None, ge=0, description="One quota for every type (instead of Table 9's "
                                                               "counts)")
    quotas: list[str] = Field(default_factory=list, description="Per-type quotas as TYPE=N (override --quota and "
                                                              "Table 9)")
    max_null_share: float = Field(default=0.2, ge=0, le=1, description="At most this share of each type's "
                                                                       "questions answered E (no such change)")
    max_abnormality_share: float = Field(default=0.35, gt=0, le=1, description="At most this share of a type's "
                                                                              "quota about one abnormality")
    max_flat_share: float = Field(default=0.1, ge=0, le=1, description="At most this share of each TEL type's "
                                                                       "questions from uniformly positive or "
                                                                       "negative windows")
    abnormalities: list[str] | None = Field(default=None, description="Only these abnormalities (finding names; "
                                                                      "default: every finding in the timelines)")
    bulk: bool = Field(default=True, description="Read all timelines with one query (cxr-timelines) and cut the "
                                                 "windows' key evidence from it; else one cxr-window query per "
                                                 "window")

    @field_validator("quotas")
    @classmethod
    def _known_types(cls, values: list[str]) -> list[str]:
        _parse_quotas(values)
        return values

    def quota_of(self, qtype: QType) -> int:
        overrides = _parse_quotas(self.quotas)
        if qtype in overrides:
            return overrides[qtype]
        return self.quota if self.quota is not None else TABLE9[qtype]


# --- reading the graph ---------------------------------------------------------------------------------------


@dataclass
class Window:
    row: CxrWindowRow
    tracks: dict[str, Track]
    timeline: list[CxrStateRow] | None  # the patient's cxr-timelines rows (bulk reading)

    @property
    def ref(self) -> str:
        return f"{self.row.patient_id}/{self.row.first_study}"


def _windows(ctx: Context, options: MicxrOptions) -> list[Window]:
    """Every contiguous window with its complete abnormalities, in (patient, start) order."""
    sources = sorted(ctx.since) if ctx.since is not None else None
    rows: list[CxrWindowRow] = ctx.rows("cxr-windows", {"sources": sources})
    if options.limit:
        rows = rows[: options.limit]
    timelines: dict[str, list[CxrStateRow]] = defaultdict(list)
    if options.bulk and rows:
        patients = sorted({r.patient_id for r in rows})
        params: dict[str, Any] = {"sources": sources}
        if options.limit:
            params["patients"] = patients
        for r in ctx.rows("cxr-timelines", params):
            timelines[r.patient_id].append(r)
    out = []
    seen: set[str] = set()
    for row in rows:
        timeline = timelines[row.patient_id] if options.bulk else None
        if timeline is not None:
            start = next(r.slot for r in timeline if r.study_id == row.first_study)
            tracks = read_tracks(timeline, start) or {}
        else:
            tracks = read_tracks(ctx.rows(KEY_QUERY, {"patient": row.patient_id, "first_study": row.first_study})) or {}
        seen.update(tracks)
        if options.abnormalities is not None:
            tracks = {k: v for k, v in tracks.items() if k in options.abnormalities}
        out.append(Window(row, tracks, timeline))
    missing = [a for a in options.abnormalities or [] if a not in seen]
    if missing:
        raise ChronoKGError(f"unknown abnormalit{'y' if len(missing) == 1 else 'ies'} {', '.join(missing)}: no "
                            f"window has a complete presence sequence for {'it' if len(missing) == 1 else 'them'} "
                            f"(those that have one: {', '.join(sorted(seen)) or 'none'})")
    return out


# --- selection: quotas, caps, letters ------------------------------------------------------------------------


@dataclass
class Draft:
    """A question before its answer key: what it asks, its options, and the letter it is keyed to."""

    qtype: QType
    window: Window
    letter: str
    abnormality: str | None  # the asked abnormality (TEL, GTS single), else None
    findings: list[str]  # the findings the key query reads
    options: list[dict[str, Any]]  # label, text, role, and what the option claims
    realisation: str = "template"


class Letters:
    """Answer-letter counts. `choose` takes the least used allowed letter: over all types (seed), or within the
    type (chronokg) among the letters no more than `slack` questions above the least used one overall."""

    def __init__(self, per_type: bool, slack: float = 0.0) -> None:
        self.per_type = per_type
        self.slack = slack
        self.total: Counter[str] = Counter()
        self.by_type: dict[QType, Counter[str]] = defaultdict(Counter)

    def choose(self, qtype: QType, allowed: Sequence[str], rng: Any) -> str:
        if self.per_type:
            floor = min(self.total[x] for x in allowed)
            allowed = [x for x in allowed if self.total[x] - floor <= self.slack]

        def load(letter: str) -> tuple[int, int]:
            own, total = self.by_type[qtype][letter], self.total[letter]
            return (own, total) if self.per_type else (total, own)

        best = min(load(x) for x in allowed)
        ties = [x for x in allowed if load(x) == best]
        return ties[0] if len(ties) == 1 else str(rng.choice(ties))

    def add(self, qtype: QType, letter: str) -> None:
        self.total[letter] += 1
        self.by_type[qtype][letter] += 1


@dataclass
class Caps:
    """One type's quota and caps, and what has been taken."""

    quota: int
    null_share: float
    flat_share: float
    abnormality_cap: int
    taken: int = 0
    nulls: int = 0
    flats: int = 0
    by_abnormality: Counter[str] = field(default_factory=Counter)

    @property
    def full(self) -> bool:
        return self.taken >= self.quota

    def null_ok(self) -> bool:
        """E may be the key while at most `null_share` of this type's questions (this one included) have it."""
        return self.nulls + 1 <= self.null_share * (self.taken + 1) + 1e-9

    def flat_ok(self) -> bool:
        return self.flats + 1 <= self.flat_share * (self.taken + 1) + 1e-9

    def abnormality_ok(self, finding: str | None) -> bool:
        return finding is None or self.by_abnormality[finding] < self.abnormality_cap

    def take(self, letter: str, finding: str | None, flat: bool) -> None:
        self.taken += 1
        self.nulls += letter == NONE
        self.flats += flat
        if finding is not None:
            self.by_abnormality[finding] += 1


def _caps(options: MicxrOptions, qtype: QType) -> Caps:
    quota = options.quota_of(qtype)
    return Caps(quota=quota, null_share=options.max_null_share,
                flat_share=options.max_flat_share if GROUP[qtype] == "TEL" else 1.0,
                abnormality_cap=max(1, math.ceil(options.max_abnormality_share * quota)))


def _none_option(qtype: QType, protocol: Protocol, abn: str | None) -> dict[str, Any]:
    text = question_templates(protocol.value)[qtype.value][1].replace("{abn}", abn or "")
    return {"label": NONE, "text": text, "none": True}


def _interval_draft(qtype: QType, window: Window, track: Track, letter: str, protocol: Protocol) -> Draft:
    opts: list[dict[str, Any]] = [{"label": LETTERS[k], "text": INTERVAL_TEXT[k], "interval": k + 1}
                                  for k in range(WINDOW_SIZE - 1)]
    opts.append(_none_option(qtype, protocol, track.finding))
    return Draft(qtype, window, letter, track.finding, [track.finding], opts)


def _pair_draft(qtype: QType, window: Window, track: Track, letter: str, rng: Any, protocol: Protocol) -> Draft:
    key = pair_key(qtype, track.present)
    others = [p for p in PAIRS if p != key]
    shown = rng.sample(others, 4 if key is None else 3)
    if key is not None:
        shown.insert(LETTERS.index(letter), key)
    opts: list[dict[str, Any]] = [{"label": LETTERS[k], "text": pair_text(p), "pair": list(p)}
                                  for k, p in enumerate(shown)]
    opts.append(_none_option(qtype, protocol, track.finding))
    return Draft(qtype, window, letter, track.finding, [track.finding], opts)


def _icr_draft(window: Window, letter: str, caps: Caps, rng: Any, protocol: Protocol) -> Draft | None:
    """One statement per interval, each about an abnormality of the window (preferring ones that are not absent
    over the interval); the keyed interval's is true, the others change-type flips."""
    names = sorted(window.tracks)
    opts: list[dict[str, Any]] = []
    for k in range(1, WINDOW_SIZE):
        keyed = letter == LETTERS[k - 1]
        pool = [f for f in names if window.tracks[f].changes[k - 1] is not Change.absent] or names
        if keyed:
            pool = [f for f in pool if caps.abnormality_ok(f)] or [f for f in names if caps.abnormality_ok(f)]
            if not pool:
                return None
        finding = str(rng.choice(pool))
        track = window.tracks[finding]
        truth = track.changes[k - 1]
        claim = truth if keyed else Change(rng.choice(FLIPS[truth]))
        opts.append({"label": LETTERS[k - 1], "text": icr_statement(k, track.name, claim, protocol), "interval": k,
                     "abnormality": finding, "change": claim.value})
    opts.append(_none_option(Q.icr_multi_abn, protocol, None))
    findings = sorted({o["abnormality"] for o in opts if "abnormality" in o})
    return Draft(Q.icr_multi_abn, window, letter, None, findings, opts)


def _gts_options(tracks: list[Track], letter: str, rng: Any) -> list[dict[str, Any]] | None:
    """Options A-D about `tracks` (one each; one track repeated four times for single-entity): the one at the
    keyed letter true, the others change-type-flipped summaries."""
    need: dict[str, int] = Counter(t.finding for t in tracks)
    pools = {t.finding: distractors(t, rng, need[t.finding]) for t in tracks}
    opts = []
    for k, track in enumerate(tracks):
        if LETTERS[k] == letter:
            claim = track.changes
        else:
            if not pools[track.finding]:
                return None
            claim = pools[track.finding].pop(0)
        opts.append({"label": LETTERS[k], "text": summary(track.name, claim), "abnormality": track.finding,
                     "changes": [c.value for c in claim]})
    return opts


def _gts_single(window: Window, track: Track, letter: str, rng: Any, protocol: Protocol) -> Draft | None:
    opts = _gts_options([track] * 4, letter, rng)
    if opts is None:
        return None
    opts.append(_none_option(Q.single_entity_interval_summary, protocol, None))
    return Draft(Q.single_entity_interval_summary, window, letter, track.finding, [track.finding], opts)


def _gts_multi(window: Window, letter: str, caps: Caps, rng: Any, protocol: Protocol) -> Draft | None:
    chosen = [window.tracks[f] for f in rng.sample(sorted(window.tracks), GTS_MULTI)]
    if letter != NONE:
        fits = [t for t in chosen if caps.abnormality_ok(t.finding)]
        if not fits:
            return None
        keyed = rng.choice(fits)
        chosen.remove(keyed)
        chosen.insert(LETTERS.index(letter), keyed)
    opts = _gts_options(chosen, letter, rng)
    if opts is None:
        return None
    opts.append(_none_option(Q.multi_entity_interval_summary, protocol, None))
    return Draft(Q.multi_entity_interval_summary, window, letter, None, sorted(t.finding for t in chosen), opts)


def _key_finding(draft: Draft) -> str | None:
    """The abnormality a question counts against in the per-abnormality cap."""
    if draft.abnormality is not None:
        return draft.abnormality
    if draft.letter == NONE:
        return None
    keyed = next(o for o in draft.options if o["label"] == draft.letter)
    return str(keyed["abnormality"])


def _select_intervals(qtype: QType, windows: list[Window], caps: Caps, letters: Letters, ctx: Context,
                      protocol: Protocol) -> Iterator[Draft]:
    """Fixed-interval TEL questions: the key letter is the event's interval, so letters are balanced by which
    window-abnormality pairs are taken (least used letter first, from shuffled candidates)."""
    buckets: dict[str, deque[tuple[Window, Track]]] = {x: deque() for x in LETTERS}
    for w in windows:
        for track in w.tracks.values():
            key = interval_key(qtype, track.present)
            if key is not None:
                buckets[key].append((w, track))
    rng = ctx.rng(NAME, "select", qtype.value)
    for bucket in buckets.values():
        items = list(bucket)
        rng.shuffle(items)
        bucket.clear()
        bucket.extend(items)
    while not caps.full:
        allowed = [x for x in LETTERS if buckets[x] and (x != NONE or caps.null_ok())]
        if not allowed:
            break
        letter = letters.choose(qtype, allowed, rng)
        bucket = buckets[letter]
        while bucket:
            w, track = bucket.popleft()
            if caps.abnormality_ok(track.finding) and (not track.flat or caps.flat_ok()):
                caps.take(letter, track.finding, track.flat)
                letters.add(qtype, letter)
                yield _interval_draft(qtype, w, track, letter, protocol)
                break


def _select_free(qtype: QType, windows: list[Window], caps: Caps, letters: Letters, ctx: Context,
                 protocol: Protocol) -> Iterator[Draft]:
    """Types whose key letter is chosen (pairs, ICR, GTS): candidates in shuffled order, each keyed to the least
    used allowed letter."""
    rng = ctx.rng(NAME, "select", qtype.value)
    candidates: list[tuple[Window, Track | None]]
    if qtype in TEL_PAIR or qtype is Q.single_entity_interval_summary:
        candidates = [(w, t) for w in windows for t in w.tracks.values()]
    else:
        least = GTS_MULTI if qtype is Q.multi_entity_interval_summary else 1
        candidates = [(w, None) for w in windows if len(w.tracks) >= least]
    rng.shuffle(candidates)
    for w, track in candidates:
        if caps.full:
            break
        if track is not None and not caps.abnormality_ok(track.finding):
            continue
        flat = qtype in TEL_PAIR and track is not None and track.flat
        if flat and not caps.flat_ok():
            continue
        if qtype in TEL_PAIR:
            assert track is not None
            allowed = [NONE] if pair_key(qtype, track.present) is None else list(LETTERS[:4])
        else:
            allowed = list(LETTERS)
        allowed = [x for x in allowed if x != NONE or caps.null_ok()]
        if not allowed:
            continue
        letter = letters.choose(qtype, allowed, rng)
        draft: Draft | None
        if qtype in TEL_PAIR:
            assert track is not None
            draft = _pair_draft(qtype, w, track, letter, rng, protocol)
        elif qtype is Q.icr_multi_abn:
            draft = _icr_draft(w, letter, caps, rng, protocol)
        elif qtype is Q.single_entity_interval_summary:
            assert track is not None
            draft = _gts_single(w, track, letter, rng, protocol)
        else:
            draft = _gts_multi(w, letter, caps, rng, protocol)
        if draft is None:
            continue
        caps.take(letter, _key_finding(draft), flat)
        letters.add(qtype, letter)
        yield draft


def _candidates(qtype: QType, windows: list[Window]) -> int:
    """How many questions of a type the windows could give at most (before caps)."""
    if qtype in TEL_INTERVAL:
        return sum(interval_key(qtype, t.present) is not None for w in windows for t in w.tracks.values())
    if qtype in TEL_PAIR or qtype is Q.single_entity_interval_summary:
        return sum(len(w.tracks) for w in windows)
    least = GTS_MULTI if qtype is Q.multi_entity_interval_summary else 1
    return sum(len(w.tracks) >= least for w in windows)


def select(ctx: Context, options: MicxrOptions, windows: list[Window]) -> list[Draft]:
    """Drafts of every requested type, within quotas and caps, letters balanced. The types take turns (the one
    furthest from its quota next), so the types whose letters are free even out the fixed ones' skew together
    rather than the first of them alone."""
    planned = sum(min(options.quota_of(t), _candidates(t, windows)) for t in options.qtypes)
    letters = Letters(per_type=options.protocol is Protocol.chronokg, slack=max(2.0, GLOBAL_SLACK * planned))
    types = [t for t in QType if t in options.qtypes]
    caps = {t: _caps(options, t) for t in types}
    streams = {t: (_select_intervals if t in TEL_INTERVAL else _select_free)(t, windows, caps[t], letters, ctx,
                                                                              options.protocol) for t in types}
    active = [t for t in types if caps[t].quota > 0]
    drafts: list[Draft] = []
    while active:
        qtype = min(active, key=lambda t: caps[t].taken / caps[t].quota)
        draft = next(streams[qtype], None)
        if draft is None:
            active.remove(qtype)
        else:
            drafts.append(draft)
    for t in types:
        if caps[t].taken < caps[t].quota:
            ctx.notes.append(f"{t.value}: {caps[t].taken} of quota {caps[t].quota} (not enough windows within "
                             "the caps)")
    return drafts


# --- LLM realisation of GTS summaries (the paper's Figures 5-8) ----------------------------------------------


GTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"summaries": {"type": "object", "additionalProperties": {"type": "string"}}},
    "required": ["summaries"],
}


def _llm_requests(draft: Draft) -> list[tuple[list[dict[str, str]], list[str]]]:
    """(messages, option labels they write) for one GTS draft: the true option with the correct-summary prompt,
    the flipped ones with the incorrect-summary prompt, each told the exact changes to realise."""
    multi = draft.qtype is Q.multi_entity_interval_summary
    tracks = draft.window.tracks
    correct = [o for o in draft.options[:4] if o["label"] == draft.letter]
    wrong = [o for o in draft.options[:4] if o["label"] != draft.letter]
    out = []
    for kind, group, system in (("correct", correct, "GTS_MULTI_CORRECT" if multi else "GTS_SINGLE_CORRECT"),
                                ("incorrect", wrong, "GTS_MULTI_INCORRECT" if multi else "GTS_SINGLE_INCORRECT")):
        if not group:
            continue
        payload = {
            "abnormalities": {tracks[f].name: {"present": [f"T{k}" for k, p in enumerate(tracks[f].present, 1) if p],
                                               "changes": _interval_changes(tracks[f].changes)}
                              for f in sorted({o["abnormality"] for o in group})},
            "write": [{"id": o["label"], "abnormality": tracks[o["abnormality"]].name,
                       "changes": _interval_changes([Change(c) for c in o["changes"]])} for o in group],
        }
        user = render("GTS_USER", input=json.dumps(payload, ensure_ascii=False, indent=1), kind=kind)
        out.append(([{"role": "system", "content": template(system)}, {"role": "user", "content": user}],
                    [o["label"] for o in group]))
    return out


def _interval_changes(changes: Sequence[Change]) -> dict[str, str]:
    return {f"T{k}-T{k + 1}": c.value for k, c in enumerate(changes, start=1)}


async def _realise_all(model: Any, drafts: list[Draft]) -> list[list[dict[str, str]] | BaseException]:
    from chronokg.bench.llm import ask_json

    gate = asyncio.Semaphore(LLM_CONCURRENCY)

    async def one(draft: Draft) -> list[dict[str, str]]:
        replies = []
        for messages, _ in _llm_requests(draft):
            async with gate:
                reply = await ask_json(model, messages, GTS_SCHEMA)
            replies.append({str(k): str(v) for k, v in dict(reply.get("summaries") or {}).items()})
        return replies

    return list(await asyncio.gather(*(one(d) for d in drafts), return_exceptions=True))


def realise(ctx: Context, drafts: list[Draft]) -> None:
    """Replace GTS template summaries by the model's (keys unchanged); a question whose replies are missing,
    empty or not pairwise distinct keeps its templates, with a note."""
    gts = [d for d in drafts if GROUP[d.qtype] == "GTS"]
    if ctx.model is None or not gts:
        return
    results = asyncio.run(_realise_all(ctx.model, gts))
    for draft, result in zip(gts, results, strict=True):
        if isinstance(result, BaseException):
            ctx.notes.append(f"{draft.window.ref} {draft.qtype.value}: model failed ({result}); templates kept")
            continue
        texts: dict[str, str] = {}
        for reply, (_, labels) in zip(result, _llm_requests(draft), strict=True):
            texts.update({label: reply.get(label, "").strip() for label in labels})
        values = [texts.get(o["label"], "") for o in draft.options[:4]]
        if not all(values) or len(set(values)) != len(values):
            ctx.notes.append(f"{draft.window.ref} {draft.qtype.value}: model summaries missing or repeated; "
                             "templates kept")
            continue
        for option, text in zip(draft.options[:4], values, strict=True):
            option["template_text"] = option["text"]
            option["text"] = text
        draft.realisation = "llm"


# --- questions -----------------------------------------------------------------------------------------------


def _image_path(patient: str, study: str, images: list[str]) -> str:
    """Where MIMIC-CXR-JPG keeps the study's first image (the released questions' form); the paper does not say
    which view it chose when a study has several."""
    base = f"files/{patient[:3]}/{patient}/{study}"
    return f"{base}/{sorted(images)[0]}.jpg" if images else base


def _options_block(options: list[dict[str, Any]]) -> str:
    return "\n".join(f"{o['label']}. {o['text']}" for o in options)


def _stem(draft: Draft, protocol: Protocol) -> str:
    question = question_templates(protocol.value)[draft.qtype.value][0]
    return question.replace("{abn}", draft.abnormality or "")


def _stagewise(draft: Draft, question: str) -> dict[str, str]:
    """chronokg's two-stage prompts: stage 1 (with the images) describes each interval for the target
    abnormalities under the family's guideline; stage 2 (text only) answers from those descriptions, which
    replace `{descriptions}`."""
    group = GROUP[draft.qtype]
    if group == "TEL" or draft.qtype is Q.single_entity_interval_summary:
        targets = [draft.abnormality or ""]
    else:
        targets = list(dict.fromkeys(draft.window.tracks[o["abnormality"]].name for o in draft.options
                                     if "abnormality" in o))
    guideline = template({"TEL": "STAGE1_TEL", "ICR": "STAGE1_ICR", "GTS": "STAGE1_GTS"}[group]).strip()
    return {
        "stage1_system": template("STAGE1_SYSTEM").strip(),
        "stage1_user": render("STAGE1_USER", abnormalities=", ".join(targets), guideline=guideline),
        "stage2_system": template("STAGE2_SYSTEM").strip(),
        "stage2_user": render("STAGE2_USER", question=question, options=_options_block(draft.options)),
    }


def stage2_prompt(question: Question, descriptions: str) -> str:
    """The stage-2 user message of a question once stage 1 has written its interval descriptions."""
    return str(question.metadata["stagewise"]["stage2_user"]).replace("{descriptions}", descriptions.strip())


def _role(draft: Draft, option: dict[str, Any]) -> str:
    if option["label"] == draft.letter:
        return "correct"
    if option.get("none"):
        return "none"
    return "flipped" if GROUP[draft.qtype] != "TEL" else "distractor"


def _per_question(_: list[dict[str, Any]]) -> str | None:
    """Keys are shared by the questions of a window and findings, so their answer text is set per question."""
    return None


def build(ctx: Context, options: MicxrOptions, draft: Draft, q_id: int) -> Question:
    """The question of a draft: its exact prompt, its answer key (`cxr-window` on the question's findings), and
    the metadata the metrics read; the key letter is re-derived from the evidence and must equal the draft's."""
    w = draft.window
    params = {"patient": w.row.patient_id, "first_study": w.row.first_study, "findings": draft.findings}
    rows = window_rows(w.timeline, w.row.first_study, draft.findings) if w.timeline is not None else None
    key = ctx.key(KEY_QUERY, params, _per_question, rows=rows)
    question = _stem(draft, options.protocol)
    prompt = render("EVAL_USER", question=question, options=_options_block(draft.options))
    slots = [f"T{k}" for k in range(1, WINDOW_SIZE + 1)]
    images = {slot: _image_path(w.row.patient_id, sid, imgs)
              for slot, sid, imgs in zip(slots, w.row.study_ids, w.row.image_ids, strict=True)}
    tracks = {f: w.tracks[f] for f in draft.findings}
    meta: dict[str, Any] = {
        "q_id": q_id, "group_type": GROUP[draft.qtype], "qtype": draft.qtype.value, "task_family": GROUP[draft.qtype],
        "table1_column": TABLE1_COLUMN[draft.qtype], "question": question, "images": images,
        "patient_id": w.row.patient_id, "study_ids": w.row.study_ids, "study_indices": w.row.study_indices,
        "study_dates": [d.isoformat() if d else None for d in w.row.study_dates], "abnormality": draft.abnormality,
        "abnormalities": draft.findings, "options": [{k: v for k, v in o.items() if k != "text"}
                                                     for o in draft.options],
        "sequences": {f: t.pattern for f, t in tracks.items()},
        "changes": {f: [c.value for c in t.changes] for f, t in tracks.items()},
        "flat": bool(draft.abnormality and w.tracks[draft.abnormality].flat), "realisation": draft.realisation,
        "protocol": options.protocol.value, "prompt_source": "chronokg",
        "stagewise": _stagewise(draft, question),
    }
    derived = answer_from(meta, key.evidence)
    if derived != draft.letter:
        raise ChronoKGError(f"{w.ref} {draft.qtype.value}: drafted key {draft.letter} but the evidence gives "
                            f"{derived} (a generator bug)")
    keyed = next(o for o in draft.options if o["label"] == draft.letter)
    choices = [Choice(label=o["label"], text=o["text"], role=_role(draft, o)) for o in draft.options]
    facts = sorted({fid for t in tracks.values() for fid in t.facts})
    last = w.row.study_dates[-1]
    return Question(
        id=content_id("q", NAME, draft.qtype.value, w.row.patient_id, w.row.first_study, prompt, draft.letter),
        family=NAME, variant=f"{GROUP[draft.qtype]}/{draft.qtype.value}", input=prompt,
        system=template("EVAL_SYSTEM").strip(), choices=choices, target=draft.letter, target_date=last,
        answer_key=key.model_copy(update={"answer": keyed["text"]}), snapshot=ctx.snapshot,
        generator=generator_info(NAME, options), facts=facts,
        derived_from=[f"Patient:{w.row.patient_id}", *(f"Study:{s}" for s in w.row.study_ids)], metadata=meta,
    )


def generate(ctx: Context, options: MicxrOptions) -> Iterator[Question]:
    windows = _windows(ctx, options)
    drafts = select(ctx, options, windows)
    realise(ctx, drafts)
    order = list(range(len(drafts)))
    ctx.rng(NAME, "order").shuffle(order)  # the release interleaves types
    if ctx.progress is not None:
        ctx.progress.start(len(order), NAME)
    for q_id, n in enumerate(order):
        yield build(ctx, options, drafts[n], q_id)
        if ctx.progress is not None:
            ctx.progress.advance(1)


# --- the seed's file format ----------------------------------------------------------------------------------


def seed_format(questions: Iterable[Question]) -> Iterator[tuple[str, Any]]:
    """`micxr_test.jsonl` as released (anonymousetrap12/MI-CXR@81a5ebb): keys `q_id, group_type, qtype, images,
    question, choices, answer` in that order, one `json.dumps` line each (non-ASCII escaped, as released); the
    chronokg question id goes to the side file (`OURS`)."""
    for q in questions:
        m = q.metadata
        yield "test.jsonl", {
            "q_id": m.get("q_id"), "group_type": m.get("group_type"), "qtype": m.get("qtype"),
            "images": m.get("images"), "question": m.get("question"),
            "choices": {c.label: c.text for c in q.choices}, "answer": q.target, OURS: {"chronokg_ids": [q.id]},
        }


FAMILY = Family(
    name=NAME, help="MI-CXR: temporal event localisation (TEL), interval change (ICR) and trajectory summary (GTS) "
                    "questions over five-study chest-X-ray windows.",
    options=MicxrOptions, generate=generate, seed_format=seed_format, answer=answer, seed_ascii=True,
    needs=("chest X-ray report timelines: `chronokg ingest cxr DIR` (MIMIC-Ext-CXR-QBA scene graphs) or "
          "`chronokg generate cxr` (a synthetic cohort)"),
    sources="Cho, Han, Do: MI-CXR (Findings of ACL 2026; arXiv 2605.15574); questions anonymousetrap12/MI-CXR@81a5ebb",
)
