"""`chronokg eval report`: one or more run folders -> report.md, report.html, metrics.json and plots/*.png|svg.

Everything is computed and drawn in memory first; files are written only once every plot has rendered, so a
failing plot leaves the output folder as it was.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from chronokg.errors import ChronoKGError, InputError
from chronokg.files import write_whole
from chronokg.metrics import cutoff
from chronokg.metrics.spec import METRICS, all_metrics
from chronokg.progress import Progress
from chronokg.reports.document import (
    Block,
    Bullets,
    Contents,
    FigureBlock,
    Heading,
    Para,
    TableBlock,
    body,
    markdown,
    page,
)
from chronokg.reports.plots import Omitted, Plot, all_plots, drawable, overview, render, style
from chronokg.reports.series import RunData, Series, build_series, load_run
from chronokg.reports.tables import Table, details, fitted, headline_table, metric_table

TITLE = "chronokg evaluation report"


@dataclass
class Report:
    """What was written: the files, the metrics reported and the plots drawn."""

    out: Path
    markdown: Path
    html: Path
    metrics_json: Path
    metrics: list[str] = field(default_factory=list)
    plots: list[str] = field(default_factory=list)
    series: list[str] = field(default_factory=list)


def family_of(metric: str) -> str:
    if metric in METRICS:
        return METRICS.get(metric).family or "general"
    return metric.split(".", 1)[0] if "." in metric else "general"


class QuietProgress:
    """Progress that goes nowhere (no bar asked for)."""

    def start(self, total: int, description: str) -> None:
        pass

    def advance(self, n: int) -> None:
        pass


Figures = dict[str, list[Plot | Omitted]]


def build_report(folders: Sequence[Path], out: Path, models: Sequence[str] | None = None,
                 title: str = TITLE, progress: Progress | None = None) -> Report:
    """`progress` hears each step: reading the runs, computing each column's metrics, drawing each metric's
    plots, rendering each plot, writing the files."""
    if not folders:
        raise ChronoKGError("give at least one run folder")
    progress = progress or QuietProgress()
    runs, series, names, figures, rendered = compose(folders, models, progress)
    blocks = _blocks(title, runs, series, names, figures, rendered)
    progress.start(3 + 2 * len(rendered), "writing the report's files")
    return _write(out, title, blocks, series, rendered, names, progress)


def report_body(folders: Sequence[Path], models: Sequence[str] | None = None, title: str = TITLE,
                progress: Progress | None = None) -> str:
    """The report of `folders` as HTML elements (its tables and plots, the plots as inline SVG images), written
    nowhere: what the explorer's Runs view shows for `--runs` (`chronokg serve http`, `chronokg export html`).
    `progress` hears the steps of `build_report` but the writing."""
    if not folders:
        raise ChronoKGError("give at least one run folder")
    runs, series, names, figures, rendered = compose(folders, models, progress or QuietProgress())
    return body(_blocks(title, runs, series, names, figures, rendered, dated=False))


def compose(folders: Sequence[Path], models: Sequence[str] | None, progress: Progress
             ) -> tuple[list[RunData], list[Series], list[str], Figures, dict[str, tuple[bytes, bytes]]]:
    """Everything a report holds, computed and drawn in memory."""
    runs, series, names = columns(folders, models, progress)
    with style():
        figures = draw_plots(names, series, progress)
        drawn = [p for made in figures.values() for p in made if isinstance(p, Plot)]
        progress.start(len(drawn), "rendering the plots as PNG and SVG")
        rendered = {}
        for p in drawn:
            rendered[p.name] = render(p)
            progress.advance(1)
    return runs, series, names, figures, rendered


def columns(folders: Sequence[Path], models: Sequence[str] | None, progress: Progress
            ) -> tuple[list[RunData], list[Series], list[str]]:
    """The runs read, one column of metric values per model, and the metrics' names: what the tables and the
    plots are drawn from (nothing drawn yet)."""
    progress.start(len(folders), "reading the run folders")
    runs = []
    for f in folders:
        runs.append(load_run(f))
        progress.advance(1)
    seen: set[str] = set()
    for folder, run in zip(folders, runs, strict=True):
        if run.info.run_id in seen:
            raise InputError(folder, None, f"run {run.info.run_id} is given twice")
        seen.add(run.info.run_id)
    all_metrics()
    series = build_series(runs, models, progress)
    if not series:
        raise ChronoKGError("no model to report" + (f" (none of {', '.join(models)} is in these runs)" if models
                                                    else ""))
    names = sorted({m for s in series for m in s.values}, key=lambda m: (family_of(m), m))
    return runs, series, names


def draw_plots(names: Sequence[str], series: Sequence[Series], progress: Progress) -> Figures:
    """The plots of each metric that has a plot function ("" for the overview), drawn in memory."""
    plots = all_plots()
    having_plots = [m for m in names if m in plots]
    # labels as the fonts can draw them (a name in a script no installed font holds: its escapes), before any
    # plot measures its text
    series = [replace(s, label=drawable(s.label), short_label=drawable(s.tick)) for s in series]
    progress.start(1 + len(having_plots), "drawing the plots of each metric")
    out: Figures = {"": [overview(names, series)]}
    progress.advance(1)
    for metric in having_plots:
        having = [s for s in series if s.get(metric) is not None]
        try:
            out[metric] = plots.get(metric)(having)
        except Exception as exc:  # a bug in one family's plot: say which, keep the traceback chained
            raise ChronoKGError(f"the plot of {metric} failed: {type(exc).__name__}: {exc}") from exc
        progress.advance(1)
    files = [p.name for drawn in out.values() for p in drawn]
    if len(set(files)) < len(files):
        raise ChronoKGError(f"two plots share a file name: {sorted(files)}")
    return out


def _runs_table(runs: Sequence[RunData]) -> Table:
    """A row per run: what it is and what its samples came to. Where each run's files are: `_run_lines`."""
    rows = [[r.info.run_id, r.info.status, r.info.protocol, ", ".join(str(m.get("spec")) for m in r.info.models),
             f"{len(r.samples):,}", f"{r.failed:,}", f"{r.not_scorable:,}"] for r in runs]
    return Table(headers=["run", "status", "protocol", "models", "samples scored", "failed requests",
                          "not scorable now"], rows=rows, numeric=False)


