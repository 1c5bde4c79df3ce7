"""What a report's plots show a reader: labels that never overlap (many models, long names), a distinct colour for
every model, accuracies alone on accuracy axes, a plot only where its data exists, stored text drawn as text.

The runs are the demo corpus's TempoMed and ConflictMedQA questions answered by the reference baselines (the
real runner, no model server); a run's model names are rewritten in its files where a test needs other names."""

from __future__ import annotations

import html
import json
import re
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import replace
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from chronokg.metrics.spec import METRICS, MetricSpec, all_metrics
from chronokg.reports import build_report
from chronokg.reports.build import Figures, columns, draw_plots
from chronokg.reports.plots import Omitted, Plot, color_at, lay_out, style
from chronokg.reports.series import Series, short, ticks
from tests import report_helpers

pytestmark = pytest.mark.slow  # plots


MODELS = ["baseline/oracle", "baseline/latest-only", "baseline/always-yes", "baseline/random"]
HOSTILE = ["[x]model", "[/x]", "</script><script>alert(1)</script>", "/*DATA*/", "\"quoted\" 'single'",
           "<img src=x onerror=alert(1)>", "$\\frac{a}{b}$ costs $5", "A" * 10_000]


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return report_helpers.demo_run(tmp_path_factory.mktemp("plots"), MODELS)


@pytest.fixture(scope="module")
def demo_columns(demo_run: Path) -> tuple[list[Series], list[str]]:
    """The demo run's model columns and metric names, read once (`columns`: nothing drawn); a test that changes a
    column works on a copy (`dataclasses.replace`)."""
    all_metrics()
    _, series, names = columns([demo_run], None, _quiet())
    return series, names


@pytest.fixture(scope="module")
def drawn_for(demo_columns: tuple[list[Series], list[str]]) -> Callable[[int], Figures]:
    """The demo's plots drawn for n long-named columns (`many`), each n drawn once per module."""
    series, names = demo_columns
    done: dict[int, Figures] = {}

    def drawn(n: int) -> Figures:
        if n not in done:
            with style():
                done[n] = draw_plots(names, many(series, n), _quiet())
        return done[n]
    return drawn


class Recorder:
    """The steps a report's progress hears: [description, total, advanced so far] each."""

    def __init__(self) -> None:
        self.steps: list[list[Any]] = []

    def start(self, total: int, description: str) -> None:
        self.steps.append([description, total, 0])

    def advance(self, n: int) -> None:
        self.steps[-1][2] += n


@pytest.fixture(scope="module")
def demo_report(demo_run: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Recorder]:
    """The report of the demo run (built once: its plots are the slow part), and the steps its progress heard."""
    heard = Recorder()
    return build_report([demo_run], tmp_path_factory.mktemp("demo-report") / "out", progress=heard), heard


def renamed(folder: Path, out: Path, names: dict[str, str], run_id: str | None = None) -> Path:
    """A copy of the run folder with its model names (and run id) replaced in run.json and samples.jsonl."""
    out.mkdir(parents=True)
    for name in ("run.json", "samples.jsonl"):
        text = (folder / name).read_text(encoding="utf-8")
        for old, new in names.items():
            text = text.replace(json.dumps(old), json.dumps(new))
        if run_id is not None:
            info = json.loads(text) if name == "run.json" else None
            if info is not None:
                text = text.replace(json.dumps(info["run_id"]), json.dumps(run_id))
        (out / name).write_text(text, encoding="utf-8")
    return out


def many(series: list[Series], n: int) -> list[Series]:
    """n columns with long names, each a copy of one of `series` (their values and samples)."""
    return [replace(series[i % len(series)], label=f"organisation-{i}/a-rather-long-model-name-{i}-instruct-v{i}",
                    index=i) for i in range(n)]


def text_boxes(fig: Any) -> list[tuple[str, Any]]:
    """Every tick label, axis label, title and legend of a laid-out figure, with its window extent."""
    renderer = fig.canvas.get_renderer()
    boxes: list[tuple[str, Any]] = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            boxes += [(f"tick {t.get_text()!r}", t.get_window_extent(renderer)) for t in axis.get_ticklabels()
                      if t.get_visible() and t.get_text()]
            if axis.label.get_text():
                boxes.append((f"axis label {axis.label.get_text()!r}", axis.label.get_window_extent(renderer)))
        for title in (ax.title, ax._left_title, ax._right_title):
            if title.get_visible() and title.get_text():
                boxes.append((f"title {title.get_text()!r}", title.get_window_extent(renderer)))
        if ax.get_legend() is not None:
            boxes.append(("axes legend", ax.get_legend().get_window_extent(renderer)))
    boxes += [("figure legend", legend.get_window_extent(renderer)) for legend in fig.legends]
    return boxes


