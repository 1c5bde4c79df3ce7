"""How a forked read worker runs a read cheaply: the guard's verdicts cached, catalog reads without a second fork.

Profiled at 100k facts (benchmarks/README.md): of a cheap call's ~34 ms in a worker, the
guard's own fork per read took ~27 ms (fork, copy-on-write faults of the child touching the graph, pickling back),
its EXPLAIN 1.4-2.9 ms and its text check 0.7-1.1 ms; the query itself well under a millisecond. So, in a worker:

* `GuardVerdicts`: the text and plan checks of `chronokg.graph.guard` run once per query text; a text that passed
  is remembered (at most `MAX_VERDICTS` texts, oldest forgotten first). What a plan may contain depends on the
  text, not on the parameter values, and a refused text is never remembered, so it is checked again each time.
* `GuardedRead(here=True)`: a catalog query (our own Cypher text, checked by the guard as above, its parameters
  validated by their pydantic model) runs in the worker itself, on the worker's read-only copy of the graph, with
  the engine's deadline, work budget and row limit. The worker is the sandbox: it is a single-threaded forked copy
  that only ever reads (the engine refuses writes on a read-only handle), and the pool kills and replaces it when a
  read outlives its time limit (`WorkerPool.call`, `here_timeout_s`). Cypher from outside (`cypher` tool) keeps the
  guard's fork per read: its memory limit and the kill at its deadline are what bound a hostile query.

`GuardedRead` is the read strategy every tool call passes to `QuerySpec.run` (in process, or in a worker with the
verdicts and `here`): the query runs one way everywhere, with the guard and the engine's bounded read as arguments.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass

from chronokg.graph import guard
from chronokg.graph.guard import LimitedResult, ReadLimits
from chronokg.graph.store import GraphStore, Params, Row

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
        guard.check(store, cypher, params)
        self._passed[cypher] = None
        if len(self._passed) > self.size:
            self._passed.popitem(last=False)

    def guarded_read(self, store: GraphStore, cypher: str, params: Params | None, limits: ReadLimits) -> LimitedResult:
        """`chronokg.graph.guard.guarded_read` with the checks remembered: the read itself runs as there."""
        self.check(store, cypher, params)
        return store.run_limited(cypher, params, limits)


@dataclass
class GuardedRead:
    """How a tool call reads: the guard's checks (remembered by `verdicts` in a worker), then the engine's bounded
    read, forked (`run_limited`) or, with `here`, in this process (`run_here`: only in a forked read worker, only
    for catalog Cypher). A `chronokg.queries.spec.Read`; `result` keeps the last read's truncation and total."""

    limits: ReadLimits
    verdicts: GuardVerdicts | None = None
    here: bool = False
    result: LimitedResult | None = None

    def limited(self, store: GraphStore, cypher: str, params: Params | None) -> LimitedResult:
        if self.verdicts is not None:
            self.verdicts.check(store, cypher, params)
        else:
            guard.check(store, cypher, params)
        run = store.run_here if self.here else store.run_limited
        self.result = run(cypher, params, self.limits)
        return self.result

    def __call__(self, store: GraphStore, cypher: str, params: Params | None) -> list[Row]:
        return self.limited(store, cypher, params).rows
