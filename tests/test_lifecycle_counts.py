"""Every count `releases drop`, `bench delete`, `eval runs delete` and a load print is the count they did: each
printed number is compared with the store's nodes and edges counted by label before and after, on the real
TempoMed records loaded as two releases, each generated and evaluated."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chronokg.cli.app import app
from chronokg.graph.kglite_store import KgliteStore
from tests.test_lifecycle import copy_store, digest
from tests.test_loop import split_tempomed

pytestmark = pytest.mark.slow  # whole runs deleted and counted

cli = CliRunner()


def step(store: Path, *args: str, code: int = 0) -> str:
    result = cli.invoke(app, ["--store", f"kglite://{store}", *args])
    assert result.exit_code == code, f"{' '.join(args)}: exit {result.exit_code}\n{result.output[-3000:]}"
    return result.output


def census(store: Path) -> dict[str, int]:
    """Nodes by label and edges by type."""
    with KgliteStore(store, read_only=True) as reader:
        nodes = reader.run("MATCH (n) RETURN labels(n)[0] AS k, count(*) AS n")
        edges = reader.run("MATCH ()-[r]->() RETURN type(r) AS k, count(*) AS n")
    return {r["k"]: r["n"] for r in [*nodes, *edges]}


def removed(output: str) -> dict[str, int]:
    """The first line's "removed 1,234 Label, 5 Other" as numbers."""
    line = " ".join(output.split()).split(": removed ", 1)[1].split(" kept")[0]
    return {label: int(n.replace(",", "")) for n, label in re.findall(r"(\d[\d,]*) ([A-Za-z_]+)", line)}


def assert_removed_as_printed(before: dict[str, int], after: dict[str, int], printed: dict[str, int]) -> None:
    for label, n in printed.items():
        if label[0].isupper() and not label.isupper():  # a node label (GENERATED_AT: links, not nodes)
            assert before.get(label, 0) - after.get(label, 0) == n, (label, before.get(label), after.get(label), n)
    for label in set(before) - set(printed):  # no other label lost a node it did not print
        if label[0].isupper() and not label.isupper():
            assert after.get(label, 0) >= before[label], label