def overlaps(fig: Any) -> list[str]:
    """Every pair of text boxes that overlap by more than 2 % of their size (each box shrunk once, not per pair)."""
    boxes = [(name, box.expanded(1, 1).shrunk(0.98, 0.98), box.shrunk(0.98, 0.98)) for name, box in text_boxes(fig)]
    found = []
    for (a, shrunk_a, _), (b, _, shrunk_b) in combinations(boxes, 2):
        if shrunk_a.overlaps(shrunk_b):
            found.append(f"{a[:60]} × {b[:60]}")
    return found


@pytest.mark.parametrize("n", [1, 20])
def test_no_label_overlaps_another_in_any_plot(drawn_for: Callable[[int], Figures], n: int) -> None:
    """Every plot the demo runs draw, with 1 and 20 model columns of long names: no tick label, axis label,
    title or legend overlaps another (their extents after the figure is laid out and drawn)."""
    drawn = drawn_for(n)
    with style():
        plots = [p for made in drawn.values() for p in made if isinstance(p, Plot)]
        assert len(plots) >= 8
        for p in plots:
            with warnings.catch_warnings(record=True) as heard:
                warnings.simplefilter("always")
                lay_out(p.figure)
            assert not [w for w in heard if "constrained_layout not applied" in str(w.message)], p.name
            assert overlaps(p.figure) == [], (p.name, n)


def test_plot_labels_are_short_and_tell_long_names_apart() -> None:
    """Names that differ only in their middle keep that middle; every label is one line of at most 40."""
    longs = [f"an-organisation-with-a-long-name/{m}-" + "x" * 120 + " [bold]</td>$x$"
             for m in ("oracle", "latest-only", "always-yes", "random")]
    for labels in (longs, [*longs, "baseline/oracle"], ["A" * 10_000, "B" * 10_000], ["a\nb", "c"]):
        got = ticks(labels)
        assert len(set(got)) == len(labels) and all(len(x) <= 40 and "\n" not in x for x in got), got
    assert [x.split("…")[1] for x in ticks(longs)] == ["oracle", "latest-only", "always-yes", "random"]


def _quiet() -> Any:
    from chronokg.reports.build import QuietProgress

    return QuietProgress()


def test_twenty_models_get_twenty_distinct_colours(drawn_for: Callable[[int], Figures]) -> None:
    from matplotlib.colors import to_rgb

    colours = [color_at(i) for i in range(200)]
    assert len(set(colours)) == 200
    first = [to_rgb(c) for c in colours[:20]]
    closest = min(sum((x - y) ** 2 for x, y in zip(a, b, strict=True)) ** 0.5 for a, b in combinations(first, 2))
    assert closest > 0.12, closest  # told apart by eye, not only by their hex codes
    overview = drawn_for(20)[""][0]
    assert isinstance(overview, Plot)
    bars = [patch.get_facecolor() for patch in overview.figure.axes[0].patches]
    assert len(bars) == 20 and len(set(bars)) == 20


def test_accuracy_axes_hold_accuracies_only(demo_run: Path, tmp_path: Path) -> None:
    """The overview's accuracy panels are exactly the accuracy metrics; the oracle's bar on each is at 1.0
    (tempomed.accuracy, the ECDA rates); a rate such as IKCR sits on a 'share' axis, never an accuracy one."""
    with style():
        _, series, names = columns([demo_run], ["baseline/oracle"], _quiet())
        overview = draw_plots(names, series, _quiet())[""][0]
        assert isinstance(overview, Plot)
        lay_out(overview.figure)
        panels = {ax.get_title(loc="left"): ax for ax in overview.figure.axes}
    kinds = {m: METRICS.get(m).kind for m in panels}
    assert {kinds[m] for m in panels} == {"accuracy", "rate", "score"}
    for metric, ax in panels.items():
        label = ax.get_xlabel()
        assert label.startswith({"accuracy": "accuracy", "rate": "share", "score": "value"}[kinds[metric]]), metric
        if kinds[metric] == "accuracy":
            (bar,) = ax.patches
            assert bar.get_width() == pytest.approx(1.0), metric  # type: ignore[attr-defined]  # the oracle is right on every item
    assert panels["tempomed.accuracy"].patches[0].get_width() == pytest.approx(1.0)  # type: ignore[attr-defined]
    assert not panels["conflictmedqa.ikcr"].get_xlabel().startswith("accuracy")


def test_every_chroknow_and_micxr_answers_metric_is_not_an_accuracy() -> None:
    """The `*.answers` metrics' value is a share of unread or invalid outputs: declared a rate, so no report
    draws it on an accuracy axis (where the oracle's 0 invalid outputs would read as 0 % right)."""
    answers = [spec for name, spec in all_metrics().items() if name.endswith(".answers")]
    assert len(answers) >= 3 and {spec.kind for spec in answers} == {"rate"}


