"""The BenchAge web pipeline's prompts: verbatim files in `retrieval/prompts/benchage_web/`, hash-checked.

Seed: JiangXunyi/BenchAge@42f499a2 (`src/runners/ReAct_google.py`, `src/runners/brave_search.py`); see
the folder's README for where each string sits in the seed.
"""

from __future__ import annotations

import re

from chronokg.bench.families.templates import TemplateSet

SHA256 = {
    'PLAN_SYSTEM': '26781da7a9c1f711ef826c6c44e1ee18927e39620b8653d1b6376ab8e317deb4',
    'PLAN_USER': 'd1fb35030e66c2f939338bb2b9f23f69c6b21fb8c609d7657d882072d9359f7b',
    'EXTRACT_USER': 'a0c2e65f1abd6adb2ee1b297ed6d29943d16c88e1856d4d77c99956b9ae33ab3',
    'SUFFICIENCY_USER': '608b930ed14dcbf126a075f6121dbf62800c46aac47876505f832a623a8c6fee',
    'ANSWER_SYSTEM': '62e7bbe05ddfa317b1e3606f47a5a74db2a7b134f1bf3e2f34c17ef83cbe545c',
    'ANSWER_USER': 'd9eabe0e2ac25ac765070f031916a23aa9f97182c6f703ba2209ef0d174f9bde',
    'WIKI_CHUNK_USER': '6edf333e36a79d2383ca0ff627a83d1c30f917a8077c99ca3badd0b9265ce0db',
}

TEMPLATES = TemplateSet("benchage_web", SHA256, "BenchAge web pipeline", package="chronokg.retrieval")
template = TEMPLATES.template
check = TEMPLATES.check
_FIELD = re.compile(r"\{(\w+)\}")


def render(name: str, **values: object) -> str:
    """Template `name` with its `{fields}` filled in one pass (as the seed's f-strings do: an inserted value
    that itself contains `{question}` is not filled again)."""
    return _FIELD.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template(name))


def plan_messages(question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": template("PLAN_SYSTEM")},
            {"role": "user", "content": render("PLAN_USER", question=question)}]


def extract_messages(texts: list[str]) -> list[dict[str, str]]:
    """No separator between the instruction and `Document1:` (the seed's quirk Q-W8, kept)."""
    documents = "".join(f"Document{i}:\n{text}\n" for i, text in enumerate(texts, 1))
    return [{"role": "user", "content": template("EXTRACT_USER") + documents}]


def sufficiency_messages(question: str, facts: list[str], snippets: list[str]) -> list[dict[str, str]]:
    """`facts` and `snippets` are shown as Python list reprs, as the seed's f-string shows them."""
    return [{"role": "user", "content": render("SUFFICIENCY_USER", question=question, fact=repr(facts),
                                               snippets_text=repr(snippets))}]


def evidence_block(number: int, subgoal: str, evidence: list[tuple[str, str]], facts: str) -> str:
    """One subgoal's part of the final prompt (`ReAct_google.py:120-124`: no newline before `Facts:`)."""
    lines = "\n".join(f"{title} - {snippet}" for title, snippet in evidence)
    return f"\nSubgoal {number}: {subgoal}\nEvidence:\n" + lines + f"Facts: {facts}" + "\n"


def answer_messages(question: str, evidence_str: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": template("ANSWER_SYSTEM")},
            {"role": "user", "content": render("ANSWER_USER", question=question, evidence_str=evidence_str)}]


def wiki_chunk_messages(question: str, chunk: str, number: int, count: int) -> list[dict[str, str]]:
    return [{"role": "user", "content": render("WIKI_CHUNK_USER", question=question, chunk=chunk,
                                               chunk_number=number, chunk_count=count)}]
