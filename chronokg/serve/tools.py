"""The agent tools, declared once: each becomes an HTTP endpoint, an MCP tool and an OpenAI tool schema.

A tool is a name, a description and a pydantic parameter model. The query tools are
generated from the query specs tagged "tool" (`chronokg.queries.spec.QUERIES`), so a
new query becomes a tool by adding the tag; `cypher` runs the caller's own Cypher
through the one read-only guard; `search` exists only where retrieval provides it
(`chronokg.serve.search`). Every transport validates arguments here, so a bad call
gets the same message in process, over HTTP and over MCP.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import to_jsonable_python

from chronokg.errors import ChronoKGError
from chronokg.graph.dates import parse_day
from chronokg.graph.guard import MAX_LENGTH
from chronokg.models.types import ToolSpec
from chronokg.queries.spec import QuerySpec, all_queries

ToolKind = Literal["query", "cypher", "search"]
ErrorType = Literal["unknown_tool", "invalid_arguments", "refused", "limit_exceeded", "query_failed",
                    "unavailable", "internal"]

# A tool's name where the query's own would read worse to a model (the Python API's name).
RENAMED = {"as-of": "facts_as_of"}
_NAME = re.compile(r"^[A-Za-z0-9_]{1,64}$")  # what every tool-calling API accepts
_FLAG = re.compile(r"--([a-z][a-z0-9-]*)")
INT64 = (-(2**63), 2**63 - 1)  # what an engine can take as an integer parameter
MAX_DEPTH = 32  # nesting of lists and maps in a Cypher parameter
MAX_VALUES = 100_000  # values in all Cypher parameters together
# The rows one answer holds at most, counted as the bytes of the answer's text once written as a JSON string (the
# form an MCP client receives it in: the official client refuses an SSE event over 1 MiB); the rest by `offset`.
MAX_ANSWER_BYTES = 512 * 1024
MAX_OFFSET = 1_000_000  # rows a call may skip
MAX_PROBLEMS = 5  # problems an invalid_arguments error names one by one (the rest are counted)
MAX_ERROR_CHARS = 2000  # an error's message at most (a name or key given is shortened to fit)
SHOWN_CHARS = 60  # of a name or key the caller sent, in an error
OFFSET_SCHEMA = {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET, "default": 0,
                 "description": "Rows of the result to skip: an answer holds at most "
                                f"{MAX_ANSWER_BYTES // 1024} KiB of rows; when it holds fewer than the result has it "
                                "says `truncated` and `next_offset`, the offset that gives the next rows"}


class ToolError(ChronoKGError):
    """A tool call that cannot be answered; `type` says which kind (see `ErrorType`)."""

    def __init__(self, type: ErrorType, message: str) -> None:
        self.type = type
        self.message = message
        super().__init__(message)


class ToolFailure(BaseModel):
    """Why a call failed, as every transport reports it."""

    type: ErrorType
    message: str


class ToolResult(BaseModel):
    """The rows a tool returned (JSON values), or why it failed. `truncated` when the answer holds fewer rows than
    the query found (`total_rows`): cut by the row limit, or by the answer's size (`page`), the rest from
    `next_offset`."""

    tool: str
    ok: bool = True
    rows: list[dict[str, Any]] = Field(default_factory=list)
    truncated: bool = False
    total_rows: int | None = None
    next_offset: int | None = None
    elapsed_s: float = 0.0
    error: ToolFailure | None = None

    @classmethod
    def failed(cls, tool: str, error: ToolError) -> ToolResult:
        message = error.message if len(error.message) <= MAX_ERROR_CHARS else error.message[:MAX_ERROR_CHARS] + "…"
        return cls(tool=shown(tool), ok=False, error=ToolFailure(type=error.type, message=message))

    def content(self) -> str:
        """The text a model reads as the tool's answer (JSON): the rows, sent once (see `envelope`)."""
        if self.error is not None:
            return json.dumps({"error": self.error.model_dump()}, ensure_ascii=False)
        body: dict[str, Any] = {"rows": self.rows}
        if self.truncated:
            body["truncated"] = True
            body["total_rows"] = self.total_rows
            if self.next_offset is not None:
                body["next_offset"] = self.next_offset
        return json.dumps(body, ensure_ascii=False, default=str)

    def envelope(self) -> dict[str, Any]:
        """Everything but the rows (MCP's `structuredContent`: the rows travel once, in `content()`), with how
        many rows the answer holds."""
        return {**self.model_dump(mode="json", exclude={"rows"}), "returned_rows": len(self.rows)}


