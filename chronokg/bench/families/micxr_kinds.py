"""MI-CXR's vocabulary: the question types (the released `qtype`s, Table 9) and their groups and quotas,
the interval change types with their flips (paper A.6), severity ranks and the template sentences.

Split out of `micxr.py` so that each module holds one thing; `micxr` re-exports what others import.
"""

from __future__ import annotations

from enum import StrEnum

from chronokg.ingest.micxr_types import GROUP_OF
from chronokg.ingest.micxr_types import QType as QType  # re-exported: micxr, the metrics and profile read it
from chronokg.queries.micxr import WINDOW_SIZE

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
