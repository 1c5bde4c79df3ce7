"""Answer extraction as each seed does it (and as chronokg does it, where the seed's rule has quirks).

Every function takes the raw model output and returns a label or `INVALID`. The seed versions follow
the seeds' code line by line in behaviour (not in text): their quirks are kept on purpose, so a model
scored here scores as in the published tables. Where a seed crashes (TempoMed's whitespace-only
output), chronokg returns INVALID and says so in docs/eval.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

INVALID = "INVALID"


def _pattern(labels: Sequence[str]) -> str:
    return "|".join(re.escape(lab) for lab in sorted({lab.upper() for lab in labels}, key=len, reverse=True))


def tempomed_mcq_seed(text: str | None, labels: Sequence[str]) -> str:
    """`extract_choice_label` of TempoMed-Bench (`pubmed_evaluation_5_option.py:539-565`).

    1. `##Answer: X` anywhere, case-insensitive (the first one); 2. a first line that is exactly a label
    (any case); 3. exactly one label-shaped token in the whole output upper-cased (so the article "a" and
    "e.g." count); else INVALID.
    """
    if not text:
        return INVALID
    pattern = _pattern(labels)
    text = text.strip()
    m = re.search(rf"##\s*Answer\s*:\s*({pattern})\b", text, re.IGNORECASE)
    if m:
        return m.group(1).upper()
    lines = text.splitlines()
    if not lines:  # the seed raises IndexError here (a whitespace-only output)
        return INVALID
    first = lines[0].strip().upper()
    if first in {lab.upper() for lab in labels}:
        return first
    tokens = re.findall(rf"\b({pattern})\b", text.upper())
    return tokens[0] if len(tokens) == 1 else INVALID


def tempomed_mcq_fixed(text: str | None, labels: Sequence[str]) -> str:
    """chronokg's rule for the same prompt: the last `##Answer:` (brackets, parentheses and emphasis allowed
    around the label, any case, but not "e.g."), else a first line that starts with a capital label (`B`, `B)`,
    `B.`), else exactly one standalone capital label that is not a word of the text ("A patient"), else INVALID."""
    if not text or not text.strip():
        return INVALID
    pattern = "|".join(re.escape(lab) for lab in sorted(set(labels), key=len, reverse=True))
    after = r"(?![A-Za-z0-9]|\.[A-Za-z])"  # "A" but not "Answer", "e.g."
    found = re.findall(rf"##\s*answer\s*:\s*[\[\(\*]*\s*({pattern}){after}", text, re.IGNORECASE)
    answers = [str(f).upper() for f in found if str(f).upper() in labels]
    if answers:
        return answers[-1]
    first = text.strip().splitlines()[0]
    m = re.match(rf"\s*[\*\(\[]*({pattern})[\)\].:]?\**(?:\s|$)", first)
    if m:
        return str(m.group(1))
    tokens = [str(t) for t in re.findall(rf"(?<![A-Za-z.])({pattern}){after}(?!\s+[a-z])", text)]
    return tokens[0] if tokens and len(set(tokens)) == 1 else INVALID


RAG_LABELS = ("A", "B", "C", "D")
UNKNOWN = "UNKNOWN"
_RAG_ANSWER = re.compile(r"##\s*Answer\s*:\s*(A|B|C|D|UNKNOWN)\b", re.IGNORECASE)
_RAG_ABSTAIN = re.compile(r"\b(I\s+DO\s+NOT\s+KNOW|UNKNOWN|UNABLE\s+TO\s+DETERMINE|CANNOT\s+DETERMINE)\b",
                          re.IGNORECASE)
_RAG_TOKEN = re.compile(r"\b(A|B|C|D)\b")


def tempomed_rag_seed(text: str | None) -> str:
    """`extract_prediction` of TempoMed's RAG evaluation (Table 3; `P/rag_evaluation/main.py` at 74b6f224).

    Empty or blank: INVALID. Then, on the stripped text: 1. the first `##Answer: X` (any case, spaces allowed,
    X one of A-D or UNKNOWN); 2. a first line that is a label or UNKNOWN (any case); 3. an abstention phrase
    anywhere ("I do not know", "unknown", "unable to determine", "cannot determine"; any case): UNKNOWN; 4. the
    label-shaped tokens of the upper-cased text, if they are all the same letter (so "I choose B. Option B is
    right." is B, and the article "a" counts as A); else INVALID. UNKNOWN is an answer of its own, never INVALID.
    """
    cleaned = (text or "").strip()
    if not cleaned:
        return INVALID
    m = _RAG_ANSWER.search(cleaned)
    if m:
        return m.group(1).upper()
    first = cleaned.splitlines()[0].strip().upper()
    if first in (*RAG_LABELS, UNKNOWN):
        return first
    if _RAG_ABSTAIN.search(cleaned):
        return UNKNOWN
    letters = set(_RAG_TOKEN.findall(cleaned.upper()))
    return letters.pop() if len(letters) == 1 else INVALID


def tempomed_probe_seed(text: str | None) -> str:
    """`extract_choice_label` of the year-sweep probes (`pubmed_inspect_questions.py:1142-1155`).

    `##Answer:` followed by A or B only (C is never accepted there); a first line that is A, B or C;
    exactly one A/B token in the upper-cased output; else INVALID. So `##Answer: C` with a stray "a"
    elsewhere scores as Yes, as in the seed.
    """
    if not text:
        return INVALID
    cleaned = text.strip()
    m = re.search(r"##Answer:\s*(A|B)\b", cleaned, re.IGNORECASE)
    if m:
        return m.group(1).upper()
    lines = cleaned.splitlines()
    if lines and lines[0].strip().upper() in {"A", "B", "C"}:
        return lines[0].strip().upper()
    tokens = re.findall(r"\b(A|B)\b", cleaned.upper())
    return tokens[0] if len(tokens) == 1 else INVALID


def tempomed_probe_fixed(text: str | None) -> str:
    """chronokg's probe rule: `##Answer:` (spaces allowed, optional bracket) then A, B or C (C = abstain)."""
    return tempomed_mcq_fixed(text, ("A", "B", "C"))