def shown(name: str) -> str:
    """A name or key a caller sent, short enough for an error message."""
    return name if len(name) <= SHOWN_CHARS else name[:SHOWN_CHARS] + f"… ({len(name):,} characters)"


def _escaped_bytes(value: Any) -> int:
    """Bytes of `value`'s JSON text written inside a JSON string (quotes, backslashes and control characters
    escaped again), without the string's own quotes."""
    text = json.dumps(value, ensure_ascii=False, default=str)  # control characters are escapes already in it
    return len(text.encode()) + text.count('"') + text.count("\\")


def answer_bytes(result: ToolResult) -> int:
    """The size an answer's rows are bounded by (`MAX_ANSWER_BYTES`): its text as sent inside JSON-RPC."""
    return _escaped_bytes(result.rows)


def page(result: ToolResult, offset: int, budget: int = MAX_ANSWER_BYTES) -> ToolResult:
    """`result`'s rows from `offset`, as many as fit in `budget` bytes (`answer_bytes`); `truncated` and
    `next_offset` when rows are left. A row that alone is over the budget is a limit_exceeded error naming it
    (the next offset skips it). Rows the row limit cut stay cut: `total_rows` says how many the query found."""
    if not result.ok:
        return result
    if offset == 0 and _escaped_bytes(result.rows) <= budget:  # most answers: one measure of the whole
        return result.model_copy(update={"total_rows": result.total_rows if result.truncated else None})
    rows, taken, size = result.rows, 0, 2  # the list's brackets
    for row in rows[offset:]:
        grown = size + _escaped_bytes(row) + (2 if taken else 0)  # ", " between rows
        if grown > budget:
            break
        size, taken = grown, taken + 1
    end = offset + taken
    if taken == 0 and offset < len(rows):
        return ToolResult.failed(result.tool, ToolError("limit_exceeded", (
            f"{result.tool}: row {offset} alone is {_escaped_bytes(rows[offset]):,} bytes as JSON, over the "
            f"{budget:,} bytes an answer holds: narrow the call, or skip the row with offset {offset + 1}")))
    more = end < len(rows)
    return result.model_copy(update={
        "rows": rows[offset:end], "truncated": result.truncated or more,
        "total_rows": result.total_rows if result.truncated else len(rows),
        "next_offset": end if more else None})


