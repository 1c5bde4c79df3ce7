"""BenchAge's time-sensitivity verdicts without the graph: the documented keyword rule (no model), and the
seed's LLM detector replies read as votes (`seed_vote`, the fixed `chronokg_vote`) and tallied (`tally`).

Split out of `benchage.py` so that each module holds one thing; `benchage` re-exports what tests import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chronokg.errors import ModelError

SEED_KEYS = ("reasoning", "answer", "confidence")  # what the seed reads from a reply (detector.py:160-162)


# --- the keyword rule (no model) -------------------------------------------------------------------------

KEYWORD_RULE = "keywords/v1"
PRESENT_CUES = ("current", "currently", "now", "nowadays", "today", "these days", "this year", "latest",
                "newest", "most recent", "recently", "still", "anymore", "as of", "so far", "to date")
CHANGEABLE = (
    # office holders and owners
    "president", "prime minister", "chancellor", "king", "queen", "monarch", "pope", "ceo", "chief executive",
    "chairman", "chairwoman", "governor", "mayor", "secretary-general", "secretary general", "leader",
    "head coach", "manager", "captain", "owner", "owns",
    # records and rankings
    "record", "champion", "champions", "reigning", "most", "largest", "biggest", "tallest", "richest",
    "highest", "fastest", "best-selling", "most populous",
    # quantities that move
    "population", "how many people", "the number of", "price", "cost", "costs", "rate", "gdp", "average",
    "per capita", "percent", "percentage", "salary", "minimum wage", "inflation", "unemployment",
)
PAST_WORDS = ("first", "founded", "invented", "discovered", "born", "died", "ancient", "originally",
              "historically", "used to", "in the past")
YEAR = re.compile(r"\b(?:1\d{3}|20\d{2})s?\b")
PAST_START = re.compile(r"^\s*(?:(?:who|what|when|where|which|how|why)\s+)?(?:was|were|did|had)\b", re.I)


def _phrase(words: Iterable[str]) -> re.Pattern[str]:
    alternatives = sorted(words, key=len, reverse=True)
    return re.compile(r"\b(" + "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in alternatives) + r")\b", re.I)


_PRESENT = _phrase(PRESENT_CUES)
_CHANGEABLE = _phrase(CHANGEABLE)
_PAST = _phrase(PAST_WORDS)


def keyword_verdict(question: str) -> tuple[bool, str]:
    """The rule used without a model: (time-sensitive?, why).

    Time-sensitive when the question asks about the present ("current", "now", "still", "latest", ...),
    or when it asks about something that changes (an office holder, a record or ranking, a quantity such as
    a population or a price) and is not anchored to a date or the past (no year, no "first"/"founded"/
    "born"/..., not phrased in the past tense: "was", "were", "did", "had" as its verb). A deliberately
    simple, auditable stand-in for the seed's LLM detector, not a reproduction of it.
    """
    text = question.replace("\u2019", "'")
    present = _PRESENT.search(text)
    if present:
        return True, f"present cue {present.group(1).lower()!r}"
    changeable = _CHANGEABLE.search(text)
    if not changeable:
        return False, "no cue"
    cue = changeable.group(1).lower()
    anchor = YEAR.search(text) or _PAST.search(text) or PAST_START.search(text)
    if anchor:
        return False, f"{cue!r} anchored by {anchor.group(0).strip().lower()!r}"
    return True, f"changeable {cue!r}"


# --- the seed's LLM detector ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vote:
    """One detector reply as read: `answer` is what counts (None: the vote is lost), `json` whether it parsed."""

    answer: Any
    confidence: Any = None
    json: bool = True
    note: str | None = None


def seed_vote(reply: str) -> Vote:
    """The seed's reading (detector.py:154-166): `json.loads` of the whole reply; a reply that is not JSON
    (fenced, or preceded by "Reasoning:") is a No vote with confidence 0. A JSON value without the three keys
    made the seed's run fail (KeyError), which loses that run's vote: here, this vote."""
    try:
        obj = json.loads(reply)
    except json.JSONDecodeError:
        return Vote("No", 0.0, json=False)
    if not isinstance(obj, dict) or any(k not in obj for k in SEED_KEYS):
        return Vote(None, json=True, note=f"JSON without {'/'.join(SEED_KEYS)}, vote lost: {reply[:120]!r}")
    return Vote(obj["answer"], obj["confidence"])


ANSWER_LINE = re.compile(r"answer\W{0,4}(yes|no)\b", re.I)


def chronokg_vote(reply: str) -> Vote:
    """The fixed reading: the first JSON object in the reply (fenced or not), else an `Answer: Yes/No` line;
    the answer normalised (`strip().rstrip('.').lower()`); anything else is a No vote, with a note."""
    from chronokg.bench.llm import parse_json

    raw: Any = None
    confidence: Any = None
    parsed = True
    try:
        obj = parse_json(reply, {"required": ["answer"]})
        raw, confidence = obj.get("answer"), obj.get("confidence")
    except ModelError:
        parsed = False
        lines = ANSWER_LINE.findall(reply)
        raw = lines[-1] if lines else None
    norm = str(raw).strip().rstrip(".").lower() if raw is not None else ""
    if norm in ("yes", "no"):
        return Vote(norm.capitalize(), confidence, json=parsed)
    return Vote("No", confidence, json=parsed, note=f"unreadable vote counted as No: {reply[:120]!r}")


@dataclass
class Verdict:
    """A question's time-sensitivity and how it was reached."""

    time_sensitive: bool
    method: str
    yes: int | None = None
    no: int | None = None
    reason: str | None = None
    replies: list[dict[str, Any]] = field(default_factory=list)

    def record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method, "time_sensitive": self.time_sensitive}
        if self.yes is not None:
            out.update(yes_votes=self.yes, no_votes=self.no, total_votes=(self.yes or 0) + (self.no or 0),
                       votes=self.replies)
        if self.reason is not None:
            out["reason"] = self.reason
        return out


def tally(votes: list[Vote], text: str, method: str = "llm") -> Verdict:
    """Yes only when Yes votes outnumber No votes (detector.py:321); ties and no votes are No.

    An answer other than exactly "Yes" or "No" (only the seed's reading lets one through) is an error, as in
    the seed (its vote counter knows only those two keys, detector.py:308-316)."""
    yes = no = 0
    for vote in votes:
        if vote.answer is None:
            continue
        if vote.answer == "Yes":
            yes += 1
        elif vote.answer == "No":
            no += 1
        else:
            raise ModelError(f"detector vote {vote.answer!r} for {text[:80]!r} is neither 'Yes' nor 'No': the seed "
                             "stops here (KeyError in its vote counter); --protocol chronokg normalises it")
    replies = [{"answer": v.answer, "confidence": v.confidence, "json": v.json} for v in votes]
    return Verdict(time_sensitive=yes > no, method=method, yes=yes, no=no, replies=replies)
