"""The plot registry: one function per metric name, found in `chronokg/reports/families/<family>.py`.

A plot function takes the series that have the metric and returns `Plot`s (a figure with a file name,
a title and a caption). It is declared once, with the `plot` decorator:

    @plot("conflictmedqa.ecda")
    def ecda(series: Sequence[Series]) -> list[Plot]:
        fig = figure(6, 3.5)
        ...
        return [Plot("conflictmedqa-ecda", "ECDA by factor", "what it shows", fig)]

matplotlib is imported inside the functions that draw (never at import time): `import chronokg.reports`
stays light, and a missing matplotlib is one clear error naming the `reports` extra.
"""

from __future__ import annotations

import importlib
import io
import pkgutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chronokg.errors import ChronoKGError
from chronokg.registry import Registry
from chronokg.reports.series import Series

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure


@dataclass(frozen=True)
class Plot:
    """A drawn figure: `name` is the file stem (plots/<name>.png and .svg)."""

    name: str
    title: str
    caption: str
    figure: Figure


PlotFn = Callable[[Sequence[Series]], list[Plot]]
PLOTS: Registry[PlotFn] = Registry("plot")

# Okabe-Ito, colour-blind safe; series keep their colour in every plot of a report.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
STYLE: Any = {  # rcParams (typed Any: matplotlib's stubs want literal keys)
    "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8,
    "xtick.labelsize": 8, "ytick.labelsize": 8, "axes.spines.top": False, "axes.spines.right": False,
    "axes.grid": True, "grid.alpha": 0.3, "grid.linewidth": 0.6, "axes.axisbelow": True,
    "svg.fonttype": "path", "svg.hashsalt": "chronokg", "figure.dpi": 100, "savefig.dpi": 150,
}


def plot(metric: str) -> Callable[[PlotFn], PlotFn]:
    """Declare `fn` as the plots of `metric` (a metric name of `chronokg.metrics`)."""
    def decorate(fn: PlotFn) -> PlotFn:
        PLOTS.register(metric, fn)
        return fn
    return decorate


_LOADED: list[bool] = []


def all_plots() -> Registry[PlotFn]:
    """Every family's plots (importing each module of `chronokg.reports.families` once registers them)."""
    if not _LOADED:
        import chronokg.reports.families as package

        for info in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"chronokg.reports.families.{info.name}")
        _LOADED.append(True)
    return PLOTS


def need_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ChronoKGError("reports need matplotlib: pip install 'chronokg[reports]'") from None


@contextmanager
def style() -> Iterator[None]:
    """The house style, for drawing and saving (matplotlib reads rcParams when artists are made)."""
    need_matplotlib()
    import matplotlib

    with matplotlib.rc_context(STYLE):
        yield


def figure(width: float, height: float, wspace: float | None = None) -> Figure:
    """A figure that lays itself out (nothing clipped), with no pyplot state and no GUI backend; `wspace`
    widens the gap between panels (a fraction of the figure)."""
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    fig = Figure(figsize=(width, height), layout="constrained")
    engine = fig.get_layout_engine()
    if wspace is not None and isinstance(engine, ConstrainedLayoutEngine):
        engine.set(wspace=wspace)
    return fig


def color(series: Series) -> str:
    return PALETTE[series.index % len(PALETTE)]


def grid(n: int, per_row: int = 2) -> tuple[int, int]:
    cols = min(n, per_row)
    return (n + cols - 1) // cols, cols


def panels(fig: Figure, n: int, per_row: int = 2, **kwargs: Any) -> list[Axes]:
    """n axes in a grid (the unused cells removed)."""
    rows, cols = grid(n, per_row)
    axes = fig.subplots(rows, cols, squeeze=False, **kwargs)
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.remove()
    return flat[:n]


def render(plot_: Plot) -> tuple[bytes, bytes]:
    """PNG and SVG bytes of a figure (no dates in the metadata: the same report gives the same files)."""
    png, svg = io.BytesIO(), io.BytesIO()
    # "tight" grows the canvas to every artist, so nothing is clipped even if a legend is wider than the figure
    plot_.figure.savefig(png, format="png", metadata={"Software": None}, bbox_inches="tight", pad_inches=0.06)
    plot_.figure.savefig(svg, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight",
                         pad_inches=0.06)
    return png.getvalue(), svg.getvalue()


def stacked_bars(ax: Axes, labels: Sequence[str], rows: Sequence[Sequence[float]], parts: Sequence[str],
                 colors: Sequence[str], show_at: float = 0.08) -> None:
    """Horizontal 100 % bars, one per label, top to bottom; a share is printed inside its segment if wide
    enough."""
    ys = list(range(len(labels)))[::-1]
    left = [0.0] * len(labels)
    for j, (part, c) in enumerate(zip(parts, colors, strict=True)):
        widths = [row[j] for row in rows]
        ax.barh(ys, widths, left=left, color=c, label=part, height=0.7, edgecolor="white", linewidth=0.5)
        for y, x0, w in zip(ys, left, widths, strict=True):
            if w >= show_at:
                ax.text(x0 + w / 2, y, f"{w:.0%}", ha="center", va="center", fontsize=7,
                        color="white" if _dark(c) else "black")
        left = [x0 + w for x0, w in zip(left, widths, strict=True)]
    ax.set_yticks(ys, labels)
    ax.set_xlim(0, 1)
    ax.xaxis.set_major_formatter(_percent())
    ax.grid(axis="y", visible=False)


def _percent() -> Any:
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(1.0, decimals=0)


def percent_axis(ax: Axes, axis: str = "y") -> None:
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(_percent())


def _dark(hex_color: str) -> bool:
    r, g, b = (int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    return 0.299 * r + 0.587 * g + 0.114 * b < 140


def overview(metrics: Sequence[str], series: Sequence[Series]) -> Plot | None:
    """Every metric that has one value, a small panel each, a bar per series: the generic plot every family
    gets without code."""
    shown = [m for m in metrics if any((v := s.get(m)) is not None and v.value is not None for s in series)]
    if not shown:
        return None
    per_row = 3 if len(shown) > 4 else 2
    rows, _ = grid(len(shown), per_row)
    height = 0.35 + 0.22 * len(series)
    fig = figure(3.4 * min(len(shown), per_row), max(1.6, height + 0.7) * rows)
    for ax, metric in zip(panels(fig, len(shown), per_row), shown, strict=True):
        values = [(s, v.value) for s in series if (v := s.get(metric)) is not None and v.value is not None]
        ys = list(range(len(values)))[::-1]
        ax.barh(ys, [x for _, x in values], color=[color(s) for s, _ in values], height=0.65)
        top = max([1.0, *(x for _, x in values)])
        for y, (_, x) in zip(ys, values, strict=True):
            ax.text(x + top * 0.02, y, f"{x:.3f}", va="center", fontsize=7)
        ax.set_xlim(0, top * 1.25)
        if top <= 1.0:
            ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.set_yticks(ys, [s.label for s, _ in values])
        ax.set_title(metric, loc="left")
        ax.grid(axis="y", visible=False)
    return Plot("overview", "Headline values", "Each metric that reduces to one number, one bar per run and "
                "model (the tables below give the groups and intervals).", fig)
