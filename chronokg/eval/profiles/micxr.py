"""MI-CXR: how its five-option questions are asked (single step, or stage-wise), extracted and scored.

Seed: Cho, Han, Do, "MI-CXR" (Findings of ACL 2026; submission `../shared/papers/mi-cxr.txt`). No evaluation
code, prompt or extraction rule is published. What the paper states: zero-shot, the five images T1..T5 with
the question and options A-E, "temperature = 0 and default settings for other sampling parameters" (§4.1,
E.5); "exactly one choice among A-E", outputs "that contain multiple answer choices, ambiguous selections,
or unparseable formats are treated as incorrect. No partial credit or fuzzy matching" (E.5). The stage-wise
protocol (§4.3.2, E.1-E.4): interval descriptions first, then the answer "based solely on" them.

The prompts are the generator's own (`Question.system`/`input`, `metadata["stagewise"]`; chronokg's, not the
seed's). The extraction rule is chronokg's reading of the paper's: under `seed`, exactly one distinct option
letter in the output; under `chronokg`, an explicit "Answer: X" first and reasoning blocks ignored.

Options (`chronokg eval run ... -O micxr.stagewise=true`; `RunOptions.family_options["micxr"]`):
`stagewise` (two calls per sample), `temperature` (the paper's Appendix C uses 0.7), `image_root` (a
MIMIC-CXR-JPG folder: the five images are attached to the single-step and stage-1 requests; without it
the prompts go as text only, which is all chronokg can send without the credentialed files).
"""

from __future__ import annotations

import base64
import hashlib
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from chronokg.bench.families.micxr import stage2_prompt
from chronokg.bench.family import OURS
from chronokg.bench.question import Question
from chronokg.errors import ChronoKGError
from chronokg.eval.extract import INVALID
from chronokg.eval.profile import Outcome, Profile, request_hash
from chronokg.models import ChatMessage, GenerateConfig, ModelClient, ModelRequest

