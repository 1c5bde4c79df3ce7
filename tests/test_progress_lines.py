"""Progress in a pipe or a log: a line when a phase starts, then occasional lines naming what is counted, never a
bar's control sequences (`chronokg.cli.progress.ProgressLines`, `progress_anywhere`)."""

from __future__ import annotations

import io

from rich.console import Console

from chronokg.cli.progress import ProgressLines, RichProgress, progress_anywhere


def test_lines_in_a_pipe_say_how_far_a_phase_is() -> None:
    out = io.StringIO()
    console = Console(file=out, width=100, force_terminal=False)
    with progress_anywhere(console) as progress:
        assert isinstance(progress, ProgressLines)
        progress.start(8, "comparing 4 questions: draws")
        progress.advance(3)  # within the interval: no line
    assert out.getvalue() == "comparing 4 questions: draws: 8 to do\n"
    often = ProgressLines(console, every_s=0.0)
    often.start(4, "draws")
    often.advance(1)
    often.advance(3)
    lines = out.getvalue().splitlines()[1:]
    assert lines[0] == "draws: 4 to do"
    assert lines[1].startswith("draws: 1 of 4 (25%), ") and lines[2].startswith("draws: 4 of 4 (100%), ")
    assert "\x1b" not in out.getvalue()


def test_a_terminal_gets_the_bar() -> None:
    console = Console(file=io.StringIO(), width=100, force_terminal=True)
    with progress_anywhere(console) as progress:
        assert isinstance(progress, RichProgress)
