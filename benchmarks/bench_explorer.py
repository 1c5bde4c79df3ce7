"""Explorer speed in a real browser: first view and search keystrokes, live and static, beside the browser's floor.

Two stores, both through the real load path: the TempoMed-Bench sample in ../shared/data (the
full sample: every change pair and trajectory it holds) and N synthetic trajectories (default
10,000) shaped like the release (MCQ records and trajectory files: one trajectory per current
PMID, ~2.7 change pairs each, the sample's prior counts; `synthetic`). For each, the page is
opened live (`chronokg serve http`, a fresh server, measured once its start-up read of the
trajectory list is done, as a server does before its first visitor) and as the static
export (`chronokg export html`, from disk), `--loads` times each; then a search is typed key by key.
The page records `performance.now()` when the first list is drawn (first view, from navigation
start) and, per keystroke, the time from the input event to the next animation frame after the
list is redrawn. The baseline, measured in the same run, is the browser's floor: a page with the
same trajectory list embedded that only parses it and marks the time (first view), and an input
whose handler does nothing but wait for the next frame (keystroke).

    python benchmarks/bench_explorer.py                  # sample + 10,000 synthetic trajectories
    python benchmarks/bench_explorer.py --synthetic 2000 --loads 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.serve_helpers import serve, server_env  # noqa: E402

SHARED = REPO.parent / "shared" / "data" / "tempomed-bench"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
QUERIES = {"sample": "physicists in medicine", "synthetic": "synthetic topic 1999"}  # typed key by key
FLOOR_PAGE = """<!doctype html><html><body><input id="search" aria-label="search">
<script type="application/json" id="d">{data}</script>
<script>window.ckPerf = {{keystrokes: []}}; JSON.parse(document.getElementById("d").textContent);
window.ckPerf.firstView = performance.now();
document.getElementById("search").addEventListener("input", (e) => {{ const t0 = e.timeStamp;
  requestAnimationFrame(() => window.ckPerf.keystrokes.push(performance.now() - t0)); }});</script></body></html>"""


def chronokg(store: Path, *args: str) -> None:
    subprocess.run([sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{store}", *args], check=True,
                   cwd=REPO, stdout=subprocess.DEVNULL)


PRIORS = [1] * 84 + [2] * 12 + [3] * 3 + [4]  # priors per trajectory: the sample's 172/26/6/2 of 206
QUESTIONS = [2, 2, 3, 1, 2, 3, 2, 2, 3]  # MCQs per prior->current link: the sample's 559 on 250 links
CATEGORIES = ("comm", "noncomm", "other")  # the seed's trajectory folders (organisation categories)


def synthetic(root: Path, n: int) -> Path:
    """N trajectories in TempoMed-Bench's own shapes, as the real release loads: MCQ records (one change pair
    each; several per prior->current link; the organisation named in the stem) and trajectory files (topic,
    title, organisation, each current's first prior) in the seed's comm/noncomm/other folders. Like the
    release (271 trajectories, 721 change pairs), each current PMID is one trajectory and carries ~2.7 pairs."""
    orgs = [f"Society of Synthetic Medicine {k}" for k in range(60)]
    blocks: list[str] = []
    per_cat: dict[str, list[dict[str, Any]]] = {c: [] for c in CATEGORIES}
    for i in range(n):
        year, pmid, org = 2000 + i % 26, 60_000_000 + i * 10, orgs[i % 60]
        priors = [(str(pmid + k), year - 1 - 3 * (k - 1) - i % 2) for k in range(1, 1 + PRIORS[i % len(PRIORS)])]
        for k, (prior, prior_year) in enumerate(priors):
            for j in range(QUESTIONS[(i + k) % len(QUESTIONS)]):
                blocks.append(json.dumps({
                    "idx": len(blocks), "PMID_current": str(pmid), "Year_current": year, "PMID_prior": prior,
                    "Year_prior": prior_year,
                    "Question": f"Case {len(blocks)} about condition {i % 997}. According to the {org} guideline "
                                f"issued in {year}, which of the following is most appropriate?",
                    "Answer": {"Choice_A": f"current recommendation {i}.{k}.{j}",
                               "Choice_B": f"prior recommendation {i}.{k}.{j}", "Choice_C": "a distractor",
                               "Choice_D": "another distractor", "Correct": "A",
                               "Explanation": f"The {year} guideline changed recommendation {i}.{k}."}}, indent=2))
        per_cat[CATEGORIES[i % 3]].append({
            "Topic": f"synthetic topic {i % 2000}", "Title": f"Guideline {i} on condition {i % 997}",
            "year_of_current_guidance": year, "PMID": str(pmid), "Organization": [org],
            "prior_guidelines": [{"PMID": priors[0][0], "year": priors[0][1], "title": f"Guideline {i} before"}]})
    data = root / "synthetic"
    data.mkdir()
    (data / "questions.jsonl").write_text("\n\n\n".join(blocks) + "\n")  # the release's block format
    for cat, items in per_cat.items():
        (data / f"{cat}_guideline_trajectory_synthetic").mkdir()
        (data / f"{cat}_guideline_trajectory_synthetic" / "trajectories.json").write_text(json.dumps(items))
    return data


def measure(browser: Any, url: str, loads: int, query: str) -> dict[str, float]:
    firsts: list[float] = []
    keys: list[float] = []
    for _ in range(loads):
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(url)
        deadline = time.monotonic() + 60
        while not page.evaluate("window.ckPerf && window.ckPerf.firstView !== null"):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url}: no first view ({page.inner_text('#status')})")
            time.sleep(0.01)
        firsts.append(page.evaluate("window.ckPerf.firstView"))
        page.locator("#search").press_sequentially(query, delay=30)
        time.sleep(0.2)
        keys += page.evaluate("window.ckPerf.keystrokes")
        page.close()
    return {"first_median": statistics.median(firsts), "first_max": max(firsts),
            "key_median": statistics.median(keys), "key_max": max(keys)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--synthetic", type=int, default=10_000)
    ap.add_argument("--loads", type=int, default=5)
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        root = Path(tmp)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        sets = {"TempoMed sample": root / "tm.kgl", f"{args.synthetic:,} synthetic": root / "syn.kgl"}
        t0 = time.monotonic()
        chronokg(sets["TempoMed sample"], "ingest", "tempomed", str(SHARED))
        chronokg(sets[f"{args.synthetic:,} synthetic"], "ingest", "tempomed", str(synthetic(root, args.synthetic)))
        print(f"stores built in {time.monotonic() - t0:.0f} s", file=sys.stderr)
        for name, store in sets.items():
            query = QUERIES["sample" if store.stem == "tm" else "synthetic"]
            out = root / f"static-{store.stem}"
            t1 = time.monotonic()
            chronokg(store, "export", "html", "--out", str(out))
            print(f"{name}: export html {time.monotonic() - t1:.0f} s", file=sys.stderr, flush=True)
            listing = json.loads(subprocess.run(
                [sys.executable, "-m", "chronokg.cli", "--store", f"kglite://{store}", "query", "trajectory-list",
                 "--format", "json"], check=True, cwd=REPO, capture_output=True, text=True).stdout)
            floor = root / f"floor-{store.stem}.html"
            floor.write_text(FLOOR_PAGE.format(data=json.dumps(listing).replace("<", "\\u003c")))
            rows.append((name, "baseline: browser floor", len(listing),
                         measure(browser, floor.as_uri(), args.loads, query)))
            rows.append((name, "static export", len(listing), measure(browser, (out / "index.html").as_uri(),
                                                                       args.loads, query)))
            print(name, rows[-2:], file=sys.stderr, flush=True)
            env = server_env(CHRONOKG_READ_MAX_ROWS="50000", CHRONOKG_READ_TIMEOUT_S="30",
                             CHRONOKG_READ_MAX_RESULT_MB="64")
            with serve(store, "http", "--workers", "2", env=env) as url:
                t2 = time.monotonic()  # the server reads the trajectory list once, at start: wait for that
                with urllib.request.urlopen(url + "/explore/api/trajectory-list", timeout=120) as resp:
                    assert len(json.loads(resp.read())["rows"]) == len(listing)
                print(f"{name}: the server's start-up read of the list took {time.monotonic() - t2:.1f} s",
                      file=sys.stderr, flush=True)
                rows.append((name, "live (serve http)", len(listing), measure(browser, url + "/", args.loads,
                                                                              query)))
            print(name, rows[-1], file=sys.stderr, flush=True)
        browser.close()
    print("\n| data | page | trajectories | first view median / max (ms) | keystroke median / max (ms) |"
          " target met (1000 / 100 ms, max) |")
    print("|---|---|---:|---:|---:|---|")
    for name, kind, n, m in rows:
        met = "—" if kind.startswith("baseline") else (
            "yes" if m["first_max"] <= 1000 and m["key_max"] <= 100 else "no")
        print(f"| {name} | {kind} | {n:,} | {m['first_median']:.0f} / {m['first_max']:.0f} | "
              f"{m['key_median']:.1f} / {m['key_max']:.1f} | {met} |")


if __name__ == "__main__":
    main()
