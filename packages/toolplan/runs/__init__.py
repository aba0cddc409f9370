"""Running stored plans: the execution context, backends, the in-process engine, the graph."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolplan._lazy import lazy_getattr

if TYPE_CHECKING:
    from toolplan.errors import ExecutionBusy
    from toolplan.runs.backend import ExecutionBackend, InProcessBackend
    from toolplan.runs.context import ExecutionContext, new_worker_id
    from toolplan.runs.graph import ExecutionInput, ExecutionState, build_execution_graph
    from toolplan.runs.runner import (
        ResumeState,
        finish_execution,
        run_plan_steps,
        start_execution,
    )

_LAZY: dict[str, str] = {
    "ExecutionBackend": "toolplan.runs.backend",
    "ExecutionBusy": "toolplan.errors",
    "ExecutionContext": "toolplan.runs.context",
    "ExecutionInput": "toolplan.runs.graph",
    "ExecutionState": "toolplan.runs.graph",
    "InProcessBackend": "toolplan.runs.backend",
    "ResumeState": "toolplan.runs.runner",
    "build_execution_graph": "toolplan.runs.graph",
    "finish_execution": "toolplan.runs.runner",
    "new_worker_id": "toolplan.runs.context",
    "run_plan_steps": "toolplan.runs.runner",
    "start_execution": "toolplan.runs.runner",
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
