"""Tools for agentic RAG over the store: in process, over HTTP (FastAPI) and over MCP.

`ToolHost` is the in-process API; `chronokg serve http|mcp` the servers. Importing this
package loads neither FastAPI nor the MCP SDK.
"""

from chronokg.serve.host import ToolHost, run_tool
from chronokg.serve.search import SEARCH, SearchBackend, SearchParams
from chronokg.serve.tools import CypherParams, Tool, ToolError, ToolFailure, ToolResult, query_tools

__all__ = [
    "SEARCH",
    "CypherParams",
    "SearchBackend",
    "SearchParams",
    "Tool",
    "ToolError",
    "ToolFailure",
    "ToolHost",
    "ToolResult",
    "query_tools",
    "run_tool",
]
