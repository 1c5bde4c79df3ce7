"""A read of kglite under limits: in a forked read-only copy killed when time is up, or in this process.

Apart from the store class because it needs only the graph handle: serve's read workers and the guard call it
through `KgliteStore.run_limited` / `run_here`.
"""

from __future__ import annotations

import time
from typing import Any

import kglite

from chronokg.errors import QueryLimitExceeded, QueryRefused, StoreError
from chronokg.graph.read_limits import LimitedResult, ReadLimits
from chronokg.graph.sandbox import ChildError, can_fork, run_forked
from chronokg.graph.store import Params, Row


def bounded_read(graph: Any, uri: str, read_only: bool, cypher: str, params: Params | None, limits: ReadLimits,
                 *, fork: bool) -> LimitedResult:
    """`cypher` on `graph` with the engine's deadline, work budget and row limit (and, forked, the process's
    time, memory and result-size limits); `read_only` is what the handle is put back to in process."""
    args = dict(params or {})

    def job() -> tuple[list[Row], int | None]:
        graph.read_only(True)  # the child's copy: the parent's handle is untouched
        try:
            result = graph.cypher(cypher, params=args, timeout_ms=int(limits.timeout_s * 1000),
                                  max_work_units=limits.max_work, row_limit=limits.max_rows + 1)
        except kglite.ReadOnlyError as exc:
            raise ChildError("refused", f"the query would write: {exc}") from None
        except kglite.CypherTimeoutError:
            raise ChildError("limit", f"the query ran past its time limit of {limits.timeout_s:g} s") from None
        except (kglite.KgError, ValueError) as exc:
            text = str(exc)
            if "max_work_units" in text or "safety limit" in text:
                raise ChildError("limit", f"the query needs more work than its budget of {limits.max_work:,} "
                                          f"units allows (rows and items held): anchor it on an id or an "
                                          f"indexed property, or add LIMIT ({text.split('. ')[0]})") from None
            raise ChildError("error", f"query failed on {uri}: {text}") from None
        if isinstance(result, str):
            raise ChildError("refused", "FORMAT CSV is not supported here")
        total = (result.diagnostics or {}).get("total_rows") if hasattr(result, "diagnostics") else None
        return result.to_list(), total

    start = time.monotonic()
    max_bytes = int(limits.max_result_mb * 1e6)
    if fork and can_fork():
        rows, total = run_forked(job, timeout_s=limits.timeout_s, max_bytes=max_bytes,
                                 memory_mb=limits.memory_mb)
    else:  # in process (or no fork, e.g. Windows): the engine's own deadline and budget only
        try:
            rows, total = job()
        except ChildError as exc:
            raise {"refused": QueryRefused, "limit": QueryLimitExceeded}.get(exc.kind, StoreError)(
                str(exc)) from None
        finally:
            graph.read_only(read_only)
    truncated = len(rows) > limits.max_rows
    return LimitedResult(rows=rows[: limits.max_rows], truncated=truncated,
                         total_rows=total if truncated else len(rows), elapsed_s=time.monotonic() - start)
