"""One MI-CXR window's timeline and what follows from it: per-abnormality tracks read from `cxr-window` /
`cxr-timelines` rows, the answer keys (`interval_key`, `pair_key`, `verdict`), `answer` (the key re-derived
from a question's evidence) and the wording of statements, summaries and their distractors.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from types import SimpleNamespace
from typing import Any
from typing import Protocol as Structural

from chronokg.bench.families.micxr_kinds import (
    DIRECTIONS,
    EVENTS,
    FLIPS,
    ICR_SENTENCE,
    LETTERS,
    NONE,
    SEVERITY_RANK,
    SUMMARY_CLAUSE,
    TEL_INTERVAL,
    TEL_PAIR,
    Change,
    Q,
    QType,
)
from chronokg.bench.family import Protocol
from chronokg.bench.question import Question
from chronokg.queries.micxr import WINDOW_SIZE, CxrStateRow

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
