"""A named query, declared once: its parameters, its rows, its Cypher and a line of help.

The CLI's `query` commands, the answer keys of generated questions, the tool
server and the metrics all run queries through their spec, so a query's name
and parameters mean the same thing everywhere, and an answer key (a name plus
parameters) can be re-run by anyone.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from chronokg.errors import ChronoKGError
from chronokg.graph.store import GraphStore, Params, Row
from chronokg.registry import Registry

P = TypeVar("P", bound=BaseModel)
R = TypeVar("R", bound=BaseModel)


# Bounds of every query parameter, checked where parameters come in (CLI, tools, answer keys): no text,
# list or count from outside reaches the engine unbounded (a count past 64 bits cannot even be sent to it).
MAX_TEXT = 1_000  # characters in any text parameter (ids, words to look for)
MAX_ITEMS = 100_000  # items in any list parameter (a whole MIMIC-CXR cohort of patients fits)
MAX_COUNT = 1_000_000  # any count parameter (a row limit)


# How a spec's Cypher reaches the store: `store.run` by default; serve's tools and workers pass the guard and the
# engine's bounded read (`chronokg.serve.reads.GuardedRead`).
Read = Callable[[GraphStore, str, Params], list[Row]]


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
    # What one row is, for the count line a table ends with (e.g. "samples whose verdict changed"; "": no line).
    counted: str = ""
    # A parameter that must name a stored node: (parameter, label, what to do instead). An answer with no rows is
    # then checked, and a name the store does not hold is an error naming it, never an empty answer.
    names: tuple[str, str, str] | None = None

    # Call shapes (field names, value types) that validated once and that validation cannot reject or change
    # for any other value of the same types (see `_shape_holds`), each with its text fields (whose length is
    # still checked per call), whether its names come in the model's field order and the fields it sets
    # (one set shared by its instances: frozen models never change it): later calls of that
    # shape skip pydantic (~3 us a call, most of what a point read through the catalog cost otherwise).
    shapes: dict[tuple[Any, ...], tuple[tuple[str, ...], bool, set[str]]] = field(
        default_factory=dict, compare=False, repr=False)

    def validate(self, params: P | Mapping[str, Any] | None) -> P:
        if isinstance(params, self.params):
            return params
        values = dict(params or {})
        shape = (*values, *map(type, values.values()))
        known = self.shapes.get(shape)
        if known is not None:
            texts, in_order, given = known
            for name in texts:
                if len(values[name]) > MAX_TEXT:
                    break
            else:
                return _trusted(self.params, values, in_order, given)
        try:
            checked = self.params.model_validate(values)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '?'}: {e['msg']}" for e in exc.errors())
            raise QueryError(f"query {self.name}: {problems}") from None
        if _shape_holds(self.params, values, checked):
            texts = tuple(name for name, value in values.items() if type(value) is str)
            self.shapes[shape] = (texts, list(values) == list(self.params.model_fields), set(values))
        return checked

    def cypher(self, params: P | Mapping[str, Any] | None = None) -> tuple[str, Params]:
        return self.build(self.validate(params))

    def run(self, store: GraphStore, params: P | Mapping[str, Any] | None = None, *,
            read: Read | None = None) -> list[R]:
        """The typed rows of this query on `store` (a reader is enough: specs only read): the one path of the CLI,
        the tools and the read workers.

        `read` runs the built Cypher. Without it the store runs it, after the spec's `direct` path where the store
        offers one; a caller that passes its own (the guard and a bounded read) gets every read through it, so the
        direct path is not taken."""
        checked = self.validate(params)
        if read is None and self.direct is not None:
            answered = self.direct(store, checked)
            if answered is not None:
                if not answered:
                    self.check_names(store, checked, read)
                return answered
        text, args = self.build(checked)
        found = store.run(text, args) if read is None else read(store, text, args)
        if not found:
            self.check_names(store, checked, read)
        rows = [self.row.model_validate(r) for r in found]
        return self.post(rows, checked) if self.post is not None else rows

    def check_names(self, store: GraphStore, params: P, read: Read | None = None) -> None:
        """A QueryError when the parameter `names` declares names no stored node (one indexed lookup)."""
        if self.names is None:
            return
        param, label, instead = self.names
        value = getattr(params, param)
        text, args = f"MATCH (n:{label} {{id: $id}}) RETURN count(n) AS n", {"id": value}
        found = store.run(text, args) if read is None else read(store, text, args)
        if not found or not found[0]["n"]:
            raise QueryError(f"query {self.name}: no {label.lower()} {value!r} in this store ({instead})")


# Types whose every value a plain field of that type accepts unchanged (text also needs `len <= MAX_TEXT`).
_PLAIN_TYPES = (str, dt.date, bool, type(None))
_PLAIN_FIELDS = (str, str | None, dt.date, dt.date | None, bool, bool | None)
_PLAIN_CONFIG = {"extra", "frozen", "populate_by_name", "str_max_length", "title", "validate_by_name",
                 "validate_by_alias", "serialize_by_alias"}


def _shape_holds(model: type[BaseModel], values: dict[str, Any], checked: BaseModel) -> bool:
    """Whether validation of this shape says nothing about the values themselves: every field is given by
    its own name, kept as given, and declared a plain type with no constraint (None given to any field
    stays valid), and the model has no validators or private state that a shortcut would skip."""
    fields = model.model_fields
    decorators = model.__pydantic_decorators__
    config = model.model_config
    bound = config.get("str_max_length")
    if set(config) - _PLAIN_CONFIG or (bound is not None and bound < MAX_TEXT):
        return False  # e.g. text stripped or lower-cased, or held shorter than `MAX_TEXT`, by validation
    if (set(values) != set(fields) or model.__private_attributes__ or decorators.field_validators
            or decorators.model_validators or decorators.validators or decorators.root_validators):
        return False
    for name, value in values.items():
        info = fields[name]
        if type(value) not in _PLAIN_TYPES:  # e.g. a count, whose bounds depend on its value
            return False
        if value is None:
            continue
        if info.metadata or info.annotation not in _PLAIN_FIELDS or getattr(checked, name) is not value:
            return False
    return True


def _trusted(model: type[P], values: dict[str, Any], in_order: bool, given: set[str]) -> P:
    """`model` holding `values` (a fresh dict) unvalidated: only for a shape `_shape_holds` accepted (~0.5 us,
    where pydantic's validation is ~3 us and `model_construct` ~4 us)."""
    out = object.__new__(model)
    put = object.__setattr__
    put(out, "__dict__", values if in_order else {name: values[name] for name in model.model_fields})
    put(out, "__pydantic_fields_set__", given)
    put(out, "__pydantic_extra__", None)
    put(out, "__pydantic_private__", None)
    return out


QUERIES: Registry[QuerySpec[Any, Any]] = Registry("query", group="queries")


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
