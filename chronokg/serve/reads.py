"""How a forked read worker runs a read cheaply: the guard's verdicts cached, catalog reads without a second fork.

Profiled at 100k facts (benchmarks/README.md): of a cheap call's ~34 ms in a worker, the
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

    Only for a forked read worker (see the module docstring): the embedded engine's `run_here`; an engine
    without one runs the read as the guard does."""
    here = getattr(store, "run_here", None)
    return here(cypher, params, limits) if here is not None else store.run_limited(cypher, params, limits)
