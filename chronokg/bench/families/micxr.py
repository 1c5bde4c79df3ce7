"""MI-CXR, re-created from chest-X-ray timelines in the graph: TEL, ICR and GTS questions over 5-study windows.

Seed: "MI-CXR: A Benchmark for Longitudinal Reasoning over Multi-Interval Chest X-rays" (Cho, Han, Do;
Findings of ACL 2026; the anonymous submission is `../shared/papers/mi-cxr.txt`) and its released questions
(anonymousetrap12/MI-CXR `micxr_test.jsonl`, format `{q_id, group_type, qtype, images{T1..T5}, question,
choices{A..E}, answer}`). No construction or evaluation code is public; every rule below that the paper
does not state is chronokg's, listed with its default in docs/benchmarks/micxr.md.

**Windows** (paper A.4, Table 5): five consecutive studies of a patient, stride 1, study indices strictly
contiguous (`cxr-windows`). Per window and abnormality (a finding, all lateralities together) the binary
presence sequence x1..x5 (present if any observation of the study says so); an abnormality with a missing
state at any study is dropped from that window (A.5.1). Interval k is Tk -> Tk+1; an emergence is
neg -> pos, a resolution pos -> neg (A.8.2).

**Question types** (the released `qtype`s, Table 9):

* TEL, options the four intervals (fixed order) and E "There is no ...": `single_emergence` /
  `single_resolution` (windows with at most one such event), `multiple_emergence_1|2` /
  `multiple_resolution_1|2` (first / second event of the kind; E when there is none);
  `emergence_to_resolution` / `resolution_to_emergence`: options four study pairs "Ti, Tj", the key being
  (first study where the abnormality is present after absence, first later study where it is absent
  again), or the reverse; E when no such pair exists.
* ICR `icr_multi_abn`: A-D one statement per interval ("Between Tk and Tk+1, ..."), each about an
  abnormality of the window; exactly one true, or none (E).
* GTS `single_entity_interval_summary` (four trajectory summaries of one abnormality) and
  `multi_entity_interval_summary` (four summaries, each of a different abnormality); one true or none.

False statements and summaries are change-type flips of the true ones (new <-> resolved, worsened <->
improved, resolved <-> unchanged, ...; A.6), chosen so they contradict the timeline at some interval.

**Keys** are computed from the timeline and re-derived by `answer` from the rows of the named query
`cxr-window` (patient, T1 study, the question's findings): the answer key of every question.

**Selection**: per-type quotas (default: the paper's Table 9 counts), answer letters balanced (globally
under `--protocol seed`, within each type under `chronokg`), at most `max_null_share` of each type's
questions answered E ("no change"), at most `max_flat_share` of TEL questions from uniformly positive or
negative windows, at most `max_abnormality_share` of a type's quota about one abnormality.

**Prompts**: the paper's evaluation and stage-wise prompts are unpublished; the single-step prompt
(`input`, `system`) and the two stage-wise prompts in `metadata["stagewise"]` (stage 1: interval
descriptions from the images; stage 2: the answer from those descriptions only) are chronokg's own.
Summaries and statements are template sentences (chronokg's); with a model, GTS summaries are realised by
the model with the paper's prompts (Figures 5-8), the keys staying rule-based.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from chronokg.bench.families.micxr_kinds import FLIPS as FLIPS  # re-exported: tests and metrics import from here
from chronokg.bench.families.micxr_kinds import GROUP as GROUP
from chronokg.bench.families.micxr_kinds import KEY_QUERY, LLM_CONCURRENCY, NAME, Change, Q
from chronokg.bench.families.micxr_kinds import TABLE1_COLUMN as TABLE1_COLUMN
from chronokg.bench.families.micxr_kinds import QType as QType
from chronokg.bench.families.micxr_prompts import questions as question_templates
from chronokg.bench.families.micxr_prompts import render, template
from chronokg.bench.families.micxr_selection import Draft, select
from chronokg.bench.families.micxr_timeline import Track as Track
from chronokg.bench.families.micxr_timeline import answer as answer
from chronokg.bench.families.micxr_timeline import answer_from
from chronokg.bench.families.micxr_timeline import contradicts as contradicts
from chronokg.bench.families.micxr_timeline import distractors as distractors
from chronokg.bench.families.micxr_timeline import icr_statement as icr_statement
from chronokg.bench.families.micxr_timeline import interval_key as interval_key
from chronokg.bench.families.micxr_timeline import pair_key as pair_key
from chronokg.bench.families.micxr_timeline import summary as summary
from chronokg.bench.families.micxr_timeline import verdict as verdict
from chronokg.bench.families.micxr_windows import MicxrOptions, build_windows
from chronokg.bench.family import OURS, Context, Family, Protocol, generator_info
from chronokg.bench.question import Choice, Question, content_id
from chronokg.errors import ChronoKGError
from chronokg.queries.micxr import WINDOW_SIZE, window_rows

# --- LLM realisation of GTS summaries (the paper's Figures 5-8) ----------------------------------------------


GTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"summaries": {"type": "object", "additionalProperties": {"type": "string"}}},
    "required": ["summaries"],
}


def _llm_requests(draft: Draft) -> list[tuple[list[dict[str, str]], list[str]]]:
    """(messages, option labels they write) for one GTS draft: the true option with the correct-summary prompt,
    the flipped ones with the incorrect-summary prompt, each told the exact changes to realise."""
    multi = draft.qtype is Q.multi_entity_interval_summary
    tracks = draft.window.tracks
    correct = [o for o in draft.options[:4] if o["label"] == draft.letter]
    wrong = [o for o in draft.options[:4] if o["label"] != draft.letter]
    out = []
    for kind, group, system in (("correct", correct, "GTS_MULTI_CORRECT" if multi else "GTS_SINGLE_CORRECT"),
                                ("incorrect", wrong, "GTS_MULTI_INCORRECT" if multi else "GTS_SINGLE_INCORRECT")):
        if not group:
            continue
        payload = {
            "abnormalities": {tracks[f].name: {"present": [f"T{k}" for k, p in enumerate(tracks[f].present, 1) if p],
                                               "changes": _interval_changes(tracks[f].changes)}
                              for f in sorted({o["abnormality"] for o in group})},
            "write": [{"id": o["label"], "abnormality": tracks[o["abnormality"]].name,
                       "changes": _interval_changes([Change(c) for c in o["changes"]])} for o in group],
        }
        user = render("GTS_USER", input=json.dumps(payload, ensure_ascii=False, indent=1), kind=kind)
        out.append(([{"role": "system", "content": template(system)}, {"role": "user", "content": user}],
                    [o["label"] for o in group]))
    return out


def _interval_changes(changes: Sequence[Change]) -> dict[str, str]:
    return {f"T{k}-T{k + 1}": c.value for k, c in enumerate(changes, start=1)}


async def _realise_all(model: Any, drafts: list[Draft]) -> list[list[dict[str, str]] | BaseException]:
    from chronokg.bench.llm import ask_json

    gate = asyncio.Semaphore(LLM_CONCURRENCY)

    async def one(draft: Draft) -> list[dict[str, str]]:
        replies = []
        for messages, _ in _llm_requests(draft):
            async with gate:
                reply = await ask_json(model, messages, GTS_SCHEMA)
            replies.append({str(k): str(v) for k, v in dict(reply.get("summaries") or {}).items()})
        return replies

    return list(await asyncio.gather(*(one(d) for d in drafts), return_exceptions=True))


def realise(ctx: Context, drafts: list[Draft]) -> None:
    """Replace GTS template summaries by the model's (keys unchanged); a question whose replies are missing,
    empty or not pairwise distinct keeps its templates, with a note."""
    gts = [d for d in drafts if GROUP[d.qtype] == "GTS"]
    if ctx.model is None or not gts:
        return
    results = asyncio.run(_realise_all(ctx.model, gts))
    for draft, result in zip(gts, results, strict=True):
        if isinstance(result, BaseException):
            ctx.notes.append(f"{draft.window.ref} {draft.qtype.value}: model failed ({result}); templates kept")
            continue
        texts: dict[str, str] = {}
        for reply, (_, labels) in zip(result, _llm_requests(draft), strict=True):
            texts.update({label: reply.get(label, "").strip() for label in labels})
        values = [texts.get(o["label"], "") for o in draft.options[:4]]
        if not all(values) or len(set(values)) != len(values):
            ctx.notes.append(f"{draft.window.ref} {draft.qtype.value}: model summaries missing or repeated; "
                             "templates kept")
            continue
        for option, text in zip(draft.options[:4], values, strict=True):
            option["template_text"] = option["text"]
            option["text"] = text
        draft.realisation = "llm"


# --- questions -----------------------------------------------------------------------------------------------


def _image_path(patient: str, study: str, images: list[str]) -> str:
    """Where MIMIC-CXR-JPG keeps the study's first image (the released questions' form); the paper does not say
    which view it chose when a study has several."""
    base = f"files/{patient[:3]}/{patient}/{study}"
    return f"{base}/{sorted(images)[0]}.jpg" if images else base


def _options_block(options: list[dict[str, Any]]) -> str:
    return "\n".join(f"{o['label']}. {o['text']}" for o in options)


def _stem(draft: Draft, protocol: Protocol) -> str:
    question = question_templates(protocol.value)[draft.qtype.value][0]
    return question.replace("{abn}", draft.abnormality or "")


def _stagewise(draft: Draft, question: str) -> dict[str, str]:
    """chronokg's two-stage prompts: stage 1 (with the images) describes each interval for the target
    abnormalities under the family's guideline; stage 2 (text only) answers from those descriptions, which
    replace `{descriptions}`."""
    group = GROUP[draft.qtype]
    if group == "TEL" or draft.qtype is Q.single_entity_interval_summary:
        targets = [draft.abnormality or ""]
    else:
        targets = list(dict.fromkeys(draft.window.tracks[o["abnormality"]].name for o in draft.options
                                     if "abnormality" in o))
    guideline = template({"TEL": "STAGE1_TEL", "ICR": "STAGE1_ICR", "GTS": "STAGE1_GTS"}[group]).strip()
    return {
        "stage1_system": template("STAGE1_SYSTEM").strip(),
        "stage1_user": render("STAGE1_USER", abnormalities=", ".join(targets), guideline=guideline),
        "stage2_system": template("STAGE2_SYSTEM").strip(),
        "stage2_user": render("STAGE2_USER", question=question, options=_options_block(draft.options)),
    }


def stage2_prompt(question: Question, descriptions: str) -> str:
    """The stage-2 user message of a question once stage 1 has written its interval descriptions."""
    return str(question.metadata["stagewise"]["stage2_user"]).replace("{descriptions}", descriptions.strip())


def _role(draft: Draft, option: dict[str, Any]) -> str:
    if option["label"] == draft.letter:
        return "correct"
    if option.get("none"):
        return "none"
    return "flipped" if GROUP[draft.qtype] != "TEL" else "distractor"


def _per_question(_: list[dict[str, Any]]) -> str | None:
    """Keys are shared by the questions of a window and findings, so their answer text is set per question."""
    return None


def build(ctx: Context, options: MicxrOptions, draft: Draft, q_id: int) -> Question:
    """The question of a draft: its exact prompt, its answer key (`cxr-window` on the question's findings), and
    the metadata the metrics read; the key letter is re-derived from the evidence and must equal the draft's."""
    w = draft.window
    params = {"patient": w.row.patient_id, "first_study": w.row.first_study, "findings": draft.findings}
    rows = window_rows(w.timeline, w.row.first_study, draft.findings) if w.timeline is not None else None
    key = ctx.key(KEY_QUERY, params, _per_question, rows=rows)
    question = _stem(draft, options.protocol)
    prompt = render("EVAL_USER", question=question, options=_options_block(draft.options))
    slots = [f"T{k}" for k in range(1, WINDOW_SIZE + 1)]
    images = {slot: _image_path(w.row.patient_id, sid, imgs)
              for slot, sid, imgs in zip(slots, w.row.study_ids, w.row.image_ids, strict=True)}
    tracks = {f: w.tracks[f] for f in draft.findings}
    meta: dict[str, Any] = {
        "q_id": q_id, "group_type": GROUP[draft.qtype], "qtype": draft.qtype.value, "task_family": GROUP[draft.qtype],
        "table1_column": TABLE1_COLUMN[draft.qtype], "question": question, "images": images,
        "patient_id": w.row.patient_id, "study_ids": w.row.study_ids, "study_indices": w.row.study_indices,
        "study_dates": [d.isoformat() if d else None for d in w.row.study_dates], "abnormality": draft.abnormality,
        "abnormalities": draft.findings, "options": [{k: v for k, v in o.items() if k != "text"}
                                                     for o in draft.options],
        "sequences": {f: t.pattern for f, t in tracks.items()},
        "changes": {f: [c.value for c in t.changes] for f, t in tracks.items()},
        "flat": bool(draft.abnormality and w.tracks[draft.abnormality].flat), "realisation": draft.realisation,
        "protocol": options.protocol.value, "prompt_source": "chronokg",
        "stagewise": _stagewise(draft, question),
    }
    derived = answer_from(meta, key.evidence)
    if derived != draft.letter:
        raise ChronoKGError(f"{w.ref} {draft.qtype.value}: drafted key {draft.letter} but the evidence gives "
                            f"{derived} (a generator bug)")
    keyed = next(o for o in draft.options if o["label"] == draft.letter)
    choices = [Choice(label=o["label"], text=o["text"], role=_role(draft, o)) for o in draft.options]
    facts = sorted({fid for t in tracks.values() for fid in t.facts})
    last = w.row.study_dates[-1]
    return Question(
        id=content_id("q", NAME, draft.qtype.value, w.row.patient_id, w.row.first_study, prompt, draft.letter),
        family=NAME, variant=f"{GROUP[draft.qtype]}/{draft.qtype.value}", input=prompt,
        system=template("EVAL_SYSTEM").strip(), choices=choices, target=draft.letter, target_date=last,
        answer_key=key.model_copy(update={"answer": keyed["text"]}), snapshot=ctx.snapshot,
        generator=generator_info(NAME, options), facts=facts,
        derived_from=[f"Patient:{w.row.patient_id}", *(f"Study:{s}" for s in w.row.study_ids)], metadata=meta,
    )


def generate(ctx: Context, options: MicxrOptions) -> Iterator[Question]:
    windows = build_windows(ctx, options)
    drafts = select(ctx, options, windows)
    realise(ctx, drafts)
    order = list(range(len(drafts)))
    ctx.rng(NAME, "order").shuffle(order)  # the release interleaves types
    if ctx.progress is not None:
        ctx.progress.start(len(order), NAME)
    for q_id, n in enumerate(order):
        yield build(ctx, options, drafts[n], q_id)
        if ctx.progress is not None:
            ctx.progress.advance(1)


# --- the seed's file format ----------------------------------------------------------------------------------


def seed_format(questions: Iterable[Question]) -> Iterator[tuple[str, Any]]:
    """`micxr_test.jsonl` as released (anonymousetrap12/MI-CXR@81a5ebb): keys `q_id, group_type, qtype, images,
    question, choices, answer` in that order, one `json.dumps` line each (non-ASCII escaped, as released); the
    chronokg question id goes to the side file (`OURS`)."""
    for q in questions:
        m = q.metadata
        yield "test.jsonl", {
            "q_id": m.get("q_id"), "group_type": m.get("group_type"), "qtype": m.get("qtype"),
            "images": m.get("images"), "question": m.get("question"),
            "choices": {c.label: c.text for c in q.choices}, "answer": q.target, OURS: {"chronokg_ids": [q.id]},
        }


FAMILY = Family(
    name=NAME, help="MI-CXR: temporal event localisation (TEL), interval change (ICR) and trajectory summary (GTS) "
                    "questions over five-study chest-X-ray windows.",
    options=MicxrOptions, generate=generate, seed_format=seed_format, answer=answer, seed_ascii=True,
    needs=("chest X-ray report timelines: `chronokg ingest cxr DIR` (MIMIC-Ext-CXR-QBA scene graphs) or "
          "`chronokg generate cxr` (a synthetic cohort)"),
    sources="Cho, Han, Do: MI-CXR (Findings of ACL 2026; arXiv 2605.15574); questions anonymousetrap12/MI-CXR@81a5ebb",
)
