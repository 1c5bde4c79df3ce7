"""`known-grid` (valid time across, known time down): every cell is the store's own `as-of` answer for that date,
known at that row, on the demo corpus and on the real TempoMed records loaded as two releases."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.graph.open import open_store
from chronokg.graph.store import GraphStore
from chronokg.queries.spec import QueryError, all_queries, run_query
from tests.demo_stores import copy_store
from tests.test_loop import split_tempomed

Cell = tuple[dt.date, dt.date]


def cells(rows: list[Any]) -> dict[Cell, list[str]]:
    got: dict[Cell, list[str]] = defaultdict(list)
    for r in rows:
        got[(r.known, r.date)] += [r.id] if r.id is not None else []
    return got


def agrees_with_as_of(store: GraphStore, subjects: list[str], rows: list[Any]) -> int:
    """Every cell against `as-of --subject S --date D --known-at K` over the scope's subjects; the cells checked."""
    got = cells(rows)
    for (known, date), ids in got.items():
        want = [f.id for s in subjects for f in run_query(store, "as-of", {"subject": s, "date": date,
                                                                        "known_at": known})]
        assert sorted(ids) == sorted(want), (known, date)
    return len(got)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, demo_built: Path) -> Any:
    """The demo corpus and sources (built once per run), copied for this module."""
    folder = copy_store(demo_built.parent, tmp_path_factory.mktemp("grid") / "demo")
    store = open_store(f"kglite://{folder / demo_built.name}")
    yield store
    store.close()


def test_a_subject_whose_known_time_is_on_its_facts(demo: GraphStore) -> None:
    rows = run_query(demo, "known-grid", {"subject": "un-secretary-general"})
    grid = cells(rows)
    known = sorted({k for k, _ in grid})
    # 2007 and 2017 are known-time changes the corpus dates on the facts; 2026-11-01 is the corpus's release
    assert known == [dt.date(2007, 1, 1), dt.date(2017, 1, 1), dt.date(2026, 11, 1)]
    assert {r.known: r.releases for r in rows}[dt.date(2026, 11, 1)] == ["chronokg-demo:1"]
    assert {r.known: r.releases for r in rows}[dt.date(2007, 1, 1)] == []
    # what mid-2016's store believed about 2018 (Ban Ki-moon, open) differs from what 2017 on believed
    by = {(r.known, r.date): r.object for r in rows if r.id}
    assert by[(dt.date(2007, 1, 1), dt.date(2017, 1, 1))] == "ban-ki-moon"
    assert by[(dt.date(2017, 1, 1), dt.date(2017, 1, 1))] == "antonio-guterres"
    assert agrees_with_as_of(demo, ["un-secretary-general"], rows) == 12


@pytest.mark.parametrize("subject", ["C9000001", "cfr:1:99.1", "p92930783:cardiomegaly", "Q646148",
                                     "hypertension-goal-older-adults"])
def test_every_cell_of_a_demo_subject_is_its_as_of_answer(demo: GraphStore, subject: str) -> None:
    rows = run_query(demo, "known-grid", {"subject": subject})
    if not rows:
        assert not run_query(demo, "timeline", {"subject": subject, "include_retracted": True})
        return
    assert agrees_with_as_of(demo, [subject], rows) >= 1


def test_a_trajectory_grid_is_its_decisions_and_versions(demo: GraphStore) -> None:
    rows = run_query(demo, "known-grid", {"subject": "aha-ecc-2010", "trajectory": True})
    versions = [v.pmid for v in run_query(demo, "trajectory", {"guideline": "aha-ecc-2010"})]
    decisions = sorted({c.decision_id for c in run_query(demo, "change-pairs", {"guideline": "aha-ecc-2010"})})
    assert {r.subject for r in rows if r.id} <= {*versions, *decisions}
    assert set(decisions) <= {r.subject for r in rows if r.id}
    assert agrees_with_as_of(demo, [*versions, *decisions], rows) > 1
    # columns are the data's change points (the guideline years), not a fixed axis
    assert sorted({r.date for r in rows}) == [dt.date(2005, 1, 1), dt.date(2010, 1, 1), dt.date(2015, 1, 1)]


def test_columns_are_bounded_and_parameters_checked(demo: GraphStore) -> None:
    full = sorted({r.date for r in run_query(demo, "known-grid", {"subject": "p92930783:cardiomegaly"})})
    assert len(full) > 3
    some = sorted({r.date for r in run_query(demo, "known-grid", {"subject": "p92930783:cardiomegaly",
                                                                  "columns": 3})})
    assert len(some) == 3 and some[0] == full[0] and some[-1] == full[-1]
    spec = all_queries().get("known-grid")
    for bad in ({}, {"trajectory": True}, {"subject": "x", "columns": 0},
                {"subject": "x", "columns": 10_000}):
        with pytest.raises(QueryError):
            spec.validate(bad)
    assert run_query(demo, "known-grid", {"subject": "no-such-subject"}) == []


def test_two_tempomed_releases(shared_data: Path, tmp_path: Path) -> None:
    """The real records as two releases: r1 (current guideline 2019 or before, released 2024-01-01), r2 (all,
    2025-06-01). A decision r2 extends with a newer version is believed open by r1 and closed by r2."""
    r1, r2, _ = split_tempomed(shared_data, tmp_path)
    uri = f"kglite://{tmp_path / 's.kgl'}"
    for path, day in ((r1, "2024-01-01"), (r2, "2025-06-01")):
        result = CliRunner().invoke(app, ["--store", uri, "ingest", "tempomed", str(path), "--release-date", day])
        assert result.exit_code == 0, result.output
    store = open_store(uri)
    try:
        # a trajectory that both releases hold and r2 extends: its current guideline is after 2019, a prior of it
        # is some r1 trajectory's current guideline
        listing = run_query(store, "trajectory-list")
        grown = next(t for t in sorted(listing, key=lambda t: t.current_pmid)
                     if (t.year or 0) > 2019 and t.depth >= 2)
        rows = run_query(store, "known-grid", {"subject": grown.current_pmid, "trajectory": True})
        known = sorted({r.known for r in rows})
        assert known == [dt.date(2024, 1, 1), dt.date(2025, 6, 1)]
        assert all(r.releases for r in rows)  # both rows are releases (Sources), named
        versions = [v.pmid for v in run_query(store, "trajectory", {"guideline": grown.current_pmid})]
        decisions = sorted({c.decision_id for c in run_query(store, "change-pairs",
                                                              {"guideline": grown.current_pmid})})
        checked = agrees_with_as_of(store, [*versions, *decisions], rows)
        assert checked == 2 * len({r.date for r in rows})
        grid = cells(rows)
        assert any(grid[(known[0], d)] != grid[(known[1], d)] for d in {r.date for r in rows})  # r2 changed a belief
        for decision in decisions[:3]:  # and one subject's own grid
            agrees_with_as_of(store, [decision], run_query(store, "known-grid", {"subject": decision}))
    finally:
        store.close()
