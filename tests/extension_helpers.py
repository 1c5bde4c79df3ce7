"""The extension package (tests/extension_package) as if pip had installed it: its metadata on sys.path.

`installed()` writes the package's `*.dist-info` (entry points from its pyproject.toml), puts it and the package on
sys.path, and gives chronokg's registries a fresh first lookup; on exit everything is as before.
"""

from __future__ import annotations

import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chronokg.bench.family import FAMILIES
from chronokg.eval.profile import PROFILES
from chronokg.graph.engines import ENGINES
from chronokg.ingest.sources import SOURCES
from chronokg.metrics.spec import METRICS, all_metrics
from chronokg.models.clients import CLIENTS
from chronokg.queries.spec import QUERIES, all_queries
from chronokg.registry import Registry, declared_entry_points
from chronokg.reports.plots import PLOTS, all_plots
from chronokg.retrieval.providers import PROVIDERS

PACKAGE = Path(__file__).parent / "extension_package"
REGISTRIES: dict[str, Registry[Any]] = {
    "sources": SOURCES, "queries": QUERIES, "families": FAMILIES, "profiles": PROFILES, "metrics": METRICS,
    "model_providers": CLIENTS, "search_providers": PROVIDERS, "engines": ENGINES, "plots": PLOTS,
}


def entry_points_txt(pyproject: Path = PACKAGE / "pyproject.toml", drop: tuple[str, ...] = ()) -> str:
    """The `entry_points.txt` pip would write for the package, less the groups in `drop`."""
    declared = tomllib.loads(pyproject.read_text())["project"]["entry-points"]
    return "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) + "\n"
                   for group, eps in declared.items() if group not in drop)


@contextmanager
def installed(root: Path, drop: tuple[str, ...] = ()) -> Iterator[None]:
    leftovers = sorted(p.name for p in PACKAGE.glob("*.egg-info"))
    assert not leftovers, f"metadata of a build in {PACKAGE} would be found instead of this one: {leftovers}"
    dist = root / "chronokg_extdemo-0.1.0.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: chronokg-extdemo\nVersion: 0.1.0\n")
    (dist / "entry_points.txt").write_text(entry_points_txt(drop=drop))
    # every built-in loaded first, so what is restored on exit holds them all (their catalogs load only once)
    all_queries(), all_metrics(), all_plots()
    for registry in REGISTRIES.values():
        registry.names()
    saved = {name: (dict(r._entries), r._discovered, dict(r.declared_by)) for name, r in REGISTRIES.items()}
    sys.path[:0] = [str(root), str(PACKAGE)]
    declared_entry_points.cache_clear()
    for registry in REGISTRIES.values():
        registry._discovered = False
    try:
        yield
    finally:
        sys.path.remove(str(root))
        sys.path.remove(str(PACKAGE))
        declared_entry_points.cache_clear()
        for name, (entries, discovered, declared) in saved.items():
            registry = REGISTRIES[name]
            registry._entries, registry._discovered, registry.declared_by = entries, discovered, declared
        for module in [m for m in sys.modules if m == "chronokg_extdemo" or m.startswith("chronokg_extdemo.")]:
            del sys.modules[module]
