"""ChroKnowBench plots: the share of facts Correct per year (the paper's Fig. 2-4), the four year categories
by year, and the per-fact Known / Cut-off / Partial_known / Unknown split, each per template."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from chronokg.metrics.chroknow import FACT_CATEGORIES, YEAR_CATEGORIES
from chronokg.reports.plots import Omitted, Plot, color, figure, panels, percent_axis, plot, stacked_bars
from chronokg.reports.series import Series

TEMPLATES = ("generation", "mcqa", "tf")
YEAR_NAMES = {"correct": "Correct", "partial_correct1": "Partial (greedy partly right)",
              "partial_correct2": "Partial (only sampled right)", "incorrect": "Incorrect"}
YEAR_COLORS = {"correct": "#009E73", "partial_correct1": "#56B4E9", "partial_correct2": "#E69F00",
               "incorrect": "#999999"}
FACT_COLORS = {"Known": "#009E73", "Cut-off": "#0072B2", "Partial_known": "#E69F00", "Unknown": "#999999"}


def by_template_year(groups: dict[str, Any]) -> dict[str, dict[int, dict[str, int]]]:
    """`chroknow.year_categories` groups (`template/domain/split` -> year -> counts) summed over domains and
    splits: template -> year -> category counts."""
    out: dict[str, dict[int, dict[str, int]]] = defaultdict(dict)
    for group, years in groups.items():
        template = group.split("/")[0]
        for year, cell in years.items():
            counts = out[template].setdefault(int(year), dict.fromkeys(YEAR_CATEGORIES, 0))
            for c in YEAR_CATEGORIES:
                counts[c] += int(cell.get(c, 0))
    return {t: dict(sorted(v.items())) for t, v in out.items()}


def _templates(tables: Sequence[dict[str, Any]]) -> list[str]:
    seen = {t for table in tables for t in table}
    return [t for t in TEMPLATES if t in seen] + sorted(seen - set(TEMPLATES))


def _years_axis(ax: Any) -> None:
    """Whole years only on the x axis, tilted so that long spans stay readable."""
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.tick_params(axis="x", labelrotation=90)


@plot("chroknow.year_categories")
def year_categories(series: Sequence[Series]) -> list[Plot | Omitted]:
    shown = [(s, by_template_year(v.groups)) for s in series
             if (v := s.get("chroknow.year_categories")) is not None and v.groups]
    if not shown:
        return []
    templates = _templates([t for _, t in shown])
    return [_correct_by_year(shown, templates), _categories_by_year(shown, templates)]


def _correct_by_year(shown: Sequence[tuple[Series, Any]], templates: Sequence[str]) -> Plot:
    from matplotlib.lines import Line2D

    fig = figure(max(6.4, 3.6 * len(templates)), 3.3)
    axes = panels(fig, len(templates), len(templates), sharey=True)
    for i, (ax, template) in enumerate(zip(axes, templates, strict=True)):
        for s, table in shown:
            years = table.get(template)
            if not years:
                continue
            xs = list(years)
            n = [sum(years[y].values()) for y in xs]
            correct = [years[y]["correct"] / k for y, k in zip(xs, n, strict=True)]
            known = [(k - years[y]["incorrect"]) / k for y, k in zip(xs, n, strict=True)]
            ax.plot(xs, correct, marker="o", ms=3.5, color=color(s), label=s.tick)
            ax.plot(xs, known, ls="--", lw=1, color=color(s))
        ax.set_title(template, loc="left")
        ax.set_ylim(-0.04, 1.06)
        _years_axis(ax)
        percent_axis(ax)
        ax.set_xlabel("year asked about")
        if i == 0:
            ax.set_ylabel("share of facts")
    handles = [Line2D([], [], color=color(s), marker="o", ms=3.5, label=s.tick) for s, _ in shown]
    handles += [Line2D([], [], color="#555555", label="Correct"),
                Line2D([], [], color="#555555", ls="--", lw=1, label="Correct or Partial")]
    fig.legend(handles=handles, loc="outside lower center", ncol=min(4, len(handles)), frameon=False)
    return Plot("chroknow-correct_by_year", "ChroKnow: facts Correct per year",
                "Per template, the share of facts whose year is Correct (every greedy answer right; the paper's "
                "'Percentage of Correct', solid) and Correct or Partial (dashed), summed over domains and splits.",
                fig)


def _categories_by_year(shown: Sequence[tuple[Series, Any]], templates: Sequence[str]) -> Plot:
    cells = [(s, t, table[t]) for s, table in shown for t in templates if table.get(t)]
    per_row = min(len(templates), 3)
    rows = (len(cells) + per_row - 1) // per_row
    fig = figure(max(6.4, 3.6 * per_row), 2.7 * rows + 0.6)
    axes = panels(fig, len(cells), per_row, sharey=True)
    for ax, (s, template, years) in zip(axes, cells, strict=True):
        xs = list(years)
        bottom = [0.0] * len(xs)
        for c in YEAR_CATEGORIES:
            shares = [years[y][c] / max(1, sum(years[y].values())) for y in xs]
            ax.bar(xs, shares, bottom=bottom, color=YEAR_COLORS[c], label=YEAR_NAMES[c], width=0.8,
                   edgecolor="white", linewidth=0.4)
            bottom = [b + v for b, v in zip(bottom, shares, strict=True)]
        ax.set_title(f"{s.tick} · {template}", loc="left", fontsize=8.5)
        ax.set_ylim(0, 1)
        _years_axis(ax)
        ax.grid(axis="x", visible=False)
        percent_axis(ax)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=4, frameon=False)
    return Plot("chroknow-categories_by_year", "ChroKnow: year categories by year",
                "Per model and template, the facts of each year split into Correct, Partial (greedy partly right; "
                "only a T = 0.7 answer right) and Incorrect, as process.py's classify_knowledge_fuzz decides.", fig)


@plot("chroknow.fact_categories")
def fact_categories(series: Sequence[Series]) -> list[Plot | Omitted]:
    tables = []
    for s in series:
        v = s.get("chroknow.fact_categories")
        if v is None or not v.groups:
            continue
        table: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(FACT_CATEGORIES, 0))
        for group, cell in v.groups.items():
            for c in FACT_CATEGORIES:
                table[group.split("/")[0]][c] += int(cell.get(c, 0))
        tables.append((s, dict(table)))
    if not tables:
        return []
    templates = _templates([t for _, t in tables])
    fig = figure(max(6.4, 3.4 * len(templates) + 0.8), 1.0 + 0.32 * len(tables) + 0.9, wspace=0.06)
    axes = panels(fig, len(templates), len(templates), sharey=True)
    for ax, template in zip(axes, templates, strict=True):
        rows = []
        for _, table in tables:
            counts = table.get(template, dict.fromkeys(FACT_CATEGORIES, 0))
            n = max(1, sum(counts.values()))
            rows.append([counts[c] / n for c in FACT_CATEGORIES])
        stacked_bars(ax, [s.tick for s, _ in tables], rows, list(FACT_CATEGORIES),
                     [FACT_COLORS[c] for c in FACT_CATEGORIES])
        ax.set_title(template, loc="left")
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=4, frameon=False)
    return [Plot("chroknow-fact_categories", "ChroKnow: what each model knows of a fact across its years",
                 "Per template, the facts Known (Correct every year), Cut-off (known, then lost; or unknown, then "
                 "known), Partial_known (anything else) and Unknown (never), summed over domains and splits.", fig)]
