"""A trajectory's detail counts what its list row counts, on data that branches (a guideline version superseded
by two later ones, each the current guideline of its own trajectory); timelines are drawn at the data's
precision and to scale; the trajectory grid hides the subject picker; export html refuses an unknown subject.

The fast tests use a three-record file that branches; the slow ones open the real TempoMed sample (and a small
synthetic chest X-ray cohort) in Chromium.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from tests.demo_stores import DemoRun
from tests.report_helpers import chromium

runner = CliRunner()


def cli(store: Path, *args: str) -> str:
    result = runner.invoke(app, ["--store", f"kglite://{store}", *args])
    assert result.exit_code == 0, result.output
    return result.output


def cli_json(store: Path, *args: str) -> Any:
    return json.loads(cli(store, *args, "--format", "json"))


def _record(idx: int, current: tuple[str, int], prior: tuple[str, int], topic: str) -> dict[str, Any]:
    return {"idx": idx, "PMID_current": current[0], "Year_current": current[1], "PMID_prior": prior[0],
            "Year_prior": prior[1], "Question": f"Which {topic}? According to the Branch Society guideline issued in "
                                                f"{current[1]}, which of the following is recommended?",
            "Answer": {"Choice_A": f"new {topic}", "Choice_B": f"old {topic}", "Choice_C": "c", "Choice_D": "d",
                       "Correct": "A", "Choice_E": "I do not know the answer"}}


@pytest.fixture
def branching(tmp_path: Path) -> Path:
    """2010 (A) is superseded by 2015 (B) and by 2020 (C); C also supersedes B: trajectory B is [A, B], one pair;
    trajectory C is [A, B, C], two pairs. Walking supersession both ways from B reaches C and its pairs."""
    mcq = tmp_path / "branching.jsonl"
    rows = [_record(1, ("91000002", 2015), ("91000001", 2010), "dose"),
            _record(2, ("91000003", 2020), ("91000001", 2010), "interval"),
            _record(3, ("91000003", 2020), ("91000002", 2015), "route")]
    mcq.write_text("\n\n".join(json.dumps(r, indent=1) for r in rows) + "\n", encoding="utf-8")
    store = tmp_path / "s.kgl"
    cli(store, "ingest", "tempomed", str(mcq))
    return store


def test_the_detail_reads_count_what_the_list_row_counts(branching: Path) -> None:
    listing = {r["current_pmid"]: r for r in cli_json(branching, "query", "trajectory-list")}
    assert {p: (r["versions"], r["pairs"]) for p, r in listing.items()} == {
        "91000002": (["91000001", "91000002"], 1), "91000003": (["91000001", "91000002", "91000003"], 2)}
    for pmid, row in listing.items():
        versions = cli_json(branching, "query", "trajectory-versions", "--guideline", pmid)
        pairs = cli_json(branching, "query", "trajectory-pairs", "--guideline", pmid)
        questions = cli_json(branching, "query", "trajectory-questions", "--guideline", pmid)
        assert [v["pmid"] for v in versions] == row["versions"] and len(versions) == row["depth"] + 1
        assert len(pairs) == row["pairs"] and {c["current_pmid"] for c in pairs} == {pmid}
        assert {q["pair"] for q in questions} == {f"cp:{c['decision_id']}:{c['prior_pmid']}>{pmid}" for c in pairs}
        assert [v["pmid"] for v in versions if v["current"]] == [pmid]
    # where the data branches: 2010 is superseded inside B's trajectory by B, and elsewhere by C
    b = {v["pmid"]: v for v in cli_json(branching, "query", "trajectory-versions", "--guideline", "91000002")}
    assert b["91000001"]["superseded_by"] == ["91000002"] and b["91000001"]["elsewhere"] == ["91000003"]
    assert b["91000002"]["supersedes"] == ["91000001"] and b["91000002"]["elsewhere"] == ["91000003"]
    c = {v["pmid"]: v for v in cli_json(branching, "query", "trajectory-versions", "--guideline", "91000003")}
    assert c["91000003"]["supersedes"] == ["91000001", "91000002"] and not any(v["elsewhere"] for v in c.values())
    # the whole supersession component (what the detail read before) is more than the row counts
    assert len(cli_json(branching, "query", "trajectory", "--guideline", "91000002")) == 3


def test_export_of_an_unknown_subject_is_one_line_and_writes_nothing(branching: Path, tmp_path: Path) -> None:
    out = tmp_path / "page"
    result = runner.invoke(app, ["--store", f"kglite://{branching}", "export", "html", "--out", str(out),
                                 "--subject", "Q-no-such-item", "--subject", "91000001"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert result.output.strip().count("\n") <= 1 and "Q-no-such-item" in result.output
    assert not out.exists()


@pytest.mark.slow
def test_the_runs_view_names_no_file_it_does_not_offer(demo_command: DemoRun) -> None:
    from chronokg.cli.explore import run_report

    runs = sorted((demo_command.folder / "demo-loop" / "runs").glob("run-*"))
    html = run_report(runs)
    assert runs and html is not None and "<table" in html
    assert "metrics.json" not in html and "plots/" not in html


# --- in the browser -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample_page(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> dict[str, Any]:
    """The sample and a small synthetic CXR cohort in one store, exported as the static page."""
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.ingest import cxr, cxr_synth

    root = tmp_path_factory.mktemp("branching")
    store = root / "s.kgl"
    cli(store, "ingest", "tempomed", str(shared_data / "tempomed-bench"))
    cxr_synth.generate(root / "cxr", patients=2, visits=5, seed=17)
    with KgliteStore(store) as s:
        cxr.load(s, [root / "cxr" / "scene_data", root / "cxr" / cxr.SOURCE_FILE])
    finding = cli_json(store, "query", "subject-list", "--kind", "cxr_finding")[0]["subject"]
    decision = "tm-27141181-25371603-04699afb"  # 2014 -> 2016, the 2016 version still in force
    cli(store, "export", "html", "--out", str(root / "page"), "--subject", finding, "--subject", decision)
    return {"store": store, "url": (root / "page" / "index.html").as_uri(), "root": root, "finding": finding,
            "decision": decision}


@pytest.fixture(scope="module")
def browser(sample_page: dict[str, Any]) -> Iterator[Any]:
    with chromium() as b:
        yield b


def wait_js(page: Any, expression: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = page.evaluate(expression)
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {expression}")


def opened(browser: Any, url: str) -> tuple[Any, list[str]]:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    wait_js(page, "window.ckPerf && window.ckPerf.firstView !== null")
    return page, errors


def test_branching_trajectories_agree_with_their_rows_and_draw_as_a_branch(
        browser: Any, sample_page: dict[str, Any]) -> None:
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.queries.spec import all_queries

    store, queries = sample_page["store"], all_queries()
    listing = cli_json(store, "query", "trajectory-list")
    branching = []
    with KgliteStore(store, read_only=True) as s:
        for row in listing:
            pmid = row["current_pmid"]
            rows = queries.get("trajectory-versions").run(s, {"guideline": pmid})
            versions = [v.model_dump(mode="json") for v in rows]
            chain = queries.get("trajectory").run(s, {"guideline": pmid})  # the whole supersession component
            if any(v["elsewhere"] for v in versions) or len(chain) != len(versions):
                branching.append((row, versions))
    assert len(branching) >= 30  # the sample's trajectories sharing a version with another one
    page, errors = opened(browser, sample_page["url"])
    # the metric panel counts distinct versions, as the quality view's total of guideline versions does
    quality = {q["check"]: q for q in cli_json(store, "quality")}
    total = quality["guideline versions with no organisation"]["total"]
    assert int(page.inner_text("#metrics [data-metric='versions'] strong")) == total == len(
        {v for r in listing for v in r["versions"]}) < sum(len(r["versions"]) for r in listing)
    for row, versions in branching:
        pmid = row["current_pmid"]
        page.get_by_label("Search (topic, title, PMID, organisation)", exact=True).fill(pmid)
        page.locator(f"#traj-table tbody tr[data-pmid='{pmid}']").click()
        page.wait_for_selector(f"#detail h2:has-text('Trajectory of {pmid}')")
        page.wait_for_selector("#chain li")
        shown = page.eval_on_selector_all("#chain li", "xs => xs.map(x => x.dataset.pmid)")
        assert sorted(shown) == sorted(row["versions"]) and len(shown) == row["depth"] + 1, pmid
        assert page.locator("#pairs .pair").count() == row["pairs"], pmid
        headings = page.eval_on_selector_all("#detail h3", "xs => xs.map(x => x.innerText)")
        assert headings[0].startswith(f"{row['depth'] + 1} versions") and f"{row['depth']} prior" in headings[0]
        assert headings[1].startswith(f"{row['pairs']} change pair{'' if row['pairs'] == 1 else 's'} ")
        # one line per supersession the trajectory's records state, no more
        lines = sorted(page.eval_on_selector_all("#chain path",
                                                 "xs => xs.map(x => x.dataset.from + '>' + x.dataset.to)"))
        assert lines == sorted(f"{v['pmid']}>{s}" for v in versions for s in v["supersedes"]), pmid
        for v in versions:  # a version superseded elsewhere says so, naming those versions
            if v["elsewhere"]:
                note = page.inner_text(f"#chain li[data-pmid='{v['pmid']}'] .elsewhere")
                assert all(e in note for e in v["elsewhere"])
    # a current guideline that supersedes three priors, one of which supersedes a fourth: the three side by side
    page.get_by_label("Search (topic, title, PMID, organisation)", exact=True).fill("34904399")
    page.locator("#traj-table tbody tr[data-pmid='34904399']").click()
    page.wait_for_selector("#detail h2:has-text('Trajectory of 34904399')")
    rows = page.eval_on_selector_all("#chain ol.gen", "xs => xs.map(x => [...x.children].map(c => c.dataset.pmid))")
    assert rows == [["21475697"], ["26672494", "29098794", "31661195"], ["34904399"]]
    tops = page.eval_on_selector_all("#chain ol.gen:nth-of-type(2) li",
                                     "xs => xs.map(x => x.getBoundingClientRect().top)")
    assert max(tops) - min(tops) < 1  # side by side, not one after another
    page.locator("#detail").screenshot(path=str(sample_page["root"] / "branch.png"))
    page.close()
    assert errors == []


def _bars(page: Any) -> list[dict[str, Any]]:
    return page.eval_on_selector_all("#t-view .bar", "xs => xs.map(x => ({fact: x.dataset.fact, "
                                     "left: x.getBoundingClientRect().left, width: x.getBoundingClientRect().width}))")


def _open_subject(page: Any, subject: str) -> None:
    page.click("#tab-timelines")
    page.get_by_label("Find a subject (id or caption)", exact=True).fill(subject)
    page.locator(f"#t-subjects li[data-subject='{subject}']").click()
    page.wait_for_selector(f"#t-view h2:has-text('{subject}')")
    page.wait_for_selector("#t-view .bar")


def test_timelines_are_zoomed_by_precision_and_drawn_to_scale(browser: Any, sample_page: dict[str, Any]) -> None:
    import datetime as dt

    store = sample_page["store"]
    page, errors = opened(browser, sample_page["url"])
    # a year-precision decision changed in 2016: a year axis, the version in force since 2016 drawn up to today
    _open_subject(page, sample_page["decision"])
    ticks = page.eval_on_selector_all("#t-view .axis", "xs => xs.map(x => x.innerText)")
    assert ticks and all(t.isdigit() and len(t) == 4 for t in ticks), ticks
    versions = {f["id"]: f for f in cli_json(store, "query", "timeline", "--subject", sample_page["decision"])}
    bars = {b["fact"]: b for b in _bars(page)}
    old = next(i for i, f in versions.items() if f["valid_to"])
    new = next(i for i, f in versions.items() if not f["valid_to"])
    years_new = (dt.date.today() - dt.date.fromisoformat(versions[new]["valid_from"])).days / 365.25
    years_old = (dt.date.fromisoformat(versions[old]["valid_to"]) - dt.date.fromisoformat(versions[old]["valid_from"])
                 ).days / 365.25
    ratio = bars[new]["width"] / bars[old]["width"]
    assert abs(ratio - years_new / years_old) / (years_new / years_old) < 0.1, (ratio, years_new, years_old)
    # a CXR finding's studies days apart: every closed interval's width in proportion to its days
    _open_subject(page, sample_page["finding"])
    facts = {f["id"]: f for f in cli_json(store, "query", "timeline", "--subject", sample_page["finding"])}
    per_day = []
    for b in _bars(page):
        f = facts[b["fact"]]
        if f["valid_to"] and b["width"] > 4:
            days = (dt.date.fromisoformat(f["valid_to"]) - dt.date.fromisoformat(f["valid_from"])).days
            per_day.append(b["width"] / days)
    assert len(per_day) >= 2 and max(per_day) / min(per_day) < 1.05, per_day
    page.close()
    assert errors == []


def test_a_trajectory_grid_hides_the_subject_picker(browser: Any, sample_page: dict[str, Any]) -> None:
    page, errors = opened(browser, sample_page["url"])
    page.locator("#traj-table tbody tr").first.click()
    page.wait_for_selector("#chain li")
    page.click("#d-grid")
    page.wait_for_selector("#g-table tbody tr")
    assert not page.is_visible("#t-subjects") and not page.is_visible("#t-form")
    page.click("#t-back")  # back to subjects: the picker returns, the grid goes
    assert page.is_visible("#t-subjects") and page.is_visible("#t-form") and not page.is_visible("#grid")
    page.close()
    assert errors == []
