"""Tools whose outputs JSON or the store cannot take as they are (importable as
``tests.support.odd_outputs``): NaN and infinities, bytes, an integer of 5,001 digits, nesting
deeper than any store reads back; and a text yes/no, as MCP tools return.

Every call is logged as :mod:`tests.support.tools` does (``$TOOLPLAN_TEST_LOG``), so a test can
count how often a tool ran: an output the record cannot hold must not make it run again.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import ToolException, tool
from typing_extensions import TypedDict

from tests.support.tools import _log

__all__ = ["NESTING", "TOOLS"]

NESTING = 300
"""Levels of the deeply nested output: more than the 255 a stored output may have."""


def _nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


@tool
def not_a_number(config: RunnableConfig) -> dict[str, Any]:
    """Return a reading with NaN, +Infinity and -Infinity in it."""
    _log("call", config)
    return {"ratio": float("nan"), "high": float("inf"), "low": float("-inf"), "ok": 1.5}


@tool
def raw_bytes(config: RunnableConfig) -> Any:
    """Return bytes that are not UTF-8 text."""
    _log("call", config)
    return b"\x89PNG\r\n\x1a\n\xff"


@tool
def huge_integer(config: RunnableConfig) -> Any:
    """Return {"total": 10**5000}, an integer of 5,001 digits."""
    _log("call", config)
    return {"total": 10**5000}


@tool
def deeply_nested(config: RunnableConfig) -> Any:
    """Return a dict nested NESTING levels deep."""
    _log("call", config)
    return _nested(NESTING)


@tool
def nested_text(config: RunnableConfig) -> str:
    """Return a JSON list nested NESTING levels deep, as text (the engine parses it)."""
    _log("call", config)
    return "[" * NESTING + "]" * NESTING


@tool
def says(answer: str, config: RunnableConfig) -> str:
    """Return `answer` as text, as an MCP tool answers yes/no questions ("false", "no", "0")."""
    _log("call", config)
    return answer


class Verdict(TypedDict):
    """A check whose answer is declared as text."""

    answer: str
    ok: bool


@tool
def verdict(answer: str, config: RunnableConfig) -> Verdict:
    """Return {"answer": answer, "ok": answer == "yes"}: the answer declared as text."""
    _log("call", config)
    return {"answer": answer, "ok": answer == "yes"}


@tool
def fails(config: RunnableConfig) -> str:
    """Always report a business error (ToolException), for fallbacks."""
    _log("call", config)
    raise ToolException("primary failed")


TOOLS = [
    not_a_number,
    raw_bytes,
    huge_integer,
    deeply_nested,
    nested_text,
    says,
    verdict,
    fails,
]
