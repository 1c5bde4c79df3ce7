"""`chronokg eval report`: two real baseline runs on questions generated from the TempoMed-Bench sample, reported
side by side; every metric has its table, every plot its PNG and SVG, the HTML page fetches nothing.

The runs are made by the real runner with the reference baselines (no model server is needed for them)."""

from __future__ import annotations

import base64
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.bench import snapshot
from chronokg.bench.family import generate
from chronokg.bench.question import write_jsonl
from chronokg.errors import ChronoKGError, InputError
from chronokg.eval import runner
from chronokg.eval.log import SampleRecord
from chronokg.graph.kglite_store import KgliteStore
from chronokg.ingest import tempomed
from chronokg.metrics.spec import MetricValue, for_family
from chronokg.reports import build_report
from chronokg.reports.families.tempomed import category, probe_grid
from chronokg.reports.plots import Plot, all_plots, figure, plot, style
from chronokg.reports.series import Series
from chronokg.reports.tables import details, metric_table, number

pytestmark = pytest.mark.slow  # real runs and their plots

RUNS = (["baseline/oracle", "baseline/frozen:2018"], ["baseline/random", "baseline/latest-only"])
PLOTS = {"overview", "tempomed-accuracy_by_year", "tempomed-historical_vs_up_to_date", "tempomed-option_groups",
         "tempomed-consistency", "tempomed-probe_heatmap", "tempomed-three_way"}  # no --rag: no Table 3 plot
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def runs(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two run folders: every up-to-date and historical MCQ (one perturbation) and the probes of 30 pairs."""
    tmp = tmp_path_factory.mktemp("report")
    path = tmp / "store.kgl"
    with KgliteStore(path, durable="off") as store:
        tempomed.load(store, [shared_data / "tempomed-bench"])
    folders = []
    with KgliteStore(path, read_only=True) as store:
        snap = snapshot.current(store)
        questions = generate("tempomed", store, snap, {"protocol": "chronokg", "perturbations": ["reorder_only"]})[0]
        questions += generate("tempomed", store, snap, {"protocol": "chronokg", "mcq": False, "probes": True,
                                                        "limit": 30})[0]
        qfile = tmp / "questions.jsonl"
        write_jsonl(qfile, questions)
        loaded = runner.load_questions([qfile], None)
        for models in RUNS:
            options = runner.RunOptions(protocol="chronokg", cache=False, concurrency=16)
            folder, info = runner.prepare(tmp / "runs", [qfile], [runner.ModelEntry(spec=m) for m in models], options)
            info, _ = runner.run(folder, info, loaded, store)
            assert info.status == "complete"
            folders.append(folder)
    return folders


@pytest.fixture(scope="module")
def report(runs: list[Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    return build_report(runs, tmp_path_factory.mktemp("out") / "report")


def metric_names() -> list[str]:
    """Every TempoMed metric, and its pre/post-cutoff split (a family with dated gold answers)."""
    return sorted([*(m.name for m in for_family(["tempomed"])), "tempomed.cutoff"])


def test_every_metric_has_a_table_with_every_model(report: Any) -> None:
    md = report.markdown.read_text(encoding="utf-8")
    html = report.html.read_text(encoding="utf-8")
    assert sorted(report.metrics) == metric_names()
    models = [m for pair in RUNS for m in pair]
    for name in metric_names():
        assert f"### {name}\n" in md
        assert f'id="{re.sub(r"[^a-z0-9]+", "-", name)}"' in html
        section = md.split(f"### {name}\n", 1)[1].split("\n### ", 1)[0]
        headers = [line for line in section.splitlines() if line.startswith(f"| {name} |")]
        without = next((line for line in section.splitlines() if line.startswith("No values for ")), "")
        # side by side: each model a column, or named as having no value; no table at all only where none has one
        assert all(any(m in h for h in headers) or m in without for m in models) or \
            section.count("No values in these runs") == 1, section[:2000]
    assert "tempomed-accuracy_by_year" in md and "| run-" in md
    for run in report.series:
        assert run in md


def test_every_plot_is_a_valid_png_and_svg_and_is_in_both_pages(report: Any) -> None:
    from matplotlib.image import imread

    assert set(report.plots) == PLOTS
    md = report.markdown.read_text(encoding="utf-8")
    html = report.html.read_text(encoding="utf-8")
    for name in PLOTS:
        png = report.out / "plots" / f"{name}.png"
        svg = report.out / "plots" / f"{name}.svg"
        assert png.read_bytes().startswith(PNG_MAGIC)
        pixels = imread(png)
        assert pixels.shape[0] > 200 and pixels.shape[1] > 400
        assert len({tuple(p) for p in pixels[:: 7, :: 7].reshape(-1, pixels.shape[2]).tolist()}) > 3  # not blank
        root = ET.fromstring(svg.read_bytes())
        assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.get("viewBox")
        assert f"](plots/{name}.png)" in md
        embedded = re.search(rf'id="plot-{re.escape(name)}"><img alt="[^"]*" src="data:image/svg\+xml;base64,'
                             r'([A-Za-z0-9+/=]+)"', html)
        assert embedded is not None, name
        assert base64.b64decode(embedded.group(1)) == svg.read_bytes()


class _Refs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.tags: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.refs += [v or "" for k, v in attrs if k in ("src", "href", "srcset", "poster", "data", "action")]


def test_the_html_page_is_self_contained(report: Any) -> None:
    html = report.html.read_text(encoding="utf-8")
    parser = _Refs()
    parser.feed(html)
    assert parser.refs and all(r.startswith(("data:", "#")) for r in parser.refs), [
        r[:60] for r in parser.refs if not r.startswith(("data:", "#"))]
    assert not parser.tags & {"script", "link", "iframe", "object", "embed"}
    assert "://" not in html and "@import" not in html and not re.search(r"url\((?!data:)", html)


def test_the_plots_show_what_the_baselines_predict(report: Any) -> None:
    """The numbers the plots draw: the frozen-at-2018 model's declared cutoff is marked, the oracle has none."""
    svg = (report.out / "plots" / "tempomed-accuracy_by_year.svg").read_text(encoding="utf-8")
    assert "cutoff 2018-01-01 (declared)" in svg  # matplotlib keeps each text as a comment beside its glyph paths
    assert "no cutoff" in svg and "Mann-Kendall p = " in svg and "estimated)" not in svg
    md = report.markdown.read_text(encoding="utf-8")
    assert re.search(r"baseline/frozen:2018: start_year: 2010; cutoff_estimate: 2018;", md)


def test_the_same_runs_give_the_same_plot_files(runs: list[Path], report: Any, tmp_path: Path) -> None:
    again = build_report(runs, tmp_path / "again")
    for name in PLOTS:
        for ext in ("svg", "png"):
            assert (again.out / "plots" / f"{name}.{ext}").read_bytes() == \
                (report.out / "plots" / f"{name}.{ext}").read_bytes(), (name, ext)


def test_cli_report_and_its_errors(runs: list[Path], tmp_path: Path) -> None:
    from chronokg.cli.app import app

    cli = CliRunner()
    out = tmp_path / "cli"
    result = cli.invoke(app, ["eval", "report", *map(str, runs), "--out", str(out), "--model", "baseline/oracle"])
    assert result.exit_code == 0, result.output
    assert (out / "report.md").is_file() and (out / "report.html").is_file()
    text = (out / "report.md").read_text(encoding="utf-8")
    assert "| tempomed.accuracy | baseline/oracle |\n" in text and "| baseline/random |" not in text
    assert len(list((out / "plots").glob("*.png"))) == len(list((out / "plots").glob("*.svg"))) == len(PLOTS)

    bad = tmp_path / "not-a-run"
    bad.mkdir()
    result = cli.invoke(app, ["eval", "report", str(bad), "--out", str(tmp_path / "none")])
    assert result.exit_code == 2 and "not a run folder" in result.output
    assert not (tmp_path / "none").exists()
    result = cli.invoke(app, ["eval", "report", str(runs[0]), str(runs[0]), "--out", str(tmp_path / "none")])
    assert result.exit_code == 2 and "given twice" in result.output
    result = cli.invoke(app, ["eval", "report", str(runs[0]), "--out", str(tmp_path / "none"), "--model", "x/y"])
    assert result.exit_code == 2 and "--model x/y: no run holds answers of it" in result.output
    assert not (tmp_path / "none").exists()


# --- generic tables, the registry, the heatmap cells -------------------------------------------------------


def series_of(label: str, index: int, *values: MetricValue, samples: list[SampleRecord] | None = None) -> Series:
    return Series(label=label, run="run-x", model=label, index=index, values={v.metric: v for v in values},
                  samples=samples or [])


def test_tables_are_generic_over_metric_values() -> None:
    """A metric of a family this module knows nothing about still gets a table: headline cells with their
    interval and size, other dicts spread over rows, missing rows dashed, equal details said once."""
    a = MetricValue(metric="conflictmedqa.ecda", model="a", value=0.5,
                    groups={"adh": {"accuracy": 0.75, "n": 20, "ci95": [0.5, 0.9]},
                            "by factor": {"dose": 0.25, "route": 1.0}},
                    details={"method": "mean of adh and rej"})
    b = MetricValue(metric="conflictmedqa.ecda", model="b", value=None,
                    groups={"adh": {"accuracy": 0.1, "n": 20, "ci95": [0.0, 0.3]}, "rej": 3},
                    details={"method": "mean of adh and rej"})
    table = metric_table("conflictmedqa.ecda", [series_of("a", 0, a), series_of("b", 1, b)])
    assert table.headers == ["conflictmedqa.ecda", "a", "b"]
    assert table.rows == [["value", "0.500", "—"],
                          ["adh", "0.750 [0.500, 0.900] (n 20)", "0.100 [0.000, 0.300] (n 20)"],
                          ["by factor · dose", "0.250", "—"], ["by factor · route", "1.000", "—"], ["rej", "—", "3"]]
    assert details("conflictmedqa.ecda", [series_of("a", 0, a), series_of("b", 1, b)]) == [
        "all: method: mean of adh and rej"]
    assert [number(x) for x in (2018, 12345, 3.47e-18, 0.000939, None, True)] == [
        "2018", "12,345", "0.000", "0.000939", "—", "yes"]


def test_a_family_adds_a_plot_with_one_decorator(tmp_path: Path) -> None:
    """The recipe of docs/reports.md: one `@plot(metric)` function; the report draws it beside the table."""
    from chronokg.reports.build import QuietProgress, draw_plots

    @plot("testfamily.score")
    def score(series: Any) -> list[Plot]:
        fig = figure(3, 2)
        ax = fig.subplots()
        ax.bar([s.label for s in series], [s.get("testfamily.score").value for s in series])
        return [Plot("testfamily-score", "Score", "one bar per model", fig)]

    assert "testfamily.score" in all_plots() and "tempomed.consistency" in all_plots()
    value = MetricValue(metric="testfamily.score", model="m", value=0.4)
    with style():
        drawn = draw_plots(["testfamily.score"], [series_of("m", 0, value), series_of("n", 1)], QuietProgress())
    assert [p.name for p in drawn["testfamily.score"]] == ["testfamily-score"]
    assert [p.name for p in drawn[""]] == ["overview"]


def probe(pair: str, source: str, year: int, answer: str | None, statement_year: int) -> SampleRecord:
    return SampleRecord(question_id=f"{pair}/{source}/{year}/{answer}", model="m", family="tempomed",
                        fields={"kind": "probe", "pair": pair, "statement_source": source, "target_year": year,
                                "statement_year": statement_year, "prediction": answer})


def test_heatmap_cells_by_hand() -> None:
    assert [category("B", "A"), category("A", "B"), category("A", "A"), category("B", "B"), category("C", "A"),
            category("INVALID", "A"), category(None, "A")] == [0, 1, 2, 3, 4, 5, None]
    samples = [probe("p1", "prior", 2015, "A", 2010), probe("p1", "current", 2015, "B", 2018),
               probe("p1", "prior", 2020, "B", 2010), probe("p1", "current", 2020, "A", 2018),
               probe("p2", "prior", 2015, "A", 2012), probe("p2", "current", 2015, "A", 2016),
               probe("p0", "prior", 2015, "C", 2005), probe("p0", "current", 2015, None, 2009),
               probe("p0", "prior", 2020, "A", 2005)]  # no answer to the current statement for 2020
    grid = probe_grid([series_of("m", 0, samples=samples)])
    assert grid is not None
    assert grid.pairs == ["p0", "p2", "p1"]  # by the current version's year
    assert grid.years == [2015, 2020] and grid.current == {"p0": 2009, "p1": 2018, "p2": 2016}
    assert grid.cells["m"] == {("p1", 2015): 1, ("p1", 2020): 0, ("p2", 2015): 2, ("p0", 2015): 5}


def test_missing_matplotlib_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from chronokg.reports.plots import need_matplotlib

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ChronoKGError, match=r"chronokg\[reports\]"):
        need_matplotlib()


def test_importing_the_cli_and_reports_loads_no_matplotlib() -> None:
    code = "import sys, chronokg.cli, chronokg.cli.eval, chronokg.reports; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_folder_without_samples_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a run folder"):
        build_report([tmp_path], tmp_path / "out")