class CypherParams(BaseModel):
    """Parameters of the `cypher` tool."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    query: str = Field(min_length=1, max_length=MAX_LENGTH,
                       description="One read-only Cypher statement (Neo4j 5 syntax). Anything that could write, "
                                   "administer or read files is refused, with the reason; time and rows are "
                                   "limited.")
    params: dict[str, Any] = Field(default_factory=dict, description="Query parameters ($name in the query): "
                                   f"integers within 64 bits, text of at most {MAX_LENGTH:,} characters, lists "
                                   f"and maps nested at most {MAX_DEPTH} deep")

    @field_validator("params")
    @classmethod
    def _bounded(cls, params: dict[str, Any]) -> dict[str, Any]:
        """Every value one an engine can take: no integer past 64 bits, no text or nesting without bound."""
        count = 0
        stack: list[tuple[str, Any, int]] = [(f"${k}", v, 1) for k, v in params.items()]
        while stack:
            where, value, depth = stack.pop()
            count += 1
            if count > MAX_VALUES:
                raise ValueError(f"more than {MAX_VALUES:,} values in the parameters")
            if depth > MAX_DEPTH:
                raise ValueError(f"{where}: nested more than {MAX_DEPTH} deep")
            if isinstance(value, bool) or value is None or isinstance(value, float):
                continue
            if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
                raise ValueError(f"{where}: the integer is outside the signed 64-bit range")
            if isinstance(value, str) and len(value) > MAX_LENGTH:
                raise ValueError(f"{where}: the text is over {MAX_LENGTH:,} characters")
            if isinstance(value, dict):
                stack.extend((f"{where}.{k}", v, depth + 1) for k, v in value.items())
            elif isinstance(value, list):
                stack.extend((f"{where}[{i}]", v, depth + 1) for i, v in enumerate(value))
        return params


@dataclass(frozen=True)
class Tool:
    """One tool: `kind` says what runs it (a query spec, the guarded Cypher read, or retrieval)."""

    name: str
    description: str
    params: type[BaseModel]
    kind: ToolKind
    query: str | None = None  # the QuerySpec name, for kind "query"

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ChronoKGError(f"tool name {self.name!r} is not [A-Za-z0-9_]{{1,64}}")

    def schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments (aliases as names, references inlined, no titles), with `offset`."""
        schema = json_schema(self.params)
        schema["properties"]["offset"] = dict(OFFSET_SCHEMA)
        return schema

    def spec(self) -> ToolSpec:
        """The OpenAI tool-calling declaration (`chronokg.models.ToolSpec`)."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.schema())

    def arguments(self, arguments: Mapping[str, Any] | str | None) -> tuple[BaseModel, int]:
        """A tool call's arguments as the parameter model and the rows to skip (`offset`, see `page`)."""
        values = self._mapping(arguments)
        offset = values.pop("offset", 0)
        if type(offset) is not int or not 0 <= offset <= MAX_OFFSET:
            raise ToolError("invalid_arguments", f"{self.name}: offset: a whole number of rows from 0 to "
                                                 f"{MAX_OFFSET:,}, not {shown(json.dumps(offset, default=str))}")
        return self._model(values), offset

    def validate(self, arguments: Mapping[str, Any] | str | None) -> BaseModel:
        """The arguments as the parameter model, or ToolError("invalid_arguments") naming the problems (the first
        few one by one, the rest counted)."""
        return self._model(self._mapping(arguments))

    def _mapping(self, arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
        if isinstance(arguments, str):  # a model's tool call carries its arguments as JSON text
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                raise ToolError("invalid_arguments", f"{self.name}: the arguments are not JSON ({exc})") from None
            except RecursionError:
                raise ToolError("invalid_arguments", f"{self.name}: the arguments are nested too deep") from None
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            raise ToolError("invalid_arguments", f"{self.name}: the arguments must be a JSON object")
        return dict(arguments)

    def _model(self, values: dict[str, Any]) -> BaseModel:
        _days(self.name, self.params, values)
        try:
            return self.params.model_validate(values)
        except ValidationError as exc:
            raise ToolError("invalid_arguments", f"{self.name}: {_problems(self.params, exc)}") from None


def _problems(params: type[BaseModel], exc: ValidationError) -> str:
    """What is wrong with a call, bounded whatever was sent: the first `MAX_PROBLEMS` problems, then a count;
    unknown arguments as a count, the first few names and the arguments the tool takes."""
    errors = exc.errors()
    unknown = [e for e in errors if e["type"] == "extra_forbidden"]
    others = [e for e in errors if e["type"] != "extra_forbidden"]
    parts = [f"{shown('.'.join(map(str, e['loc'])) or '?')}: {e['msg']}" for e in others[:MAX_PROBLEMS]]
    if len(others) > MAX_PROBLEMS:
        parts.append(f"{len(others) - MAX_PROBLEMS:,} more problems")
    if unknown:
        names = ", ".join(shown(".".join(map(str, e["loc"]))) for e in unknown[:MAX_PROBLEMS])
        takes = ", ".join([f.alias or n for n, f in params.model_fields.items()] + ["offset"])
        parts.append(f"{len(unknown):,} unknown argument{'s' if len(unknown) != 1 else ''} ({names}"
                     f"{', …' if len(unknown) > MAX_PROBLEMS else ''}; it takes {takes})")
    return "; ".join(parts)


def _is_day(annotation: Any) -> bool:
    """A `date` or `date | None` field (never a datetime: no tool takes one)."""
    if annotation is dt.date:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_is_day(a) for a in typing.get_args(annotation))
    return False


