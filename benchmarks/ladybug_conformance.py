"""The engine conformance suite (`chronokg.testing.engine_conformance`) against the LadybugDB prototype.

    PYTHONPATH=. .venv-lb/bin/python benchmarks/ladybug_conformance.py

Prints one line per test (pass/fail and the first line of the failure) and the total. The prototype is
not a registered engine, so for this run only the `ladybug` scheme is registered in-process, to let the
registration test ask the same question it asks of kglite and Neo4j.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from chronokg.graph.engines import ENGINES
from chronokg.graph.store import GraphStore
from chronokg.testing.engine_conformance import EngineConformance, build

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ladybug_store import LadybugStore


class TestLadybugConformance(EngineConformance):
    @pytest.fixture(scope="class")
    @classmethod
    def graph(cls, tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphStore]:
        with LadybugStore(tmp_path_factory.mktemp("lb") / "graph.lbdb") as store:
            build(store)
            yield store


class Outcomes:
    """A pytest plugin that keeps each test's outcome and the first line of its failure."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, str]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            reason = ""
            if report.outcome != "passed":
                lines = [ln for ln in str(report.longrepr).splitlines() if ln.startswith("E ")]
                reason = (lines[0][1:].strip() if lines else str(report.longrepr).splitlines()[-1])[:150]
            self.rows.append((report.nodeid.split("::")[-1], report.outcome, reason))


def main() -> int:
    ENGINES.register("ladybug", "ladybug_store:LadybugStore")
    outcomes = Outcomes()
    pytest.main([__file__, "-q", "-n", "0", "-p", "no:cacheprovider", "--no-header", "-o", "addopts="],
                plugins=[outcomes])
    for name, outcome, reason in outcomes.rows:
        print(f"{outcome:7} {name}{'  -- ' + reason if reason else ''}")
    passed = sum(1 for _, o, _ in outcomes.rows if o == "passed")
    print(f"conformance: {passed}/{len(outcomes.rows)} pass")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
