"""The error hierarchy: each family is told apart by its class, never by the order of checks."""

from __future__ import annotations

from toolplan.api.errors import error_code
from toolplan.errors import ExecutionBusy, InvalidInput, ToolplanError, Unavailable


def test_a_busy_execution_is_not_invalid_input() -> None:
    # A worker fails an execution it cannot run (InvalidInput) but only records one it lost
    # (ExecutionBusy): the two must not depend on which `except` comes first.
    busy = ExecutionBusy("plan_1 is being executed by host:1:abc right now")
    assert isinstance(busy, ToolplanError)
    assert not isinstance(busy, InvalidInput | Unavailable)
    assert busy.exit_code == 2 and error_code(busy) == "EXECUTION_BUSY"
