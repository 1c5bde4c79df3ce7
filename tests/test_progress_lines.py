"""Long steps in a pipe or a log are never silent: `LineProgress` writes a line when a step starts, then one every
few seconds while it runs (from its advances, or a heartbeat when none comes), each naming the step and how far
it is; the passage index's build says each of its steps."""

from __future__ import annotations

import io
import re
import time

import numpy as np
import pytest
from rich.console import Console

from chronokg.cli.progress import LineProgress, progress_bar


def console() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=200, force_terminal=False, color_system=None), buffer


def test_a_step_says_it_started_and_how_far_it_is() -> None:
    out, buffer = console()
    with LineProgress(out, every=0.2) as steps:
        steps.start(3, "reading the run folders")
        steps.advance(1)  # no line yet: the last is fresh
        time.sleep(0.5)  # the heartbeat says how far it is
        steps.start(0, "reading passages from the store")
        time.sleep(0.5)  # no advance: the heartbeat says it is still at it
    lines = buffer.getvalue().splitlines()
    assert re.fullmatch(r"reading the run folders: 0 of 3 \(0 s\)", lines[0]), lines
    assert lines[1] != lines[0] and re.fullmatch(r"reading the run folders: 1 of 3 \(\d+ s\)", lines[1]), lines
    heartbeats = [line for line in lines if line.startswith("reading passages from the store: started")]
    assert len(heartbeats) >= 2, lines  # the start, then at least one heartbeat


def test_the_bar_of_a_pipe_is_lines_on_the_other_console() -> None:
    out, shown = console()
    err, said = console()
    with progress_bar(out, lines=err) as bar:
        bar.start(2, "drawing the plots of each metric")
        bar.advance(2)
    assert shown.getvalue() == "" and said.getvalue().startswith("drawing the plots of each metric: 0 of 2 (0 s)")
    with progress_bar(out) as bar:  # no lines asked for: silent, as before
        bar.start(1, "x")
    assert shown.getvalue() == ""


class Embedder:
    name = "test/fixed"
    dim = 4

    def encode(self, texts: list[str]) -> np.ndarray:
        vectors = np.ones((len(texts), self.dim), dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.slow  # the demo corpus loaded
def test_building_the_passage_index_says_each_step(tmp_path: object) -> None:
    from pathlib import Path

    from chronokg.demo.corpus import load_demo
    from chronokg.graph.kglite_store import KgliteStore
    from chronokg.retrieval.indexing import update_index

    folder = Path(str(tmp_path)) / "index"
    out, buffer = console()
    with KgliteStore(":memory:") as store, LineProgress(out) as steps:
        load_demo(store)
        update_index(store, folder, embedder=Embedder(), kind="flat", progress=steps)
    lines = buffer.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "reading passages from the store", "embedding passages",
        "writing the index of the passages (an IVF index trained first)"], lines
    assert re.fullmatch(r"embedding passages: 0 of \d+ \(\d+ s\)", lines[1]), lines
