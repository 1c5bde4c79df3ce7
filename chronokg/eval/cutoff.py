"""Knowledge cutoffs: the date up to which a model is taken to know the facts, and how it was found.

A run records one cutoff per model in `run.json` (`RunInfo.cutoffs`), so the metrics re-read it rather than
guess again. In order, the cutoff of a model is:

1. declared: `eval run --cutoff MODEL=DATE`, else the `cutoff` of its models file entry (`estimated: false`);
2. stated by its spec: `baseline/frozen:DATE` is built to know nothing after DATE (`estimated: false`);
3. a published cutoff of a known model, matched on the model name (`KNOWN`; `estimated: true`, since the
   vendor's date is what the model was trained to, not what it answers from);
4. estimated from the run's own answers (`estimated: true`): over the samples whose gold answer's fact has a
   valid-from date, the year c maximising accuracy(gold valid in a year <= c) - accuracy(gold valid after c)
   (each year weighted by its items, ties to the later year), kept only when the drop is clear: the two
   accuracies differ by a two-proportion z of at least `MIN_Z` (3: about a 5 % error rate after trying some
   twenty candidate years, so a model answering at chance gets no cutoff); the cutoff is the last day of year c,
   the latest year whose answers still match the version then in force;
5. none (no dated gold answers, or no clear drop): `date` is None and the split is not made.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import math
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from chronokg.errors import ChronoKGError
from chronokg.eval.log import RunInfo, SampleRecord
from chronokg.graph.dates import parse_date

# Published cutoffs by model-name pattern (case-insensitive, on the part of the spec after its provider), first
# match wins. Each row says where the date is stated.
KNOWN: tuple[tuple[str, str, str], ...] = (
    ("*llama-3.1-*", "2023-12-31", "Llama 3.1 model card, 'Data Freshness: The pretraining data has a cutoff "
                                   "of December 2023' (github.com/meta-llama/llama-models, "
                                   "models/llama3_1/MODEL_CARD.md)"),
    ("*llama-3-8b*", "2023-03-31", "Llama 3 model card, 'a cutoff of March 2023 for the 8B and December 2023 for "
                                   "the 70B models' (github.com/meta-llama/llama3, MODEL_CARD.md)"),
    ("*llama-3-70b*", "2023-12-31", "Llama 3 model card, 'a cutoff of March 2023 for the 8B and December 2023 for "
                                    "the 70B models' (github.com/meta-llama/llama3, MODEL_CARD.md)"),
    ("gpt-4o*", "2023-10-01", "OpenAI model documentation, GPT-4o and GPT-4o mini: 'Oct 01, 2023 knowledge "
                              "cutoff' (platform.openai.com/docs/models)"),
)

MIN_Z = 3.0


class Cutoff(BaseModel):
    """A model's cutoff as a run records it: the date (None: none found), whether chronokg estimated it, how."""

    date: dt.date | None
    estimated: bool
    source: str


def parse_declared(items: Iterable[str] | None) -> dict[str, str]:
    """`MODEL=DATE` items (`--cutoff`, repeatable) as {model: ISO date} (`RunOptions.cutoffs`); one clear error
    for a bad one. The model is everything before the last `=`, so a spec holding `=` still reads."""
    out: dict[str, str] = {}
    for item in items or []:
        model, sep, text = item.rpartition("=")
        if not sep or not model.strip() or not text.strip():
            raise ChronoKGError(f"--cutoff {item!r}: write MODEL=DATE (e.g. openai/gpt-4o=2023-10-01)")
        try:
            date = parse_date(text.strip())[0].isoformat()
        except ValueError as exc:
            raise ChronoKGError(f"--cutoff {item!r}: {exc}") from None
        if out.get(model.strip(), date) != date:
            raise ChronoKGError(f"--cutoff {item!r}: {model.strip()} was given the cutoff {out[model.strip()]} "
                                "already (one cutoff per model)")
        out[model.strip()] = date
    return out


def from_spec(spec: str) -> Cutoff | None:
    """What the spec itself says: a frozen baseline's date, else a published cutoff of a known model."""
    provider, _, model = spec.partition("/")
    if provider == "baseline" and model.startswith("frozen:"):
        try:
            return Cutoff(date=parse_date(model.partition(":")[2])[0], estimated=False,
                          source="the frozen baseline's own date")
        except ValueError:
            return None
    for pattern, date, source in KNOWN:
        if fnmatch.fnmatch(model.lower(), pattern):
            return Cutoff(date=dt.date.fromisoformat(date), estimated=True, source=f"published: {source}")
    return None


