"""The default run is the fast tier: slow tests run with `--all`, `-m slow`, or when their file is named."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.conftest import pytest_collection_modifyitems
from tests.helpers import REPO

HERE = REPO / "tests" / "test_tiers.py"
OTHER = REPO / "tests" / "test_cli.py"


class Item:
    def __init__(self, name: str, path: Path, *marks: str, fixtures: tuple[str, ...] = ()) -> None:
        self.name, self.path, self.marks, self.fixturenames = name, path, set(marks), fixtures

    def get_closest_marker(self, name: str) -> Any:
        return name if name in self.marks else None

    def add_marker(self, mark: Any) -> None:
        self.marks.add(mark.name)


def selected(args: list[str], *, every: bool = False, markexpr: str = "") -> list[str]:
    items: list[Any] = [Item("unit", OTHER), Item("jvm", OTHER, fixtures=("bolt_target",)),
                        Item("docs", OTHER, "docs_run"), Item("kill", OTHER, "slow"), Item("here", HERE, "slow")]
    dropped: list[Any] = []
    options = {"--all": every, "markexpr": markexpr}
    config = SimpleNamespace(args=args, invocation_params=SimpleNamespace(dir=REPO), getoption=options.__getitem__,
                             hook=SimpleNamespace(pytest_deselected=lambda items: dropped.extend(items)))
    pytest_collection_modifyitems(config, items)  # type: ignore[arg-type]
    assert {i.name for i in dropped}.isdisjoint(i.name for i in items)
    return [i.name for i in items]


def test_the_default_run_leaves_every_slow_test_out() -> None:
    assert selected(["tests"]) == ["unit"]


@pytest.mark.parametrize("how", [{"every": True}, {"markexpr": "slow"}, {"markexpr": "not slow"}])
def test_all_or_a_mark_expression_naming_slow_keeps_them_for_it_docs_runs_first(how: dict[str, Any]) -> None:
    assert selected(["tests"], **how) == ["docs", "unit", "jvm", "kill", "here"]


def test_a_named_file_or_test_id_runs_its_slow_tests() -> None:
    assert selected(["tests/test_tiers.py"]) == ["unit", "here"]  # the named file's slow test stays
    assert selected(["tests", "tests/test_tiers.py::test_x"]) == ["unit", "here"]
    assert selected([str(OTHER)]) == ["unit", "jvm", "docs", "kill"]
