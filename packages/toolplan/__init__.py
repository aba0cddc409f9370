"""toolplan: plan-then-execute tool orchestration for LLM agents.

An LLM writes one plan — a DAG of tool calls whose arguments reference earlier results with
``{{stepId.path}}`` templates — and a durable, eager engine runs it. See the documentation's
Python client page (docs/python.md); every name below is documented there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolplan._lazy import lazy_getattr

if TYPE_CHECKING:
    from toolplan.adapters.functions import (
        answer_query,
        approve_steps,
        cancel_execution,
        clear_cache,
        create_plan,
        deny_step,
        execute_plan,
        execute_plan_sync,
        run_plan,
        run_plan_sync,
        submit_plan,
        validate_plan,
    )
    from toolplan.adapters.plan_tool import plan_tool
    from toolplan.agent.loop import AgentOutcome
    from toolplan.client import AsyncToolplan, Toolplan
    from toolplan.config.policies import ExecutionOptions, RetryPolicy
    from toolplan.engine.recorder import StepEvent
    from toolplan.engine.result import ExecutionResult
    from toolplan.errors import (
        AttemptFailed,
        ExecutionBusy,
        ExecutionGone,
        InvalidInput,
        LLMOutputRepeating,
        LLMOutputTruncated,
        LLMUnavailable,
        MCPServerError,
        MCPServerUnavailable,
        ModelNotConfigured,
        NotFound,
        NotWaiting,
        PlanDeclined,
        PlanInvalid,
        PlanNeedsReview,
        PlanningFailed,
        StoreUnavailable,
        TemplateError,
        TemporalUnavailable,
        ToolFailure,
        ToolOutputInvalid,
        ToolplanError,
        ToolsUnavailable,
        Unavailable,
        ValidationIssue,
    )
    from toolplan.pipeline.flow import RunOutcome
    from toolplan.pipeline.planning import PlanningOutcome
    from toolplan.plan_format.plan import Plan, Step, load_plan
    from toolplan.planning.offline import TestModel
    from toolplan.planning.scripted import FunctionModel, ModelRequest
    from toolplan.service.operations import PlanRef
    from toolplan.store import Store, open_store
    from toolplan.store.protocol import StepRecord
    from toolplan.tools import ToolCatalog, load_tool_modules, tagged
    from toolplan.validation import Analysis

__version__ = "0.1.0"

# Public names resolve on first use, so ``import toolplan`` (and the CLI, which imports
# ``toolplan.cli``) does not pay for LangGraph, LangChain and jsonschema up front.
_LAZY: dict[str, str] = {
    "AgentOutcome": "toolplan.agent.loop",
    "Analysis": "toolplan.validation",
    "AsyncToolplan": "toolplan.client",
    "AttemptFailed": "toolplan.errors",
    "ExecutionBusy": "toolplan.errors",
    "ExecutionGone": "toolplan.errors",
    "ExecutionOptions": "toolplan.config.policies",
    "ExecutionResult": "toolplan.engine.result",
    "FunctionModel": "toolplan.planning.scripted",
    "InvalidInput": "toolplan.errors",
    "LLMOutputRepeating": "toolplan.errors",
    "LLMOutputTruncated": "toolplan.errors",
    "LLMUnavailable": "toolplan.errors",
    "MCPServerError": "toolplan.errors",
    "MCPServerUnavailable": "toolplan.errors",
    "ModelNotConfigured": "toolplan.errors",
    "ModelRequest": "toolplan.planning.scripted",
    "NotFound": "toolplan.errors",
    "NotWaiting": "toolplan.errors",
    "Plan": "toolplan.plan_format.plan",
    "PlanDeclined": "toolplan.errors",
    "PlanInvalid": "toolplan.errors",
    "PlanNeedsReview": "toolplan.errors",
    "PlanRef": "toolplan.service.operations",
    "PlanningFailed": "toolplan.errors",
    "PlanningOutcome": "toolplan.pipeline.planning",
    "RetryPolicy": "toolplan.config.policies",
    "RunOutcome": "toolplan.pipeline.flow",
    "Step": "toolplan.plan_format.plan",
    "StepEvent": "toolplan.engine.recorder",
    "StepRecord": "toolplan.store.protocol",
    "Store": "toolplan.store",
    "StoreUnavailable": "toolplan.errors",
    "TemplateError": "toolplan.errors",
    "TemporalUnavailable": "toolplan.errors",
    "TestModel": "toolplan.planning.offline",
    "ToolCatalog": "toolplan.tools",
    "ToolFailure": "toolplan.errors",
    "ToolOutputInvalid": "toolplan.errors",
    "Toolplan": "toolplan.client",
    "ToolplanError": "toolplan.errors",
    "ToolsUnavailable": "toolplan.errors",
    "Unavailable": "toolplan.errors",
    "ValidationIssue": "toolplan.errors",
    "answer_query": "toolplan.adapters.functions",
    "approve_steps": "toolplan.adapters.functions",
    "cancel_execution": "toolplan.adapters.functions",
    "clear_cache": "toolplan.adapters.functions",
    "create_plan": "toolplan.adapters.functions",
    "deny_step": "toolplan.adapters.functions",
    "execute_plan": "toolplan.adapters.functions",
    "execute_plan_sync": "toolplan.adapters.functions",
    "load_plan": "toolplan.plan_format.plan",
    "load_tool_modules": "toolplan.tools",
    "open_store": "toolplan.store",
    "plan_tool": "toolplan.adapters.plan_tool",
    "run_plan": "toolplan.adapters.functions",
    "run_plan_sync": "toolplan.adapters.functions",
    "submit_plan": "toolplan.adapters.functions",
    "tagged": "toolplan.tools",
    "validate_plan": "toolplan.adapters.functions",
}

__all__ = [
    "AgentOutcome",
    "Analysis",
    "AsyncToolplan",
    "AttemptFailed",
    "ExecutionBusy",
    "ExecutionGone",
    "ExecutionOptions",
    "ExecutionResult",
    "FunctionModel",
    "InvalidInput",
    "LLMOutputRepeating",
    "LLMOutputTruncated",
    "LLMUnavailable",
    "MCPServerError",
    "MCPServerUnavailable",
    "ModelNotConfigured",
    "ModelRequest",
    "NotFound",
    "NotWaiting",
    "Plan",
    "PlanDeclined",
    "PlanInvalid",
    "PlanNeedsReview",
    "PlanRef",
    "PlanningFailed",
    "PlanningOutcome",
    "RetryPolicy",
    "RunOutcome",
    "Step",
    "StepEvent",
    "StepRecord",
    "Store",
    "StoreUnavailable",
    "TemplateError",
    "TemporalUnavailable",
    "TestModel",
    "ToolCatalog",
    "ToolFailure",
    "ToolOutputInvalid",
    "Toolplan",
    "ToolplanError",
    "ToolsUnavailable",
    "Unavailable",
    "ValidationIssue",
    "answer_query",
    "approve_steps",
    "cancel_execution",
    "clear_cache",
    "create_plan",
    "deny_step",
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


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
