"""Extensions are found through `chronokg.*` entry points, each kind's recipe in docs/extending.md names a check,
and every family is complete (profile, metrics, inspect task, docs)."""

from __future__ import annotations

import ast
import asyncio
import re
import shutil
import subprocess
import sys
import sysconfig
import types
import venv
from pathlib import Path

import pytest

from chronokg.bench.family import FAMILIES
from chronokg.errors import ChronoKGError
from chronokg.eval.profile import PROFILES, profile_for
from chronokg.graph.engines import ENGINES
from chronokg.ingest.sources import SOURCES
from chronokg.metrics.spec import METRICS, all_metrics
from chronokg.models import get_model
from chronokg.models.clients import CLIENTS
from chronokg.queries.spec import QUERIES
from chronokg.registry import Registry
from chronokg.reports.plots import PLOTS, all_plots
from chronokg.store_uri import StoreURI
from chronokg.testing.family_completeness import FamilyCompleteness, family_gaps
from tests.extension_helpers import PACKAGE, installed

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ROOT / "docs" / "extending.md"
KINDS = ("source", "query", "family", "metric", "provider", "engine", "plot")


@pytest.mark.parametrize("family", FAMILIES.names())
def test_every_family_is_complete(family: str) -> None:
    """chronokg's own families; one an installed package declares has its docs and inspect task in that package,
    which checks it with a `FamilyCompleteness` subclass naming them (docs/extending.md, "A family")."""
    declared = FAMILIES.declared_by.get(family, "")
    if declared and not declared.startswith("chronokg."):
        pytest.skip(f"family {family} comes from {declared}: its package checks it with FamilyCompleteness")
    gaps = family_gaps(family)
    assert not gaps, f"family {family!r} is incomplete: " + "; ".join(gaps)


def plots_without_a_metric() -> list[str]:
    return [name for name in all_plots() if name not in all_metrics()]


def metrics_without_a_family() -> list[str]:
    return [name for name, spec in all_metrics().items() if spec.family is not None and spec.family not in FAMILIES]


def providers_that_do_not_resolve() -> list[str]:
    bad = []
    for name in CLIENTS.names():
        try:
            factory = CLIENTS.get(name)
        except (ImportError, AttributeError):
            bad.append(name)
            continue
        if not callable(factory):
            bad.append(name)
    return bad


def engines_without_conformance() -> list[str]:
    """Engine classes with no `Test<Name>Conformance` (name less `Store`) in tests/test_conformance.py."""
    tree = ast.parse((ROOT / "tests" / "test_conformance.py").read_text())
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)
               and any(isinstance(b, ast.Name) and b.id == "EngineConformance" for b in n.bases)}
    engines = {ENGINES.get(scheme).__name__ for scheme in ENGINES}  # type: ignore[attr-defined]
    return sorted(e for e in engines if f"Test{e.removesuffix('Store')}Conformance" not in classes)


def test_every_plot_is_for_a_registered_metric() -> None:
    assert plots_without_a_metric() == []


def test_every_metric_belongs_to_a_registered_family() -> None:
    assert metrics_without_a_family() == []


def test_every_model_provider_resolves_to_a_factory() -> None:
    assert providers_that_do_not_resolve() == []


def test_every_engine_runs_the_conformance_suite() -> None:
    assert engines_without_conformance() == []


def test_each_check_names_what_an_extension_forgot(tmp_path: Path) -> None:
    """The checks the recipes name, run with the extension package less one piece: each fails, naming it."""
    from tests import test_loader_conformance

    with installed(tmp_path / "a", drop=("chronokg.metrics",)):
        assert plots_without_a_metric() == ["extdemo.accuracy"]
        with pytest.raises(AssertionError):
            test_every_plot_is_for_a_registered_metric()
    with installed(tmp_path / "b", drop=("chronokg.families",)):
        assert metrics_without_a_family() == ["extdemo.accuracy"]
        with pytest.raises(AssertionError):
            test_every_metric_belongs_to_a_registered_family()
    with installed(tmp_path / "c"):
        CLIENTS.register("forgot", "chronokg_extdemo.provider:no_such_factory")
        assert providers_that_do_not_resolve() == ["forgot"]
        assert engines_without_conformance() == ["ExtdemoStore"]  # no TestExtdemoConformance
        with pytest.raises(AssertionError, match="extdemo"):  # no LoaderConformance class for the source
            test_loader_conformance.test_every_source_with_a_loader_runs_the_conformance_suite()
    with installed(tmp_path / "d"):
        assert plots_without_a_metric() == metrics_without_a_family() == providers_that_do_not_resolve() == []


def test_profile_for_refuses_a_family_without_a_profile() -> None:
    with pytest.raises(ChronoKGError, match="no evaluation profile for family 'nosuch'"):
        profile_for("nosuch")


