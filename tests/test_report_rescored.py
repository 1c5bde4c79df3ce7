"""A report a reader can take at its word: a re-scored run says which run it re-scored and as known at which day,
its not-scorable samples apart from the model's failures; no empty table; an axis no single value flattens; the
knowledge cutoff each run recorded, and no other; stored names drawn as text, never as boxes or raw controls."""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.metrics.spec import MetricValue
from chronokg.reports import build_report
from chronokg.reports.plots import drawable, fonts, overview, scale, style
from chronokg.reports.series import Series, build_series, load_run
from chronokg.reports.tables import PER_TABLE
from tests.report_helpers import mixed_rescore, rescored_pair

pytestmark = pytest.mark.slow  # real runs and their plots

MODELS = ["baseline/oracle", "baseline/latest-only", "baseline/always-yes", "baseline/random"]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A run and a hand-made re-scoring of it (a third of its samples not scorable now)."""
    tmp = tmp_path_factory.mktemp("rescored")
    origin, _ = rescored_pair(tmp, MODELS)
    return origin, mixed_rescore(origin, tmp / "mixed" / "run-rescored")


@pytest.fixture(scope="module")
def report(pair: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Any:
    return build_report(list(pair), tmp_path_factory.mktemp("out") / "report")


def runs_rows(md: str) -> dict[str, dict[str, str]]:
    section = md.split("## Runs\n", 1)[1]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    headers = [h.strip() for h in lines[0].strip("|").split("|")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[1:] if line.startswith("| run-")]
    return {row[0]: dict(zip(headers, row, strict=True)) for row in rows}


def test_a_rescored_run_names_its_origin_its_day_and_its_flips(pair: tuple[Path, Path], report: Any) -> None:
    origin = load_run(pair[0]).info.run_id
    again = load_run(pair[1])
    assert again.not_scorable > 0 and again.failed == 0
    md = report.markdown.read_text(encoding="utf-8")
    html = report.html.read_text(encoding="utf-8")
    said = (f"run-rescored is run {origin} (in this report) re-scored as known at 2020-06-30, against store snapshot")
    assert said in md and said in html
    assert f"{again.not_scorable:,} verdicts flipped (0 now wrong, 0 now right, {again.not_scorable:,} not " \
           "scorable now)" in md
    assert "they are no failure of the model" in md
    rows = runs_rows(md)
    assert rows["run-rescored"]["not scorable now"] == str(again.not_scorable)
    assert rows["run-rescored"]["failed requests"] == "0"
    assert rows[origin]["not scorable now"] == "0" and rows[origin]["failed requests"] == "0"
    assert rows["run-rescored"]["samples scored"] == str(len(again.samples))


def test_flips_are_counted_from_the_flips_file_without_them_in_run_json(tmp_path: Path) -> None:
    """A run `eval rescore` wrote, as known before the demo's release: every verdict flipped to not scorable."""
    origin, rescored = rescored_pair(tmp_path, MODELS[:1], dt.date(2026, 1, 1))
    report = build_report([origin, rescored], tmp_path / "out")
    md = report.markdown.read_text(encoding="utf-8")
    n = load_run(rescored).not_scorable
    assert n > 0 and "re-scored as known at 2026-01-01" in md and f"{n:,} not scorable now)" in md
    assert runs_rows(md)[load_run(rescored).info.run_id]["not scorable now"] == str(n)


def test_no_empty_table_and_no_table_wider_than_its_share(report: Any) -> None:
    md = report.markdown.read_text(encoding="utf-8")
    assert "(count 0)" not in md
    sections = re.split(r"\n### ", md)
    for section in sections[1:]:
        name = section.split("\n", 1)[0]
        tables = re.findall(r"(?m)^\| .+\|\n\|[-:|]+\|\n((?:\| .*\n?)*)", section)
        assert all(body.strip() for body in tables), (name, section[:1500])  # never a header alone
        if not tables:  # one line says why
            assert "No values in these runs" in section, section[:1500]
        for header in re.findall(r"(?m)^\| .+\|$\n(?=\|[-:|]+\|)", section):
            assert header.count(" | ") <= PER_TABLE, header
    t3 = next(s for s in sections if s.startswith("tempomed.table3_seed\n"))
    assert "No values in these runs: none of their scored answers is an item this metric counts." in t3


def series_with(values: list[float | None], metric: str = "tempomed.historical_ratio") -> list[Series]:
    return [Series(label=f"m{i}", run="r", model=f"m{i}", index=i, samples=[],
                   values={metric: MetricValue(metric=metric, model=f"m{i}", value=v)}) for i, v in enumerate(values)]


