"""The execution graph and the durable runner behind it."""

from toolplan.execution.graph import ExecutionInput, ExecutionState, build_execution_graph
from toolplan.execution.runner import ExecutionBusy, ExecutionContext, new_worker_id, run_plan_steps

__all__ = [
    "ExecutionBusy",
    "ExecutionContext",
    "ExecutionInput",
    "ExecutionState",
    "build_execution_graph",
    "new_worker_id",
    "run_plan_steps",
]