def test_a_registry_reads_its_group_on_first_lookup_only(tmp_path: Path) -> None:
    with installed(tmp_path):
        assert not FAMILIES._discovered and "chronokg_extdemo.family" not in sys.modules
        assert "extdemo" in FAMILIES  # the first lookup reads the group ...
        assert "chronokg_extdemo.family" not in sys.modules  # ... and imports nothing behind a named entry
        assert FAMILIES.declared_by["extdemo"] == "chronokg_extdemo.family:FAMILY"
        assert FAMILIES.get("extdemo").name == "extdemo"
        assert "chronokg_extdemo.family" in sys.modules
    assert "extdemo" not in FAMILIES  # the helper put everything back


def test_every_kind_of_the_extension_package_is_found(tmp_path: Path) -> None:
    with installed(tmp_path):
        assert SOURCES.get("extdemo").loader == "chronokg_extdemo.source:load"
        assert "extdemo-predicate-counts" in QUERIES.names()
        assert "extdemo.accuracy" in all_metrics() and METRICS.get("extdemo.accuracy").family == "extdemo"
        assert "extdemo.accuracy" in all_plots()
        client = get_model("extdemo/hello")
        from chronokg.models import ModelRequest

        reply = asyncio.run(client.generate(ModelRequest(prompt="?")))
        assert reply.text == "hello"
        engine = ENGINES.get("extdemo")
        store = engine.open(StoreURI.parse(f"extdemo://{tmp_path / 'g.kgl'}"), _settings())
        store.close()
        assert profile_for("extdemo").extract(None, "42\nbecause", "seed") == "42"  # type: ignore[arg-type]


def test_the_extension_pieces_work_together(tmp_path: Path) -> None:
    """Load with the extension's source into its engine, ask its query, generate its family's questions."""
    import importlib

    from chronokg.bench.family import generate
    from chronokg.graph.open import open_store
    from chronokg.queries.spec import run_query

    data = tmp_path / "facts.jsonl"
    data.write_text('{"subject": "ada", "predicate": "city", "value": "Paris", "valid_from": "2020-01-01"}\n'
                    '{"subject": "ada", "predicate": "age", "value": "30", "valid_from": "2020-01-01"}\n')
    with installed(tmp_path / "meta"):
        module, _, attr = SOURCES.get("extdemo").loader.partition(":")
        load = getattr(importlib.import_module(module), attr)
        with open_store(f"extdemo://{tmp_path / 'g.kgl'}") as store:
            summary = load(store, [data], release_date=None)
            assert summary.added.get("Fact") == 2, summary
            rows = run_query(store, "extdemo-predicate-counts")
            assert [(r.predicate, r.facts) for r in rows] == [("age", 1), ("city", 1)]
            questions, _ = generate("extdemo", store, "snap", {})
            assert sorted(q.target for q in questions) == ["30", "Paris"]


def test_the_extension_family_is_complete_and_each_missing_piece_is_named(tmp_path: Path) -> None:
    docs = PACKAGE / "docs"
    task = "chronokg_extdemo.tasks:extdemo"
    with installed(tmp_path):
        assert family_gaps("extdemo", docs_root=docs, inspect_task=task) == []
    with installed(tmp_path / "no-profile", drop=("chronokg.profiles",)):
        gaps = family_gaps("extdemo", docs_root=docs, inspect_task=task)
        assert gaps == ["no evaluation profile for 'extdemo' in PROFILES (chronokg.profiles)"]
        with pytest.raises(ChronoKGError):
            profile_for("extdemo")
    with installed(tmp_path / "no-metrics", drop=("chronokg.metrics",)):
        assert family_gaps("extdemo", docs_root=docs, inspect_task=task) == [
            "no metric of family 'extdemo' in METRICS (chronokg.metrics)"]
    with installed(tmp_path / "no-task"):
        assert family_gaps("extdemo", docs_root=docs, inspect_task="chronokg_extdemo.tasks:nothing") == [
            "no inspect_ai task chronokg_extdemo.tasks:nothing"]
    with installed(tmp_path / "no-docs"):
        assert any("no docs page" in gap for gap in family_gaps("extdemo", docs_root=tmp_path, inspect_task=task))


class TestBuiltinFamilyComplete(FamilyCompleteness):
    family = "tempomed"


def test_a_named_entry_never_replaces_a_built_in() -> None:
    registry: Registry[str] = Registry("thing")
    registry.register("a", "x:y")
    with pytest.raises(ChronoKGError, match="already registered"):
        registry.register("a", "x:z")


def recipe_checks() -> dict[str, list[str]]:
    """Kind -> the tests its recipe in docs/extending.md names (`Check:` lines, `tests/FILE.py::NAME`)."""
    out: dict[str, list[str]] = {}
    kind, in_check = "", False
    for line in RECIPES.read_text().splitlines():
        if line.startswith("## "):
            kind = next((k for k in KINDS if line.lower().startswith((f"## a {k}", f"## an {k}"))), "")
        in_check = bool(kind) and (line.startswith("Check:") or (in_check and line.strip() != ""))
        if in_check:
            out.setdefault(kind, []).extend(re.findall(r"`(tests/[\w/]+\.py::[\w:]+)`", line))
    return out


