"""toolplan: plan-then-execute tool orchestration for LLM agents."""

from toolplan.analysis import Analysis, analyze
from toolplan.engine.policies import ExecutionOptions, RetryPolicy
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
from toolplan.operations import PlanRef
from toolplan.plan import Plan, Step, load_plan
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
    "RetryPolicy",
    "Step",
    "Store",
    "StoreUnavailable",
    "ToolCatalog",
    "ToolFailure",
    "ToolplanError",
    "Unavailable",
    "analyze",
    "load_plan",
    "load_tool_modules",
    "open_store",
    "tagged",
]
