"""MI-CXR's selection: per-type quotas, caps (null answers, flat windows, one abnormality's share) and
balanced answer letters, producing drafts (a question before its wording and answer key).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from chronokg.bench.families.micxr_kinds import (
    FLIPS,
    GLOBAL_SLACK,
    GROUP,
    GTS_MULTI,
    INTERVAL_TEXT,
    LETTERS,
    NAME,
    NONE,
    PAIRS,
    TEL_INTERVAL,
    TEL_PAIR,
    Change,
    Q,
    QType,
)
from chronokg.bench.families.micxr_prompts import questions as question_templates
from chronokg.bench.families.micxr_timeline import (
    Track,
    distractors,
    icr_statement,
    interval_key,
    pair_key,
    pair_text,
    summary,
)
from chronokg.bench.families.micxr_windows import MicxrOptions, Window
from chronokg.bench.family import Context, Protocol
from chronokg.queries.micxr import WINDOW_SIZE

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
