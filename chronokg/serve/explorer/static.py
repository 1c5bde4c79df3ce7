"""`chronokg export html`: the explorer as one file that opens from disk, a slice's answers embedded.

The page is the one `chronokg serve http` serves; instead of asking the server it looks
answers up in the embedded JSON, keyed by query and parameter (`as-of` and `timeline` at
any date are computed in the page from each subject's every version, by the catalog's
valid-time and known-time rules; `known-grid` is held per subject and per trajectory, at its default
columns). Every answer is a catalog query's rows, run here on a
read-only store as `chronokg query` runs them.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from chronokg.errors import ChronoKGError
from chronokg.graph.store import GraphStore
from chronokg.queries.spec import all_queries
from chronokg.serve.explorer import page, quality, run_report_rows, verify
from chronokg.serve.tools import jsonable

SUBJECT_LIST_MAX = 5000  # the subject-list query's own ceiling


class Slice(BaseModel):
    """Which trajectories (and extra timeline subjects) an export holds; nothing set: all of them."""

    topic: str | None = None  # words in the topic, title or organisation
    organization: str | None = None
    category: str | None = None  # the organisation category (Commercial, Non-commercial, Other), exactly
    year_from: int | None = None
    year_to: int | None = None
    limit: int | None = None
    subjects: list[str] = []  # more timeline subjects (a Wikidata QID, a CFR section, ...)

    def keep(self, row: Mapping[str, Any]) -> bool:
        year = row.get("year")
        words = " ".join(str(x) for x in (row.get("topic"), row.get("caption"), *row.get("organizations", [])))
        return ((self.topic is None or self.topic.lower() in words.lower())
                and (self.organization is None
                     or any(self.organization.lower() in o.lower() for o in row.get("organizations", [])))
                and (self.category is None or row.get("category") == self.category)
                and (self.year_from is None or (year is not None and year >= self.year_from))
                and (self.year_to is None or (year is not None and year <= self.year_to)))


class ExportSummary(BaseModel):
    path: Path
    trajectories: int
    subjects: int
    questions: int
    bytes: int


CELL = ("known", "date", "releases", "release_captions", "row")  # what a grid row says of its cell, not its fact


def compact_grid(rows: list[dict[str, Any]], held: Mapping[str, Any]) -> dict[str, Any]:
    """`known-grid`'s rows as an export holds them: each cell the ids of its facts, each known time its releases,
    each fact once as [id, subject, None] when the export holds that subject's timeline (every version: the page
    reads the fact there) or [id, None, fact] when not. The page expands the rows back."""
    facts: dict[str, list[Any]] = {}
    known: dict[str, list[list[str]]] = {}
    cells: list[list[Any]] = []
    for r in rows:
        known[r["known"]] = [r["releases"], r["release_captions"]]
        if not cells or cells[-1][:2] != [r["known"], r["date"]]:
            cells.append([r["known"], r["date"], []])
        if r["id"] is not None:
            facts[r["id"]] = ([r["id"], r["subject"], None] if f"timeline|{r['subject']}" in held
                              else [r["id"], None, {k: v for k, v in r.items() if k not in CELL}])
            cells[-1][2].append(r["id"])
    return {"facts": list(facts.values()), "known": known, "cells": cells}


def slice_data(store: GraphStore, chosen: Slice, run_report: str | None = None) -> dict[str, Any]:
    """The embedded answers: every read the page can make within the slice (and the `--runs` report)."""
    queries = all_queries()
    memo: dict[str, list[dict[str, Any]]] = {}  # questions share answer keys

    def call(name: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        key = json.dumps([name, params], sort_keys=True, default=str)
        if key not in memo:
            memo[key] = jsonable(queries.get(name).run(store, dict(params)))
        return memo[key]

    unknown = [s for s in chosen.subjects if not call("timeline", {"subject": s, "include_retracted": True})]
    if unknown:  # before any other read: the page is not written
        raise ChronoKGError(f"--subject {', '.join(unknown)}: no facts about {'it' if len(unknown) == 1 else 'them'} "
                            "in the store (`chronokg query subject-list --text WORDS` finds subjects)")
    trajectories = [t for t in call("trajectory-list", {}) if chosen.keep(t)][:chosen.limit]
    per: dict[str, Any] = {}
    wanted: dict[str, None] = {}
    by_pair: dict[str, list[dict[str, Any]]] = {}
    seen: set[str] = set()
    for t in trajectories:
        pmid = t["current_pmid"]
        for name in ("trajectory-versions", "trajectory-pairs", "trajectory-questions"):
            per[f"{name}|{pmid}"] = call(name, {"guideline": pmid})
        wanted.update(dict.fromkeys(v["pmid"] for v in per[f"trajectory-versions|{pmid}"]))
        wanted.update(dict.fromkeys(c["decision_id"] for c in per[f"trajectory-pairs|{pmid}"]))
        for q in per.pop(f"trajectory-questions|{pmid}"):  # held once, by change pair (trajectories overlap)
            if q["question"] in seen:
                continue
            seen.add(q["question"])
            by_pair.setdefault(q["pair"], []).append(q)
            if q["kind"] == "generated":
                per[f"question-answers|{q['question']}"] = call("question-answers", {"question": q["question"]})
                per[f"verify|{q['question']}"] = verify(call, q["question"])
    wanted.update(dict.fromkeys(chosen.subjects))
    known = {s["subject"]: s for s in call("subject-list", {"limit": SUBJECT_LIST_MAX})}
    subjects: list[dict[str, Any]] = []
    for s in wanted:
        versions = call("timeline", {"subject": s, "include_retracted": True})
        if not versions:
            continue  # a guideline with no facts of its own (nothing superseded it)
        per[f"timeline|{s}"] = versions
        subjects.append(known.get(s) or {"subject": s, "kind": None, "caption": versions[0].get("subject_caption"),
                                         "facts": len(versions)})
    for row in subjects:  # after the timelines, which hold the grids' facts
        per[f"known-grid|subject|{row['subject']}"] = compact_grid(call("known-grid", {"subject": row["subject"]}), per)
    for t in trajectories:
        rows = call("known-grid", {"subject": t["current_pmid"], "trajectory": True})
        per[f"known-grid|trajectory|{t['current_pmid']}"] = compact_grid(rows, per)
    kinds: dict[str, int] = {}
    for row in subjects:
        kinds[row["kind"]] = kinds.get(row["kind"], 0) + 1
    return {"trajectory-list": trajectories, "subjects": sorted(subjects, key=lambda s: s["subject"]),
            "subject-kinds": [{"kind": k, "subjects": n} for k, n in sorted(kinds.items(), key=lambda x: str(x[0]))],
            "quality": quality(call), "run-summary": call("run-summary", {}),
            "run-cutoffs": call("run-cutoffs", {}), "run-report": run_report_rows(run_report),
            "per": per, "questions": by_pair,
            "slice": chosen.model_dump()}


def export_html(store: GraphStore, out: Path, chosen: Slice | None = None,
                run_report: str | None = None) -> ExportSummary:
    """Write `out/index.html` whole (a temporary file renamed into place) and say what it holds; `run_report`
    is the report of the `--runs` folders (HTML elements, built by the CLI), shown in the Runs view."""
    data = slice_data(store, chosen or Slice(), run_report)
    trajectories = len(data["trajectory-list"])
    html = page({"mode": "static", "data": {"trajectory-list": data.pop("trajectory-list")}}, data).encode("utf-8")
    out.mkdir(parents=True, exist_ok=True)
    target = out / "index.html"
    fd, tmp = tempfile.mkstemp(prefix=".index.", suffix=".html.tmp", dir=out)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(html)
        os.chmod(tmp, 0o644)  # mkstemp makes it private; a page is for reading
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return ExportSummary(path=target, trajectories=trajectories, subjects=len(data["subjects"]),
                         questions=sum(len(qs) for qs in data["questions"].values()), bytes=len(html))


