"""An engine: `extdemo://PATH` is the embedded engine's file at PATH, under a scheme of its own."""

from __future__ import annotations

from chronokg.graph.kglite_store import KgliteStore


class ExtdemoStore(KgliteStore):
    pass
