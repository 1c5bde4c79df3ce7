"""Probes name one organisation per guideline, as the seed's probe rows do, on the real TempoMed sample: some
guidelines' questions name their organisation in two ways (the MCQ stems keep each question's own)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # loads the sample


def test_every_guideline_s_probes_name_one_organisation(shared_data: Path, tmp_path: Path) -> None:
    from chronokg.bench import snapshot
    from chronokg.bench.family import generate
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.ingest import tempomed
    from chronokg.queries.spec import all_queries

    with KgliteStore(tmp_path / "s.kgl") as store:
        tempomed.load(store, [shared_data / "tempomed-bench"])
        pairs = all_queries().get("change-pair-list").run(store, {})
        named: dict[str, set[str | None]] = {}
        for p in pairs:  # what the pairs' own questions name: several for some guidelines
            named.setdefault(str(p.current_pmid), set()).add(p.organization)
        assert sum(1 for orgs in named.values() if len(orgs) > 1) > 0
        questions, _ = generate("tempomed", store, snapshot.current(store),
                                {"probes": True, "mcq": False, "probe_years": (2019, 2020)})
        per_guideline: dict[str, set[str | None]] = {}
        for q in questions:
            current = q.metadata["pair_id"].rsplit(">", 1)[1]
            per_guideline.setdefault(current, set()).add(q.metadata["organization"])
        assert per_guideline and all(len(orgs) == 1 for orgs in per_guideline.values())
        for current, (org,) in per_guideline.items():  # the first by name of those its questions name
            assert org == min(named[current])
        # a subset (--limit) names the same organisation for the guidelines it holds
        some, _ = generate("tempomed", store, snapshot.current(store),
                           {"probes": True, "mcq": False, "probe_years": (2019, 2019), "limit": 40})
        assert some and all(q.metadata["organization"] == min(named[q.metadata["pair_id"].rsplit(">", 1)[1]])
                            for q in some)
