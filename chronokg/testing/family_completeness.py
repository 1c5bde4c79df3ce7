"""What a benchmark family needs besides its generator, as a check and a pytest mixin.

A family is complete when it has: a `Family` in `FAMILIES`, an evaluation `Profile` in `PROFILES` (else
`profile_for` refuses it), at least one metric of its own in `METRICS`, an inspect_ai task, and docs (a page
that names the family, and every metric of the family named in the docs). A family missing one of these generates
questions nobody can score, or scores them with nobody able to read the numbers; `family_gaps` names each gap::

    class TestMyFamilyComplete(FamilyCompleteness):
        family = "myfamily"
        docs_root = Path(__file__).parents[1] / "docs"
        inspect_task = "my_package.tasks:myfamily"

The inspect task is found by reading its module's source (no import: inspect_ai is heavy). docs/extending.md,
"A benchmark family".
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import ClassVar

from chronokg.bench.family import FAMILIES
from chronokg.eval.profile import PROFILES, profile_for
from chronokg.metrics.spec import all_metrics

BUILTIN_DOCS = Path(__file__).resolve().parents[2] / "docs"
BUILTIN_TASKS = "chronokg.integrations.inspect_tasks"


def defines(target: str) -> bool:
    """Whether `module:function` names a top-level function of that module, read from its source."""
    module, _, name = target.partition(":")
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        return False
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        return False
    tree = ast.parse(Path(spec.origin).read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name for node in tree.body)


def family_gaps(family: str, *, docs_root: Path = BUILTIN_DOCS, inspect_task: str | None = None) -> list[str]:
    """Each piece `family` lacks, in words (empty: complete). `inspect_task`: `module:function`, by default the
    function named for the family in chronokg's inspect tasks; the family's page is `benchmarks/<family>.md`."""
    gaps: list[str] = []
    if family not in FAMILIES:
        gaps.append(f"no family {family!r} in FAMILIES (chronokg.families)")
    if family not in PROFILES:
        gaps.append(f"no evaluation profile for {family!r} in PROFILES (chronokg.profiles)")
    else:
        profile_for(family)
    metrics = sorted(name for name, spec in all_metrics().items() if spec.family == family)
    if not metrics:
        gaps.append(f"no metric of family {family!r} in METRICS (chronokg.metrics)")
    task = inspect_task or f"{BUILTIN_TASKS}:{family}"
    if not defines(task):
        gaps.append(f"no inspect_ai task {task}")
    page = docs_root / "benchmarks" / f"{family}.md"
    if not page.is_file() or family not in page.read_text(encoding="utf-8"):
        gaps.append(f"no docs page {page} naming {family!r}")
    text = "\n".join(p.read_text(encoding="utf-8") for p in sorted(docs_root.rglob("*.md")))
    for name in metrics:
        short = name.rpartition(".")[2]
        if f"`{name}`" not in text and f"`{short}`" not in text:
            gaps.append(f"metric {name} is not named in the docs under {docs_root}")
    return gaps


class FamilyCompleteness:
    """Mix into a test class; set `family` (and, outside chronokg, `docs_root` and `inspect_task`)."""

    family: ClassVar[str]
    docs_root: ClassVar[Path] = BUILTIN_DOCS
    inspect_task: ClassVar[str | None] = None

    def test_family_is_complete(self) -> None:
        gaps = family_gaps(self.family, docs_root=self.docs_root, inspect_task=self.inspect_task)
        assert not gaps, f"family {self.family!r} is incomplete: " + "; ".join(gaps)