def _run_lines(runs: Sequence[RunData]) -> list[str]:
    """Each run's folder, question files, times and store snapshot."""
    out = []
    for r in runs:
        i = r.info
        files = ", ".join(f"{Path(q['path']).name} ({q.get('sha256', '')[:12]})" for q in i.questions)
        out.append(f"{i.run_id}: folder {r.folder}; questions {files or '—'}; started {i.started or '—'}, finished "
                   f"{i.finished or '—'}; store snapshot {(i.snapshot or '—')[:16]}")
    return out


def flip_counts(run: RunData) -> dict[str, int] | None:
    """What re-scoring changed, by kind (`eval rescore`'s `flips` in run.json: right_to_wrong, wrong_to_right,
    not_scorable, scorable_now, ...), else counted from the run's files (flips.json: right <-> wrong only)."""
    from chronokg.eval.rescore import FLIPS, NOT_SCORABLE, SCORABLE_NOW

    if run.info.flips is not None:
        return dict(run.info.flips)
    if not (run.folder / FLIPS).is_file():
        return None
    lists: dict[str, list[dict[str, Any]]] = {}
    for name in (FLIPS, NOT_SCORABLE, SCORABLE_NOW):
        path = run.folder / name
        try:
            rows = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else []
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(path, None, f"not a list of samples: {str(exc).splitlines()[0]}") from None
        if not isinstance(rows, list) or not all(isinstance(f, dict) for f in rows):
            raise InputError(path, None, "not a list of samples")
        lists[name] = rows
    flips = lists[FLIPS]
    return {"right_to_wrong": sum(1 for f in flips if f.get("new_correct") is False),
            "wrong_to_right": sum(1 for f in flips if f.get("new_correct") is True),
            "not_scorable": len(lists[NOT_SCORABLE]), "scorable_now": len(lists[SCORABLE_NOW])}


def flips_said(counts: dict[str, int]) -> str:
    """A flip is right <-> wrong; a sample that lost or gained a verdict, and a changed answer key, are said apart."""
    rw, wr = counts.get("right_to_wrong", 0), counts.get("wrong_to_right", 0)
    said = f"{rw + wr:,} verdicts flipped ({rw:,} right to wrong, {wr:,} wrong to right)"
    if counts.get("not_scorable") or counts.get("scorable_now"):
        said += (f"; {counts.get('not_scorable', 0):,} samples not scorable now, "
                 f"{counts.get('scorable_now', 0):,} scorable now")
    if "targets_changed" in counts:
        said += f"; {counts['targets_changed']:,} answer keys changed"
    return said


def _provenance(runs: Sequence[RunData]) -> list[str]:
    """A line per re-scored run: which run it re-scored, as known at which day, what flipped, and what its
    not-scorable samples are."""
    ids = {r.info.run_id for r in runs}
    out = []
    for r in runs:
        i = r.info
        if not i.rescored_from:
            continue
        origin = i.rescored_from + (" (in this report)" if i.rescored_from in ids else "")
        when = f"as known at {i.known_at}" if i.known_at else "as known when it was re-scored"
        line = (f"{i.run_id} is run {origin} re-scored {when}, against store snapshot {(i.snapshot or '—')[:16]}: "
                "the same answers, scored against the answer keys re-run, no model asked")
        flips = flip_counts(r)
        if flips is not None:
            line += "; " + flips_said(flips)
        if r.not_scorable:
            line += (f"; {r.not_scorable:,} samples not scorable (their answer key gives no answer among the options "
                     f"{when}): no metric counts them, and they are no failure of the model")
        out.append(line + ".")
    return out


