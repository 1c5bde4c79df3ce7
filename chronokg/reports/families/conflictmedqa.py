"""ConflictMedQA plots: ECDA_adh / ECDA_rej / ECDA_all and IKCR, overall and by factor, change category and
disease group (the paper's Table 4 and Figures 2-3 read this way), a panel per run and model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chronokg.metrics.conflictmedqa import SLICES
from chronokg.reports.plots import Omitted, Plot, color, figure, panels, percent_axis, plot
from chronokg.reports.series import Series

SLICE_NAMES = {"factor": "factor", "change_category": "change category", "disease_group": "disease group"}
ADH_COLOR, REJ_COLOR = "#0072B2", "#E69F00"


def rows(values: Sequence[Any]) -> list[tuple[str, str]]:
    """(slice, name) rows top to bottom: overall first, then every slice's groups in the metrics' order, the union
    over the given MetricValues (a slice no column has is left out)."""
    out: list[tuple[str, str]] = [("", "overall")]
    for s in SLICES:
        for v in values:
            out += [(s, name) for name in v.groups.get(s, {}) if (s, name) not in out]
    return out


def value_at(v: Any, row: tuple[str, str]) -> float | None:
    """The metric's value on a row (None: undefined, or the column has no such group)."""
    if v is None:
        return None
    slice_, name = row
    x = v.value if not slice_ else v.groups.get(slice_, {}).get(name)
    return None if x is None else float(x)


def _label_rows(ax: Any, labels: list[tuple[str, str]]) -> list[int]:
    """y positions top to bottom, the slice named beside its first row, dotted lines between slices."""
    ys = list(range(len(labels)))[::-1]
    ticks = [name if i == 0 or labels[i - 1][0] == s else f"{SLICE_NAMES[s]}: {name}"
             for i, (s, name) in enumerate(labels)]
    ax.set_yticks(ys, ticks)
    for i in range(1, len(labels)):
        if labels[i][0] != labels[i - 1][0]:
            ax.axhline(ys[i] + 0.5, color="#999999", lw=0.6, ls=":")
    ax.set_ylim(-0.6, len(labels) - 0.4)
    ax.grid(axis="y", visible=False)
    return ys


@plot("conflictmedqa.ecda_all")
def ecda(series: Sequence[Series]) -> list[Plot | Omitted]:
    shown = [s for s in series if s.get("conflictmedqa.ecda_all") is not None]
    if not shown:
        return []
    labels = rows([v for s in shown for m in ("ecda_adh", "ecda_rej", "ecda_all")
                   if (v := s.get(f"conflictmedqa.{m}")) is not None])
    per_row = 2
    n_rows = (len(shown) + per_row - 1) // per_row
    fig = figure(max(6.4, 4.6 * min(len(shown), per_row)), (0.24 * len(labels) + 1.0) * n_rows + 0.4, wspace=0.05)
    axes = panels(fig, len(shown), per_row, sharey=True)
    for i, (ax, s) in enumerate(zip(axes, shown, strict=True)):
        ys = _label_rows(ax, labels)
        adh = [value_at(s.get("conflictmedqa.ecda_adh"), r) for r in labels]
        rej = [value_at(s.get("conflictmedqa.ecda_rej"), r) for r in labels]
        both = [value_at(s.get("conflictmedqa.ecda_all"), r) for r in labels]
        ax.barh([y + 0.19 for y in ys], [x or 0.0 for x in adh], height=0.36, color=ADH_COLOR,
                label="ECDA_adh (up-to-date endorsed)")
        ax.barh([y - 0.19 for y in ys], [x or 0.0 for x in rej], height=0.36, color=REJ_COLOR,
                label="ECDA_rej (outdated rejected)")
        pts = [(x, y) for x, y in zip(both, ys, strict=True) if x is not None]
        ax.plot([x for x, _ in pts], [y for _, y in pts], "D", ms=4.5, color="black", ls="none",
                label="ECDA_all (mean of the two)")
        for x, y in pts:
            ax.text(1.02, y, f"{x:.2f}", va="center", fontsize=7, transform=ax.get_yaxis_transform())
        ax.set_xlim(0, 1)
        percent_axis(ax, "x")
        ax.set_title(s.tick, loc="left", fontsize=9.5, fontweight="bold", pad=14)  # black: a yellow title is unreadable
        if i == 0:
            handles, names = ax.get_legend_handles_labels()
            fig.legend(handles, names, loc="outside lower center", ncol=3, frameon=False)
    return [Plot("conflictmedqa-ecda", "ConflictMedQA: ECDA by factor, change category and disease group",
                 "Per run and model: the share of up-to-date scenarios endorsed (ECDA_adh, blue), of outdated "
                 "scenarios rejected (ECDA_rej, orange) and their mean ECDA_all (diamond, value at the right; Eq. 3), "
                 "overall and per group. A missing bar or diamond: no scenario of that version in the group.", fig)]


