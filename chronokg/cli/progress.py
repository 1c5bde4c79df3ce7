"""A rich progress bar that loaders and the writer report to."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from chronokg.cli.render import say


class Bar(Progress):
    """rich's Progress, shown on a terminal only: in a pipe or a log it draws nothing, not even the blank line
    rich's own prints when it stops."""

    def __init__(self, *columns: str | ProgressColumn, console: Console, transient: bool) -> None:
        super().__init__(*columns, console=console, transient=transient, disable=not console.is_terminal)

    def stop(self) -> None:
        if not self.disable:
            super().stop()


class RichProgress:
    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: TaskID | None = None

    def start(self, total: int, description: str) -> None:
        if self._task is not None:
            self._progress.update(self._task, visible=False)
        self._task = self._progress.add_task(description, total=total)

    def advance(self, n: int) -> None:
        if self._task is not None:
            self._progress.advance(self._task, n)


@contextmanager
def progress_bar(console: Console) -> Iterator[RichProgress]:
    with Bar(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    ) as progress:
        yield RichProgress(progress)


class RateColumn(ProgressColumn):
    """Items per second."""

    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{speed:,.1f}/s", style="progress.data.speed")


class RunProgress:
    """The evaluation runner's progress: samples done with rate and ETA, tokens, failures, accuracy so far."""

    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: TaskID | None = None
        self._done = self._ok = self._failed = self._tokens = 0

    def begin(self, pending: int, done: int) -> None:
        self._task = self._progress.add_task("samples", total=pending, stats="")
        if done:
            self._progress.console.print(f"resuming: {done:,} samples already done")

    def record(self, record: Any) -> None:
        self._done += 1
        self._ok += bool(record.correct)
        self._failed += 0 if record.error is None else 1
        self._tokens += record.prompt_tokens + record.completion_tokens
        if self._task is not None:
            stats = f"{self._tokens:,} tokens · {self._failed:,} failed · {self._ok / self._done:.1%} correct"
            self._progress.update(self._task, advance=1, stats=stats)


class _AboveTheBar(logging.Handler):
    """Model clients' warnings (each retry) printed above the live bar: every one shown, none overdrawn."""

    def __init__(self, progress: Progress) -> None:
        super().__init__(logging.WARNING)
        self._progress = progress

    def emit(self, record: logging.LogRecord) -> None:
        say(self._progress.console, ("note:", "yellow"), f" {record.getMessage()}")


@contextmanager
def run_progress(console: Console) -> Iterator[RunProgress]:
    with Bar(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), RateColumn(), TimeRemainingColumn(),
        TextColumn("{task.fields[stats]}"), console=console, transient=False,
    ) as progress:
        logger = logging.getLogger("chronokg.models")
        handler, propagate = _AboveTheBar(progress), logger.propagate
        logger.addHandler(handler)
        logger.propagate = False
        try:
            yield RunProgress(progress)
        finally:
            logger.removeHandler(handler)
            logger.propagate = propagate


class ProgressLines:
    """Progress for a pipe or a log, where a bar draws nothing: a line when a phase starts, then one at most every
    `every_s` seconds while it runs (`<phase>: <done> of <total> (<percent>), <seconds> s`), so a long silent
    wait shows it is alive without flooding the log."""

    def __init__(self, console: Console, every_s: float = 10.0) -> None:
        self._console, self._every = console, every_s
        self._total = self._done = 0
        self._description = ""
        self._started = self._shown = 0.0

    def start(self, total: int, description: str) -> None:
        import time

        self._total, self._done, self._description = total, 0, description
        self._started = self._shown = time.monotonic()
        say(self._console, f"{description}: {total:,} to do" if total else f"{description}…")

    def advance(self, n: int) -> None:
        import time

        self._done += n
        now = time.monotonic()
        if now - self._shown >= self._every:
            self._shown = now
            share = f" ({self._done / self._total:.0%})" if self._total else ""
            of = f" of {self._total:,}" if self._total else ""
            say(self._console, f"{self._description}: {self._done:,}{of}{share}, {now - self._started:.0f} s")


@contextmanager
def progress_anywhere(console: Console) -> Iterator[RichProgress | ProgressLines]:
    """A bar on a terminal (`progress_bar`), occasional lines in a pipe or a log (`ProgressLines`); give it the
    error console, so stdout keeps the command's output alone."""
    if console.is_terminal:
        with progress_bar(console) as bar:
            yield bar
        return
    yield ProgressLines(console)
