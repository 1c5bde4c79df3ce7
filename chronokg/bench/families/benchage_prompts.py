"""BenchAge ("When Benchmarks Age") prompt templates: verbatim text files in `prompts/benchage/`, loaded on first use.

Seed: JiangXunyi/BenchAge at commit 42f499a2e33870c545994e1cd3df0492d7444558 (`src/detector/`), and
`src/evaluator/evaluator.py` at 738f950857e2f3948ad32639a75d696bb059e445; the repository has no licence
file (all rights reserved): the templates are reproduced as facts of the benchmark, the code around them is
our own. The QA prompt formats come from OpenCompass's dataset configs (Apache-2.0), because BenchAge's
model outputs were produced with OpenCompass 0.5.0 and its evaluator recovers the question from those
prompts. Where each template sits is listed in `prompts/benchage/README.md`; `SHA256` holds each one's
hash, checked by `check()` and the tests.

The evaluation runner imports the judge from here: `judge_messages` builds the seed's two messages,
`JUDGE_SETTINGS` are its call settings (`max_tokens=1`, temperature 0) and `judge_score` reads the reply
("true..." = match).
"""

from __future__ import annotations

from typing import Any

from chronokg.bench.families.templates import TemplateSet

SHA256 = {
    'DETECTOR_SYSTEM': '34db4d9efc9e771d3637861e01cf6ede5db4c483260245f17cf5961a7d9109f0',
    'DETECTOR_USER': '2c354b3387d155c4b97fa1ede806f0ed27bebc74328ee356203d70426fee5611',
    'DETECTOR_EXAMPLES': '22e251ca4df183e843250dc9896797053f651b2b62ae91283f6895536ce0f007',
    'JUDGE_SYSTEM': '106a63166cf309dabd426ffaf03eecefa2e560b208813d99db4cb0dcf57b1f61',
    'JUDGE_USER': 'b38413189181354b8e80b0c72776dc672e3beb26990388d4e2a0216da2133f69',
    'JUDGE_BOOLQ_SYSTEM': '0cd31816df284202b54152b1e7340be10a39f39f883a07cce47e8e85f65d79c1',
    'JUDGE_BOOLQ_USER': 'd50e33353403d49d2544fa022b2ea11add79f5c728466d3d8a538622356b5700',
    'QA_SELFAWARE': '34c3dc990a5934e0fcbcca0111d57b24abfda256f3d8213500763897baa737ae',
    'QA_TRUTHFULQA': 'bf085a6e12c9d0e23a9dd157df084f933b2ef021caba82def1494bfb84a723c9',
    'QA_TRIVIAQA': '9fc23f53d0cfabc9296d88641fbbca14c56bd4a9afc9fa6ab8e1a03ea4b0bba9',
    'QA_NQ': '02a51f8ae88e978a8e5b8eae551bdb205cef37961ded7224ef887a6c34d96c31',
    'QA_BOOLQ': 'f73e3217f6dccd4908fc9493cf63d4d174617e1368b5f95c0aba46ee9c2205d8',
    'QA_BOOLQ_PASSAGE': 'e0d0f8c5c20891a22790d48c806f0171b3114c831bc952b9ca47c68713835e63',
}

# The seed judge's call (evaluator.py:203-209): gpt-4o-mini in the seed, any client here.
JUDGE_SETTINGS: dict[str, Any] = {"temperature": 0.0, "max_tokens": 1}
JUDGE_MODEL = "gpt-4o-mini"  # evaluator.py:30 (ENGINE)


TEMPLATES = TemplateSet("benchage", SHA256, "BenchAge")
template = TEMPLATES.template


def render(name: str, **values: object) -> str:
    """Template `name` filled as the seed fills it: Python `str.format` (`{{`/`}}` are literal braces)."""
    return template(name).format(**values)


check = TEMPLATES.check


def detector_messages(question: str) -> list[dict[str, str]]:
    """The detector's two messages for one question (llmjudgeall.py:30-46): the few-shot block is the seed's
    re-keyed examples as `json.dumps(indent=2, ensure_ascii=False)` writes them."""
    user = render("DETECTOR_USER", examples=template("DETECTOR_EXAMPLES"), question=question)
    return [{"role": "system", "content": template("DETECTOR_SYSTEM")}, {"role": "user", "content": user}]


def judge_messages(question: str, answer1: str, answer2: str, boolq: bool = False) -> list[dict[str, str]]:
    """The seed judge's messages (evaluator.py:125-160, 185-200): BoolQ has its own system and user prompt.

    Truncation (non-BoolQ: question to 256 tokens, answers to 10,000 with the gpt-4o-mini tokenizer) is the
    runner's step, before this call."""
    prefix = "JUDGE_BOOLQ" if boolq else "JUDGE"
    user = render(f"{prefix}_USER", q=question, a1=answer1, a2=answer2)
    return [{"role": "system", "content": template(f"{prefix}_SYSTEM")}, {"role": "user", "content": user}]


def judge_score(reply: str) -> float:
    """The seed's reading of a judge reply (evaluator.py:210-211): 1.0 iff it starts with "true" (any case)."""
    return 1.0 if reply.strip().lower().startswith("true") else 0.0
