"""Imports run one way through the layers of chronokg/layers.py and close no circle.

Every import counts: at module level, inside a function (lazy) and under `TYPE_CHECKING`, because each is a
dependency a reader has to follow. Read from the source with `ast`, so nothing is imported to check it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cache
from pathlib import Path

from chronokg.layers import LAYERS, rank, rendered

PACKAGE = Path(__file__).resolve().parents[1] / "chronokg"


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The chronokg modules `name` imports (`from pkg import sub` counts as `pkg.sub` when that is a module)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target.startswith("chronokg.") and target != name:
                found.add(target)
    return found


@cache
def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _part(module: str) -> str:
    return module.split(".")[1]


def test_every_part_of_the_package_has_a_layer() -> None:
    parts = {_part(m) for m in _modules() if m != "chronokg"}
    declared = {p for layer in LAYERS for p in layer}
    assert parts - {"layers", "__main__"} <= declared, f"in no layer: {sorted(parts - declared)}"
    assert declared <= parts, f"declared but gone: {sorted(declared - parts)}"


def test_no_import_runs_up_the_layers() -> None:
    upward = sorted(f"{m} imports {t}" for m, targets in _graph().items() if m != "chronokg" and _part(m) != "layers"
                    for t in targets if rank(_part(t)) > rank(_part(m)))
    assert upward == [], "\n".join(upward)


def test_no_import_closes_a_circle() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    assert circles == [], circles
    parts: dict[str, set[str]] = defaultdict(set)  # and none between two parts of one layer either
    for m, targets in graph.items():
        for t in targets:
            if m != "chronokg" and _part(t) != _part(m):
                parts[_part(m)].add(_part(t))
    both_ways = sorted({tuple(sorted((a, b))) for a, bs in parts.items() for b in bs if a in parts.get(b, ())})
    assert both_ways == [], both_ways


def test_developers_md_shows_the_declared_layers() -> None:
    text = (PACKAGE.parent / "DEVELOPERS.md").read_text(encoding="utf-8")
    assert f"`{rendered()}`" in text, f"DEVELOPERS.md should show the layers as `{rendered()}`"


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    """The checker itself: a lazy import of the CLI inside a graph module is found."""
    fake = tmp_path / "chronokg"
    (fake / "graph").mkdir(parents=True)
    (fake / "cli").mkdir()
    for f in ("__init__.py", "graph/__init__.py", "cli/__init__.py", "cli/common.py"):
        (fake / f).write_text("")
    (fake / "graph" / "x.py").write_text("def f():\n    from chronokg.cli.common import Groups\n")
    modules = {"chronokg": fake / "__init__.py", "chronokg.graph": fake / "graph/__init__.py",
               "chronokg.graph.x": fake / "graph/x.py", "chronokg.cli": fake / "cli/__init__.py",
               "chronokg.cli.common": fake / "cli/common.py"}
    assert _imports("chronokg.graph.x", modules["chronokg.graph.x"], modules) == {"chronokg.cli.common"}
    assert rank("cli") > rank("graph")