@plot("conflictmedqa.ikcr")
def ikcr(series: Sequence[Series]) -> list[Plot | Omitted]:
    shown = [(s, v) for s in series if (v := s.get("conflictmedqa.ikcr")) is not None]
    if not shown:
        return []
    labels = rows([v for _, v in shown])
    step = min(0.14, 0.7 / len(shown))
    fig = figure(7.0, 0.3 * len(labels) + 1.4 + 0.18 * ((len(shown) + 1) // 2))
    ax = fig.subplots()
    ys = _label_rows(ax, labels)
    for k, (s, v) in enumerate(shown):
        offset = step * ((len(shown) - 1) / 2 - k)
        xs = [value_at(v, r) for r in labels]
        drawn = [(x, y + offset) for x, y in zip(xs, ys, strict=True) if x is not None]
        ax.plot([x for x, _ in drawn], [y for _, y in drawn], "o", ms=4.5, color=color(s), ls="none", label=s.tick)
        for x, y in zip(xs, ys, strict=True):
            if x is None:  # no pair with a YES: IKCR undefined (0/0), said rather than drawn as 0
                ax.plot([0.0], [y + offset], "o", ms=4.5, mfc="white", mec=color(s), ls="none")
                ax.text(0.025, y + offset, "n/a", va="center", fontsize=6, color=color(s))
    ax.set_xlim(-0.03, 1.03)
    percent_axis(ax, "x")
    ax.set_xlabel("IKCR: pairs with both versions endorsed ÷ pairs with at least one endorsed\n(lower is better)")
    # below the axes, not beside them: long model names beside would squeeze the axes to a sliver
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=2 if len(shown) > 3 else len(shown),
               frameon=False)
    return [Plot("conflictmedqa-ikcr", "ConflictMedQA: IKCR by factor, change category and disease group",
                 "Internal knowledge conflict (Eq. 4), pooled over the concept × factor pairs of each group, a dot "
                 "per run and model; a hollow dot marked 'n/a' where no pair has a YES (0/0, undefined).", fig)]


def _heatmap(series: Sequence[Series], metric: str, cell: Any, title: str, label: str, file: str,
             caption: str) -> list[Plot | Omitted]:
    """A panel per run and model: change categories (rows) x factors (columns), the value in each cell."""
    shown = [(s, v) for s in series if (v := s.get(metric)) is not None and v.groups]
    if not shown:
        return []
    cats = list(dict.fromkeys(c for _, v in shown for c in v.groups))
    factors = list(dict.fromkeys(f for _, v in shown for c in v.groups.values() for f in c))
    fig = figure(1.6 + 0.62 * len(factors), (0.42 * len(cats) + 1.9) * len(shown))
    axes = panels(fig, len(shown), 1)
    for ax, (s, v) in zip(axes, shown, strict=True):
        values = [[cell(v.groups.get(c, {}).get(f)) for f in factors] for c in cats]
        grid = [[float("nan") if x is None else x for x in row] for row in values]
        ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
        for i, row in enumerate(values):
            for j, x in enumerate(row):
                ax.text(j, i, "n/a" if x is None else f"{x:.2f}", ha="center", va="center", fontsize=7,
                        color="black" if x is not None and x > 0.6 else "white" if x is not None else "#666666")
        ax.set_xticks(range(len(factors)), factors, rotation=90, ha="center", fontsize=7.5)
        ax.set_yticks(range(len(cats)), cats, fontsize=8)
        ax.grid(False)
        ax.set_title(f"{s.tick}: {label}", loc="left", fontsize=9.5, fontweight="bold")
    return [Plot(file, title, caption, fig)]


@plot("conflictmedqa.ecda_category_factor")
def ecda_category_factor(series: Sequence[Series]) -> list[Plot | Omitted]:
    return _heatmap(series, "conflictmedqa.ecda_category_factor", lambda c: None if c is None else c.get("all"),
                    "ConflictMedQA: ECDA_all by change category and factor", "ECDA_all",
                    "conflictmedqa-ecda-category-factor",
                    "ECDA_all (Eq. 3) in each change category x factor cell (the paper's Figure 11; ECDA_adh and "
                    "ECDA_rej per cell are in the table); 'n/a' where a cell lacks scenarios of one version.")


@plot("conflictmedqa.ikcr_category_factor")
def ikcr_category_factor(series: Sequence[Series]) -> list[Plot | Omitted]:
    return _heatmap(series, "conflictmedqa.ikcr_category_factor", lambda c: c,
                    "ConflictMedQA: IKCR by change category and factor", "IKCR (lower is better)",
                    "conflictmedqa-ikcr-category-factor",
                    "IKCR (Eq. 4) in each change category x factor cell (the paper's Figure 12); 'n/a' where no pair "
                    "of the cell has a YES (0/0).")
