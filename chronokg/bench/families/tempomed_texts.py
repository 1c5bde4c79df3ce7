"""New TempoMed trajectories from guideline text: extract the differences, verify them, load, ask.

The seed's pipeline (`P/difference_generation/pubmed_construct_guideline_diffs_with_verifier.py`,
GuanZihan/TempoMed-Bench, MIT): for the current guideline against each prior version, the extraction
prompt (`extract_prompt`, lines 296-329; structured output `ItemList{items: [GuidelineDifference]}`,
temperature 0), then one verifier call per extracted difference (lines 399-634; structured output
`VerifyScore{score, rationale}`, temperature 1), keeping only the differences scored 1 (`score > 0.5`,
line 619). The results are written as the trajectory JSON and `{current}_{prior}_extracted_diffs.json`
files the TempoMed loader reads, loaded as a new release, and turned into questions for what was added.

Input: a manifest (JSON) naming the guideline versions::

    {"topic": "Adjuvant therapy for GIST", "organization": ["Korean GIST Study Group"],
     "versions": [{"pmid": "123", "year": 2012, "title": "...", "path": "v2012.xml"},
                  {"pmid": "100", "year": 2010, "title": "...", "path": "v2010.md"}]}

Paths are PMC JATS XML (passed whole, as the seed does) or plain text / Markdown, relative to the manifest.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from chronokg.bench.families.tempomed_prompts import render, template
from chronokg.bench.llm import ask_json
from chronokg.errors import InputError
from chronokg.ingest.common import read_json, read_text
from chronokg.models import ModelClient


class Version(BaseModel):
    pmid: str
    year: int = Field(ge=1800, le=2200)
    title: str = ""
    path: str


class Manifest(BaseModel):
    topic: str
    organization: list[str] = Field(min_length=1)
    versions: list[Version] = Field(min_length=2)


DIFFERENCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {
        "type": "object",
        "properties": {k: {"type": "string"} for k in (
            "clinical_focus", "current_recommendation", "current_recommendation_raw_text", "prior_recommendation",
            "prior_recommendation_raw_text", "change_summary")},
        "required": ["clinical_focus", "current_recommendation", "prior_recommendation", "change_summary"]}}},
    "required": ["items"],
}
VERIFY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"score": {"type": "number"},
                                                                   "rationale": {"type": "string"}},
                                 "required": ["score", "rationale"]}


class Built(BaseModel):
    """What the pipeline wrote: the trajectory file, the difference files, what was extracted and kept."""

    trajectory: Path
    diffs: list[Path]
    extracted: int
    kept: int
    calls: list[dict[str, Any]] = Field(default_factory=list)


def read_manifest(path: Path) -> tuple[Manifest, dict[str, str]]:
    """The manifest and each version's text (PMID -> text)."""
    data = read_json(path)
    try:
        manifest = Manifest.model_validate(data)
    except ValueError as exc:
        raise InputError(path, None, f"not a guideline-versions manifest: {exc}") from None
    texts = {}
    for v in manifest.versions:
        source = (path.parent / v.path).resolve()
        if not source.is_file():
            raise InputError(path, v.pmid, f"no file {v.path} for version {v.pmid}")
        texts[v.pmid] = read_text(source)
        if not texts[v.pmid].strip():
            raise InputError(source, None, "the guideline text is empty")
    if len({v.pmid for v in manifest.versions}) != len(manifest.versions):
        raise InputError(path, None, "two versions share a PMID")
    return manifest, texts


async def _differences(model: ModelClient, manifest: Manifest, current: Version, prior: Version,
                       texts: dict[str, str], calls: list[dict[str, Any]]) -> tuple[int, list[dict[str, Any]]]:
    """Extract the head-to-head differences of one (current, prior) pair, then verify each; the kept ones."""
    user = render("DIFF_USER", topic=manifest.topic, organization=repr(manifest.organization),
                  current_xml=texts[current.pmid], prior_xml=texts[prior.pmid])
    messages = [{"role": "system", "content": template("DIFF_SYSTEM")}, {"role": "user", "content": user}]
    extracted = await ask_json(model, messages, DIFFERENCE_SCHEMA, temperature=0.0)
    items = [i for i in extracted.get("items", []) if isinstance(i, dict)]
    calls.append({"step": "extract", "current": current.pmid, "prior": prior.pmid, "items": len(items)})
    kept = []
    for item in items:
        verify_user = render("VERIFY_USER", **{k: str(item.get(k, "")) for k in (
            "clinical_focus", "current_recommendation", "current_recommendation_raw_text", "prior_recommendation",
            "prior_recommendation_raw_text")})
        verdict = await ask_json(model, [{"role": "system", "content": template("VERIFY_SYSTEM")},
                                         {"role": "user", "content": verify_user}], VERIFY_SCHEMA, temperature=1.0)
        score = float(verdict.get("score", 0))
        calls.append({"step": "verify", "clinical_focus": item.get("clinical_focus"), "score": score})
        if score > 0.5:  # the seed keeps only differences scored 1 (GOOD)
            kept.append({**{k: str(item.get(k, "")) for k in (
                "clinical_focus", "current_recommendation", "current_recommendation_raw_text",
                "prior_recommendation", "prior_recommendation_raw_text", "change_summary")},
                "score": score, "rationale": str(verdict.get("rationale", ""))})
    return len(items), kept


def build(manifest_path: Path, model: ModelClient, out: Path) -> Built:
    """Run the pipeline and write the files the TempoMed loader reads into `out` (nothing is loaded here)."""
    manifest, texts = read_manifest(manifest_path)
    ordered = sorted(manifest.versions, key=lambda v: (v.year, v.pmid))
    current, priors = ordered[-1], ordered[:-1]
    calls: list[dict[str, Any]] = []

    async def run_all() -> list[tuple[int, list[dict[str, Any]]]]:
        try:
            return [await _differences(model, manifest, current, p, texts, calls) for p in priors]
        finally:
            await model.aclose()

    results = asyncio.run(run_all())
    out.mkdir(parents=True, exist_ok=True)
    trajectory = out / f"trajectory_{current.pmid}.json"
    trajectory.write_text(json.dumps({
        "Topic": manifest.topic, "Title": current.title, "year_of_current_guidance": current.year,
        "PMID": current.pmid, "Organization": manifest.organization,
        "prior_guidelines": [{"year": p.year, "PMID": p.pmid, "Organization": manifest.organization[0],
                              "title": p.title, "reason": "given in the manifest"} for p in priors],
    }, indent=2, ensure_ascii=False), encoding="utf-8")
    diffs = []
    for prior, (_, kept) in zip(priors, results, strict=True):
        if not kept:
            continue  # the seed writes an empty list; the loader refuses one, so there is no file
        path = out / f"{current.pmid}_{prior.pmid}_extracted_diffs.json"
        path.write_text(json.dumps(kept, indent=2, ensure_ascii=False), encoding="utf-8")
        diffs.append(path)
    return Built(trajectory=trajectory, diffs=diffs, extracted=sum(n for n, _ in results),
                 kept=sum(len(k) for _, k in results), calls=calls)


def release_date() -> dt.date:
    """Questions built from text are known from the day they were built."""
    return dt.date.today()
