"""The explorer's valid x known grid and its timelines, in Chromium, on real TempoMed records loaded as two releases
(and the demo's synthetic chest X-ray timelines, studies weeks apart): every cell the page draws is the store's own
`as-of` answer for that date known at that release, live and from the static export; a CXR timeline's axis spans
its studies, not decades; an MCQ-only store draws no empty column; a source question's answer shows its text."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.demo.sources import load_sources
from chronokg.graph.open import open_store
from chronokg.queries.spec import run_query
from tests.report_helpers import chromium
from tests.serve_helpers import serve, server_env
from tests.test_explorer import open_page
from tests.test_loop import split_tempomed

pytestmark = pytest.mark.slow
CXR = "p92930783:cardiomegaly"


def cli(store: Path, *args: str) -> str:
    result = CliRunner().invoke(app, ["--store", f"kglite://{store}", *args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("grid")
    r1, r2, _ = split_tempomed(shared_data, root)
    store = root / "s.kgl"
    cli(store, "ingest", "tempomed", str(r1), "--release-date", "2024-01-01")
    cli(store, "ingest", "tempomed", str(r2), "--release-date", "2025-06-01")
    opened = open_store(f"kglite://{store}")
    try:
        load_sources(opened)  # the demo's other sources: CXR timelines among them
        listing = run_query(opened, "trajectory-list")
        # a trajectory both releases hold and the second extends with a newer version
        pmid = next(t.current_pmid for t in sorted(listing, key=lambda t: t.current_pmid)
                    if (t.year or 0) > 2019 and t.depth >= 2)
        scope = [v.pmid for v in run_query(opened, "trajectory", {"guideline": pmid})]
        scope += sorted({c.decision_id for c in run_query(opened, "change-pairs", {"guideline": pmid})})
    finally:
        opened.close()
    cli(store, "export", "html", "--out", str(root / "static"), "--topic", "endoscop", "--subject", CXR)
    return {"store": store, "pmid": pmid, "scope": scope, "static": root / "static" / "index.html"}


@pytest.fixture(scope="module")
def browser(releases: dict[str, Any]) -> Iterator[Any]:
    with chromium() as b:
        yield b


def as_of(store: Path, subjects: list[str], date: str, known: str) -> list[str]:
    opened = open_store(f"kglite://{store}")
    try:
        return sorted(f.id for s in subjects for f in run_query(opened, "as-of", {
            "subject": s, "date": dt.date.fromisoformat(date), "known_at": dt.date.fromisoformat(known)}))
    finally:
        opened.close()


def check_grid(page: Any, store: Path, subjects: list[str]) -> int:
    """Every drawn cell against as-of; the slider's cards against the cells of the column it picks."""
    page.wait_for_selector("#g-table tbody tr")
    cells = page.eval_on_selector_all("#g-table tbody td", "xs => xs.map(x => [x.closest('tr').dataset.known, "
                                      "x.closest('table').tHead.rows[0].cells[+x.dataset.col + 1].dataset.date, "
                                      "x.dataset.facts])")
    assert cells
    for known, date, facts in cells:
        assert sorted(facts.split()) == as_of(store, subjects, date, known), (known, date)
    dates = sorted({d for _, d, _ in cells})
    slider = page.locator("#g-slider")
    for i in (0, len(dates) - 1):
        slider.fill(str(i))
        assert page.inner_text("#g-focus h3").startswith(f"Valid on {dates[i]}")
        marked = page.eval_on_selector_all("#g-table td.on", "xs => xs.map(x => x.dataset.col)")
        assert set(marked) == {str(i)}
        cards = page.eval_on_selector_all("#g-focus .card", "xs => xs.map(x => [x.dataset.known, "
                                          "x.querySelectorAll('li').length])")
        want = {k: len(f.split()) for k, d, f in cells if d == dates[i]}
        assert dict(cards) == want
    return len(cells)


def test_the_grid_is_what_each_release_believed_live_and_static(browser: Any, releases: dict[str, Any]) -> None:
    store, pmid = releases["store"], releases["pmid"]
    env = server_env(CHRONOKG_READ_MAX_ROWS="20000", CHRONOKG_READ_TIMEOUT_S="10")
    with serve(store, "http", "--workers", "1", env=env) as url:
        page, errors = open_page(browser, url + "/")
        _grid_from_the_trajectory(page, store, pmid, releases["scope"])
        page.close()
    assert errors == []
    page, errors = open_page(browser, releases["static"].as_uri())
    _grid_from_the_trajectory(page, store, pmid, releases["scope"])
    page.close()
    assert errors == []


