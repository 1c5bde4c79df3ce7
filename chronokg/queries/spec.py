"""A named query, declared once: its parameters, its rows, its Cypher and a line of help.

The CLI's `query` commands, the answer keys of generated questions, the tool
server and the metrics all run queries through their spec, so a query's name
and parameters mean the same thing everywhere, and an answer key (a name plus
parameters) can be re-run by anyone.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from chronokg.errors import ChronoKGError
from chronokg.graph.store import GraphStore, Params
from chronokg.registry import Registry

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)


# Bounds of every query parameter, checked where parameters come in (CLI, tools, answer keys): no text,
# list or count from outside reaches the engine unbounded (a count past 64 bits cannot even be sent to it).
MAX_TEXT = 1_000  # characters in any text parameter (ids, words to look for)
MAX_ITEMS = 100_000  # items in any list parameter (a whole MIMIC-CXR cohort of patients fits)
MAX_COUNT = 1_000_000  # any count parameter (a row limit)


class QueryParams(BaseModel):
    """Base of every query's parameters: unknown names are errors, not silently ignored; text is bounded
    (`MAX_TEXT`), and each list and count field declares its bound (`MAX_ITEMS`, `MAX_COUNT`)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, str_max_length=MAX_TEXT)


class QueryError(ChronoKGError):
    """Unknown query name or invalid parameters."""


@dataclass(frozen=True)
class QuerySpec(Generic[P, R]):
    """`build(params)` gives the Cypher and its parameters; `post` may reshape the typed rows."""

    name: str
    help: str
    params: type[P]
    row: type[R]
    build: Callable[[P], tuple[str, dict[str, Any]]]
    post: Callable[[list[R], P], list[R]] | None = None
    columns: tuple[str, ...] = ()  # what a table shows (default: every field of the row)
    tags: frozenset[str] = field(default_factory=frozenset)  # e.g. "cli", "tool", "answer-key"
    follow: tuple[str, ...] = ()  # queries a table shows after this one, with the same parameters
    # A faster path to the same final rows on stores that offer one (None: not here, run the Cypher).
    direct: Callable[[GraphStore, P], list[R] | None] | None = None

    def validate(self, params: P | Mapping[str, Any] | None) -> P:
        if isinstance(params, self.params):
            return params
        try:
            return self.params.model_validate(dict(params or {}))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '?'}: {e['msg']}" for e in exc.errors())
            raise QueryError(f"query {self.name}: {problems}") from None

    def cypher(self, params: P | Mapping[str, Any] | None = None) -> tuple[str, Params]:
        return self.build(self.validate(params))

    def run(self, store: GraphStore, params: P | Mapping[str, Any] | None = None) -> list[R]:
        """The typed rows of this query on `store` (a reader is enough: specs only read)."""
        checked = self.validate(params)
        if self.direct is not None:
            answered = self.direct(store, checked)
            if answered is not None:
                return answered
        text, args = self.build(checked)
        rows = [self.row.model_validate(r) for r in store.run(text, args)]
        return self.post(rows, checked) if self.post is not None else rows


QUERIES: Registry[QuerySpec[Any, Any]] = Registry("query")


def register(spec: QuerySpec[P, R]) -> QuerySpec[P, R]:
    QUERIES.register(spec.name, spec)
    return spec


def run_query(store: GraphStore, name: str, params: Mapping[str, Any] | BaseModel | None = None) -> list[Any]:
    """Run the registered query `name` (see `QUERIES`) with `params`; its typed rows."""
    _load_catalog()
    spec = QUERIES.get(name)
    return spec.run(store, params if not isinstance(params, BaseModel) else params.model_dump())


@functools.cache
def _load_catalog() -> None:
    """The specs register themselves when their modules are imported: import every module of the package once
    (a new module of queries needs no other registration)."""
    import importlib
    import pkgutil

    import chronokg.queries as package

    for info in pkgutil.iter_modules(package.__path__):
        if info.name not in {"spec", "rows"}:
            importlib.import_module(f"chronokg.queries.{info.name}")


def evidence_hash(rows: Sequence[BaseModel | Mapping[str, Any]]) -> str:
    """A stable hash of a query's answer, for answer keys: same rows (in order) -> same hash."""
    payload = [r.model_dump(mode="json") if isinstance(r, BaseModel) else dict(r) for r in rows]
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def all_queries() -> Registry[QuerySpec[Any, Any]]:
    _load_catalog()
    return QUERIES