def test_a_plot_only_where_its_data_exists(demo_columns: tuple[list[Series], list[str]],
                                          demo_report: tuple[Any, Recorder]) -> None:
    """Runs without probes and without --rag: no consistency, heatmap or Table 3 plot; the report says so."""
    report, _ = demo_report
    assert not {"tempomed-consistency", "tempomed-probe_heatmap", "tempomed-table3"} & set(report.plots)
    assert {"overview", "tempomed-accuracy_by_year", "tempomed-historical_vs_up_to_date"} <= set(report.plots)
    md = report.markdown.read_text(encoding="utf-8")
    (line,) = [x for x in md.splitlines() if x.startswith("Plots left out: ")]
    assert "tempomed-consistency: no probe answers" in line and "tempomed-table3: no run used a retrieval arm" in line
    assert "### tempomed.table3" in md  # the table stays
    assert "Plots left out: " in report.html.read_text(encoding="utf-8")
    series, names = demo_columns
    with style():
        drawn = draw_plots(names, series, _quiet())
    for made in drawn.values():
        for p in made:
            if isinstance(p, Plot):
                assert all(ax.has_data() for ax in p.figure.axes), p.name  # no empty axes
            else:
                assert isinstance(p, Omitted) and p.reason


def test_progress_hears_every_step(demo_report: tuple[Any, Recorder]) -> None:
    report, heard = demo_report
    assert [s[0] for s in heard.steps] == ["reading the run folders", "computing the metrics of each model column",
                                          "drawing the plots of each metric", "rendering the plots as PNG and SVG",
                                          "writing the report's files"]
    assert all(total == done for _, total, done in heard.steps), heard.steps
    assert heard.steps[1][1] == len(MODELS) and heard.steps[3][1] == len(report.plots)


def test_hostile_text_is_text_in_every_output(demo_run: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Model names, a run id, a title and a metric name holding markup, code, `$` (matplotlib's mathtext) and
    10,000 characters: written as text in report.md, escaped in report.html, drawn as themselves in the plots."""
    names = dict(zip(MODELS, HOSTILE[:4], strict=True))
    folder = renamed(demo_run, tmp_path / "run", names, run_id="run-[x]</script>$x$")
    second = renamed(demo_run, tmp_path / "run2", dict(zip(MODELS, HOSTILE[4:], strict=True)))
    (second / "run.json").write_text((second / "run.json").read_text(encoding="utf-8").replace(
        json.loads((demo_run / "run.json").read_text(encoding="utf-8"))["run_id"], "run-second"), encoding="utf-8")
    spec = all_metrics().get("tempomed.accuracy")
    hostile_metric = "tempomed.[x]</script>$a$<img onerror=x>"
    monkeypatch.setitem(METRICS._entries, hostile_metric, MetricSpec(
        hostile_metric, "tempomed", "Help with [b]markup[/b] & <i>tags</i> $x$.", True, spec.count,
        lambda rows: (0.5, {"[/x] group": {"accuracy": 0.5, "n": 2}}, {"note": "</script>"}), kind="accuracy"))
    title = "Report </title><script>x</script> [bold]$y$"
    report = build_report([folder, second], tmp_path / "out", title=title)

    md = report.markdown.read_text(encoding="utf-8")
    page = report.html.read_text(encoding="utf-8")
    rendered = MarkdownIt("commonmark").enable("table").render(md)  # report.md as a reader sees it
    for text in [*HOSTILE[:-1], hostile_metric, title, "run-[x]</script>$x$"]:
        assert html.escape(text, quote=False).replace('"', "&quot;") in rendered, text
        assert _escaped(text) in page, text
    assert HOSTILE[-1] in md and HOSTILE[-1] in page
    for shown in (page, rendered):
        assert "<script" not in shown.lower() and "<img src=x" not in shown and "<i>tags" not in shown
    assert page.count("<title>") == 1
    assert re.search(r"<td[^>]*>\[/x\] group</td>", rendered)

    for name in report.plots:
        svg = (report.out / "plots" / f"{name}.svg").read_text(encoding="utf-8")
        ET.fromstring(svg)  # well-formed: nothing broke out of a comment or attribute
        assert "<script" not in svg.lower()
    overview = (report.out / "plots" / "overview.svg").read_text(encoding="utf-8")
    comments = html.unescape(" ".join(re.findall(r"<!--(.*?)-->", overview, re.S)))
    for text in HOSTILE[:-1]:  # matplotlib keeps each drawn text as a comment: the names drawn as written
        assert short(text)[:20] in comments, text
    assert "$\\frac{a}{b}$ costs $5" in comments  # a dollar sign, not mathtext
    assert "A" * 40 not in comments and "…" in comments  # the 10,000 characters shortened, the tables whole


def _escaped(text: str) -> str:
    return html.escape(text)