def metric(page: Any, key: str) -> int:
    return int(page.inner_text(f"#metrics [data-metric='{key}'] strong"))


def _grid_from_the_trajectory(page: Any, store: Path, pmid: str, scope: list[str]) -> None:
    # an MCQ-only store: no organisation category, so no such column and no such filter
    assert page.evaluate("getComputedStyle(document.querySelector('#traj-table th:nth-child(5)')).display") == "none"
    assert not page.get_by_label("Organisation category", exact=True).is_visible()
    assert page.get_by_label("Organisation", exact=True).is_visible()
    assert page.evaluate("[...document.querySelectorAll('#traj-table th')].filter(th => "
                         "getComputedStyle(th).display !== 'none').map(th => th.innerText)") == [
        "Current PMID", "Year", "Depth", "Pairs", "Organisation"]
    # the metric panels: what the listed trajectories hold
    listed = page.evaluate("[...document.querySelectorAll('#traj-table tbody tr')].length")
    shown = int(page.inner_text("#count").split(" of ")[1].split()[0])
    opened = open_store(f"kglite://{store}")
    try:
        listing = run_query(opened, "trajectory-list")
    finally:
        opened.close()
    if shown == len(listing):  # live: the whole store (the static export is a slice)
        assert metric(page, "n") == len(listing) and metric(page, "pairs") == sum(t.pairs for t in listing)
        assert metric(page, "versions") == len({v for t in listing for v in t.versions})  # each version once
        assert metric(page, "orgs") == len({o for t in listing for o in t.organizations})
    assert metric(page, "n") == shown >= listed > 0
    page.get_by_label("Search (topic, title, PMID, organisation)", exact=True).fill(pmid)
    if shown == len(listing):  # a search narrows them: the trajectories holding this PMID
        assert metric(page, "pairs") == sum(t.pairs for t in listing if pmid in t.versions) > 0
    page.locator(f"#traj-table tbody tr[data-pmid='{pmid}']").click()
    page.wait_for_selector("#chain li")
    # a source question's answer with its option's text, the option marked among all of them
    box = page.locator("details.question").first
    box.locator("summary").click()
    options = box.locator("ol.choices li")
    assert options.count() >= 4
    right = box.locator("ol.choices li.correct")
    assert right.count() == 1
    label = right.get_attribute("data-label")
    text = right.inner_text().split(". ", 1)[1]
    assert f"Answer: {label}: {text}" in box.inner_text()
    page.click("#d-grid")
    checked = check_grid(page, store, scope)
    knowns = page.eval_on_selector_all("#g-table tbody tr", "xs => xs.map(x => x.dataset.known)")
    assert knowns == ["2024-01-01", "2025-06-01"]
    assert page.locator("#g-table td.changed").count() > 0  # the second release changed some belief
    assert checked == 2 * page.locator("#g-table thead th[data-col]").count()


def test_a_cxr_timeline_spans_its_studies(browser: Any, releases: dict[str, Any], tmp_path: Path) -> None:
    page, errors = open_page(browser, releases["static"].as_uri())
    page.click("#tab-timelines")
    page.get_by_label("Find a subject (id or caption)", exact=True).fill(CXR)
    page.locator(f"#t-subjects li[data-subject='{CXR}']").click()
    page.wait_for_selector("#t-view .bar")
    versions = json.loads(cli(releases["store"], "query", "timeline", "--subject", CXR, "--include-retracted",
                              "--format", "json"))
    days = sorted(d for f in versions for d in (f["valid_from"], f["valid_to"]) if d)
    assert (dt.date.fromisoformat(days[-1]) - dt.date.fromisoformat(days[0])).days < 3 * 365
    ticks = page.eval_on_selector_all("#t-view .axis", "xs => xs.map(x => x.innerText)")
    assert len(ticks) >= 3 and all(len(t) > 4 for t in ticks), ticks  # months or days, not bare years
    assert days[0][:4] <= ticks[0][:4] and ticks[-1][:4] <= days[-1][:4]
    # the bars fill the axis: the earliest starts near the left, none is a sliver squeezed into a corner
    lefts = page.eval_on_selector_all("#t-view .bar", "xs => xs.map(x => parseFloat(x.style.left))")
    assert min(lefts) < 10 and max(lefts) > 50
    check_grid(page, releases["store"], [CXR])
    page.set_viewport_size({"width": 420, "height": 900})  # narrow: the grid scrolls inside its box, not the page
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    page.screenshot(path=str(tmp_path / "cxr-narrow.png"), full_page=True)
    page.close()
    assert errors == []