def best_split(per_year: Mapping[int, tuple[int, int]]) -> int | None:
    """The year c after which accuracy drops most: argmax over c of accuracy(years <= c) - accuracy(years > c),
    each year weighted by its (n, correct); ties to the later year; None unless the gap is positive."""
    years = sorted(y for y, (n, _) in per_year.items() if n)
    best: tuple[float, int] | None = None
    for c in years[:-1]:
        left = [per_year[y] for y in years if y <= c]
        right = [per_year[y] for y in years if y > c]
        gap = sum(k for _, k in left) / sum(n for n, _ in left) - sum(k for _, k in right) / sum(n for n, _ in right)
        if best is None or (gap, c) >= best:
            best = (gap, c)
    return best[1] if best is not None and best[0] > 0 else None


def gold_year(record: SampleRecord) -> int | None:
    """The year the gold answer's fact became valid, where the family's scoring records it (`gold_from`)."""
    text = record.fields.get("gold_from")
    return int(str(text)[:4]) if text else None


def drop_z(per_year: Mapping[int, tuple[int, int]], year: int) -> float:
    """The two-proportion z of accuracy(years <= year) over accuracy(years > year) (pooled variance)."""
    n1 = sum(n for y, (n, _) in per_year.items() if y <= year)
    k1 = sum(k for y, (_, k) in per_year.items() if y <= year)
    n2 = sum(n for y, (n, _) in per_year.items() if y > year)
    k2 = sum(k for y, (_, k) in per_year.items() if y > year)
    pooled = (k1 + k2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2)) if n1 and n2 else 0.0
    return (k1 / n1 - k2 / n2) / se if se else (math.inf if n1 and n2 and k1 / n1 > k2 / n2 else 0.0)


def from_answers(samples: Iterable[SampleRecord]) -> Cutoff:
    """Rule 4 over one model's samples (see the module docstring)."""
    counts: dict[int, list[int]] = {}
    for s in samples:
        year = gold_year(s) if s.ok else None
        if year is not None:
            cell = counts.setdefault(year, [0, 0])
            cell[0] += 1
            cell[1] += bool(s.correct)
    per = {y: (n, k) for y, (n, k) in counts.items()}
    year = best_split(per)
    if year is None or drop_z(per, year) < MIN_Z:
        why = ("no answers with a dated gold fact" if not per else "accuracy does not drop after any valid year"
               if year is None else f"the drop after {year} is not clear, z {drop_z(per, year):.2f} < {MIN_Z:g}")
        return Cutoff(date=None, estimated=True, source=f"estimated from the answers: none ({why})")
    return Cutoff(date=dt.date(year, 12, 31), estimated=True,
                  source=f"estimated from the answers: accuracy drops most after gold facts valid in {year} "
                         f"(z {drop_z(per, year):.1f})")


def resolve(models: Iterable[Mapping[str, Any]], samples: Iterable[SampleRecord],
            declared: Mapping[str, Any] | None = None) -> dict[str, Cutoff]:
    """Every model's cutoff by the rule of the module docstring. `models` are run.json's entries (`spec`, and
    `resolved.cutoff` from the models file); `declared` is what the run recorded as declared ({spec: date})."""
    by_model: dict[str, list[SampleRecord]] = {}
    for s in samples:
        by_model.setdefault(s.model, []).append(s)
    out: dict[str, Cutoff] = {}
    for m in models:
        spec = str(m["spec"])
        given = (declared or {}).get(spec) or (m.get("resolved") or {}).get("cutoff")
        if given:
            where = "--cutoff" if (declared or {}).get(spec) else "the models file"
            out[spec] = Cutoff(date=parse_date(str(given))[0], estimated=False, source=f"declared ({where})")
            continue
        resolved_spec = str((m.get("resolved") or {}).get("spec") or spec)
        out[spec] = from_spec(spec) or from_spec(resolved_spec) or from_answers(by_model.get(spec, []))
    return out


def of_run(info: RunInfo, samples: Iterable[SampleRecord]) -> dict[str, Cutoff]:
    """The cutoffs a run recorded (`run.json`), and for a model it recorded none of (a run from before cutoffs
    were kept, or outputs scored with `eval score`), the one the rule gives now over its samples."""
    recorded = {spec: Cutoff.model_validate(value) for spec, value in info.cutoffs.items()}
    missing = [m for m in info.models if m["spec"] not in recorded]
    if missing:
        declared = dict(info.options.get("cutoffs") or {})
        recorded |= resolve(missing, list(samples), declared)
    return recorded
