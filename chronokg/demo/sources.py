"""The demo's slice of the other sources, loaded through their own loaders so every family generates on it.

Self-authored files beside this module (`sources/`: DriftMed-style recommendation pairs, one per change
category they exercise; an NQ-open-style QA set whose time-sensitive answers are then updated; ChroKnowBench-style
"position held" rows of the demo's office holders, with a few-shot pool; a UMLS-style release pair in Rich Release
Format, synthetic CUIs C9..., where "aspirin may_prevent myocardial infarction" is dropped in 2022AA; two editions
of a made-up CFR part in eCFR XML, Title 1 Part 99, whose five sections change a number, for ChroKnow's Legal
cloze items) and a small
synthetic chest-X-ray cohort drawn by `cxr_synth` (MIMIC is credentialed). Known times are fixed dates, so a
re-run changes nothing.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from importlib import resources
from pathlib import Path

from chronokg.graph.store import GraphStore
from chronokg.ingest import cfr, chroknow, cxr, cxr_synth, driftmed, qasets, umls
from chronokg.ingest.common import LoadSummary
from chronokg.progress import Progress

RELEASE = dt.date(2026, 11, 1)  # the demo corpus's release date: the known time of every update below
CXR_PATIENTS, CXR_VISITS, CXR_SEED = 8, 5, 17  # five visits: the MI-CXR windows; eight patients: every pattern
# NQ-open questions of `sources/nq-open.jsonl` whose answer changed, and when (public record).
QA_UPDATES: tuple[tuple[str, str, dt.date], ...] = (
    ("who is the secretary-general of the united nations", "António Guterres", dt.date(2017, 1, 1)),
    ("who is the director-general of the world health organization", "Tedros Adhanom Ghebreyesus",
     dt.date(2017, 7, 1)),
    ("at what blood pressure is an adult diagnosed with hypertension", "130/80 mm Hg", dt.date(2017, 11, 13)),
)


def load_sources(store: GraphStore, progress: Progress | None = None) -> list[LoadSummary]:
    """Load the DriftMed pairs, the QA set (with its updates), the ChroKnow rows, the UMLS release pair, the CFR
    editions and the CXR cohort; one summary per loader."""
    folder = resources.files("chronokg.demo").joinpath("sources")
    summaries: list[LoadSummary] = []
    with resources.as_file(folder) as files:
        summaries.append(driftmed.load(store, [Path(files) / "driftmed.jsonl"], release_date=RELEASE,
                                       progress=progress))
        summaries.append(qasets.load(store, [Path(files) / "nq-open.jsonl"], release_date=RELEASE,
                                     progress=progress))
        summaries.append(chroknow.load(store, [Path(files) / "chroknow"], release_date=RELEASE, progress=progress))
        summaries.append(umls.load(store, [Path(files) / "umls" / "2016AA", Path(files) / "umls" / "2022AA"],
                                   progress=progress))
        summaries.append(cfr.load(store, sorted((Path(files) / "cfr").glob("*.xml")), progress=progress))
    for question, answer, since in QA_UPDATES:
        qasets.add_updated_answer(store, qasets.text_id(qasets.Benchmark.NQ, question), answer, since,
                                  source="chronokg demo corpus", known_from=RELEASE)
    with tempfile.TemporaryDirectory(prefix="chronokg-demo-cxr-") as tmp:
        out = Path(tmp)
        cxr_synth.generate(out, patients=CXR_PATIENTS, visits=CXR_VISITS, seed=CXR_SEED)
        summaries.append(cxr.load(store, [out / "scene_data", out / cxr.SOURCE_FILE], progress=progress))
    return summaries


__all__ = ["load_sources"]
