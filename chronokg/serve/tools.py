"""The agent tools, declared once: each becomes an HTTP endpoint, an MCP tool and an OpenAI tool schema.

A tool is a name, a description and a pydantic parameter model. The query tools are
generated from the query specs tagged "tool" (`chronokg.queries.spec.QUERIES`), so a
new query becomes a tool by adding the tag; `cypher` runs the caller's own Cypher
through the one read-only guard; `search` exists only where retrieval provides it
(`chronokg.serve.search`). Every transport validates arguments here, so a bad call
gets the same message in process, over HTTP and over MCP.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import to_jsonable_python

from chronokg.errors import ChronoKGError
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
    """The rows a tool returned (JSON values), or why it failed; `truncated` when the row limit cut them."""

    tool: str
    ok: bool = True
    rows: list[dict[str, Any]] = Field(default_factory=list)
    truncated: bool = False
    total_rows: int | None = None
    elapsed_s: float = 0.0
    error: ToolFailure | None = None

    @classmethod
    def failed(cls, tool: str, error: ToolError) -> ToolResult:
        return cls(tool=tool, ok=False, error=ToolFailure(type=error.type, message=error.message))

    def content(self) -> str:
        """The text a model reads as the tool's answer (JSON)."""
        if self.error is not None:
            return json.dumps({"error": self.error.model_dump()}, ensure_ascii=False)
        body: dict[str, Any] = {"rows": self.rows}
        if self.truncated:
            body["truncated"] = True
            body["total_rows"] = self.total_rows
        return json.dumps(body, ensure_ascii=False, default=str)


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
        """The JSON schema of the arguments (aliases as names, references inlined, no titles)."""
        return json_schema(self.params)

    def spec(self) -> ToolSpec:
        """The OpenAI tool-calling declaration (`chronokg.models.ToolSpec`)."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.schema())

    def validate(self, arguments: Mapping[str, Any] | str | None) -> BaseModel:
        """The arguments as the parameter model, or ToolError("invalid_arguments") naming each problem."""
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
        try:
            return self.params.model_validate(dict(arguments))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '?'}: {e['msg']}" for e in exc.errors())
            raise ToolError("invalid_arguments", f"{self.name}: {problems}") from None


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
