"""toolplan: plan-then-execute tool orchestration for LLM agents.

An LLM writes one plan — a DAG of tool calls whose arguments reference earlier results with
``{{stepId.path}}`` templates — and a durable, eager engine runs it. See the README's
"Use from Python" section; every name below is documented there.
"""

from toolplan._entrypoints import (
    create_plan,
    execute_plan,
    execute_plan_sync,
    run_plan,
    run_plan_sync,
    submit_plan,
    validate_plan,
)
from toolplan.analysis import Analysis
from toolplan.engine.policies import ExecutionOptions, RetryPolicy
from toolplan.engine.recorder import StepEvent
from toolplan.engine.result import ExecutionResult
from toolplan.errors import (
    InvalidInput,
    LLMUnavailable,
    NotFound,
    PlanInvalid,
    StoreUnavailable,
    ToolFailure,
    ToolplanError,
    Unavailable,
)
from toolplan.meta_tool import plan_tool
from toolplan.operations import PlanRef
from toolplan.plan import Plan, Step, load_plan
from toolplan.planning.planner import PlanningOutcome
from toolplan.store import Store, open_store
from toolplan.tools import ToolCatalog, load_tool_modules, tagged

__version__ = "0.1.0"

__all__ = [
    "Analysis",
    "ExecutionOptions",
    "ExecutionResult",
    "InvalidInput",
    "LLMUnavailable",
    "NotFound",
    "Plan",
    "PlanInvalid",
    "PlanRef",
    "PlanningOutcome",
    "RetryPolicy",
    "Step",
    "StepEvent",
    "Store",
    "StoreUnavailable",
    "ToolCatalog",
    "ToolFailure",
    "ToolplanError",
    "Unavailable",
    "create_plan",
    "execute_plan",
    "execute_plan_sync",
    "load_plan",
    "load_tool_modules",
    "open_store",
    "plan_tool",
    "run_plan",
    "run_plan_sync",
    "submit_plan",
    "tagged",
    "validate_plan",
]
