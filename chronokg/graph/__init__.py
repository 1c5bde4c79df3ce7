"""The temporal graph: the fact model, the `GraphStore` protocol and its engines, staging and atomic writes,
and the read-only guard.

The public surface is below; each name is imported from its module on first use, so `import chronokg.graph`
(and the CLI, which imports it) loads no engine and no pydantic model it does not need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "Fact": "model", "Source": "model", "stable_id": "model",
    "Precision": "dates", "parse_date": "dates", "as_date": "dates",
    "GraphStore": "store", "Capabilities": "store",
    "open_store": "open",
    "GraphBatch": "batch",
    "write_batch": "writer", "WriteReport": "writer",
    "write_bulk": "bulk", "FactTable": "facts",
    "Policy": "merge",
    "ReadLimits": "read_limits", "guarded_read": "guard", "check_text": "guard",
}
__all__ = [
    "Capabilities", "Fact", "FactTable", "GraphBatch", "GraphStore", "Policy", "Precision", "ReadLimits",
    "Source", "WriteReport", "as_date", "check_text", "guarded_read", "open_store", "parse_date", "stable_id",
    "write_batch", "write_bulk",
]

if TYPE_CHECKING:
    from chronokg.graph.batch import GraphBatch
    from chronokg.graph.bulk import write_bulk
    from chronokg.graph.dates import Precision, as_date, parse_date
    from chronokg.graph.facts import FactTable
    from chronokg.graph.guard import check_text, guarded_read
    from chronokg.graph.merge import Policy
    from chronokg.graph.model import Fact, Source, stable_id
    from chronokg.graph.open import open_store
    from chronokg.graph.read_limits import ReadLimits
    from chronokg.graph.store import Capabilities, GraphStore
    from chronokg.graph.writer import WriteReport, write_batch


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'chronokg.graph' has no attribute {name!r}")
    return getattr(importlib.import_module(f"chronokg.graph.{module}"), name)
