"""TempoMed-Bench plots: accuracy by year (Wilson bars, trend, Mann-Kendall p, cutoff estimate), historical
vs up-to-date, option-group shares, consistency patterns and the probe-answer heatmap, three-way scores."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from chronokg.eval.log import SampleRecord
from chronokg.metrics import patterns
from chronokg.metrics.tempomed import GROUP_ORDER
from chronokg.reports.plots import Omitted, Plot, color, figure, panels, percent_axis, plot, stacked_bars
from chronokg.reports.series import Series, short

TARGETS = {"up_to_date": "up-to-date target", "historical": "historical target"}
GROUP_NAMES = {"current_guideline": "up-to-date", "prior_guideline": "outdated", "interference": "distractor",
               "unknown": "unknown (abstain)", "invalid": "invalid"}
GROUP_COLORS = {"current_guideline": "#0072B2", "prior_guideline": "#E69F00", "interference": "#CC79A7",
                "unknown": "#BBBBBB", "invalid": "#333333"}
PATTERN_NAMES = {patterns.CORRECT: "correct transition", patterns.WRONG: "wrong transition",
                 patterns.ONLY_PRIOR: "only knows prior", patterns.ONLY_LATEST: "only knows latest",
                 patterns.ALL_TRUE: "all true", patterns.ALL_FALSE: "all false",
                 patterns.INCONSISTENT: "inconsistent"}
PATTERN_COLORS = {patterns.CORRECT: "#009E73", patterns.WRONG: "#D55E00", patterns.ONLY_PRIOR: "#E69F00",
                  patterns.ONLY_LATEST: "#0072B2", patterns.ALL_TRUE: "#56B4E9", patterns.ALL_FALSE: "#999999",
                  patterns.INCONSISTENT: "#CC79A7"}
STATUS_NAMES = {"correct": "correct on the target date", "stale": "stale (held earlier)",
                "later": "later (held only after)", "never": "never correct"}
STATUS_COLORS = {"correct": "#009E73", "stale": "#E69F00", "later": "#56B4E9", "never": "#999999"}


def _with(series: Sequence[Series], metric: str) -> list[tuple[Series, Any]]:
    return [(s, v) for s in series if (v := s.get(metric)) is not None and v.groups]


# --- accuracy by year --------------------------------------------------------------------------------------


DECLARED: dict[str, Any] = {"color": "#D55E00", "ls": "-", "lw": 1.4}
ESTIMATED: dict[str, Any] = {"color": "#D55E00", "ls": ":", "lw": 1.6}


def cutoff_at(s: Series) -> tuple[float | None, str]:
    """(where the model's knowledge cutoff, as its run recorded it, falls on a year axis whose year Y spans
    Y - 0.5 to Y + 0.5; its date and how it was found), or (None, "no cutoff") where the run has none, as the
    report's cutoff table says. 31 December 2014 falls at 2014.5, 1 January 2018 at 2017.5."""
    import datetime as dt

    recorded = s.cutoff or {}
    if not recorded.get("date"):
        return None, "no cutoff"
    day = dt.date.fromisoformat(str(recorded["date"])[:10])
    days = (dt.date(day.year + 1, 1, 1) - dt.date(day.year, 1, 1)).days
    at = day.year - 0.5 + day.timetuple().tm_yday / days
    return at, f"cutoff {day.isoformat()} ({'declared' if recorded.get('estimated') is False else 'estimated'})"


