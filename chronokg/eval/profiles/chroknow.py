"""ChroKnowBench: how its Generation, MCQA and TF prompts are asked, read and scored.

Seed (dmis-lab/ChroKnowledge, no licence file; notes in docs/metrics/chroknow.md): decoding
`ChroKnowledge.py:40-59, 859` (raw completion prompts, no chat template; max_tokens 50, top_p 1,
seed 42, stop at the first newline; two runs, T = 0.0 and T = 0.7, each answering every few-shot
draw once); parsing `sources/process.py:19-32` (only outputs starting "A. " are kept, the answer is
their first line after it; MCQA outputs are not parsed); matching `process.py:139-141, 189-191`
(rapidfuzz `token_set_ratio >= 70` on lower-cased text against the year's gold set; TF: "true" in the
answer).

The runner's unit is (question, model, sample): the generator already emits one question per few-shot
draw, so the seed's two runs are two samples of every question: sample 0 greedy (T = 0.0), sample 1
sampled (T = 0.7). Under `--protocol chronokg` more sampled answers may be asked for (`--samples N`
gives 1 greedy + N-1 sampled). The per-year and per-fact categories are computed from these samples
by `chronokg.metrics.chroknow`.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from typing import Any

from chronokg.bench.family import OURS
from chronokg.bench.question import Question
from chronokg.eval.profile import Outcome, Profile, request_hash
from chronokg.models import ChatMessage, GenerateConfig, ModelClient, ModelRequest

FAMILY = "chroknow"
THRESHOLD = 70.0  # process.py:140 `>= 70`
PREFIX = "A. "  # process.py:27 `startswith("A. ")`
TEMPERATURES = (0.0, 0.7)  # README "Please do both temperature settings"; paper A.4
API_SYSTEM = "You are a helpful assistant."  # sources/utils.py:161-185 (the proprietary-model path)
INVARIANT = ("CommonSense", "Math")
_LETTER = re.compile(r"^\s*\(?\s*([a-dA-D])\s*\)")
_TF = re.compile(r"^\W*(true|false)\b", re.I)
_CHRONOKG_PREFIX = re.compile(r"^\s*A\s*[.:]\s?")


def fuzzy(answer: Any, golds: Any) -> bool:
    """The seed's match (`is_fuzz_match`): any gold with `token_set_ratio(str(a).lower(), str(g).lower()) >= 70`."""
    from rapidfuzz import fuzz

    text = str(answer).lower()
    return any(fuzz.token_set_ratio(text, str(g).lower()) >= THRESHOLD for g in golds)


def seed_golds(meta: dict[str, Any]) -> list[Any]:
    """The seed's gold set of a (row, year) (`get_benchmark`, process.py:214-230): General flattens one level
    the Python way (an alias list gives its aliases, a plain string its characters), the other domains take
    the year's list as it is."""
    gold = meta.get("gold_objects") or []
    if meta.get("domain") == "General" and meta.get("origin") != "cfr":
        return [obj for group in gold for obj in (group if isinstance(group, list | str) else [group])]
    return list(gold)


def golds(question: Question, protocol: str) -> list[Any]:
    if protocol == "seed":
        return seed_golds(question.metadata)
    return list(question.metadata.get("gold_aliases") or [])


def template_of(question: Question) -> str:
    return str(question.metadata.get("template") or question.variant.rpartition("/")[2])


def extract_answer(template: str, output: str, protocol: str) -> str | None:
    """The answer in an output, or None when the output is not read (the seed drops it)."""
    if template == "mcqa" and protocol == "seed":
        return output  # process.py:94-106: MCQA outputs are scored raw
    if protocol == "seed":
        return output.split("\n")[0][len(PREFIX):].strip() if output.startswith(PREFIX) else None
    if template == "mcqa":
        return output.strip().split("\n")[0].strip() or None
    m = _CHRONOKG_PREFIX.match(output)
    return output[m.end():].strip().split("\n")[0].strip() if m else None


def mcqa_letter(question: Question, answer: str | None) -> str | None:
    """chronokg's reading of an MCQA answer: a leading "(x)" / "x)", else the one option whose text it is."""
    if not answer:
        return None
    m = _LETTER.match(answer)
    if m:
        return m[1].lower()
    same = [c.label for c in question.choices if c.text.strip().lower() == answer.strip().lower()]
    return same[0] if len(same) == 1 else None


