"""Small parsers of scene-graph fields: ids, day offsets, presence, laterality, change, severity."""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from chronokg.ingest.cxr.models import (
    BASE_DATE,
    CHANGE_WORDS,
    ISO_DURATION,
    MAX_FOLLOW_UP_DAYS,
    NEGATIVE,
    NO_LATERALITY,
    POSITIVE,
    PROBABLY,
    PROBABLY_NOT,
    SIDES,
    TIMEDELTA,
    ObservationIn,
)

# --- small parsers -----------------------------------------------------------------


def brief(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors()[:3]:
        where = ".".join(str(p) for p in e["loc"]) or "record"
        parts.append(f"{where}: {e['msg']}")
    return "; ".join(parts)


def norm_id(value: str | int, prefix: str) -> str:
    """`10000032` and `"10000032"` become `p10000032` (MIMIC's spelling); other ids are kept."""
    text = str(value).strip()
    return f"{prefix}{text}" if text.isdigit() else text


def parse_days(value: float | str | None) -> float | None:
    """An offset in days from a number, a pandas timedelta text or an ISO 8601 duration."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a time offset: {value!r}")
    if isinstance(value, int | float):
        days = float(value)
    else:
        text = value.strip()
        if not text:
            return None
        try:
            days = float(text)
        except ValueError:
            days = _parse_days_text(text)
    if math.isnan(days) or math.isinf(days):
        raise ValueError(f"not a time offset: {value!r}")
    if abs(days) > MAX_FOLLOW_UP_DAYS:
        raise ValueError(f"{value!r} days is more than a century of follow-up: not a plausible time offset")
    return days


def _parse_days_text(text: str) -> float:
    m = ISO_DURATION.match(text.upper())
    if m and any(m.groupdict().values()):
        g = {k: float(v) if v else 0.0 for k, v in m.groupdict().items()}
        return g["w"] * 7 + g["d"] + g["h"] / 24 + g["m"] / 1440 + g["s"] / 86400
    m = TIMEDELTA.match(text)
    if m and (m["days"] is not None or m["h"] is not None):
        days = float(m["days"] or 0)
        if m["h"] is not None:
            part = int(m["h"]) / 24 + int(m["m"]) / 1440 + float(m["s"] or 0) / 86400
            days += -part if m["sign"] == "-" else part
        return days
    raise ValueError(f"not a time offset: {text!r} (expected days, '3 days 04:00:00' or 'P3DT4H')")


def presence(obs: ObservationIn) -> bool | None:
    """True for a positive finding, False for a negative one, None when the graph does not say."""
    pos = (obs.positiveness or "").strip().lower()
    if pos in POSITIVE:
        return True
    if pos in NEGATIVE:
        return False
    prob = (obs.probability or "").strip().lower()
    if not pos and prob in PROBABLY:
        return True
    if not pos and prob in PROBABLY_NOT:
        return False
    return None


def vocabulary_error(obs: ObservationIn) -> str | None:
    """Why an observation's `positiveness` or `laterality` is outside the scene graphs' vocabulary, or None:
    an unknown one would silently drop the finding or file it under a new subject."""
    pos = (obs.positiveness or "").strip().lower()
    if pos and pos not in POSITIVE | NEGATIVE:
        return f"unknown positiveness {obs.positiveness!r} (expected 'pos' or 'neg')"
    side = (obs.laterality or "").strip().lower()
    if side not in SIDES | NO_LATERALITY:
        return f"unknown laterality {obs.laterality!r} (expected left, right, bilateral or unspecified)"
    return None


def laterality(value: str | None) -> str | None:
    text = (value or "").strip().lower()
    return None if text in NO_LATERALITY else text


def change_type(changes: Iterable[str]) -> str | None:
    """The kind of change a scene graph's change phrases name (new, resolved, worsened, ...)."""
    texts = [c.lower() for c in changes if c and c.strip()]
    if not texts:
        return None
    for kind, words in CHANGE_WORDS:
        if any(w in t for t in texts for w in words):
            return kind
    return "other"


def severity(obs: ObservationIn) -> str | None:
    mods = obs.modifiers
    if isinstance(mods, dict):
        values = mods.get("severity") or []
        return values[0] if values else None
    for pair in mods or []:
        if len(pair) == 2 and pair[0] == "severity":
            return pair[1]
    return None


def finding_subject(patient: str, finding: str, side: str | None) -> str:
    """The fact subject of one finding of one patient: `p10000032:pleural effusion:left`."""
    return f"{patient}:{finding}" if side is None else f"{patient}:{finding}:{side}"


def study_date(days_since_first: float, base: dt.date = BASE_DATE) -> dt.date:
    return base + dt.timedelta(days=math.floor(days_since_first))


def parse_quality(value: dict[str, Any] | None) -> str | None:
    return None if not value else json.dumps(value, sort_keys=True, default=str)
