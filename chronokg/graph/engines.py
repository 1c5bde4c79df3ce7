"""The engines, keyed by URI scheme: the one place an engine is registered.

Each entry is a lazy `"module:Class"`, so listing the schemes imports no engine. The class declares its
`Capabilities` and opens a `StoreURI` (`chronokg.graph.store.Engine`). A new engine is one module, one
line here and one test class using `chronokg.testing.engine_conformance` (docs/engines.md). Entry-point
group: `chronokg.engines` (name: the scheme, value: the class).
"""

from __future__ import annotations

from chronokg.graph.store import Engine
from chronokg.registry import Registry

ENGINES: Registry[Engine] = Registry("store scheme", group="engines")


def _declare(entry: str, *schemes: str) -> None:
    for scheme in schemes:
        ENGINES.register(scheme, entry)


_declare("chronokg.graph.kglite_store:KgliteStore", "kglite")
_declare("chronokg.graph.neo4j_store:Neo4jStore", "neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc")