class ChroKnowProfile(Profile):
    family = FAMILY

    def samples(self, question: Question, protocol: str, requested: int) -> int:
        """The seed's two runs (T = 0.0, T = 0.7) per prompt; chronokg: one greedy and N-1 sampled answers."""
        return 2 if protocol == "seed" else 1 + max(1, requested - 1)

    def config(self, question: Question, protocol: str, sample: int) -> GenerateConfig:
        return GenerateConfig(temperature=TEMPERATURES[0] if sample == 0 else TEMPERATURES[1], top_p=1.0,
                              max_tokens=50, stop=["\n"], seed=42)

    def request(self, question: Question, protocol: str, sample: int) -> ModelRequest:
        """The prompt as raw completion text (ChroKnowledge.py:142 `llm.generate(prompts)`)."""
        return ModelRequest(prompt=question.input, config=self.config(question, protocol, sample), epoch=sample,
                            metadata={"question_id": question.id, "family": question.family})

    async def answer(self, client: ModelClient, question: Question, protocol: str, sample: int) -> Outcome:
        request = self.request(question, protocol, sample)
        if client.spec.partition("/")[0] == "openai":  # chat-only API models: the seed's GPT path
            request = ModelRequest(messages=[ChatMessage(role="system", content=API_SYSTEM),
                                             ChatMessage(role="user", content=question.input)],
                                   config=request.config, epoch=sample, metadata=request.metadata)
        start = time.perf_counter()
        completion = await client.generate(request)
        return self.outcome(question, protocol, completion, time.perf_counter() - start,
                            request_hash=request_hash(request))

    def extract(self, question: Question, output: str, protocol: str) -> str | None:
        return extract_answer(template_of(question), output, protocol)

    def score(self, question: Question, answer: str | None, protocol: str) -> tuple[bool | None, float | None,
                                                                                   dict[str, Any]]:
        m = question.metadata
        template = template_of(question)
        parsed = answer is not None
        fields: dict[str, Any] = {
            "kind": "check", "template": template, "domain": m.get("domain"), "split": m.get("split"),
            "state": m.get("temporal_state"), "fact_key": m.get("fact_key"), "year": m.get("year"),
            "draw": m.get("draw"), "parsed": parsed, "protocol": protocol,
        }
        correct = False
        if template == "tf":
            if protocol == "seed":  # process.py:189-191: a substring test; the gold is not looked at
                correct = parsed and "true" in str(answer).lower()
            else:
                said = _TF.match(answer or "")
                fields["said"] = said[1].lower() if said else None
                correct = said is not None and said[1].lower() == str(m.get("expected") or question.target)
        elif template == "mcqa":
            letter = mcqa_letter(question, answer)
            fields["letter"] = letter
            fields["fuzzy"] = parsed and fuzzy(answer, golds(question, protocol))
            correct = bool(fields["fuzzy"]) if protocol == "seed" else letter == question.target
        else:
            correct = parsed and fuzzy(answer, golds(question, protocol))
            aliases = {a.strip().lower() for a in m.get("gold_aliases") or []}
            fields["exact"] = parsed and str(answer).strip().lower() in aliases
        return correct, float(correct), fields

    def render(self, question: Question, label: str) -> str:
        """What a model following the few-shot format writes: "A. <object>", "A. true", "(d) <option>"."""
        if template_of(question) == "mcqa":
            text = next((c.text for c in question.choices if c.label == label), None)
            return f"({label}) {text}" if text is not None else label
        return PREFIX + label

    # --- the seed's result files --------------------------------------------------------------------------

    def seed_result(self, question: Question, record: Any) -> tuple[str, dict[str, Any]] | None:
        """One generation of `Results/{model}/Result_TimeVariant_{domain}_{split}_temp{T}.json`
        (ChroKnowledge.py:165, 265, 382, 491, 595, 695, 844), under a folder per template (the seed runs one
        template at a time and names the file without it); `seed_file` puts them together."""
        m = question.metadata
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", record.model)
        temperature = TEMPERATURES[0] if record.sample == 0 else TEMPERATURES[1]
        if m.get("domain") in INVARIANT:
            name = f"Result_TimeInvariant_{m.get('domain')}_temp{temperature}.json"
        else:
            split = m.get("split") or ("Static" if m.get("temporal_state") == "static" else "Dynamic")
            name = f"Result_TimeVariant_{m.get('domain')}_{split}_temp{temperature}.json"
        if record.sample > 1:  # chronokg's extra sampled answers: a file per sample
            name = name.replace(".json", f"_sample{record.sample}.json")
        row = m.get("seed_row") or {}
        return f"{template_of(question)}/Results/{slug}/{name}", {
            "order": [m.get("origin") == "cfr", str(row.get("file_name") or ""), int(row.get("record") or 0),
                      str(m.get("fact_key"))],
            "year": m.get("year"), "draw": m.get("draw"), "sample": record.sample, "output": record.output or "",
            OURS: {"chronokg_ids": [question.id]}}

    def seed_file(self, name: str, records: list[dict[str, Any]]) -> Any:
        """The seed's list aligned with the benchmark rows (in the order `chronokg bench export` writes them):
        per row `{"objects_YYYY": [one generation per few-shot draw], ...}`, years ascending. Under chronokg
        extra sampled answers (sample > 1) go to files of their own."""
        rows: dict[tuple[Any, ...], dict[int, list[tuple[int, str]]]] = defaultdict(lambda: defaultdict(list))
        for r in records:
            rows[tuple(r["order"])][int(r["year"])].append((int(r["draw"]), str(r["output"])))
        return [{f"objects_{year}": [text for _, text in sorted(years[year])] for year in sorted(years)}
                for _, years in sorted(rows.items())]

    def seed_positions(self, name: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A generation's row of the file (`record`), its year and its few-shot draw (`seed_file`'s layout)."""
        row = {key: n for n, key in enumerate(sorted({tuple(r["order"]) for r in records}))}
        return [{"record": row[tuple(r["order"])], "year": r["year"], "draw": r["draw"]} for r in records]


PROFILE = ChroKnowProfile()
