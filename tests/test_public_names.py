"""A name another module imports is public: no `from chronokg.x import _name`, no `chronokg._module` imported
from elsewhere, in the package, its tests or its benchmarks. And modules stay about 500 lines, split by meaning."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 500  # DEVELOPERS.md: a module of more is split by meaning


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports(source: str) -> list[str]:
    """Each import of a private chronokg name or module in `source`, as 'line: what'."""
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == "chronokg":
            if any(private(part) for part in node.module.split(".")):
                out.append(f"{node.lineno}: {node.module}")
            out.extend(f"{node.lineno}: {node.module}.{a.name}" for a in node.names if private(a.name))
        elif isinstance(node, ast.Import):
            out.extend(f"{node.lineno}: {a.name}" for a in node.names
                       if a.name.split(".")[0] == "chronokg" and any(private(p) for p in a.name.split(".")))
    return out


def python_files() -> list[Path]:
    return sorted(p for base in ("chronokg", "tests", "benchmarks") for p in (ROOT / base).rglob("*.py"))


def test_the_check_sees_a_private_import() -> None:
    assert private_imports("from chronokg.graph.writer import _gc_paused, gc_paused\n") == \
        ["1: chronokg.graph.writer._gc_paused"]
    assert private_imports("import chronokg.models._errors\n") == ["1: chronokg.models._errors"]
    assert private_imports("from chronokg import __version__\nfrom ._x import y\n") == []


def test_no_module_imports_a_private_name() -> None:
    found = {str(p.relative_to(ROOT)): hits for p in python_files() if (hits := private_imports(p.read_text()))}
    assert found == {}, f"make these names public (drop the underscore) or undo the split: {found}"


@pytest.mark.parametrize("package", ["chronokg"])
def test_modules_stay_about_500_lines(package: str) -> None:
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / package).rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}, f"split these modules by meaning: {long}"