@pytest.fixture(scope="module")
def built(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """r1 loaded, generated, evaluated; r2 loaded, generated, evaluated: the second release's benchmark is
    answered by one run whose every prediction answers one of its questions."""
    tmp = tmp_path_factory.mktemp("counts")
    r1, r2, _ = split_tempomed(shared_data, tmp)
    store = tmp / "store.kgl"
    loads = [step(store, "ingest", "tempomed", str(r1), "--release-date", "2024-01-01")]
    first = copy_store(store, tmp / "first.kgl")
    step(store, "generate", "tempomed", "--out", str(tmp / "q1.jsonl"))
    step(store, "eval", "run", str(tmp / "q1.jsonl"), "-m", "baseline/oracle", "--log-dir", str(tmp / "runs"))
    base = copy_store(store, tmp / "base.kgl")
    loads.append(step(store, "ingest", "tempomed", str(r2), "--release-date", "2025-06-01"))
    with KgliteStore(store, read_only=True) as reader:
        r2_id = reader.run("MATCH (s:Source) RETURN s.id AS id ORDER BY s.release_date DESC LIMIT 1")[0]["id"]
    loaded = copy_store(store, tmp / "loaded.kgl")
    step(store, "generate", "tempomed", "--out", str(tmp / "q2.jsonl"), "--no-write")
    with KgliteStore(store, read_only=True) as reader:
        snap = reader.run("MATCH (s:Source) RETURN count(s) AS n")[0]["n"]
    assert snap == 2
    return {"tmp": tmp, "store": store, "base": base, "loaded": loaded, "r2": r2_id, "loads": loads,
            "first": first}


@pytest.fixture(scope="module")
def evaluated_once(built: dict[str, Any]) -> Path:
    """The second release's questions generated into the store and evaluated by two models in one run (once per
    module: each test changes a copy of it, `evaluated`)."""
    tmp = built["tmp"] / "evaluated"
    tmp.mkdir()
    store = copy_store(built["loaded"], tmp / "s.kgl")
    step(store, "generate", "tempomed", "--out", str(tmp / "q2.jsonl"))
    step(store, "eval", "run", str(tmp / "q2.jsonl"), "-m", "baseline/oracle", "-m", "baseline/frozen:2018",
         "--log-dir", str(tmp / "runs"))
    return store


@pytest.fixture
def evaluated(evaluated_once: Path, tmp_path: Path) -> Path:
    """This test's own copy of the evaluated store (`evaluated_once`)."""
    return copy_store(evaluated_once, tmp_path / "s.kgl")


def test_drop_derived_counts_each_prediction_once(built: dict[str, Any], evaluated: Path) -> None:
    store = evaluated
    before = census(store)
    printed = removed(step(store, "releases", "drop", built["r2"], "--derived"))
    after = census(store)
    assert printed["Prediction"] == before["Prediction"] - after["Prediction"] > 0
    assert printed["Run"] == before["Run"] - after["Run"] >= 1
    assert_removed_as_printed(before, after, printed)


def test_bench_delete_counts_and_removes_its_snapshot(built: dict[str, Any], tmp_path: Path) -> None:
    """Deleting the newer benchmark (and its run) gives the store before it was generated, and the release it
    was generated from then drops without --derived."""
    store = copy_store(built["loaded"], tmp_path / "s.kgl")
    never = census(store)
    never_digest = digest(store)
    step(store, "generate", "tempomed", "--out", str(tmp_path / "q2.jsonl"))
    with KgliteStore(store, read_only=True) as reader:
        snap = reader.run("MATCH (s:Snapshot) WHERE size(s.sources) = 2 RETURN s.id AS id")[0]["id"]
    before = census(store)
    printed = removed(step(store, "bench", "delete", "tempomed", snap))
    after = census(store)
    assert printed["Snapshot"] == 1 and printed.get("Question", 0) == before["Question"] - after["Question"]
    assert_removed_as_printed(before, after, printed)
    assert printed.get("GENERATED_AT", 0) + after.get("GENERATED_AT", 0) + printed.get("Question", 0) == \
        before["GENERATED_AT"]
    assert after == never and digest(store) == never_digest  # as if it had never been generated
    step(store, "releases", "drop", built["r2"])  # nothing derived is left to block it


def test_bench_delete_derived_counts_its_run(evaluated: Path) -> None:
    store = evaluated
    with KgliteStore(store, read_only=True) as reader:
        snap = reader.run("MATCH (s:Snapshot) WHERE size(s.sources) = 2 RETURN s.id AS id")[0]["id"]
    before = census(store)
    step(store, "bench", "delete", "tempomed", snap, code=2)
    assert census(store) == before
    printed = removed(step(store, "bench", "delete", "tempomed", snap, "--derived"))
    after = census(store)
    assert_removed_as_printed(before, after, printed)
    assert printed["Prediction"] == before["Prediction"] - after["Prediction"] > 0


def test_run_delete_counts_and_removes_the_questions_it_stored(built: dict[str, Any], tmp_path: Path) -> None:
    """A run of a file never stored by generate stores its questions; deleting the run takes them out too."""
    store = copy_store(built["loaded"], tmp_path / "s.kgl")
    never, never_digest = census(store), digest(store)
    step(store, "eval", "run", str(built["tmp"] / "q2.jsonl"), "-m", "baseline/oracle", "--log-dir",
         str(tmp_path / "runs"))
    with KgliteStore(built["base"], read_only=True) as reader:
        old = {r["id"] for r in reader.run("MATCH (r:Run) RETURN r.id AS id")}
    with KgliteStore(store, read_only=True) as reader:
        (run_id,) = {r["id"] for r in reader.run("MATCH (r:Run) RETURN r.id AS id")} - old
    before = census(store)
    printed = removed(step(store, "eval", "runs", "delete", run_id))
    after = census(store)
    assert printed["Run"] == 1 and printed["Question"] > 0
    assert_removed_as_printed(before, after, printed)
    assert after == never and digest(store) == never_digest


def test_load_summaries_print_the_store_before_and_after(built: dict[str, Any]) -> None:
    """Each label's `before` and `after` in a load's table are the store's counts just before and after it, and a
    node label's `created` is what it gained."""
    stores = [(None, built["first"]), (built["base"], built["loaded"])]
    for output, (was, now) in zip(built["loads"], stores, strict=True):
        table = rows(output)
        before, after = census(was) if was is not None else {}, census(now)
        assert {"Fact", "Source", "Guideline", "ASSERTED_IN"} <= set(table)
        for label, (_, shown_before, shown_after, created, *_rest) in table.items():
            assert (shown_before, shown_after) == (before.get(label, 0), after.get(label, 0)), label
            if label[0].isupper() and not label.isupper():
                assert created == shown_after - shown_before, label


def rows(output: str) -> dict[str, list[int]]:
    """A load table's rows: label, then its numbers (in input, before, after, created, updated, ...)."""
    out: dict[str, list[int]] = {}
    for line in output.splitlines():
        cells = [c for c in re.split(r"[│|┃\s]+", line) if c]
        if len(cells) >= 4 and re.fullmatch(r"[A-Za-z_]+", cells[0]) and all(
                re.fullmatch(r"[+-]?[\d,]+", c) for c in cells[1:]):
            out[cells[0]] = [int(c.replace(",", "")) for c in cells[1:]]
    return out


def test_drop_without_derived_counts_what_it_removed(built: dict[str, Any], tmp_path: Path) -> None:
    store = copy_store(built["loaded"], tmp_path / "s.kgl")
    before = census(store)
    printed = removed(step(store, "releases", "drop", built["r2"]))
    after = census(store)
    assert printed["Source"] == 1 and printed["Fact"] > 0
    assert_removed_as_printed(before, after, printed)
    assert after == census(built["base"])  # the store before the release, label for label