@plot("tempomed.accuracy_by_year")
def accuracy_by_year(series: Sequence[Series]) -> list[Plot | Omitted]:
    from matplotlib.lines import Line2D

    shown = _with(series, "tempomed.accuracy_by_year")
    if not shown:
        return []
    per_row = 2
    rows = (len(shown) + per_row - 1) // per_row
    fig = figure(max(6.4, 4.2 * min(len(shown), per_row)), 3.0 * rows + 0.5)
    axes = panels(fig, len(shown), per_row, sharey=True)
    drawn: set[str] = set()
    for i, (ax, (s, v)) in enumerate(zip(axes, shown, strict=True)):
        labels = list(v.groups)
        cells = [v.groups[k] for k in labels]
        xs = [float(c["x"]) for c in cells]
        ys = [float(c["accuracy"]) for c in cells]
        lows = [max(0.0, y - float(c["wilson95"][0])) for y, c in zip(ys, cells, strict=True)]
        highs = [max(0.0, float(c["wilson95"][1]) - y) for y, c in zip(ys, cells, strict=True)]
        ax.errorbar(xs, ys, yerr=[lows, highs], fmt="o", ms=4, color=color(s), ecolor=color(s), elinewidth=1,
                    capsize=2.5)
        trend = v.details.get("trend")
        if trend is not None and len(xs) >= 2:
            steps = [xs[0] + (xs[-1] - xs[0]) * k / 100 for k in range(101)]
            line = [min(1.0, max(0.0, trend["slope_per_year"] * x + trend["intercept"])) for x in steps]
            ax.plot(steps, line, ls="--", lw=1.2, color="#444444")
        at, said = cutoff_at(s)
        if at is not None:
            kind = "declared" if said.endswith("(declared)") else "estimated"
            drawn.add(kind)
            ax.axvline(at, **(DECLARED if kind == "declared" else ESTIMATED))
        mk = v.details.get("mann_kendall")
        first = f"Mann-Kendall p = {mk['p']:.2g} ({mk['trend']})" if mk else "Mann-Kendall: too few years"
        second = [f"trend {trend['slope_per_year'] * 100:+.1f} points/year"] if trend is not None else []
        second.append(said)
        ax.set_title(s.tick, loc="left", fontsize=9.5, fontweight="bold", pad=22)
        ax.text(0, 1.02, f"{first}\n{' · '.join(second)}", transform=ax.transAxes, fontsize=7.5, va="bottom",
                ha="left", color="#333333")
        ax.set_xticks(xs, labels, rotation=90, ha="center")
        ax.set_ylim(-0.04, 1.06)
        percent_axis(ax)
        if i % per_row == 0:
            ax.set_ylabel("up-to-date accuracy")
        ax.set_xlabel("year of the up-to-date version")
    handles = [Line2D([], [], color="#555555", marker="o", ls="", ms=4, label="accuracy (Wilson 95 %)"),
               Line2D([], [], color="#444444", ls="--", label="least-squares trend (clipped to 0–100 %)"),
               *([Line2D([], [], label="declared knowledge cutoff", **DECLARED)] if "declared" in drawn else []),
               *([Line2D([], [], label="estimated knowledge cutoff", **ESTIMATED)] if "estimated" in drawn else [])]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, frameon=False)
    start = shown[0][1].details.get("start_year")
    return [Plot("tempomed-accuracy_by_year", "TempoMed: up-to-date accuracy by year",
                 f"Up-to-date-targeted items by the year of the current version (years up to {start} merged into "
                 "one bucket, placed at its mean year), with Wilson 95 % intervals, the unweighted least-squares "
                 "trend over the bucket means, the two-sided Mann-Kendall p-value, and each model's knowledge "
                 "cutoff as its run recorded it (the report's cutoff table): declared (solid) or estimated "
                 "(dotted), none drawn where the run found none.", fig)]


# --- historical vs up-to-date ------------------------------------------------------------------------------


