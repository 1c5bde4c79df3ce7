"""Stored text is data on the explorer's static page: hostile strings in every text field, opened in Chromium.

The export embeds its answers as JSON data (`<script type="application/json">`, `<` escaped), which the page
parses; nothing stored is spliced into the page's code or markup. Every string of a real export (the demo store)
gets a hostile tail, ids and PMIDs included (dates stay dates: the page computes with them), and questions,
answers and runs are added in the shapes the catalog gives them. The page must render every view, show each
string as text, run nothing injected (`window.__pwned` stays unset) and log no error, under its
Content-Security-Policy (no `'unsafe-inline'`).
"""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path
from typing import Any

import pytest

from chronokg.graph.kglite_store import KgliteStore
from chronokg.serve.explorer import page
from chronokg.serve.explorer.static import Slice, slice_data
from tests.report_helpers import ARGS, CHROMIUM
from tests.test_explorer import wait_js

HOSTILE = [
    "/*DATA*/", "/*CONFIG*/ /*JS*/ /*CSS*/ /*CSP*/",
    "</script><script>window.__pwned = 'script'</script>",
    "<img src=x onerror=\"window.__pwned = 'img'\">",
    "[x] [/x] [bold]red[/bold] \\",
    "quotes ' \" ` and ${window.__pwned = 'template'}",
    "<!-- <script> -->",
    "& &amp; &lt;b&gt; <b>bold</b> \u2028\u2029 javascript:window.__pwned='href'",
    "long " + "x" * 10_000,
]
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def hostile(text: str) -> str:
    """`text` with one of the hostile tails (the same one for the same text, so ids still match each other)."""
    if DATE.match(text) or not text:
        return text
    return text + " " + HOSTILE[int(hashlib.sha256(text.encode()).hexdigest(), 16) % len(HOSTILE)]


def poison(value: Any) -> Any:
    if isinstance(value, str):
        return hostile(value)
    if isinstance(value, list):
        return [poison(v) for v in value]
    if isinstance(value, dict):
        return {k: poison(v) for k, v in value.items()}
    return value


