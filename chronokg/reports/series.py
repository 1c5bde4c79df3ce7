"""What a report compares: one series per (run, model), with that model's metric values and samples.

Plots and tables are written against `Series` only, so a report of one run with four models and a report of
four runs with one model each look the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chronokg.errors import ChronoKGError
from chronokg.eval.log import RunInfo, SampleRecord
from chronokg.metrics.spec import MetricValue
from chronokg.progress import Progress


@dataclass(frozen=True)
class Series:
    """One model of one run: what a column of a table and a bar, line or panel of a plot stands for."""

    label: str
    run: str
    model: str
    index: int  # position among the report's series: picks the colour, the same in every plot
    values: dict[str, MetricValue]
    samples: Sequence[SampleRecord] = field(repr=False)
    short_label: str = ""  # the label as plots show it, set beside the report's other labels (`ticks`)
    cutoff: dict[str, Any] | None = None  # the model's knowledge cutoff as its run recorded it (date, estimated)

    def get(self, metric: str) -> MetricValue | None:
        return self.values.get(metric)

    @property
    def tick(self) -> str:
        """The label as a plot shows it: one line, at most `TICK` characters (the tables give it whole)."""
        return self.short_label or short(self.label)


TICK = 40


def ticks(labels: Sequence[str], limit: int = TICK) -> list[str]:
    """Each label shortened, keeping what tells it from the others: long labels that differ only in their
    middle ("org/model-a-<100 chars>", "org/model-b-<100 chars>") keep that middle, not one shared head."""
    flat = [" ".join(x.split()) for x in labels]
    plain = [short(x, limit) for x in flat]
    if len(set(plain)) == len(set(flat)):
        return plain
    long = [x for x in flat if len(x) > limit]
    if len(set(long)) < 2:
        return plain
    head, tail = _common(long), _common([x[::-1] for x in long])
    out = []
    for x, p in zip(flat, plain, strict=True):
        middle = x[head:len(x) - tail]
        if len(x) <= limit or not middle:
            out.append(p)
        elif len(middle) >= limit - 2:
            out.append("…" + short(middle, limit - 2) + "…")
        else:
            room = limit - len(middle) - 2
            a = min(head, room // 2)
            b = min(tail, room - a)
            out.append(x[:a] + ("…" if a < head else "") + middle + ("…" if b < tail else "") + x[len(x) - b:])
    return out


def _common(texts: Sequence[str]) -> int:
    """The length of the characters every text starts with."""
    n = 0
    for chars in zip(*texts, strict=False):
        if len(set(chars)) > 1:
            break
        n += 1
    return n


def short(text: str, limit: int = TICK) -> str:
    """`text` on one line and at most `limit` characters, its middle elided (a run id at the end stays
    readable): a 10,000-character model name must not make a plot 10,000 characters wide."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = (limit - 1) * 3 // 5
    return flat[:head] + "…" + flat[len(flat) - (limit - 1 - head):]


@dataclass(frozen=True)
class RunData:
    folder: Path
    info: RunInfo
    samples: list[SampleRecord]
    failed: int  # requests that failed (the model or its server)
    not_scorable: int = 0  # re-scored samples whose answer key gives no answer now: no failure of the model


def load_run(folder: Path) -> RunData:
    """The run's description and its latest record per unit (failed and not-scorable samples counted, not
    scored)."""
    from chronokg.eval.log import latest, left_out, read_info

    info = read_info(folder)
    records = list(latest(folder / "samples.jsonl").values())
    failed, not_scorable = left_out(records)
    return RunData(folder=folder, info=info, samples=[r for r in records if r.ok], failed=failed,
                   not_scorable=not_scorable)


def build_series(runs: Sequence[RunData], models: Sequence[str] | None = None,
                 progress: Progress | None = None) -> list[Series]:
    """A series per (run, model) in run order, labelled by the model, with the run id added where a model
    appears in more than one run."""
    from chronokg.metrics.runs import metrics

    wanted: list[tuple[RunData, str]] = []
    held: set[str] = set()
    for run in runs:
        present = sorted({s.model for s in run.samples} | {str(m.get("spec")) for m in run.info.models})
        held.update(present)
        wanted += [(run, m) for m in present if models is None or m in models]
    missing = [m for m in models or [] if m not in held]
    if missing:  # a column silently left out would read as a report of every model asked for
        raise ChronoKGError(f"--model {', '.join(missing)}: no run holds answers of it (their models: "
                            f"{', '.join(sorted(held))})")
    seen: dict[str, int] = {}
    for _, model in wanted:
        seen[model] = seen.get(model, 0) + 1
    out = []
    shorts = ticks([model if seen[model] == 1 else f"{model} · {run.info.run_id}" for run, model in wanted])
    if progress is not None:
        progress.start(len(wanted), "computing the metrics of each model column")
    for index, (run, model) in enumerate(wanted):
        mine = [s for s in run.samples if s.model == model]
        values = {v.metric: v for v in metrics(mine, [model], info=run.info)} if mine else {}
        label = model if seen[model] == 1 else f"{model} · {run.info.run_id}"
        out.append(Series(label=label, run=run.info.run_id, model=model, index=index, values=values, samples=mine,
                          short_label=shorts[index], cutoff=run.info.cutoffs.get(model)))
        if progress is not None:
            progress.advance(1)
    return out
