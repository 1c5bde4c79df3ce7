"""How a forked read worker runs a read cheaply: the guard's verdicts cached, catalog reads without a second fork.

Profiled at 100k facts (issue 20, stop 25; benchmarks/README.md): of a cheap call's ~34 ms in a worker, the
guard's own fork per read took ~27 ms (fork, copy-on-write faults of the child touching the graph, pickling back),
its EXPLAIN 1.4-2.9 ms and its text check 0.7-1.1 ms; the query itself well under a millisecond. So, in a worker:

* `GuardVerdicts`: the text and plan checks of `chronokg.graph.guard` run once per query text; a text that passed
  is remembered (at most `MAX_VERDICTS` texts, oldest forgotten first). What a plan may contain depends on the
  text, not on the parameter values, and a refused text is never remembered, so it is checked again each time.
* `read_here`: a catalog query (our own Cypher text, checked by the guard as above, its parameters validated by
  their pydantic model) runs in the worker itself, on the worker's read-only copy of the graph, with the engine's
  deadline, work budget and row limit. The worker is the sandbox: it is a single-threaded forked copy that only
  ever reads (the engine refuses writes on a read-only handle), and the pool kills and replaces it when a read
  outlives its time limit (`WorkerPool.call`, `here_timeout_s`). Cypher from outside (`cypher` tool) keeps the
  guard's fork per read: its memory limit and the kill at its deadline are what bound a hostile query.
"""

from __future__ import annotations

import collections
from typing import Any

from chronokg.errors import QueryLimitExceeded, QueryRefused, StoreError
from chronokg.graph.guard import LimitedResult, ReadLimits, check_plan, check_text
from chronokg.graph.store import GraphStore, Params

MAX_VERDICTS = 1024  # query texts whose checks a worker remembers


class GuardVerdicts:
    """The guard's text and plan checks, remembered per query text that passed them (see the module docstring)."""

    def __init__(self, size: int = MAX_VERDICTS) -> None:
        self.size = size
        self._passed: collections.OrderedDict[str, None] = collections.OrderedDict()
        self.checks = 0  # texts checked (not answered from memory): for tests

    def check(self, store: GraphStore, cypher: str, params: Params | None) -> None:
        """Raise QueryRefused as `guarded_read` would; return quietly for a text that passed before."""
        if cypher in self._passed:
            self._passed.move_to_end(cypher)
            return
        self.checks += 1
        checked = check_text(cypher)
        check_plan(store.explain(checked.statement, params), store.engine)
        self._passed[cypher] = None
        if len(self._passed) > self.size:
            self._passed.popitem(last=False)

    def guarded_read(self, store: GraphStore, cypher: str, params: Params | None, limits: ReadLimits) -> LimitedResult:
        """`chronokg.graph.guard.guarded_read` with the checks remembered: the read itself runs as there."""
        self.check(store, cypher, params)
        return store.run_limited(cypher, params, limits)


def read_here(store: GraphStore, cypher: str, params: Params | None, limits: ReadLimits) -> LimitedResult:
    """A checked catalog read in this process, within the engine's deadline, work budget and row limit.

    Only for a forked read worker on the embedded engine (see the module docstring); elsewhere the guard's own
    `run_limited` runs it."""
    import time

    import kglite  # the embedded engine's own errors: workers exist only for it

    graph: Any = store.raw()  # type: ignore[attr-defined]  # the engine handle of a KgliteStore
    start = time.monotonic()
    try:
        result = graph.cypher(cypher, params=dict(params or {}), timeout_ms=int(limits.timeout_s * 1000),
                              max_work_units=limits.max_work, row_limit=limits.max_rows + 1)
    except kglite.ReadOnlyError as exc:  # never for a catalog query; said as the guard says it
        raise QueryRefused(f"the query would write: {exc} [read-only session]") from None
    except kglite.CypherTimeoutError:
        raise QueryLimitExceeded(f"the query ran past its time limit of {limits.timeout_s:g} s") from None
    except (kglite.KgError, ValueError) as exc:
        text = str(exc)
        if "max_work_units" in text or "safety limit" in text:
            raise QueryLimitExceeded(f"the query needs more work than its budget of {limits.max_work:,} units "
                                     f"allows ({text.split('. ')[0]})") from None
        raise StoreError(f"query failed on {store.uri}: {text}") from None
    if isinstance(result, str):
        raise StoreError(f"unexpected text result from {store.uri}")
    rows: list[dict[str, Any]] = result.to_list()
    diagnostics = getattr(result, "diagnostics", None) or {}
    truncated = len(rows) > limits.max_rows
    return LimitedResult(rows=rows[: limits.max_rows], truncated=truncated,
                         total_rows=diagnostics.get("total_rows") if truncated else len(rows),
                         elapsed_s=time.monotonic() - start)