FAMILY = "micxr"
SLOTS = ("T1", "T2", "T3", "T4", "T5")
MIME = {".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".png": "image/png"}

# --- answer extraction ---------------------------------------------------------------------------------------

_TOKEN = re.compile(r"(?<![A-Za-z0-9_])([A-E])(?![A-Za-z0-9_])")
# "A small effusion": the article, not option A ("A is", "A because", "A or" cannot be the article)
_ARTICLE = re.compile(r"\s+(?!(?:is|was|seems|because|since|would|should|and|or)\b)[a-z]")
_BARE = re.compile(r"[\s*_`\"'(\[]*([A-Ea-e])[\s*_`\"')\].:]*")  # the whole output is one letter
_MARKER = re.compile(r"(?i:answer)\s*(?:(?i:is)\s*)?:?\s*[*_`\"'(\[]*\s*(?:(?i:option)\s+)?([A-E])"
                     r"(?![A-Za-z0-9_])")
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def letter_seed(text: str | None) -> str:
    """Exactly one letter: the output is a single letter (any case, brackets or a full stop around it), or
    exactly one distinct capital A-E stands alone in it ("B. T2 → T3", "The answer is B."); "A" before a
    lower-case word is the article, not a letter (unless the word is one no article precedes: "A is", "A or").
    Several distinct letters, or none: INVALID (E.5)."""
    if not text or not text.strip():
        return INVALID
    bare = _BARE.fullmatch(text.strip())
    if bare:
        return bare.group(1).upper()
    found = {m.group(1) for m in _TOKEN.finditer(text)
             if not (m.group(1) == "A" and _ARTICLE.match(text, m.end()))}
    return found.pop() if len(found) == 1 else INVALID


def letter_fixed(text: str | None) -> str:
    """chronokg's rule: reasoning blocks (`<think>...</think>`, or all before a lone `</think>`) dropped; the
    last explicit "Answer: X" / "the answer is X" wins; else `letter_seed`."""
    if not text:
        return INVALID
    text = _THINK.sub(" ", text)
    if "</think>" in text.lower():
        text = text[text.lower().rindex("</think>") + len("</think>"):]
    markers = [m.group(1) for m in _MARKER.finditer(text)]
    return markers[-1] if markers else letter_seed(text)


_STAGE1_LINE = re.compile(r"^[\s*#>-]*T([1-4])\s*(?:–|—|-|→|->|to)\s*T([2-5])\s*\**\s*:", re.MULTILINE)


def stage1_complete(text: str) -> bool:
    """Whether stage 1 wrote a line for each of the four intervals ("T1–T2: ..." ... "T4–T5: ...")."""
    seen = {int(a) for a, b in _STAGE1_LINE.findall(text) if int(b) == int(a) + 1}
    return seen == {1, 2, 3, 4}


# --- the profile ---------------------------------------------------------------------------------------------


class MicxrEvalOptions(BaseModel):
    """MI-CXR evaluation options (a run's `family_options["micxr"]`)."""

    model_config = ConfigDict(extra="forbid")

    stagewise: bool = Field(default=False, description="Stage-wise protocol: interval descriptions first, then "
                                                       "the answer from them alone (two calls per sample)")
    temperature: float = Field(default=0.0, ge=0.0, le=2.0, description="Sampling temperature (paper: 0; "
                                                                        "Appendix C: 0.7)")
    image_root: str | None = Field(default=None, description="MIMIC-CXR-JPG root holding the questions' "
                                                             "`images` paths; without it prompts are text only")


class MicxrProfile(Profile):
    family = FAMILY
    seed_keys = ("q_id",)  # the released file's question number, which `--format seed` writes

    def __init__(self, options: MicxrEvalOptions | None = None) -> None:
        self.options = options or MicxrEvalOptions()

    def with_options(self, options: Mapping[str, Any]) -> MicxrProfile:
        try:
            parsed = MicxrEvalOptions.model_validate(dict(options))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ChronoKGError(f"micxr evaluation options: {problems}") from None
        if parsed.image_root is not None and not Path(parsed.image_root).is_dir():
            raise ChronoKGError(f"micxr image_root {parsed.image_root}: no such folder")
        return MicxrProfile(parsed)

    @property
    def mode(self) -> str:
        return "stagewise" if self.options.stagewise else "single"

    def config(self, question: Question, protocol: str, sample: int) -> GenerateConfig:
        return GenerateConfig(temperature=self.options.temperature)

    # --- requests --------------------------------------------------------------------------------------

    def _content(self, question: Question, text: str, images: bool) -> str | list[dict[str, Any]]:
        """The user message: text only, or with `image_root` the five images (labelled T1..T5) then the text."""
        if not images or self.options.image_root is None:
            return text
        paths = question.metadata.get("images") or {}
        parts: list[dict[str, Any]] = []
        for slot in SLOTS:
            rel = paths.get(slot)
            path = Path(self.options.image_root) / str(rel)
            if rel is None or not path.is_file():
                raise ChronoKGError(f"question {question.id} (q_id {question.metadata.get('q_id')}): image {slot} "
                                    f"not found at {path}")
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            mime = MIME.get(path.suffix.lower(), "application/octet-stream")
            parts.append({"type": "text", "text": f"{slot}:"})
            parts.append({"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}})
        parts.append({"type": "text", "text": text})
        return parts

    def _request(self, question: Question, system: str, user: str | list[dict[str, Any]], protocol: str,
                 sample: int, stage: int | None) -> ModelRequest:
        messages = [ChatMessage(role="system", content=system)] if system else []
        messages.append(ChatMessage(role="user", content=user))
        metadata: dict[str, Any] = {"question_id": question.id, "family": question.family}
        if stage is not None:
            metadata["stage"] = stage
        return ModelRequest(messages=messages, config=self.config(question, protocol, sample), epoch=sample,
                            metadata=metadata)

    def request(self, question: Question, protocol: str, sample: int) -> ModelRequest:
        return self._request(question, question.system or "", self._content(question, question.input, True),
                             protocol, sample, None)

    def stage_request(self, question: Question, stage: int, protocol: str, sample: int,
                      descriptions: str = "") -> ModelRequest:
        """Stage 1 (the images, the target abnormalities, the family's guideline) or stage 2 (text only: the
        stage-1 descriptions, then the question and options), as the generator wrote them."""
        prompts = question.metadata.get("stagewise")
        if not isinstance(prompts, dict):
            raise ChronoKGError(f"question {question.id}: no stage-wise prompts in its metadata (regenerate it "
                                "with `chronokg generate micxr`)")
        if stage == 1:
            return self._request(question, str(prompts["stage1_system"]),
                                 self._content(question, str(prompts["stage1_user"]), True), protocol, sample, 1)
        return self._request(question, str(prompts["stage2_system"]), stage2_prompt(question, descriptions),
                             protocol, sample, 2)

    async def answer(self, client: ModelClient, question: Question, protocol: str, sample: int) -> Outcome:
        if not self.options.stagewise:
            return await super().answer(client, question, protocol, sample)
        start = time.perf_counter()
        first = self.stage_request(question, 1, protocol, sample)
        described = await client.generate(first)
        second = self.stage_request(question, 2, protocol, sample, described.text)
        final = await client.generate(second)
        h1, h2 = request_hash(first), request_hash(second)
        step = {"stage": 1, "request_hash": h1, "output": described.text,
                "prompt_tokens": described.usage.prompt_tokens,
                "completion_tokens": described.usage.completion_tokens, "latency_s": described.latency_s,
                "retries": described.retries, "cached": described.cached}
        both = "sha256:" + hashlib.sha256(f"{h1}|{h2}".encode()).hexdigest()
        outcome = self.outcome(question, protocol, final, time.perf_counter() - start, steps=[step],
                               request_hash=both)
        outcome.prompt_tokens += described.usage.prompt_tokens
        outcome.completion_tokens += described.usage.completion_tokens
        outcome.latency_s = (described.latency_s + final.latency_s) or outcome.latency_s
        outcome.retries += described.retries
        outcome.cached = described.cached and final.cached
        outcome.fields["stage1_complete"] = stage1_complete(described.text)
        return outcome

    # --- extraction and scoring ------------------------------------------------------------------------

    def extract(self, question: Question, output: str, protocol: str) -> str | None:
        return (letter_seed if protocol == "seed" else letter_fixed)(output)

    def score(self, question: Question, answer: str | None, protocol: str) -> tuple[bool | None, float | None,
                                                                                   dict[str, Any]]:
        m = question.metadata
        correct = answer is not None and answer == question.target
        fields = {"mode": self.mode, "qtype": m.get("qtype"), "task_family": m.get("task_family") or
                  m.get("group_type"), "table1_column": m.get("table1_column"), "key": question.target,
                  "predicted": answer or INVALID, "patient": m.get("patient_id"), "protocol": protocol}
        return correct, float(correct), fields

    def render(self, question: Question, label: str) -> str:
        return label

    def seed_result(self, question: Question, record: Any) -> tuple[str, dict[str, Any]] | None:
        """The released record (`q_id, group_type, qtype, images, question, choices, answer`, in that order)
        plus the prediction: `prediction` (the extracted letter or INVALID), `correct`, `model_answer` (the
        raw output, so `chronokg eval score` reads the file back), the stage-1 descriptions of a stage-wise
        sample; its chronokg id goes to the side file (`OURS`). The seed has no result format of its own (no code
        is public): every field after `answer` is chronokg's."""
        m = question.metadata
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", record.model)
        mode = (record.fields or {}).get("mode", "single")
        out: dict[str, Any] = {
            "q_id": m.get("q_id"), "group_type": m.get("group_type"), "qtype": m.get("qtype"),
            "images": m.get("images"), "question": m.get("question"),
            "choices": {c.label: c.text for c in question.choices}, "answer": question.target,
            "prediction": record.answer, "correct": record.answer == question.target,
            "model_answer": record.output, "model": record.model, "sample": record.sample, "mode": mode,
        }
        if record.steps:
            out["stage1_descriptions"] = record.steps[0].get("output")
        out[OURS] = {"chronokg_ids": [question.id]}
        name = "micxr_test_stagewise" if mode == "stagewise" else "micxr_test"
        return f"{name}_predictions_{slug}.json", out


PROFILE = MicxrProfile()