def hostile_export(store_path: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(config, data, what was added) of a demo store's export with every string poisoned."""
    with KgliteStore(store_path, read_only=True) as store:
        data = slice_data(store, Slice(subjects=["un-secretary-general"]))
    per = {}
    for key, rows in data.pop("per").items():
        name, _, arg = key.partition("|")
        scope, _, ident = arg.rpartition("|")  # known-grid's keys name their scope: "known-grid|subject|ID"
        per[f"{name}|{scope + '|' if scope else ''}{hostile(ident)}"] = poison(rows)
    data = {**poison(data), "per": per}
    first = data["trajectory-list"][0]["current_pmid"]
    pair = per[f"trajectory-pairs|{first}"][0]
    key = f"cp:{pair['decision_id']}:{pair['prior_pmid']}>{pair['current_pmid']}"
    qid = hostile("tm-question-1")
    data["questions"] = {key: [{"question": qid, "pair": key, "kind": "generated", "variant": HOSTILE[0],
                                "answers": 1, "text": HOSTILE[2], "correct": HOSTILE[3], "key_query": HOSTILE[1],
                                "key_params": HOSTILE[5]}]}
    per[f"question-answers|{qid}"] = [{"run": HOSTILE[6], "model": HOSTILE[4], "answer": HOSTILE[7],
                                       "correct": True}]
    per[f"verify|{qid}"] = [{"question": qid, "query": HOSTILE[1], "rows": 3, "agrees": True, "hash": "h",
                             "stored_hash": "h"}]
    data["run-summary"] = [{"run": HOSTILE[2], "model": HOSTILE[3], "family": HOSTILE[0], "variant": HOSTILE[8],
                            "correct": 1, "answered": 2, "accuracy": 0.5}]
    data["run-cutoffs"] = [{"run": HOSTILE[2], "model": HOSTILE[3], "family": HOSTILE[0], "cutoff": HOSTILE[5],
                            "estimated": True, "pre_n": 2, "pre_correct": 1, "post_n": 3, "post_correct": 0,
                            "stale": 2}]
    config = {"mode": "static", "data": {"trajectory-list": data.pop("trajectory-list")}}
    return config, data, {"pmid": first, "decision": pair["decision_id"], "question": qid}


def test_the_template_fills_each_slot_once_whatever_the_data_spells() -> None:
    html = page({"mode": "static", "data": {"trajectory-list": [{"caption": "/*DATA*/ </script>"}]}},
                {"x": "/*CONFIG*/ <!--"})
    config = html.split('<script type="application/json" id="chronokg-config">', 1)[1].split("</script>", 1)[0]
    data = html.split('<script type="application/json" id="chronokg-data">', 1)[1].split("</script>", 1)[0]
    assert "/*DATA*/ \\u003c/script\\u003e" in config and "<" not in config and "<" not in data
    assert "/*CONFIG*/ \\u003c!--" in data
    assert html.count("<script") == 3 and "'unsafe-inline'" not in html


@pytest.mark.slow
def test_hostile_strings_in_every_field_render_as_text_in_chromium(served: tuple[Path, str],
                                                                    tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not found: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    config, data, picked = hostile_export(served[0])
    html = page(config, data)
    assert "'unsafe-inline'" not in html and html.count("<script") == 3
    path = tmp_path / "index.html"
    path.write_text(html, encoding="utf-8")
    listing = config["data"]["trajectory-list"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        try:
            tab = browser.new_page(viewport={"width": 1400, "height": 900})
            errors: list[str] = []
            tab.on("console", lambda m: errors.append(m.text) if m.type in ("error", "warning") else None)
            tab.on("pageerror", lambda e: errors.append(str(e)))
            tab.goto(path.as_uri())
            wait_js(tab, "window.ckPerf && window.ckPerf.firstView !== null")
            policy = tab.evaluate("document.querySelector('meta[http-equiv=Content-Security-Policy]').content")
            assert "'unsafe-inline'" not in policy and "script-src 'sha256-" in policy
            assert tab.inner_text("#count").startswith(f"{len(listing)} of {len(listing)}")
            shown = tab.text_content("#traj-table")
            for row in listing:  # every listed field, as the text it is
                for value in (row["current_pmid"], row["topic"] or row["caption"], "; ".join(row["organizations"])):
                    assert value in shown, value[:80]
            # a trajectory, its recommendations, change pairs and the question with its answers
            tab.locator(f"#traj-table tbody tr[data-pmid='{_css(picked['pmid'])}']").click()
            tab.wait_for_selector("#chain li")
            box = tab.locator("details.question").first
            box.locator("summary").click()
            box.locator(".qmore table").wait_for()
            detail = tab.text_content("#detail")
            pairs = data["per"][f"trajectory-pairs|{picked['pmid']}"]
            versions = data["per"][f"trajectory-versions|{picked['pmid']}"]
            texts = [c["prior_recommendation"] for c in pairs] + [c["current_recommendation"] for c in pairs]
            for value in (*texts, *[v["caption"] for v in versions], *[HOSTILE[i] for i in (2, 3, 4, 6, 7)]):
                assert value in detail, value[:80]
            # the decision's timeline at a date
            tab.locator(f"#pairs .pair[data-decision='{_css(picked['decision'])}'] a[data-subject]").first.click()
            tab.wait_for_selector("#t-view h2")
            tab.get_by_label("True on (valid time)", exact=True).fill("2016-06-01")
            tab.wait_for_selector("#t-view h3")
            versions = data["per"][f"timeline|{picked['decision']}"]
            view = tab.text_content("#t-view")
            assert picked["decision"] in view and all(f["predicate"] in view for f in versions)
            assert tab.evaluate("[...document.querySelectorAll('#t-view .bar')].every(b => b.style.left !== '')")
            # its valid x known grid: every believed fact's text in its cell, the slider's cards name them all
            tab.wait_for_selector("#g-table tbody tr")
            grid = data["per"][f"known-grid|subject|{picked['decision']}"]
            assert grid["cells"] and all(captions for _, captions in grid["known"].values())
            table, cards = tab.text_content("#g-table"), tab.text_content("#g-focus")
            assert all(c in table for _, captions in grid["known"].values() for c in captions)
            last = max(date for _, date, _ in grid["cells"])
            believed = {i for _, date, ids in grid["cells"] if date == last for i in ids}
            held = {f["id"]: f for f in versions}  # the grid's facts are read from the timeline's versions
            assert believed and all(str(held[i]["value"])[:40] in cards for i in believed)
            tab.click("#tab-runs")
            tab.wait_for_selector("#r-table tbody td[data-answered]")
            runs = tab.text_content("#r-table")
            assert all(h in runs for h in (HOSTILE[0], HOSTILE[2], HOSTILE[3], HOSTILE[8]))
            tab.wait_for_selector("#r-cutoffs tbody td[data-n]")
            cutoffs = tab.text_content("#r-cutoffs")
            assert all(h in cutoffs for h in (HOSTILE[0], HOSTILE[2], HOSTILE[3], HOSTILE[5])) and "0 / 3" in cutoffs
            tab.click("#tab-quality")
            tab.wait_for_selector("#q-table tbody tr")
            quality = tab.text_content("#q-table")
            assert all(q["check"] in quality for q in data["quality"])
            time.sleep(0.2)  # an injected handler (an <img onerror>) would have fired by now
            assert tab.evaluate("window.__pwned === undefined")
            assert tab.evaluate("document.querySelectorAll('script').length") == 3
            assert tab.evaluate("document.querySelectorAll('img, b:not(#detail b, #r-table b)').length") == 0
        finally:
            browser.close()
    assert errors == []


def _css(value: str) -> str:
    """`value` inside a CSS attribute selector in single quotes."""
    return value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\a ")