@plot("tempomed.historical_ratio")
def historical_vs_up_to_date(series: Sequence[Series]) -> list[Plot | Omitted]:
    """Horizontal bars, a pair per column: the labels sit on the y axis, one per line, and never overlap however
    many columns or however long their names."""
    from matplotlib.patches import Patch

    shown = [(s, v) for s in series if (v := s.get("tempomed.historical_ratio")) is not None
             and any(v.groups.get(t) is not None for t in TARGETS)]
    if not shown:
        return [Omitted("tempomed-historical_vs_up_to_date", "no up-to-date or historical MCQ items")]
    fig = figure(7.2, 0.75 + 0.5 * len(shown) + 0.5)
    ax = fig.subplots()
    width = 0.38
    colors = {"up_to_date": "#0072B2", "historical": "#E69F00"}
    used_boot = False
    ys = list(range(len(shown)))[::-1]
    for y0, (s, v) in zip(ys, shown, strict=True):
        for j, target in enumerate(TARGETS):
            acc = v.groups.get(target)
            if acc is None:
                continue
            interval, boot = _interval(s, target)
            used_boot |= boot
            y = y0 + (0.5 - j) * width
            err = [[max(0.0, acc - interval[0])], [max(0.0, interval[1] - acc)]] if interval else None
            ax.barh(y, acc, height=width * 0.95, color=colors[target], xerr=err, capsize=2.5,
                    error_kw={"elinewidth": 1, "ecolor": "#222222"})
            right = interval[1] if interval else acc
            ax.text(min(right, 1.0) + 0.015, y, f"{acc:.0%}", va="center", fontsize=7)
    ticks = [f"{s.tick}\nhistorical ÷ up-to-date " + (f"{v.value:.2f}" if v.value is not None else "—")
             for s, v in shown]
    ax.set_yticks(ys, ticks)
    ax.set_xlim(0, 1.12)
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
    percent_axis(ax, "x")
    ax.set_xlabel("accuracy")
    ax.grid(axis="y", visible=False)
    fig.legend(handles=[Patch(color=colors[t], label=name) for t, name in TARGETS.items()],
               loc="outside upper center", ncol=2, frameon=False)
    how = "cluster-bootstrap 95 % intervals over source MCQs" if used_boot else "Wilson 95 % intervals"
    return [Plot("tempomed-historical_vs_up_to_date", "TempoMed: historical vs up-to-date accuracy",
                 f"Accuracy on items asking for the up-to-date and for the historical recommendation, with {how}; "
                 "under each model, historical ÷ up-to-date accuracy.", fig)]


def _interval(s: Series, target: str) -> tuple[list[float] | None, bool]:
    boot = s.get("tempomed.accuracy_bootstrap")
    if boot is not None and isinstance(boot.groups.get(target), dict):
        return [float(x) for x in boot.groups[target]["bootstrap95"]], True
    acc = s.get("tempomed.accuracy")
    if acc is not None and isinstance(acc.groups.get(target), dict):
        return [float(x) for x in acc.groups[target]["wilson95"]], False
    return None, False


# --- stacked shares by target (option groups, three-way) ----------------------------------------------------


def _by_target(series: Sequence[Series], metric: str, parts: dict[str, str], colors: dict[str, str],
               key: str = "{}") -> Any:
    shown = _with(series, metric)
    targets = [t for t in TARGETS if any(t in v.groups for _, v in shown)]
    if not shown or not targets:
        return None
    height = 0.9 + 0.32 * len(shown)
    fig = figure(3.6 * len(targets) + 0.8, height + 0.9, wspace=0.06)
    axes = panels(fig, len(targets), len(targets), sharey=True)
    for ax, target in zip(axes, targets, strict=True):
        cells = [v.groups.get(target) or {} for _, v in shown]
        rows = [[float(cell.get(key.format(p), 0.0)) for p in parts] for cell in cells]
        stacked_bars(ax, [s.tick for s, _ in shown], rows, list(parts.values()), [colors[p] for p in parts])
        sizes = sorted({int(cell.get("n", 0)) for cell in cells})
        n = f"{sizes[0]:,} items" + (" each" if len(shown) > 1 else "") if len(sizes) == 1 else \
            f"{sizes[0]:,}–{sizes[-1]:,} items"
        ax.set_title(f"{TARGETS[target]} ({n})", loc="left")
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=min(5, len(parts)), frameon=False)
    return fig


@plot("tempomed.option_groups")
def option_groups(series: Sequence[Series]) -> list[Plot | Omitted]:
    fig = _by_target(series, "tempomed.option_groups", {g: GROUP_NAMES[g] for g in GROUP_ORDER}, GROUP_COLORS)
    if fig is None:
        return []
    return [Plot("tempomed-option_groups", "TempoMed: which option the answers chose",
                 "Share of answers choosing the up-to-date, outdated, distractor or unknown option (by its original "
                 "label, whatever the displayed letter), or no valid label, per target.", fig)]


