"""MI-CXR's question types and the group each belongs to: a vocabulary of the data, declared here (below the bench
layer) so the CXR loader can refuse an unknown `qtype` at load and `bench/families/micxr.py` re-uses it.

The eleven released `qtype` strings of `micxr_test.jsonl` (anonymousetrap12/MI-CXR), one per row of the paper's
Table 9 (A.8.1: "Single-entity interval summary" ... "Multiple resolution (type 2)"), and their task group
(`group_type`: TEL temporal event localisation, ICR interval change recognition, GTS global trajectory summary;
paper sections 3.1-3.3)."""

from __future__ import annotations

from enum import StrEnum


class QType(StrEnum):
    """The released `qtype` strings."""

    single_emergence = "single_emergence"
    single_resolution = "single_resolution"
    multiple_emergence_1 = "multiple_emergence_1"
    multiple_emergence_2 = "multiple_emergence_2"
    multiple_resolution_1 = "multiple_resolution_1"
    multiple_resolution_2 = "multiple_resolution_2"
    emergence_to_resolution = "emergence_to_resolution"
    resolution_to_emergence = "resolution_to_emergence"
    icr_multi_abn = "icr_multi_abn"
    single_entity_interval_summary = "single_entity_interval_summary"
    multi_entity_interval_summary = "multi_entity_interval_summary"


GROUP_TYPES = ("TEL", "ICR", "GTS")
GROUP_OF: dict[QType, str] = {
    **dict.fromkeys(list(QType)[:8], "TEL"), QType.icr_multi_abn: "ICR",
    QType.single_entity_interval_summary: "GTS", QType.multi_entity_interval_summary: "GTS",
}


def qtype_problem(qtype: str, group_type: str) -> str | None:
    """Why a question's (`qtype`, `group_type`) is not one MI-CXR has, in one line; None when it is."""
    if qtype not in QType.__members__:
        return f"qtype {qtype!r} is not one of MI-CXR's question types ({', '.join(QType)})"
    group = GROUP_OF[QType(qtype)]
    if group != group_type:
        article = "an" if group == "ICR" else "a"
        return f"qtype {qtype!r} is {article} {group} question, but group_type is {group_type!r}"
    return None