def test_one_large_value_does_not_flatten_the_others() -> None:
    assert scale([40.0, 1.2, 0.9, 0.0]) == (0.0, 2.4)
    assert scale([1.33, 1.0, 0.0, 0.0]) == (0.0, 1.33)  # no outlier: the whole range
    assert scale([0.0, 0.0]) == (0.0, 1.0)
    with style():
        drawn = overview(["tempomed.historical_ratio"], series_with([40.0, 1.2, 0.9, 0.0]))
        assert not isinstance(drawn, str) and hasattr(drawn, "figure")
        ax = drawn.figure.axes[0]
        low, high = ax.get_xlim()
        widths = sorted(p.get_width() for p in ax.patches)
        assert high < 4 and widths[-2] / (high - low) > 0.3  # 1.2 stays a third of the axis, not 3 %
        texts = [t.get_text() for t in ax.texts]
        assert "▶ 40" in texts and "1.2" in texts  # the cut bar's value is printed whole


def test_the_plot_draws_the_cutoff_each_run_recorded_and_no_other(pair: tuple[Path, Path]) -> None:
    from chronokg.reports.families.tempomed import accuracy_by_year

    series = build_series([load_run(pair[0])])
    recorded = [None, {"date": "2018-01-01", "estimated": False, "source": "declared (--cutoff)"},
                {"date": "2015-12-31", "estimated": True, "source": "estimated from the answers"},
                {"date": None, "estimated": True, "source": "estimated from the answers: none"}]
    given = [dataclasses.replace(s, cutoff=c) for s, c in zip(series, recorded, strict=True)]
    assert any(s.get("tempomed.accuracy_by_year").details.get("cutoff_estimate") is not None for s in given)
    with style():
        (drawn,) = accuracy_by_year(given)
        assert hasattr(drawn, "figure")
        lines = []
        for ax in drawn.figure.axes:
            vertical = [line for line in ax.get_lines() if len(set(line.get_xdata())) == 1]
            lines.append([(round(float(line.get_xdata()[0]), 2), line.get_linestyle()) for line in vertical])
        said = [t.get_text() for ax in drawn.figure.axes for t in ax.texts]
    assert lines == [[], [(2017.5, "-")], [(2015.5, ":")], []]
    assert sum("no cutoff" in t for t in said) == 2 and any("cutoff 2018-01-01 (declared)" in t for t in said)
    assert any("cutoff 2015-12-31 (estimated)" in t for t in said)


NAMES = {"baseline/oracle": "模型-甲 😀 \x1b[31mred\u202e", "baseline/latest-only": "Модель-β ☃"}


def test_names_in_any_script_draw_without_a_warning_or_a_raw_control(pair: tuple[Path, Path], tmp_path: Path,
                                                                     capfd: pytest.CaptureFixture[str],
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    from tests.test_report_plots import renamed

    other = renamed(pair[0], tmp_path / "named", NAMES, run_id="run-named")
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
        warnings.simplefilter("always")
        report = build_report([other], tmp_path / "out")
    said = [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]
    assert not [m for m in said if "Glyph" in m or "findfont" in m], said
    err = capfd.readouterr().err
    assert "\x1b" not in err and "Glyph" not in err
    held = fonts()[1]
    for name in NAMES.values():
        shown = drawable(name)
        assert "\x1b" not in shown and "\u202e" not in shown
        assert "\\x1b[31mred\\u202e" in shown or "\x1b" not in name
        assert all(ord(c) in held or c == " " for c in shown)  # drawn as itself or as its escape, never a box
        for ch in name:  # a character a font holds stays itself
            if ord(ch) in held and ch.isprintable():
                assert ch in shown
    svg = (report.out / "plots" / "overview.svg").read_text(encoding="utf-8")
    assert "\x1b" not in svg and "\u202e" not in svg
    md = report.markdown.read_text(encoding="utf-8")
    html = report.html.read_text(encoding="utf-8")
    for text in (md, html):
        assert "\x1b" not in text and "\u202e" not in text and "\\u202e" in text and "模型-甲" in text


def test_export_names_what_it_left_out(pair: tuple[Path, Path], tmp_path: Path) -> None:
    from chronokg.cli.app import app
    from chronokg.cli.common import fresh_consoles

    fresh_consoles()
    try:
        result = CliRunner().invoke(app, ["eval", "export", str(pair[1]), "--out", str(tmp_path / "x")],
                                    env={"COLUMNS": "200"})
    finally:
        fresh_consoles()
    assert result.exit_code == 0, result.output
    n = load_run(pair[1]).not_scorable
    assert f"left out: {n:,} samples not scorable now" in result.output
    assert "failed requests" not in result.output
