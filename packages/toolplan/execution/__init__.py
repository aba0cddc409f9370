"""Running stored plans: the execution context, backends, the in-process engine, the graph."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolplan._lazy import lazy_getattr

if TYPE_CHECKING:
    from toolplan.errors import ExecutionBusy
    from toolplan.execution.backend import ExecutionBackend, InProcessBackend
    from toolplan.execution.context import ExecutionContext, new_worker_id
    from toolplan.execution.graph import ExecutionInput, ExecutionState, build_execution_graph
    from toolplan.execution.runner import (
        ResumeState,
        finish_execution,
        run_plan_steps,
        start_execution,
    )

_LAZY: dict[str, str] = {
    "ExecutionBackend": "toolplan.execution.backend",
    "ExecutionBusy": "toolplan.errors",
    "ExecutionContext": "toolplan.execution.context",
    "ExecutionInput": "toolplan.execution.graph",
    "ExecutionState": "toolplan.execution.graph",
    "InProcessBackend": "toolplan.execution.backend",
    "ResumeState": "toolplan.execution.runner",
    "build_execution_graph": "toolplan.execution.graph",
    "finish_execution": "toolplan.execution.runner",
    "new_worker_id": "toolplan.execution.context",
    "run_plan_steps": "toolplan.execution.runner",
    "start_execution": "toolplan.execution.runner",
}

__all__ = [
    "ExecutionBackend",
    "ExecutionBusy",
    "ExecutionContext",
    "ExecutionInput",
    "ExecutionState",
    "InProcessBackend",
    "ResumeState",
    "build_execution_graph",
    "finish_execution",
    "new_worker_id",
    "run_plan_steps",
    "start_execution",
]

__getattr__ = lazy_getattr(__name__, _LAZY, globals())
