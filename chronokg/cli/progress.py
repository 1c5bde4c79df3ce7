"""A rich progress bar that loaders and the writer report to."""

from __future__ import annotations

import logging
import threading
import time
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


class LineProgress:
    """Progress where no bar is drawn (a pipe, a log): a line when a step starts, then one every `every` seconds
    while it runs, from its advances or, when none comes (a model loading inside its first batch), from a
    heartbeat; each line says the step, how far it is and the seconds since the command's work began. So a long
    step is never silent."""

    def __init__(self, console: Console, every: float = 10.0) -> None:
        self._console = console
        self._every = every
        self._lock = threading.Lock()
        self._description = ""
        self._total = self._done = 0
        self._began = self._last = time.monotonic()
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name="progress-lines", daemon=True)

    def __enter__(self) -> LineProgress:
        self._beat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._beat.join()

    def start(self, total: int, description: str) -> None:
        with self._lock:
            self._description, self._total, self._done = description, total, 0
            self._line()

    def advance(self, n: int) -> None:
        with self._lock:
            self._done += n
            if time.monotonic() - self._last >= self._every:
                self._line()

    def _heartbeat(self) -> None:
        while not self._stop.wait(self._every / 2):
            with self._lock:
                if self._description and time.monotonic() - self._last >= self._every:
                    self._line()

    def _line(self) -> None:
        self._last = now = time.monotonic()
        done = f"{self._done:,} of {self._total:,}" if self._total else f"{self._done:,} so far" if self._done \
            else "started"
        say(self._console, f"{self._description}: {done} ({now - self._began:.0f} s)")


@contextmanager
def progress_bar(console: Console, lines: Console | None = None) -> Iterator[RichProgress | LineProgress]:
    """A bar on a terminal (gone when done); where `console` is no terminal, nothing, or with `lines` given,
    progress lines on that console (`LineProgress`: stderr, so stdout keeps the command's answer alone)."""
    if lines is not None and not console.is_terminal:
        with LineProgress(lines) as steps:
            yield steps
        return
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
        self._failed += 0 if record.error is None and not record.fields.get("request_error") else 1
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
