"""What an engine can do is declared by the engine (`Capabilities`), and a store URI is parsed once (`StoreURI`).

An AST scan like tests/test_layers.py: outside the engine modules nothing compares an engine's name or probes a
store with getattr/hasattr, and outside chronokg/store_uri.py nothing builds or slices a store URI as a string.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from chronokg.errors import StoreError
from chronokg.graph.engines import ENGINES
from chronokg.graph.kglite_store import KgliteStore
from chronokg.graph.open import open_store
from chronokg.graph.store import Capabilities, GraphStore, Params, Row
from chronokg.settings import Settings
from chronokg.store_uri import StoreURI, default_store, redact

PACKAGE = Path(__file__).resolve().parents[1] / "chronokg"
STRING_METHODS = {"startswith", "endswith", "removeprefix", "removesuffix", "partition", "rpartition", "split"}


def _engine_files() -> set[Path]:
    """Each registered engine's module and its helpers beside it (`kglite_store.py`: `kglite_*.py`)."""
    out = set()
    for scheme in ENGINES:
        module = ENGINES.get(scheme).__module__
        if not module.startswith("chronokg."):  # an engine another installed package declares
            continue
        path = PACKAGE.parent / (module.replace(".", "/") + ".py")
        stem = path.stem.removesuffix("_store")
        out |= {p for p in path.parent.glob(f"{stem}_*.py")}
    return out


def _named_store(node: ast.expr) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return "store" in name.lower()


def _uri_text(value: object) -> bool:
    """A store URI's scheme part (`kglite://`, `bolt://`, ...), or a bare `://` split on."""
    return isinstance(value, str) and (value == "://" or any(f"{s}://" in value for s in ENGINES))


def _findings(path: Path, tree: ast.AST, *, engine_module: bool) -> list[str]:
    found = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Compare) and not engine_module:
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Attribute) and s.attr == "engine" for s in sides):
                found.append(f"{where}: compares an engine's name (ask store.capabilities)")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in {"getattr", "hasattr"}
                and node.args and _named_store(node.args[0]) and not engine_module):
            found.append(f"{where}: probes a store with {node.func.id} (declare it on GraphStore / Capabilities)")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STRING_METHODS
                and any(isinstance(a, ast.Constant) and _uri_text(a.value) for a in node.args)):
            found.append(f"{where}: slices a URI string (parse it: StoreURI)")
        if (isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant)
                and str(node.values[0].value).endswith("://") and _uri_text(node.values[0].value)):
            found.append(f"{where}: builds a URI string (StoreURI / embedded_file)")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("?durable"):
            found.append(f"{where}: appends a URI option (StoreURI.with_option)")
    return found


def test_no_engine_names_probes_or_uri_strings_outside_their_modules() -> None:
    engines = _engine_files()
    assert len(engines) >= 2, engines  # the scan knows the engine modules
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "store_uri.py" and path.parent == PACKAGE:
            continue
        found += _findings(path, ast.parse(path.read_text(encoding="utf-8")), engine_module=path in engines)
    assert found == []


def test_the_scan_catches_each_kind() -> None:
    """The scan is not vacuous: each rule fires on a line that breaks it."""
    source = ('if store.engine == "kglite": pass\n'
              'getattr(store, "intervals", None)\n'
              'uri.startswith("kglite://")\n'
              'x = f"kglite://{path}"\n'
              'uri += "?durable=off"\n')
    assert len(_findings(PACKAGE / "x.py", ast.parse(source), engine_module=False)) == 5
    assert len(_findings(PACKAGE / "x.py", ast.parse(source), engine_module=True)) == 3


def test_every_scheme_opens_a_class_that_declares_its_capabilities() -> None:
    for scheme in ENGINES:
        engine = ENGINES.get(scheme)
        assert isinstance(engine.capabilities, Capabilities), scheme
        assert engine.capabilities.read_operators, scheme
    assert ENGINES.get("kglite") is KgliteStore


def test_unknown_schemes_name_the_known_ones() -> None:
    with pytest.raises(StoreError, match=r"unknown store scheme 'sqlite'.*kglite://.*neo4j://"):
        open_store("sqlite:///x.db", Settings())


@pytest.mark.parametrize("text", ["kglite:///tmp/a.kgl", "kglite://rel/a.kgl?durable=off", "kglite://:memory:",
                                  "bolt://u:p%40w@h:7687?policy=x", "neo4j+s://host:7687"])
def test_a_uri_reads_back_as_written(text: str) -> None:
    assert str(StoreURI.parse(text)) == text


def test_uri_parts() -> None:
    uri = StoreURI.parse("bolt://neo:p%40ss@db.example:7687?policy=eu")
    assert (uri.scheme, uri.location, uri.option("policy"), uri.credentials()) == (
        "bolt", "db.example:7687", "eu", ("neo", "p@ss"))
    assert uri.redacted() == "bolt://***@db.example:7687?policy=eu" == redact(str(uri))
    assert "p%40ss" not in repr(uri) and uri.file is None and not uri.embedded
    assert str(uri.without_credentials()) == "bolt://db.example:7687?policy=eu"
    local = StoreURI.parse("kglite://data/s@1.kgl")  # an embedded store's location is a path, '@' and all
    assert local.file == "data/s@1.kgl" and local.credentials() == (None, None)
    assert local.plain_file is not None and local.plain_file.endswith("/data/s@1.kgl")
    durable = local.with_option("durable", "off")
    assert str(durable) == "kglite://data/s@1.kgl?durable=off" and durable.plain_file is None
    assert str(durable.with_option("durable", "full")) == "kglite://data/s@1.kgl?durable=full"
    assert StoreURI.parse("kglite://:memory:").file is None
    with pytest.raises(StoreError, match="not a store URI"):
        StoreURI.parse("/tmp/store.kgl")
    assert redact("not a uri") == "not a uri"


def test_the_default_store_is_named_once() -> None:
    assert Settings(store="").store == str(default_store())
    assert default_store().embedded and default_store().file is not None


def test_a_load_keeps_no_log_unless_the_uri_says(tmp_path: Path) -> None:
    plain = tmp_path / "a.kgl"
    with open_store(f"kglite://{plain}", Settings(), load=True) as store:
        assert store.uri == f"kglite://{plain}?durable=off"
    with open_store(f"kglite://{plain}?durable=full", Settings(), load=True) as store:
        assert store.uri == f"kglite://{plain}?durable=full"
    with open_store("kglite://:memory:", Settings(), load=True) as store:
        assert store.uri == "kglite://:memory:"
    with pytest.raises(StoreError, match="unknown option"):
        open_store(f"kglite://{plain}?fast=1", Settings())


def test_one_run_takes_the_read_strategy() -> None:
    """`QuerySpec.run(read=...)`: the strategy gets the spec's own Cypher, every time, and the direct path (the
    interval index) is not taken around it; the rows are the plain run's."""
    from chronokg.queries.spec import all_queries
    from chronokg.testing.engine_conformance import build

    spec = all_queries().get("as-of")
    params = {"date": "2012-01-01", "subject": "alice"}
    seen: list[str] = []

    def read(store: GraphStore, cypher: str, args: Params) -> list[Row]:
        seen.append(cypher)
        return store.run(cypher, args)

    with KgliteStore(":memory:") as store:
        build(store)
        plain = spec.run(store, params)
        assert spec.run(store, params, read=read) == plain and [r.object for r in plain] == ["globex", None]
    assert seen == [spec.cypher(params)[0]]
