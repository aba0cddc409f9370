"""Tools that declare their own retry policy (``tagged(max_attempts=..., retry_on=...)``), for
the retry tests of both backends (importable as ``tests.support.retry_tools``; the Temporal
worker loads them as the in-process engine does). Calls are logged as ``tests.support.tools``
logs them, to ``$TOOLPLAN_TEST_LOG``."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import ToolException, tool

from tests.support.tools import _log
from toolplan.errors import AttemptFailed
from toolplan.tools import tagged


def _attempt(config: RunnableConfig) -> int:
    return int((config.get("metadata") or {}).get("attempt", 1))


@tool
def patient(failures: int, config: RunnableConfig) -> dict[str, Any]:
    """Raise a transient error on the first `failures` attempts, then succeed (5 attempts)."""
    _log("call", config)
    if _attempt(config) <= failures:
        raise ConnectionError(f"transient failure on attempt {_attempt(config)}")
    return {"attempt": _attempt(config)}


@tool
def busy_line(config: RunnableConfig) -> str:
    """Always report that the line is busy (a ToolException this tool retries)."""
    _log("call", config)
    raise ToolException("the line is busy")


def _connection_errors_only(failure: AttemptFailed, tool: str) -> bool:
    """Retry what the network did, never what the tool computed."""
    return isinstance(failure.error, ConnectionError)


@tool
def picky(error: str, config: RunnableConfig) -> str:
    """Always raise `error` (ConnectionError or ValueError); only the first is retried."""
    _log("call", config)
    raise (ConnectionError if error == "ConnectionError" else ValueError)(f"{error} by request")


TOOLS = [
    tagged(patient, max_attempts=5),
    tagged(busy_line, retry_on={"tool_error"}),
    tagged(picky, retry_on=_connection_errors_only),
]
