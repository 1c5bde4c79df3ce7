"""What MI-CXR builds from (`MicxrOptions`) and the windows it reads from the graph (`cxr-windows`, and the
key evidence from `cxr-timelines` or one `cxr-window` query per window).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from pydantic import Field, field_validator

from chronokg.bench.families.micxr_kinds import KEY_QUERY, TABLE9, QType
from chronokg.bench.families.micxr_timeline import Track, read_tracks
from chronokg.bench.family import Context, FamilyOptions
from chronokg.errors import ChronoKGError
from chronokg.queries.micxr import CxrStateRow, CxrWindowRow

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


def build_windows(ctx: Context, options: MicxrOptions) -> list[Window]:
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
