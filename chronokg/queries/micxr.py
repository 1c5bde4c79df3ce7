"""Queries over chest-X-ray timelines that MI-CXR generation and its answer keys read.

The CXR loader (`chronokg.ingest.cxr`) stores Patient -HAS_STUDY-> Study -NEXT-> Study and, per study
and patient finding, `finding_present` (true/false) and `finding_severity` facts linked to their study
(`FROM_STUDY`). Three queries read them:

* `cxr-window` (patient, first study, findings): the five studies that start at that study, following
  NEXT, each with its facts about the findings asked for. This is the answer key of every MI-CXR
  question: the presence sequences, and so every key, are re-derived from its rows. Asking only for
  the question's own findings keeps the evidence small and makes `bench verify` flag exactly the
  questions whose findings changed.
* `cxr-timelines` (patients or releases, optional): the same rows for whole timelines (every finding)
  in one query, so a generator over 10,000 patients reads the graph once; `window_rows` cuts a
  window's rows out of them exactly as `cxr-window` returns them (the tests check it).
* `cxr-windows` (patient, optional): the contiguous five-study windows of each timeline (stride 1,
  study indices strictly consecutive: the paper's Table 5), with their images.

Rows are ordered by slot (the study's position: 1-5 in a window, 1.. in a timeline), then finding,
laterality, predicate and fact id, so the same graph always gives the same evidence hash.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Any

from pydantic import Field

from chronokg.queries.rows import Row
from chronokg.queries.spec import MAX_ITEMS, QueryParams, QuerySpec, register

WINDOW_SIZE = 5  # studies per MI-CXR window (T1..T5)
PREDICATES = ("finding_present", "finding_severity")
_FACT_FIELDS = ("fact_id", "finding", "laterality", "predicate", "value", "change_type")


class CxrStateRow(Row):
    """One finding fact of one study (a study with no such fact has one row whose fact fields are empty)."""

    patient_id: str
    slot: int = Field(description="The study's position: 1-5 in a window (T1..T5), 1.. in a whole timeline")
    study_id: str
    study_index: int | None = None
    study_date: dt.date | None = None
    fact_id: str | None = None
    finding: str | None = None
    laterality: str | None = None
    predicate: str | None = None
    value: bool | str | None = None
    change_type: str | None = None


def _facts(findings: bool) -> str:
    """The facts of each study `s`. `f` has no label on purpose: with `:Fact` and `f.predicate IN [...]` kglite
    walks the predicate index (every fact of the store: ~12 ms a window at 10,000 patients) instead of expanding
    from the study (~0.05 ms); only facts have FROM_STUDY edges, so the result is the same."""
    only = " AND f.finding IN $findings" if findings else ""
    return (
        "\nOPTIONAL MATCH (s)<-[:FROM_STUDY]-(f)"
        f"\nWHERE f.known_to IS NULL AND f.predicate IN {list(PREDICATES)!r}{only}"
        "\nRETURN s.patient_id AS patient_id, 0 AS slot, s.id AS study_id, s.study_index AS study_index,"
        " s.study_date AS study_date, f.id AS fact_id, f.finding AS finding, f.laterality AS laterality,"
        " f.predicate AS predicate, f.value AS value, f.change_type AS change_type"
    )


def _study_order(index: int | None, date: dt.date | None, study: str) -> tuple[int, dt.date, str]:
    """Study order within a timeline: index, then date, then id (the loader's order)."""
    return (index if index is not None else -1, date or dt.date.min, study)


def _row_key(row: CxrStateRow) -> tuple[Any, ...]:
    return (row.patient_id, row.slot, row.finding or "", row.laterality or "", row.predicate or "",
            row.fact_id or "")


def with_slots(rows: list[CxrStateRow]) -> list[CxrStateRow]:
    """Number each patient's studies 1.. in study order and sort the rows."""
    studies: dict[str, dict[str, tuple[int, dt.date, str]]] = defaultdict(dict)
    for r in rows:
        studies[r.patient_id][r.study_id] = _study_order(r.study_index, r.study_date, r.study_id)
    slot: dict[tuple[str, str], int] = {}
    for patient, keys in studies.items():
        for n, sid in enumerate(sorted(keys, key=keys.__getitem__), start=1):
            slot[patient, sid] = n
    out = [r.model_copy(update={"slot": slot[r.patient_id, r.study_id]}) for r in rows]
    return sorted(out, key=_row_key)


# --- cxr-window: the answer key ------------------------------------------------------------------------------


class WindowParams(QueryParams):
    patient: str = Field(description="Patient id (p10000032)")
    first_study: str = Field(description="Study id of T1, the window's first study")
    findings: list[str] | None = Field(default=None, max_length=MAX_ITEMS,
                                       description="Only facts about these findings (default: all)")


def _window(p: WindowParams) -> tuple[str, dict[str, Any]]:
    cypher = (
        "MATCH (:Patient {id: $patient})-[:HAS_STUDY]->(s0:Study {id: $first})"
        f"\nMATCH (s0)-[:NEXT*0..{WINDOW_SIZE - 1}]->(s:Study)"
        + _facts(p.findings is not None)
    )
    params: dict[str, Any] = {"patient": p.patient, "first": p.first_study}
    if p.findings is not None:
        params["findings"] = p.findings
    return cypher, params


def _window_post(rows: list[CxrStateRow], _: WindowParams) -> list[CxrStateRow]:
    return with_slots(rows)


CXR_WINDOW = register(QuerySpec(
    "cxr-window", "A patient's five studies from FIRST_STUDY on (following NEXT), each with its finding facts: "
                  "the answer key of MI-CXR questions.",
    WindowParams, CxrStateRow, _window, post=_window_post, tags=frozenset({"cli", "tool", "answer-key"}),
    columns=("slot", "study_id", "study_date", "finding", "laterality", "predicate", "value", "change_type"),
))


# --- cxr-timelines: everything in one query ------------------------------------------------------------------


class TimelinesParams(QueryParams):
    patients: list[str] | None = Field(default=None, max_length=MAX_ITEMS,
                                       description="Only these patients (default: every patient)")
    sources: list[str] | None = Field(default=None, max_length=MAX_ITEMS,
                                      description="Only studies loaded from these releases "
                                                  "(Source ids)")


def _studies(patients: list[str] | None, patient: str | None, sources: list[str] | None
             ) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {}
    if patient is not None:
        cypher = "MATCH (:Patient {id: $patient})-[:HAS_STUDY]->(s:Study)"
        params["patient"] = patient
    elif patients is not None:
        cypher = "MATCH (pt:Patient)-[:HAS_STUDY]->(s:Study) WHERE pt.id IN $patients"
        params["patients"] = patients
    else:
        cypher = "MATCH (:Patient)-[:HAS_STUDY]->(s:Study)"
    if sources is not None:
        cypher += "\nMATCH (s)-[:LOADED_FROM]->(src:Source) WHERE src.id IN $sources\nWITH DISTINCT s"
        params["sources"] = sources
    return cypher, params


def _timelines(p: TimelinesParams) -> tuple[str, dict[str, Any]]:
    cypher, params = _studies(p.patients, None, p.sources)
    return cypher + _facts(False), params


def _timelines_post(rows: list[CxrStateRow], _: TimelinesParams) -> list[CxrStateRow]:
    return with_slots(rows)


CXR_TIMELINES = register(QuerySpec(
    "cxr-timelines", "Whole CXR timelines (every study of the patients, each with its finding facts) in one query.",
    TimelinesParams, CxrStateRow, _timelines, post=_timelines_post, tags=frozenset({"tool"}),
    columns=("patient_id", "slot", "study_id", "study_date", "finding", "laterality", "predicate", "value"),
))


def window_rows(timeline: list[CxrStateRow], first_study: str, findings: list[str] | None = None,
                size: int = WINDOW_SIZE) -> list[CxrStateRow]:
    """What `cxr-window` returns for the window that starts at `first_study`, cut out of one patient's
    `cxr-timelines` rows without running it: slots renumbered 1..size, only `findings`' facts, and a
    study none of whose facts is kept gives one row with empty fact fields (OPTIONAL MATCH)."""
    start = next(r.slot for r in timeline if r.study_id == first_study)
    wanted = None if findings is None else set(findings)
    by_slot: dict[int, list[CxrStateRow]] = defaultdict(list)
    for r in timeline:
        if start <= r.slot < start + size:
            by_slot[r.slot].append(r)
    out: list[CxrStateRow] = []
    for slot, rows in by_slot.items():
        update = {"slot": slot - start + 1}
        kept = [r for r in rows if r.fact_id is not None and (wanted is None or r.finding in wanted)]
        if kept:
            out.extend(r.model_copy(update=update) for r in kept)
        else:
            out.append(rows[0].model_copy(update={**update, **dict.fromkeys(_FACT_FIELDS)}))
    return sorted(out, key=_row_key)


# --- cxr-windows: the windows of each timeline ---------------------------------------------------------------


class WindowListParams(QueryParams):
    patient: str | None = Field(default=None, description="Only this patient (default: every patient)")
    sources: list[str] | None = Field(default=None, max_length=MAX_ITEMS,
                                      description="Only studies loaded from these releases")


class CxrWindowRow(Row):
    patient_id: str
    window: int = Field(description="The window's number within the patient's timeline, from 1")
    first_study: str
    study_ids: list[str]
    study_indices: list[int | None]
    study_dates: list[dt.date | None]
    image_ids: list[list[str]] = Field(description="Each study's image ids (as the scene graphs list them)")


def _window_list(p: WindowListParams) -> tuple[str, dict[str, Any]]:
    """One row per study, shaped as a one-study window; `_window_list_post` joins them into windows."""
    cypher, params = _studies(None, p.patient, p.sources)
    cypher += ("\nRETURN s.patient_id AS patient_id, 0 AS window, s.id AS first_study, [s.id] AS study_ids,"
               " [s.study_index] AS study_indices, [s.study_date] AS study_dates,"
               " [coalesce(s.image_ids, [])] AS image_ids")
    return cypher, params


def contiguous(indices: list[int | None], size: int = WINDOW_SIZE) -> list[int]:
    """Start positions of the windows of `size` consecutive studies (stride 1) whose study indices are strictly
    consecutive integers (the paper's Table 5: "study indices must be strictly contiguous")."""
    starts = []
    for start in range(len(indices) - size + 1):
        run = indices[start:start + size]
        first = run[0]
        if first is not None and run == list(range(first, first + size)):
            starts.append(start)
    return starts


def _window_list_post(rows: list[CxrWindowRow], _: WindowListParams) -> list[CxrWindowRow]:
    by_patient: dict[str, list[CxrWindowRow]] = defaultdict(list)
    for r in rows:
        by_patient[r.patient_id].append(r)
    out: list[CxrWindowRow] = []
    for patient in sorted(by_patient):
        studies = sorted(by_patient[patient], key=lambda r: _study_order(r.study_indices[0], r.study_dates[0],
                                                                          r.first_study))
        for n, start in enumerate(contiguous([s.study_indices[0] for s in studies]), start=1):
            picked = studies[start:start + WINDOW_SIZE]
            out.append(CxrWindowRow(
                patient_id=patient, window=n, first_study=picked[0].first_study,
                study_ids=[s.first_study for s in picked], study_indices=[s.study_indices[0] for s in picked],
                study_dates=[s.study_dates[0] for s in picked], image_ids=[s.image_ids[0] for s in picked]))
    return out


CXR_WINDOWS = register(QuerySpec(
    "cxr-windows", "The contiguous five-study windows (stride 1) of a patient's CXR timeline, or of every patient.",
    WindowListParams, CxrWindowRow, _window_list, post=_window_list_post, tags=frozenset({"cli", "tool"}),
    columns=("patient_id", "window", "first_study", "study_ids"),
))
