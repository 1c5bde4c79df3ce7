"""What a tool answer may hold and what a tool call may say, in process (the same code every transport runs).

An answer holds at most `MAX_ANSWER_BYTES` of rows (measured as the text an MCP client receives), the rest
reachable with `offset`; a date argument is text in the forms the CLI takes (never a number read as a Unix time);
an error names the first few problems and counts the rest instead of repeating every one.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chronokg.graph.dates import parse_day
from chronokg.graph.guard import ReadLimits
from chronokg.graph.kglite_store import KgliteStore
from chronokg.serve import ToolHost
from chronokg.serve.tools import MAX_ANSWER_BYTES, ToolResult, answer_bytes, page

LIMITS = ReadLimits(timeout_s=5.0, max_rows=1000, max_result_mb=16.0)


@pytest.fixture
def host(served: tuple[Path, str]) -> Iterator[ToolHost]:
    with ToolHost(KgliteStore(served[0], read_only=True), limits=LIMITS, close_store=True) as h:
        yield h


def rows_of(n: int, width: int) -> list[dict[str, Any]]:
    return [{"i": i, "text": f'"{i}"\x01' + "x" * width} for i in range(n)]


# --- the answer's size and paging ---------------------------------------------------------------------------

def test_a_page_fits_the_budget_and_the_pages_give_every_row_once() -> None:
    """Rows whose text escapes to more bytes than it has (quotes, control characters) still fit as sent."""
    rows = rows_of(300, 4000)
    full = ToolResult(tool="t", rows=rows)
    got: list[dict[str, Any]] = []
    offset: int | None = 0
    pages = 0
    while offset is not None:
        answer = page(full, offset)
        assert answer.ok and answer.total_rows == 300
        assert answer_bytes(answer) <= MAX_ANSWER_BYTES  # the text an MCP client gets, escaped inside JSON-RPC
        assert len(json.dumps(answer.content())) <= MAX_ANSWER_BYTES + 200
        got.extend(answer.rows)
        assert answer.truncated == (answer.next_offset is not None)
        offset = answer.next_offset
        pages += 1
    assert got == rows and pages > 2


def test_a_small_result_is_one_page_and_says_nothing_of_pages() -> None:
    answer = page(ToolResult(tool="t", rows=rows_of(3, 10)), 0)
    assert len(answer.rows) == 3 and not answer.truncated and answer.next_offset is None
    assert set(json.loads(answer.content())) == {"rows"}


def test_an_offset_past_the_end_is_no_rows_and_a_row_over_the_budget_is_a_clear_error() -> None:
    past = page(ToolResult(tool="t", rows=rows_of(3, 10)), 7)
    assert past.ok and past.rows == [] and past.next_offset is None and past.total_rows == 3
    huge = page(ToolResult(tool="t", rows=[{"a": 1}, {"text": "y" * (MAX_ANSWER_BYTES + 1)}, {"b": 2}]), 1)
    assert huge.error is not None and huge.error.type == "limit_exceeded"
    assert "row 1" in huge.error.message and "offset 2" in huge.error.message


def test_the_row_limit_and_the_size_budget_both_say_so() -> None:
    """Rows the row limit cut cannot be paged to: past the rows the query returned, no next offset, and
    `total_rows` still says how many it found."""
    cut = ToolResult(tool="t", rows=rows_of(300, 4000), truncated=True, total_rows=5000)
    first = page(cut, 0)
    assert first.truncated and first.total_rows == 5000 and first.next_offset is not None
    last = page(cut, 299)
    assert last.truncated and last.total_rows == 5000 and last.next_offset is None and len(last.rows) == 1


def test_every_tool_takes_an_offset_and_a_call_pages_through_the_host(host: ToolHost) -> None:
    for spec in host.tool_specs():
        prop = spec.parameters["properties"]["offset"]
        assert prop["type"] == "integer" and prop["minimum"] == 0 and "maximum" in prop, spec.name
    whole = host.call_tool("cypher", {"query": "UNWIND range(1, 400) AS i RETURN i, $t AS t",
                                      "params": {"t": "z" * 3000}})
    assert whole.ok and whole.truncated and whole.next_offset is not None and whole.total_rows == 400
    rest = host.call_tool("cypher", {"query": "UNWIND range(1, 400) AS i RETURN i, $t AS t",
                                     "params": {"t": "z" * 3000}, "offset": whole.next_offset})
    assert rest.ok and rest.rows[0]["i"] == whole.next_offset + 1
    for bad in (-1, 1.5, "3", True):
        refused = host.call_tool("timeline", {"subject": "x", "offset": bad})
        assert refused.error is not None and refused.error.type == "invalid_arguments", bad
        assert "offset" in refused.error.message


# --- dates ----------------------------------------------------------------------------------------------------

def test_a_number_is_never_a_date(host: ToolHost) -> None:
    """86400 read as a Unix time was 1970-01-02; every date argument of every tool refuses numbers."""
    for args in ({"run": "run-x", "a": 86400, "b": "2020-01-01"}, {"run": "run-x", "a": "2019-01-01", "b": 1.5},
                 {"run": "run-x", "a": True, "b": "2020-01-01"}, {"run": "run-x", "a": [2019], "b": "2020"}):
        result = host.call_tool("changed_verdicts", args)
        assert result.error is not None and result.error.type == "invalid_arguments", args
        assert "changed_verdicts:" in result.error.message and "YYYY-MM-DD" in result.error.message
    refused = host.call_tool("facts_as_of", {"date": 20160601})
    assert refused.error is not None and "date" in refused.error.message
    refused = host.call_tool("changed_between", {"from": 0, "to": "2016"})
    assert refused.error is not None and "from" in refused.error.message


def test_a_date_takes_the_forms_the_cli_takes(host: ToolHost) -> None:
    """A bare year is its first day, as on the command line; what the CLI refuses, the tools refuse."""
    day = {"subject": "un-secretary-general"}
    by_day = host.call_tool("facts_as_of", {**day, "date": "2016-01-01"})
    assert by_day.ok and by_day.rows
    assert host.call_tool("facts_as_of", {**day, "date": "2016"}).rows == by_day.rows
    assert host.call_tool("changed_between", {"from": "2006", "to": "2017"}).ok
    assert host.call_tool("facts_as_of", {**day, "date": "2016-01-01", "known_at": "2030"}).ok
    for text in ("2016-1-1", "16", "86400", "2016-13-01", "yesterday", "2016-06", ""):
        with pytest.raises(ValueError):
            parse_day(text)
        refused = host.call_tool("facts_as_of", {**day, "date": text})
        assert refused.error is not None and refused.error.type == "invalid_arguments", text
    assert parse_day("2016") == dt.date(2016, 1, 1) and parse_day("2016-06-01") == dt.date(2016, 6, 1)


def test_the_cli_parses_days_with_the_same_function() -> None:
    import typer

    from chronokg.cli.common import parse_day as cli_parse_day

    for text in ("2016", "2016-06-01", "20160601"):
        assert cli_parse_day(text) == parse_day(text)
    for text in ("86400", "2016-06", "x"):
        with pytest.raises(typer.BadParameter):
            cli_parse_day(text)


# --- errors stay small ----------------------------------------------------------------------------------------

def test_sixty_thousand_unknown_keys_get_a_short_error_naming_a_few_and_the_count(host: ToolHost) -> None:
    args: dict[str, Any] = {f"unknown_key_{i:05d}": i for i in range(60_000)}
    args["subject"] = "x"
    result = host.call_tool("timeline", args)
    assert result.error is not None and result.error.type == "invalid_arguments"
    message = result.error.message
    assert len(message) < 1000, len(message)
    assert "unknown_key_00000" in message and "60,000" in message
    long_key = host.call_tool("timeline", {"subject": "x", "k" * 500_000: 1})
    assert long_key.error is not None and len(long_key.error.message) < 1000
    unknown = host.call_tool("n" * 500_000, {})
    assert unknown.error is not None and unknown.error.type == "unknown_tool" and len(unknown.error.message) < 4000
