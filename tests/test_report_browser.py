"""The report's HTML page in Chromium at 1,280 px: the page never scrolls sideways, every plot is shown within the
page's width, and a screenshot of the whole report is taken (CHRONOKG_REPORT_SHOTS=DIR keeps it for a person to
look at). The report is the demo's baseline runs beside a copy whose model names are long and hold markup."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chronokg.reports import build_report
from tests.report_helpers import chromium
from tests.test_report_plots import MODELS, demo_run, renamed

pytestmark = pytest.mark.slow  # a browser


__all__ = ["demo_run"]  # the module fixture, shared with tests/test_report_plots.py

WIDTH = 1280


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as b:
        yield b


def test_the_report_fits_1280_px_in_chromium(demo_run: Path, browser: Any, tmp_path: Path) -> None:
    long_names = {m: f"an-organisation-with-a-long-name/{m.split('/')[1]}-" + "x" * 120 + " [bold]</td>$x$"
                  for m in MODELS}
    other = renamed(demo_run, tmp_path / "long", long_names, run_id="run-" + "y" * 200)
    report = build_report([demo_run, other], tmp_path / "out")
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report.html.as_uri())
    page.wait_for_load_state("load")
    widths = page.evaluate("({scroll: document.documentElement.scrollWidth,"
                           " client: document.documentElement.clientWidth})")
    assert widths["scroll"] <= widths["client"], widths
    images = page.evaluate("[...document.querySelectorAll('figure img')].map(i => ({id: i.closest('figure').id,"
                           " right: i.getBoundingClientRect().right, w: i.naturalWidth, done: i.complete}))")
    assert {i["id"].removeprefix("plot-") for i in images} == set(report.plots)
    assert all(i["done"] and i["w"] > 0 and i["right"] <= widths["client"] for i in images), images
    assert errors == []
    shots = Path(os.environ.get("CHRONOKG_REPORT_SHOTS", tmp_path / "shots"))
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / "report-1280.png"), full_page=True)
    for i in images:
        page.locator(f"#{i['id']}").screenshot(path=str(shots / f"{i['id']}.png"))
    assert (shots / "report-1280.png").stat().st_size > 10_000
    page.close()


def test_a_rescored_run_beside_its_origin_fits_every_table_in_chromium(browser: Any, tmp_path: Path) -> None:
    """The demo's run and the same run re-scored by `eval rescore` as known before the demo's release, eight model
    columns: every table within the page's width (none scrolls sideways inside its own box), the provenance said."""
    import datetime as dt
    from concurrent.futures import ThreadPoolExecutor

    from tests.report_helpers import rescored_pair

    with ThreadPoolExecutor(1) as pool:  # the run's event loop on a thread of its own, beside Playwright's
        origin, rescored = pool.submit(rescored_pair, tmp_path, MODELS, dt.date(2026, 1, 1)).result()
    long_names = {m: f"an-organisation-with-a-long-name/{m.split('/')[1]}-" + "x" * 120 + " [bold]</td>$x$"
                  for m in MODELS}
    other = renamed(origin, tmp_path / "long", long_names, run_id="run-" + "y" * 200)
    report = build_report([origin, rescored, other], tmp_path / "out")
    page = browser.new_page(viewport={"width": WIDTH, "height": 900})
    page.goto(report.html.as_uri())
    page.wait_for_load_state("load")
    tables = page.evaluate("[...document.querySelectorAll('table')].map(t => ({scroll: t.scrollWidth,"
                           " client: t.clientWidth, right: t.getBoundingClientRect().right,"
                           " page: document.body.getBoundingClientRect().right,"
                           " head: t.querySelector('th').textContent}))")
    assert len(tables) > 10
    wide = [t for t in tables if t["scroll"] > t["client"] or t["right"] > t["page"] + 0.5]
    assert not wide, wide
    text = page.inner_text("body")
    assert "re-scored as known at 2026-01-01" in text and "not scorable now" in text
    shots = Path(os.environ.get("CHRONOKG_REPORT_SHOTS", tmp_path / "shots"))
    shots.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shots / "rescored-1280.png"), full_page=True)
    page.close()