@plot("tempomed.three_way")
def three_way(series: Sequence[Series]) -> list[Plot | Omitted]:
    fig = _by_target(series, "tempomed.three_way", STATUS_NAMES, STATUS_COLORS, key="share_{}")
    if fig is None:
        return []
    return [Plot("tempomed-three_way", "TempoMed: correct now, stale, or never",
                 "Per MCQ item, whether the chosen option's recommendation was in force on the question's target "
                 "date (correct), only before it (stale: the model's knowledge is outdated), only after it "
                 "(later), or never in the decision's history.", fig)]


# --- consistency: pattern shares and the probe-answer heatmap ------------------------------------------------


@plot("tempomed.consistency")
def consistency(series: Sequence[Series]) -> list[Plot | Omitted]:
    shown = [(s, v) for s, v in _with(series, "tempomed.consistency") if v.details.get("differences")]
    if not shown:
        return [Omitted("tempomed-consistency", "no probe answers in these runs, generate with --probes"),
                Omitted("tempomed-probe_heatmap", "no probe answers in these runs")]
    fig = figure(7.5, 1.1 + 0.34 * len(shown) + 0.7)
    ax = fig.subplots()
    labels = [f"{s.tick} ({v.details.get('differences', 0):,} differences)" for s, v in shown]
    rows = [[float(v.groups[p]["share"] or 0.0) for p in patterns.ORDER] for _, v in shown]
    stacked_bars(ax, labels, rows, [PATTERN_NAMES[p] for p in patterns.ORDER],
                 [PATTERN_COLORS[p] for p in patterns.ORDER])
    handles, names = ax.get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncol=4, frameon=False)
    rules = sorted({str(v.details.get("rule")) for _, v in shown})
    out = [Plot("tempomed-consistency", "TempoMed: temporal-consistency patterns",
                "Pattern of each probed difference from its year-sweep yes/no answers (rule: "
                + ", ".join(rules) + ").", fig)]
    heat = probe_heatmap(series)
    return [*out, heat if heat is not None else Omitted("tempomed-probe_heatmap", "no probe answers in the samples")]


@dataclass(frozen=True)
class ProbeGrid:
    """Every change pair's answer category per target year, and the years of its two versions."""

    pairs: list[str]
    years: list[int]
    cells: dict[str, dict[tuple[str, int], int]]  # series label -> (pair, year) -> category
    current: dict[str, int]
    prior: dict[str, int]


CATEGORIES = ("current only", "prior only", "both Yes", "both No", "don't know", "invalid or split")
CATEGORY_COLORS = ("#0072B2", "#E69F00", "#009E73", "#8C8C8C", "#E6E6E6", "#CC79A7")


def _majority(labels: Counter[str]) -> str:
    top = labels.most_common(2)
    if not top or (len(top) == 2 and top[0][1] == top[1][1]):
        return "split"
    return top[0][0]


def category(prior: str | None, current: str | None) -> int | None:
    """Which cell colour: the two statements' majority answers (A = Yes, B = No, C = don't know)."""
    if prior is None or current is None:
        return None
    if prior not in ("A", "B", "C") or current not in ("A", "B", "C"):
        return 5
    if "C" in (prior, current):
        return 4
    return {("B", "A"): 0, ("A", "B"): 1, ("A", "A"): 2, ("B", "B"): 3}[(prior, current)]


def probe_grid(series: Sequence[Series]) -> ProbeGrid | None:
    answers: dict[str, dict[tuple[str, str, int], Counter[str]]] = {}
    current: dict[str, int] = {}
    prior: dict[str, int] = {}
    years: set[int] = set()
    for s in series:
        mine: dict[tuple[str, str, int], Counter[str]] = defaultdict(Counter)
        for r in _probes(s.samples):
            f = r.fields
            pair, source, year = str(f["pair"]), str(f["statement_source"]), int(f["target_year"])
            mine[(pair, source, year)][str(f.get("prediction") or "INVALID")] += 1
            years.add(year)
            if f.get("statement_year") is not None:
                (current if source == "current" else prior)[pair] = int(f["statement_year"])
        if mine:
            answers[s.label] = mine
    if not answers:
        return None
    cells: dict[str, dict[tuple[str, int], int]] = {}
    pairs: set[str] = set()
    for label, mine in answers.items():
        grid: dict[tuple[str, int], int] = {}
        for pair, year in {(p, y) for p, _, y in mine}:
            pairs.add(pair)
            got = category(_maybe(mine.get((pair, "prior", year))), _maybe(mine.get((pair, "current", year))))
            if got is not None:
                grid[(pair, year)] = got
        cells[label] = grid
    order = sorted(pairs, key=lambda p: (current.get(p, 9999), prior.get(p, 9999), p))
    return ProbeGrid(pairs=order, years=sorted(years), cells=cells, current=current, prior=prior)


