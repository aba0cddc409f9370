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


def _error_classes() -> set[type[ToolplanError]]:
    """Every :class:`ToolplanError` subclass any toolplan module defines (all imported first)."""
    import importlib
    import pkgutil

    import toolplan

    for module in pkgutil.walk_packages(toolplan.__path__, "toolplan."):
        if not module.name.endswith("__main__"):  # runs the CLI
            importlib.import_module(module.name)
    found: set[type[ToolplanError]] = set()
    todo: list[type[ToolplanError]] = [ToolplanError]
    while todo:
        cls = todo.pop()
        if cls.__module__.startswith("toolplan") and not cls.__name__.startswith("_"):
            found.add(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_every_public_error_is_importable_from_errors_and_the_package_root() -> None:
    # A user catches what a call raises without knowing which module defined it.
    import toolplan
    from toolplan import errors

    classes = _error_classes()
    assert len(classes) >= 23  # the 16 of toolplan.errors and the 7 the planner and MCP raise
    for cls in classes:
        name = cls.__name__
        assert name in errors.__all__ and getattr(errors, name) is cls, name
        assert name in toolplan.__all__ and getattr(toolplan, name) is cls, name


def test_the_old_import_paths_of_errors_still_work() -> None:
    from toolplan import errors
    from toolplan.planning.llm_errors import LLMOutputRepeating, LLMOutputTruncated
    from toolplan.planning.model import ModelNotConfigured
    from toolplan.planning.planner import PlanDeclined, PlanningFailed
    from toolplan.tools.mcp import MCPServerError, MCPServerUnavailable

    for cls in (
        LLMOutputRepeating,
        LLMOutputTruncated,
        ModelNotConfigured,
        PlanDeclined,
        PlanningFailed,
        MCPServerError,
        MCPServerUnavailable,
    ):
        assert getattr(errors, cls.__name__) is cls
