"""Running stored plans: the execution context, backends, the in-process engine, the graph."""

from toolplan.errors import ExecutionBusy
from toolplan.execution.backend import ExecutionBackend, InProcessBackend
from toolplan.execution.context import ExecutionContext, new_worker_id
from toolplan.execution.graph import ExecutionInput, ExecutionState, build_execution_graph
from toolplan.execution.runner import ResumeState, finish_execution, run_plan_steps, start_execution

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
