"""A generated question: exactly what a model is sent, and the named query that answers it.

Every question carries its **answer key**: the name and parameters of a registered
query (see `chronokg.queries.spec.QUERIES`), the evidence that query returned when the
question was generated, and its hash. Anyone can re-run the key against a store
(`chronokg bench verify`) and see whether the answer still holds.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from chronokg.errors import InputError


def content_id(prefix: str, *parts: Any) -> str:
    """A content hash: the same question built twice has the same id."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return f"{prefix}-{hashlib.sha256(text.encode()).hexdigest()[:20]}"


class Choice(BaseModel):
    """One option as shown, and what it stands for."""

    model_config = ConfigDict(frozen=True)

    label: str
    text: str
    role: str | None = Field(default=None, description="What the option is: up_to_date, outdated, distractor, "
                                                       "unknown (the abstain option), yes, no, ...")
    original: str | None = Field(default=None, description="Its label in the source item, when relabelled")


class AnswerKey(BaseModel):
    """A named query, its parameters, what it returned, and the answer read from it."""

    model_config = ConfigDict(frozen=True)

    query: str
    params: dict[str, Any]
    evidence: list[dict[str, Any]]
    evidence_hash: str
    answer: str | None = Field(default=None, description="The answer the evidence gives (text), if any")


class Question(BaseModel):
    """One benchmark item. `input` is the exact user message; `system` the exact system message."""

    model_config = ConfigDict(frozen=True)

    id: str
    family: str
    variant: str
    input: str
    system: str | None = None
    choices: list[Choice] = Field(default_factory=list)
    target: str
    target_date: dt.date | None = None
    answer_key: AnswerKey
    snapshot: str
    generator: dict[str, Any] = Field(default_factory=dict, description="Family, protocol, options, seed, version")
    facts: list[str] = Field(default_factory=list, description="Ids of the facts the question tests")
    derived_from: list[str] = Field(default_factory=list, description="Ids of the nodes it was built from "
                                                                      "(change pair, trajectory, study, ...)")
    metadata: dict[str, Any] = Field(default_factory=dict)

    def canonical(self) -> dict[str, Any]:
        """inspect_ai's `Sample` fields (`id`, `input`, `choices`, `target`, `metadata`), in the meaning inspect gives
        them: `target` is the correct option's position as a letter (A = the first of `choices`), `input` is the
        prompt without the option lines that `choices` carries (inspect's `multiple_choice()` lists them itself).
        `input` also leaves out what would teach a second label set beside the letters inspect's template asks for
        (`mc_input`): the seed's answer-format lines, display labels in the text, and answered few-shot
        demonstrations. The exact prompt, the display labels and the target label stay in `metadata` (`prompt`,
        `choice_labels`, `target_label`), which is what chronokg's own runner and inspect tasks send and score.
        Loads unchanged with `inspect_ai.dataset.json_dataset` and Hugging Face `datasets.load_dataset("json", ...)`."""
        labels = [c.label for c in self.choices]
        meta = {
            "family": self.family, "variant": self.variant, "system": self.system, "prompt": self.input,
            "choice_labels": labels, "choice_roles": [c.role for c in self.choices], "target_label": self.target,
            "target_date": self.target_date.isoformat() if self.target_date else None,
            "answer_key": self.answer_key.model_dump(mode="json"), "snapshot": self.snapshot,
            "facts": self.facts, "derived_from": self.derived_from, "generator": self.generator,
            **{k: v for k, v in self.metadata.items() if k not in {"family", "variant", "prompt", "target_label"}},
        }
        target = position_letter(labels.index(self.target)) if self.target in labels else self.target
        return {"id": self.id, "input": mc_input(self.input, self.choices),
                "choices": [c.text for c in self.choices], "target": target,
                "metadata": json.loads(json.dumps(meta, default=str))}

    @classmethod
    def from_canonical(cls, record: dict[str, Any]) -> Question:
        """The question a canonical record holds; records written before `prompt`/`target_label` were kept in
        `metadata` (their `input` was the prompt and `target` the display label) read as they were written."""
        meta = dict(record.get("metadata") or {})
        labels = meta.pop("choice_labels", None) or []
        roles = meta.pop("choice_roles", None) or [None] * len(labels)
        prompt = meta.pop("prompt", None)
        target = meta.pop("target_label", None)
        choices = [Choice(label=lab, text=text, role=role)
                   for lab, text, role in zip(labels, record.get("choices") or [], roles, strict=False)]
        known = {"family", "variant", "system", "target_date", "answer_key", "snapshot", "facts", "derived_from",
                 "generator"}
        return cls(
            id=record["id"], input=record["input"] if prompt is None else prompt, choices=choices,
            target=record["target"] if target is None else target,
            family=meta.get("family", ""), variant=meta.get("variant", ""), system=meta.get("system"),
            target_date=meta.get("target_date"), answer_key=meta["answer_key"], snapshot=meta.get("snapshot", ""),
            facts=meta.get("facts") or [], derived_from=meta.get("derived_from") or [],
            generator=meta.get("generator") or {}, metadata={k: v for k, v in meta.items() if k not in known},
        )


def position_letter(index: int) -> str:
    """inspect_ai's name for the option at `index` of `choices`: A, B, C, ..."""
    return chr(ord("A") + index)