def _maybe(labels: Counter[str] | None) -> str | None:
    return None if labels is None else _majority(labels)


def _probes(samples: Sequence[SampleRecord]) -> list[SampleRecord]:
    return [r for r in samples if r.family == "tempomed" and r.fields.get("kind") == "probe"
            and r.fields.get("pair") is not None and r.fields.get("target_year") is not None]


def probe_heatmap(series: Sequence[Series], max_rows: int = 600) -> Plot | None:
    """Change pairs (rows, by the year of the current version) x target years (columns), a panel per series,
    each cell the pair's answers to the prior and the current statement for that year."""
    import numpy as np
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    grid = probe_grid(series)
    if grid is None:
        return None
    pairs = grid.pairs
    if len(pairs) > max_rows:  # evenly spaced rows keep the staircase's shape
        pairs = [pairs[round(i * (len(pairs) - 1) / (max_rows - 1))] for i in range(max_rows)]
    labels = [s.label for s in series if s.label in grid.cells]
    col = {y: j for j, y in enumerate(grid.years)}
    per_row = 4
    n_rows = (len(labels) + per_row - 1) // per_row
    height = min(9.0, max(3.2, 1.2 + 0.011 * len(pairs)))
    fig = figure(max(4.6, 1.2 + 2.7 * min(len(labels), per_row)), height * n_rows + 0.6)
    axes = panels(fig, len(labels), per_row, sharey=True)
    cmap = ListedColormap(CATEGORY_COLORS).with_extremes(bad="white")
    norm = BoundaryNorm(list(range(len(CATEGORIES) + 1)), len(CATEGORIES))
    for i, (ax, label) in enumerate(zip(axes, labels, strict=True)):
        data = np.full((len(pairs), len(grid.years)), np.nan)
        for r, pair in enumerate(pairs):
            for year, j in col.items():
                value = grid.cells[label].get((pair, year))
                if value is not None:
                    data[r, j] = value + 0.5
        ax.imshow(np.ma.masked_invalid(data), cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
        xs: list[float] = []
        ys: list[float] = []
        for r, pair in enumerate(pairs):
            since = grid.current.get(pair)
            if since is None:
                continue
            x = (col[since] if since in col else (-1 if since < grid.years[0] else len(grid.years))) - 0.5
            xs += [x, x]
            ys += [r - 0.5, r + 0.5]
        ax.plot(xs, ys, color="black", lw=1.0)
        ax.set_xlim(-0.5, len(grid.years) - 0.5)
        ax.set_ylim(len(pairs) - 0.5, -0.5)
        ticks = [j for j, y in enumerate(grid.years) if y % 5 == 0] or list(range(len(grid.years)))
        ax.set_xticks(ticks, [str(grid.years[j]) for j in ticks])
        ax.set_xlabel("target year of the probe")
        ax.set_title(short(label), loc="left")
        ax.grid(False)
        if i % per_row == 0:
            positions, names = _year_ticks(pairs, grid.current)
            ax.set_yticks(positions, names)
            shown = f"{len(pairs):,}" + (f" of {len(grid.pairs):,}" if len(pairs) < len(grid.pairs) else "")
            ax.set_ylabel(f"change pairs ({shown})\nby year of the current version")
    handles: list[Any] = [Patch(facecolor=c, edgecolor="#999999", lw=0.5, label=n)
                          for n, c in zip(CATEGORIES, CATEGORY_COLORS, strict=True)]
    handles.append(Line2D([], [], color="black", lw=1.0, label="current version's year"))
    fig.legend(handles=handles, loc="outside lower center", ncol=4 if len(labels) > 1 else 2, frameon=False)
    return Plot("tempomed-probe_heatmap", "TempoMed: probe answers per change pair across years",
                "Each row a probed difference, each column a target year: the model's answers to \"was the prior "
                "recommendation in force in year Y?\" and \"was the current one?\" (Yes to the current only, to "
                "the prior only, to both, to neither, don't know, or an invalid or evenly split answer). A model "
                "that tracks the change answers 'prior only' left of the black line and 'current only' right of "
                "it." + (f" {len(pairs):,} of {len(grid.pairs):,} pairs shown, evenly spaced." if len(pairs) <
                         len(grid.pairs) else ""), fig)


def _year_ticks(pairs: Sequence[str], current: dict[str, int]) -> tuple[list[int], list[str]]:
    """A tick at the first row of each current-version year, skipping years too close to the last one shown."""
    gap = max(1, len(pairs) // 28)
    positions: list[int] = []
    names: list[str] = []
    last: int | None = None
    for r, pair in enumerate(pairs):
        year = current.get(pair)
        if year is None or year == last:
            continue
        last = year
        if positions and r - positions[-1] < gap:
            continue
        positions.append(r)
        names.append(str(year))
    return positions, names


SPLIT_NAMES = {"all": "all items", "with_counterpart": "counterpart passage retrieved",
               "without_counterpart": "counterpart passage not retrieved"}
SPLIT_COLORS = {"all": "#0072B2", "with_counterpart": "#E69F00", "without_counterpart": "#009E73"}


@plot("tempomed.table3")
def table3(series: Sequence[Series]) -> list[Plot | Omitted]:
    """Table 3: accuracy per scope (up-to-date / historical) and retrieval arm, split by the counterpart passage."""
    from chronokg.metrics.tempomed import RAG_SCOPES

    shown = _with(series, "tempomed.table3")
    columns = [(s, arm, scope) for s, v in shown
               for arm in dict.fromkeys(k.split(" · ")[0] for k in v.groups) for scope in RAG_SCOPES.values()
               if f"{arm} · {scope} · all" in v.groups]
    if not any(arm != "none" for _, arm, _ in columns):
        return [Omitted("tempomed-table3", "no run used a retrieval arm, eval run --rag, so the table alone gives the "
                        "no-retrieval accuracy")]
    fig = figure(7.6, 0.62 * len(columns) + 1.3)
    ax = fig.subplots()
    height = 0.26
    names = {v: k.replace("_", "-") for k, v in RAG_SCOPES.items()}
    ys = list(range(len(columns)))[::-1]
    for k, split in enumerate(SPLIT_NAMES):
        xs, at = [], []
        for y, (s, arm, scope) in zip(ys, columns, strict=True):
            cell = s.get("tempomed.table3").groups.get(f"{arm} · {scope} · {split}")  # type: ignore[union-attr]
            if cell is not None:
                at.append(y + (1 - k) * height)
                xs.append(float(cell["accuracy"]))
                ax.text(xs[-1] + 0.01, at[-1], f"{xs[-1]:.2f} (n={cell['n']})", va="center", fontsize=6)
        ax.barh(at, xs, height=height, color=SPLIT_COLORS[split], label=SPLIT_NAMES[split])
    ax.set_yticks(ys, [f"{s.tick}\n--rag {arm}, {names[scope]}" for s, arm, scope in columns], fontsize=7)
    ax.set_xlim(0, 1.18)
    percent_axis(ax, "x")
    ax.set_xlabel("accuracy")
    ax.grid(axis="y", visible=False)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=3, frameon=False)
    return [Plot("tempomed-table3", "TempoMed Table 3: accuracy with retrieved passages",
                 "Accuracy on the up-to-date (original_current_guideline) and historical (counterpart_prior_guideline) "
                 "items per retrieval arm ('none': no --rag), as the seed's RAG evaluation summarises a scope, and "
                 "split by whether the passages given held the other version of the item's change pair.", fig)]