def _blocks(title: str, runs: Sequence[RunData], series: Sequence[Series], names: Sequence[str],
            figures: Figures, rendered: dict[str, tuple[bytes, bytes]], dated: bool = True
            ) -> list[Block]:
    """The report's blocks; undated (no "written" time) where the same runs must give the same bytes."""
    from chronokg import __version__

    written = f", written {dt.datetime.now(dt.UTC).isoformat(timespec='seconds')}" if dated else ""
    blocks: list[Block] = [
        Heading(1, title),
        Para(f"{len(runs)} run(s), {len(series)} model column(s), {len(names)} metric(s), {len(rendered)} plot(s); "
             f"chronokg {__version__}{written}. "
             "Every value is also in metrics.json; every plot is in plots/ as PNG and SVG."),
        *_left_out(figures),
        Contents(),
        Heading(2, "Runs"), *([Para("Re-scored runs: " + " ".join(lines))] if (lines := _provenance(runs)) else []),
        TableBlock(_runs_table(runs)), Bullets(_run_lines(runs)),
        Bullets([f"{s.label}: model {s.model} of run {s.run}, {len(s.samples):,} scored samples" for s in series]),
        Heading(2, "Overview"), *_fitted(headline_table(names, series)),
        *(_figure(p, rendered) for p in figures[""] if isinstance(p, Plot)),
    ]
    family = None
    for metric in names:
        if family_of(metric) != family:
            family = family_of(metric)
            blocks.append(Heading(2, f"{family} metrics"))
        blocks.append(Heading(3, metric))
        spec = METRICS.get(metric) if metric in METRICS else None
        if spec is not None:
            better = {True: " Higher is better.", False: " Lower is better.", None: ""}[spec.higher_is_better]
            blocks.append(Para(spec.help + better))
        elif metric.endswith(cutoff.SUFFIX):
            blocks.append(Para(f"Answers before and after each model's knowledge cutoff ({cutoff.RULE})."))
        blocks += _fitted(metric_table(metric, series), "No values in these runs: none of their scored answers "
                                                        "is an item this metric counts.")
        lines = details(metric, series)
        if lines:
            blocks.append(Bullets(lines))
        blocks += [_figure(p, rendered) for p in figures.get(metric, []) if isinstance(p, Plot)]
    return blocks


def _fitted(table: Table, none: str = "No values in these runs.") -> list[Block]:
    """A table as blocks that fit the page (`fitted`), a line naming the columns without a value; `none`, one
    line, where no column has one."""
    tables, gone = fitted(table)
    if not tables:
        return [Para(none)]
    return [*(TableBlock(t) for t in tables),
            *([Para(f"No values for {', '.join(gone)} (left out of the table).")] if gone else [])]


def _left_out(figures: Figures) -> list[Block]:
    """One line naming the plots these runs have no data for, and why (none: no line)."""
    gone = [p for made in figures.values() for p in made if isinstance(p, Omitted)]
    if not gone:
        return []
    return [Para("Plots left out: " + "; ".join(f"{p.name}: {p.reason}" for p in gone) + ".")]


def _figure(p: Plot, rendered: dict[str, tuple[bytes, bytes]]) -> FigureBlock:
    return FigureBlock(p.name, p.title, p.caption, rendered[p.name][1])


def _write(out: Path, title: str, blocks: Sequence[Block], series: Sequence[Series],
           rendered: dict[str, tuple[bytes, bytes]], names: Sequence[str], progress: Progress) -> Report:
    plots_dir = out / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    for old in plots_dir.iterdir():  # plots of an earlier report that this one does not draw
        if old.suffix in (".png", ".svg") and old.stem not in rendered:
            old.unlink()
    for name, (png, svg) in rendered.items():
        write_whole(plots_dir / f"{name}.png", png)
        write_whole(plots_dir / f"{name}.svg", svg)
        progress.advance(2)
    values = [{"label": s.label, "run": s.run, "model": s.model,
               "metrics": [v.model_dump(mode="json") for v in s.values.values()]} for s in series]
    report = Report(out=out, markdown=out / "report.md", html=out / "report.html", metrics_json=out / "metrics.json",
                    metrics=list(names), plots=list(rendered), series=[s.label for s in series])
    write_whole(report.metrics_json, json.dumps(values, indent=1, ensure_ascii=False).encode("utf-8"))
    write_whole(report.markdown, markdown(blocks).encode("utf-8"))
    write_whole(report.html, page(title, blocks).encode("utf-8"))
    progress.advance(3)
    return report