def _days(tool: str, params: type[BaseModel], values: dict[str, Any]) -> None:
    """Each date argument in `values` read as a day the way the CLI reads one (`parse_day`: `YYYY-MM-DD` or
    `YYYY`), in place; a number is refused (pydantic would read 86400 as a Unix time, 1970-01-02)."""
    for name, field in params.model_fields.items():
        if not _is_day(field.annotation):
            continue
        for key in {name, field.alias or name}:
            value = values.get(key)
            if key not in values or value is None or (type(value) is dt.date):
                continue
            if not isinstance(value, str):
                raise ToolError("invalid_arguments", f"{tool}: {key}: a date is text, YYYY-MM-DD or YYYY, not "
                                                     f"{shown(json.dumps(value, default=str))}")
            try:
                values[key] = parse_day(value)
            except ValueError as exc:
                raise ToolError("invalid_arguments", f"{tool}: {key}: {exc}") from None


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """`model`'s JSON schema in the plain form tool-calling APIs accept: `$ref`s inlined, titles dropped."""
    raw = model.model_json_schema(by_alias=True)
    defs = raw.pop("$defs", {})

    def clean(node: Any) -> Any:
        """A schema without `$ref` and `title` keywords (a property may still be *named* title)."""
        if isinstance(node, list):
            return [clean(v) for v in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = defs[node["$ref"].rsplit("/", 1)[-1]]
            return clean({**target, **{k: v for k, v in node.items() if k != "$ref"}})
        out = {k: clean(v) for k, v in node.items() if k not in {"title", "properties"}}
        if isinstance(node.get("properties"), dict):
            out["properties"] = {name: clean(sub) for name, sub in node["properties"].items()}
        return out

    schema: dict[str, Any] = clean(raw)
    schema.setdefault("properties", {})
    return schema


def tool_name(query: str) -> str:
    return RENAMED.get(query, query.replace("-", "_"))


def _describe(spec: QuerySpec[Any, Any]) -> str:
    """The spec's help with CLI flags spelled as argument names, and the fields each row has."""
    text = _FLAG.sub(lambda m: m.group(1).replace("-", "_"), spec.help)
    fields = ", ".join(f.alias or name for name, f in spec.row.model_fields.items())
    return f"{text} Rows: {fields}."


def query_tools() -> list[Tool]:
    """One tool per query spec tagged "tool", in name order."""
    return [Tool(tool_name(name), _describe(spec), spec.params, "query", query=name)
            for name, spec in all_queries().items() if "tool" in spec.tags]


CYPHER = Tool(
    "cypher",
    "Run your own read-only Cypher (Neo4j 5) over the fact graph: Fact nodes (subject_id, predicate, object_id, "
    "value, valid_from, valid_to, known_from, known_to, source_id), Entity, Source, Guideline, ChangePair. "
    "Writes, procedures and file reads are refused with the reason; time and rows are limited. Rows: the "
    "columns the query returns.",
    CypherParams, "cypher",
)


def jsonable(rows: list[Any]) -> list[dict[str, Any]]:
    """Rows as JSON values (dates as ISO text; anything unknown as its text)."""
    out: list[dict[str, Any]] = []
    for row in rows:
        value = row.model_dump(mode="json", by_alias=True) if isinstance(row, BaseModel) else row
        out.append(to_jsonable_python(value, fallback=str))
    return out