def _option_blocks(choices: list[Choice]) -> list[str]:
    """The ways the families print their options: one per line (`A) text`, `A. text`) or on one line
    (`(a) text (b) text`, ChroKnow)."""
    return ["\n".join(f"{c.label}{sep}{c.text}" for c in choices) for sep in (") ", ". ", ": ")] + [
        " ".join(f"({c.label}) {c.text}" for c in choices)]


def without_options(prompt: str, choices: list[Choice]) -> str:
    """The prompt with its (last) block of option lines taken out, where it prints `choices`; else the prompt as
    is (yes/no questions whose options are words of the instruction, open questions)."""
    if not choices:
        return prompt
    for block in _option_blocks(choices):
        at = prompt.rfind(block)
        if at >= 0:
            head, tail = prompt[:at].rstrip(" \n"), prompt[at + len(block):].lstrip(" \n")
            return f"{head}\n\n{tail}".strip("\n") if head and tail else (head or tail)
    return prompt


# Lines that tell the model how to write its answer, in the families' prompts: under inspect's multiple-choice
# template (its own "ANSWER: $LETTER" instruction, options as A-E) each one is a second, conflicting format.
_FORMAT_LINES = re.compile(
    r"#*\s*Please answer with the following format:?"  # TempoMed's format block and its two lines
    r"|Return your final answer in this exact format:?"  # TempoMed's Table 3 (RAG) format block
    r"|#*\s*(?:Answer|Explanation)\s*:\s*(?:\[.*\]|<.*>)"
    r"|Answer ONLY with .*|Answer with exactly one letter.*"  # ConflictMedQA, MI-CXR
    r"|Please answer true/false\.?"  # ChroKnow's legal statements
    r"|Answer:",  # a completion cue (BenchAge)
    re.IGNORECASE)
# A demonstration's answer line, ending an answered few-shot block: "A. true" (Q/A pairs), "(b) metformin".
_DEMO_ANSWER = re.compile(r"A\. .+|\([a-z]\) .+")


def mc_input(prompt: str, choices: list[Choice]) -> str:
    """The prompt as the question alone, for inspect's `multiple_choice()` template (which adds its own
    instruction and lists `choices` as A, B, ...): no option block, no answer-format line, no display label
    named in the text, and no answered few-shot demonstrations (they answer in the seed's labels)."""
    text = without_options(prompt, choices)
    if not choices:
        return text
    blocks = [b for b in re.split(r"\n\s*\n", text) if b.strip()]
    answered = [i for i, b in enumerate(blocks) if _DEMO_ANSWER.fullmatch(b.strip().splitlines()[-1])]
    if answered and answered[-1] < len(blocks) - 1:
        blocks = blocks[answered[-1] + 1:]
    labels = "|".join(re.escape(c.label) for c in choices)
    kept = []
    for block in blocks:
        lines = [re.sub(rf"(['\"])\s*\((?:{labels})\)", r"\1", line) for line in block.splitlines()
                 if not _FORMAT_LINES.fullmatch(line.strip())]
        if any(line.strip() for line in lines):
            kept.append("\n".join(lines).strip("\n"))
    return "\n\n".join(kept) or text


def write_jsonl(path: Path, questions: Iterable[Question]) -> int:
    """Canonical JSON lines, one question each; returns how many were written (atomically: temp + rename).
    A path that is a device or a pipe (`--out /dev/stdout`) is written as it is: a rename would replace it."""
    if path.exists() and not path.is_file():
        n = 0
        with path.open("w", encoding="utf-8") as fh:
            for q in questions:
                fh.write(json.dumps(q.canonical(), ensure_ascii=False) + "\n")
                n += 1
        return n
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    n = 0
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            for q in questions:
                fh.write(json.dumps(q.canonical(), ensure_ascii=False) + "\n")
                n += 1
        tmp.replace(path)
    except BaseException:  # a failed write leaves nothing behind: no half file, no .part
        tmp.unlink(missing_ok=True)
        raise
    return n


SHARED_CHARS = 64  # strings up to this long are kept once per file (keys, labels, kinds, dates, ids)


def _shared(value: Any, seen: dict[str, str]) -> Any:
    """`value` with every dict key and short string replaced by the first equal one of the file: the questions of
    a run stay in memory for all of it, and their metadata and answer keys repeat the same keys and short values
    in every record (3,000 TempoMed questions: 44 -> 28 MiB)."""
    if isinstance(value, dict):
        return {seen.setdefault(k, k): _shared(v, seen) for k, v in value.items()}
    if isinstance(value, list):
        return [_shared(v, seen) for v in value]
    if isinstance(value, str) and len(value) <= SHARED_CHARS:
        return seen.setdefault(value, value)
    return value


def read_jsonl(path: Path) -> Iterator[Question]:
    """Questions of a canonical JSONL file; a bad line is an InputError naming it."""
    from chronokg.ingest.common import read_jsonl as lines

    seen: dict[str, str] = {}
    for n, obj in lines(path):
        try:
            yield Question.from_canonical(_shared(obj, seen))
        except (KeyError, ValueError) as exc:
            raise InputError(path, f"line {n}", f"not a chronokg question: {exc}") from None