def missing_tests(names: list[str]) -> list[str]:
    """Those of `tests/FILE.py::NAME` references whose file does not define NAME (a function or class)."""
    out = []
    for name in names:
        path, *parts = name.split("::")
        file = ROOT / path
        tree = ast.parse(file.read_text()) if file.is_file() else ast.Module(body=[], type_ignores=[])
        defined = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.ClassDef)}
        if parts[-1] not in defined:
            out.append(name)
    return out


def test_each_recipe_names_a_check_that_exists() -> None:
    checks = recipe_checks()
    assert sorted(checks) == sorted(KINDS)
    assert all(checks.values())
    assert sum(map(len, checks.values())) >= 12  # continuation lines are read too
    assert missing_tests([n for names in checks.values() for n in names]) == []
    assert missing_tests(["tests/test_extending.py::no_such_test"]) == ["tests/test_extending.py::no_such_test"]


def test_every_test_the_architecture_names_exists() -> None:
    named = re.findall(r"`(tests/[\w/]+\.py::[\w:]+)`", (ROOT / "docs" / "architecture.md").read_text())
    assert len(named) >= 10
    assert missing_tests(named) == []


def test_baseline_is_found_in_a_fresh_interpreter() -> None:
    code = ("import sys; from chronokg.models import get_model; c = get_model('baseline/oracle'); "
            "print(type(c).__name__, 'chronokg.eval.runner' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, f"{done.stderr}\n(installed metadata older than pyproject.toml? pip install -e .)"
    assert done.stdout.split() == ["Baseline", "False"]  # found without importing the evaluation runner


@pytest.mark.slow
def test_the_extension_package_installs_and_is_found(tmp_path: Path) -> None:
    """pip installs the package into a fresh environment that sees this chronokg; a fresh interpreter finds all."""
    source = shutil.copytree(PACKAGE, tmp_path / "src")  # the build writes beside the sources: not into tests/
    env = tmp_path / "venv"
    venv.create(env)  # no pip nor setuptools of its own: this environment's pip installs, its setuptools builds
    python = env / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # chronokg's dependencies (and setuptools, to build without the network) from the environment running this
    (Path(purelib) / "chronokg-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    built = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps",
                            "--no-build-isolation", "--no-index", str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    code = ("from chronokg.bench.family import FAMILIES; from chronokg.ingest.sources import SOURCES; "
            "from chronokg.queries.spec import all_queries; from chronokg.metrics.spec import all_metrics; "
            "from chronokg.models import get_model; from chronokg.graph.engines import ENGINES; "
            "from chronokg.reports.plots import all_plots; from chronokg.eval.profile import profile_for; "
            "print(FAMILIES.get('extdemo').name, SOURCES.get('extdemo').name, "
            "'extdemo-predicate-counts' in all_queries(), 'extdemo.accuracy' in all_metrics(), "
            "type(get_model('extdemo/x')).__name__, ENGINES.get('extdemo').__name__, "
            "'extdemo.accuracy' in all_plots(), type(profile_for('extdemo')).__name__)")
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["extdemo", "extdemo", "True", "True", "EchoClient", "ExtdemoStore", "True",
                                   "ExtdemoProfile"]


def _settings():  # type: ignore[no-untyped-def]
    from chronokg.settings import Settings

    return Settings()


def test_the_registries_of_chronokg_are_all_covered() -> None:
    from tests.extension_helpers import REGISTRIES

    assert CLIENTS in REGISTRIES.values() and PROFILES in REGISTRIES.values() and PLOTS in REGISTRIES.values()
    assert all(r.group == name for name, r in REGISTRIES.items())


def test_the_scan_finds_what_importlib_metadata_finds(tmp_path: Path) -> None:
    from importlib.metadata import distributions

    from chronokg.registry import declared_entry_points

    with installed(tmp_path):
        want: dict[str, set[tuple[str, str]]] = {}
        for dist in distributions():
            for ep in dist.entry_points:
                if ep.group.startswith("chronokg."):
                    want.setdefault(ep.group.removeprefix("chronokg."), set()).add((ep.name, ep.value))
        got = declared_entry_points()
        assert {group: set(pairs) for group, pairs in got.items()} == want
        assert ("extdemo", "chronokg_extdemo.engine:ExtdemoStore") in got["engines"]


def test_a_lazy_entry_whose_module_registers_it_resolves_to_that_object(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A query declared `name = "module:SPEC"` whose module calls `register(SPEC)` on import: one entry, no clash."""
    registry: Registry[object] = Registry("thing")
    (tmp_path / "selfregistering.py").write_text(
        "from holder import SELF\nTHING = object()\nSELF.register('it', THING)\n")
    (tmp_path / "other.py").write_text("from holder import SELF\nSELF.register('b', object())\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    holder = types.ModuleType("holder")
    holder.SELF = registry  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "holder", holder)
    for name in ("selfregistering", "other"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    registry.register("it", "selfregistering:THING")
    import selfregistering  # type: ignore[import-not-found]

    assert registry.get("it") is selfregistering.THING
    registry.register("b", "selfregistering:THING")
    with pytest.raises(ChronoKGError, match="already registered"):  # another object under a lazy entry's name
        import other  # type: ignore[import-not-found]  # noqa: F401
