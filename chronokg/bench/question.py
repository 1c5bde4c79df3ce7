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
        """inspect_ai's `Sample` fields (`id`, `input`, `choices`, `target`, `metadata`): loads unchanged with
        `inspect_ai.dataset.json_dataset` and Hugging Face `datasets.load_dataset("json", ...)`."""
        meta = {
            "family": self.family, "variant": self.variant, "system": self.system,
            "choice_labels": [c.label for c in self.choices], "choice_roles": [c.role for c in self.choices],
            "target_date": self.target_date.isoformat() if self.target_date else None,
            "answer_key": self.answer_key.model_dump(mode="json"), "snapshot": self.snapshot,
            "facts": self.facts, "derived_from": self.derived_from, "generator": self.generator,
            **{k: v for k, v in self.metadata.items() if k not in {"family", "variant"}},
        }
        return {"id": self.id, "input": self.input, "choices": [c.text for c in self.choices],
                "target": self.target, "metadata": json.loads(json.dumps(meta, default=str))}

    @classmethod
    def from_canonical(cls, record: dict[str, Any]) -> Question:
        meta = dict(record.get("metadata") or {})
        labels = meta.pop("choice_labels", None) or []
        roles = meta.pop("choice_roles", None) or [None] * len(labels)
        choices = [Choice(label=lab, text=text, role=role)
                   for lab, text, role in zip(labels, record.get("choices") or [], roles, strict=False)]
        known = {"family", "variant", "system", "target_date", "answer_key", "snapshot", "facts", "derived_from",
                 "generator"}
        return cls(
            id=record["id"], input=record["input"], choices=choices, target=record["target"],
            family=meta.get("family", ""), variant=meta.get("variant", ""), system=meta.get("system"),
            target_date=meta.get("target_date"), answer_key=meta["answer_key"], snapshot=meta.get("snapshot", ""),
            facts=meta.get("facts") or [], derived_from=meta.get("derived_from") or [],
            generator=meta.get("generator") or {}, metadata={k: v for k, v in meta.items() if k not in known},
        )


def write_jsonl(path: Path, questions: Iterable[Question]) -> int:
    """Canonical JSON lines, one question each; returns how many were written (atomically: temp + rename)."""
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


def read_jsonl(path: Path) -> Iterator[Question]:
    """Questions of a canonical JSONL file; a bad line is an InputError naming it."""
    from chronokg.ingest.common import read_jsonl as lines

    for n, obj in lines(path):
        try:
            yield Question.from_canonical(obj)
        except (KeyError, ValueError) as exc:
            raise InputError(path, f"line {n}", f"not a chronokg question: {exc}") from None
