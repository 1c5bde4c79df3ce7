"""Questions of every family under both protocols, for the tests of the inspect_ai and lm-eval routes.

TempoMed from the real sample in ../shared/data (every 12th MCQ and the first change pairs' probes, so both the
seed's A-E and chronokg's W-Z/V label sets are there), the other families from the repository's fixtures.
"""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from chronokg.bench import snapshot
from chronokg.bench.family import FAMILIES, generate
from chronokg.bench.question import Question
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import chroknow, cxr, cxr_synth, driftmed, qasets, tempomed
from tests.helpers import defined_at

FIXTURES = Path(__file__).parent / "fixtures"
PROTOCOLS = ("seed", "chronokg")


def _stores(shared_data: Path) -> list[tuple[str, KgliteStore, dict[str, object]]]:
    t = KgliteStore(":memory:")
    tempomed.load(t, [shared_data / "tempomed-bench"])
    c = KgliteStore(":memory:")
    driftmed.load(c, [FIXTURES / "driftmed" / "conflictmedqa_advice.jsonl"])
    k = KgliteStore(":memory:")
    chroknow.load(k, [FIXTURES / "chroknow" / "bench"])
    b = KgliteStore(":memory:")
    qasets.load(b, [FIXTURES / "qasets"])
    x = KgliteStore(":memory:")
    with tempfile.TemporaryDirectory(prefix="chronokg-cxr-") as tmp:  # the cohort is only read by the load
        out = Path(tmp) / "cohort"
        cxr_synth.generate(out, patients=30, visits=6, seed=21, findings=5,
                           patterns=cxr_synth.PATTERNS + cxr_synth.DOUBLE_EVENT_PATTERNS)
        cxr.load(x, [out / "scene_data", out / cxr.SOURCE_FILE])
    stores: list[tuple[str, KgliteStore, dict[str, object]]] = [
        ("tempomed", t, {}), ("tempomed", t, {"mcq": False, "probes": True, "limit": 6}),
        ("conflictmedqa", c, {}), ("chroknow", k, {}), ("benchage", b, {}), ("micxr", x, {"quota": 20})]
    missing = sorted(set(FAMILIES.names()) - {family for family, _, _ in stores})
    assert not missing, (f"no store of {', '.join(missing)}'s source data in {Path(__file__).name}: add one to "
                         f"the list `_stores` returns at {defined_at(__file__, '_stores')}")
    return stores


@functools.cache
def every_family(shared_data: Path) -> dict[tuple[str, str], list[Question]]:
    """{(family, protocol): questions} (built once per test session)."""
    out: dict[tuple[str, str], list[Question]] = {}
    for family, store, options in _stores(shared_data):
        for protocol in PROTOCOLS:
            qs = generate(family, store, snapshot.current(store), {**options, "protocol": protocol})[0]
            if family == "tempomed" and not options:
                qs = qs[::11]  # a step prime to the item cycle: every perturbation kept, alternate labels too
            out.setdefault((family, protocol), []).extend(qs)
    return out
