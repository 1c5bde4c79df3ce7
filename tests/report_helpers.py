"""Shared by the report tests: the demo corpus's questions answered by reference baselines, and Debian's Chromium
driven by Playwright (its own browser download is never used; under CI a missing browser fails loudly)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]


def demo_run(tmp: Path, models: Sequence[str]) -> Path:
    """One complete run folder under `tmp`: the demo's TempoMed MCQs (one perturbation) and ConflictMedQA
    scenarios, answered by `models` (reference baselines: no model server)."""
    from chronokg.bench import snapshot
    from chronokg.bench.family import generate
    from chronokg.bench.question import write_jsonl
    from chronokg.demo.corpus import load_demo
    from chronokg.demo.sources import load_sources
    from chronokg.eval import runner
    from chronokg.graph.kglite_store import KgliteStore

    with KgliteStore(tmp / "demo.kgl", durable="off") as store:
        load_demo(store)
        load_sources(store)
        snap = snapshot.current(store)
        questions = generate("tempomed", store, snap, {"protocol": "chronokg", "perturbations": ["reorder_only"]})[0]
        questions += generate("conflictmedqa", store, snap, {})[0]
        qfile = tmp / "questions.jsonl"
        write_jsonl(qfile, questions)
        options = runner.RunOptions(protocol="chronokg", cache=False, concurrency=16)
        folder, info = runner.prepare(tmp / "runs", [qfile], [runner.ModelEntry(spec=m) for m in models], options)
        info, _ = runner.run(folder, info, runner.load_questions([qfile], None), store)
        assert info.status == "complete"
    return folder


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium (skipped here, failed under CI, when Playwright or the browser is missing)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        missing = f"playwright is not installed ({exc}): pip install -e '.[dev]'"
    else:
        missing = "" if CHROMIUM.exists() else f"{CHROMIUM} not found: apt-get install -y chromium"
    if missing:
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


def rescored_pair(tmp: Path, models: Sequence[str], known_at: Any = None) -> tuple[Path, Path]:
    """(a run of the demo corpus's TempoMed MCQs, that run re-scored with `eval rescore`'s function against the
    same store, as known at `known_at`)."""
    from chronokg.bench import snapshot
    from chronokg.bench.family import generate
    from chronokg.bench.question import write_jsonl
    from chronokg.demo.corpus import load_demo
    from chronokg.eval import runner
    from chronokg.eval.rescore import rescore
    from chronokg.graph.kglite_store import KgliteStore

    with KgliteStore(tmp / "demo.kgl", durable="off") as store:
        load_demo(store)
        snap = snapshot.current(store)
        questions = generate("tempomed", store, snap, {"protocol": "chronokg", "perturbations": ["reorder_only"]})[0]
        qfile = tmp / "questions.jsonl"
        write_jsonl(qfile, questions)
        options = runner.RunOptions(protocol="chronokg", cache=False, concurrency=16)
        folder, info = runner.prepare(tmp / "runs", [qfile], [runner.ModelEntry(spec=m) for m in models], options)
        info, _ = runner.run(folder, info, runner.load_questions([qfile], None), store)
        assert info.status == "complete"
        result = rescore(folder, tmp / "rescored", store, snapshot.current(store), known_at)
    return folder, Path(result.folder)


def mixed_rescore(origin: Path, out: Path, every: int = 3) -> Path:
    """A re-scored run as `eval rescore` writes one, made by hand from `origin`: every `every`-th sample not
    scorable now, the rest as they were; run.json naming its origin, the day and the flips."""
    from chronokg.eval.log import NOT_SCORABLE, SampleRecord, latest, read_info, write_info

    out.mkdir(parents=True)
    records = list(latest(origin / "samples.jsonl").values())
    lines = [r.model_copy(update={"correct": None, "score": None,
                                  "error": f"{NOT_SCORABLE}: its answer key gives no answer among the options"})
             if n % every == 0 else r for n, r in enumerate(records)]
    (out / "samples.jsonl").write_text("".join(SampleRecord.model_dump_json(r) + "\n" for r in lines))
    info = read_info(origin)
    gone = sum(1 for r in lines if not r.ok)
    write_info(out, info.model_copy(update={"run_id": "run-rescored", "status": "rescored",
                                            "rescored_from": info.run_id, "known_at": "2020-06-30",
                                            "flips": {"now wrong": 0, "now right": 0, "not scorable now": gone}}))
    return out
