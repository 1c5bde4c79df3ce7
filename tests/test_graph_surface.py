"""`chronokg.graph`'s public surface: every name in `__all__` resolves, lazily (importing the package loads no
engine or writer), and an unknown name is an AttributeError."""

from __future__ import annotations

import subprocess
import sys

import pytest

import chronokg.graph as graph


def test_every_public_name_resolves_to_its_module() -> None:
    for name in graph.__all__:
        obj = getattr(graph, name)
        assert obj.__module__.startswith("chronokg.graph."), name
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = graph.nothing  # type: ignore[attr-defined]


def test_importing_the_package_loads_none_of_its_modules() -> None:
    code = ("import sys, chronokg.graph; "
            "print(sorted(m for m in sys.modules if m.startswith('chronokg.graph.') or m == 'kglite'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
