"""The execution graph (LangGraph): ``load_plan`` → ``run_steps``.

``run_steps`` hands the plan to the context's execution backend (in-process: the eager
scheduler). Every step transition is written durably to the store as it happens (see
:mod:`toolplan.engine.recorder`): those step records are the source of truth, and a killed run
resumes from them without calling finished steps again. The graph's checkpointer only records the
node boundaries, for LangGraph tooling.

The graph is compiled without a checkpointer for ``langgraph.json``; :func:`run_execution_graph`
compiles it with the store's own checkpointer and uses the plan ID as the thread ID.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, NotRequired

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel, ConfigDict, InstanceOf
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypedDict

from toolplan._caches import register_cache
from toolplan.config import Settings
from toolplan.engine.result import ExecutionResult
from toolplan.errors import InvalidInput
from toolplan.execution.backend import backend_of
from toolplan.execution.context import ExecutionContext
from toolplan.service.wiring import execution_context
from toolplan.store.lookup import find_plan, require_approval
from toolplan.store.protocol import TERMINAL_EXECUTION_STATUSES, ExecutionRecord, PlanRecord

__all__ = [
    "ExecutionGraphContext",
    "ExecutionInput",
    "ExecutionState",
    "build_execution_graph",
    "run_execution_graph",
]


class ExecutionInput(TypedDict):
    """Input of the executor graph."""

    plan_id: str
    """The stored plan to run or resume (``plan_...``)."""
    approve: NotRequired[bool]
    """Run it even if it is stored as ``needs_review`` (low planner confidence)."""


class ExecutionState(TypedDict, total=False):
    """State of the executor graph; the output carries the execution result."""

    plan_id: str
    approve: bool
    request_id: str
    status: str
    steps: list[dict[str, Any]]
    outputs: dict[str, Any]
    error: str | None


@functools.lru_cache(maxsize=4)
def _default_context(settings: Settings) -> ExecutionContext:
    """For LangGraph Studio / ``langgraph dev``: one context per distinct settings."""
    from toolplan.store import open_store
    from toolplan.tools.loading import load_catalog

    return execution_context(
        settings, store=open_store(settings.store_uri), catalog=load_catalog(settings)
    )


register_cache(_default_context.cache_clear)


class ExecutionGraphContext(BaseModel):
    """The execution graph's runtime context (LangGraph ``context_schema``): invoke the graph
    with ``context=ExecutionGraphContext(execution=ctx)``.

    LangGraph Studio passes its own (JSON) context, which leaves ``execution`` unset: the nodes
    then build an :class:`ExecutionContext` from the environment's settings.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="ignore", frozen=True)

    execution: SkipJsonSchema[InstanceOf[ExecutionContext] | None] = None
    """Store, catalog, options, listener and backend of this execution."""


async def context_from(runtime: Runtime[ExecutionGraphContext] | None) -> ExecutionContext:
    """The :class:`ExecutionContext` the graph was invoked with, or one built from the
    environment's settings (in a thread: opening the store and importing tools must not block
    the event loop)."""
    given = runtime.context if runtime is not None else None
    if given is not None and given.execution is not None:
        return given.execution
    return await asyncio.to_thread(lambda: _default_context(Settings.from_env()))


def _result_state(plan: PlanRecord, execution: ExecutionRecord) -> ExecutionState:
    result = ExecutionResult.from_records(plan, execution).to_json()
    return {
        "request_id": plan.request_id,
        "status": result["status"],
        "steps": result["steps"],
        "outputs": result["outputs"],
        "error": execution.error,
    }


async def load_plan(
    state: ExecutionState, runtime: Runtime[ExecutionGraphContext]
) -> ExecutionState:
    """Find the plan; a finished execution is returned as stored, without calling any tool."""
    plan_id = state.get("plan_id")
    if not isinstance(plan_id, str) or not plan_id:
        raise InvalidInput(
            'the executor needs the plan to run as input: {"plan_id": "plan_..."}; store one '
            "with the planner graph or `toolplan submit --file plan.json`"
        )
    ctx = await context_from(runtime)
    record = await asyncio.to_thread(find_plan, ctx.store, plan_id)
    execution = await asyncio.to_thread(ctx.store.get_execution, record.plan_id)
    if execution is not None and execution.status in TERMINAL_EXECUTION_STATUSES:
        return _result_state(record, execution)
    require_approval(record.plan_id, record.status, record.plan, approve=bool(state.get("approve")))
    return {"request_id": record.request_id, "status": "running"}


async def run_steps(
    state: ExecutionState, runtime: Runtime[ExecutionGraphContext]
) -> ExecutionState:
    """Run or resume every unfinished step, eagerly, recording each transition durably."""
    ctx = await context_from(runtime)
    record = await asyncio.to_thread(find_plan, ctx.store, state["plan_id"])
    execution = await backend_of(ctx).run(record, ctx)
    return _result_state(record, execution)


def _route(state: ExecutionState) -> str:
    return END if state.get("status") in TERMINAL_EXECUTION_STATUSES else "run_steps"


def build_execution_graph() -> StateGraph[
    ExecutionState, ExecutionGraphContext, ExecutionInput, ExecutionState
]:
    """The uncompiled execution graph; compile it with or without a checkpointer.

    Its runtime context is an :class:`ExecutionGraphContext`; without one, the nodes build an
    execution context from the environment.
    """
    builder: StateGraph[ExecutionState, ExecutionGraphContext, ExecutionInput, ExecutionState] = (
        StateGraph(
            ExecutionState,
            context_schema=ExecutionGraphContext,
            input_schema=ExecutionInput,
            output_schema=ExecutionState,
        )
    )
    builder.add_node("load_plan", load_plan)
    builder.add_node("run_steps", run_steps)
    builder.add_edge(START, "load_plan")
    builder.add_conditional_edges("load_plan", _route, ["run_steps", END])
    builder.add_edge("run_steps", END)
    return builder


@functools.cache
def _compiled_graph() -> Any:
    """The execution graph compiled once per process (compiling costs milliseconds; the copy
    that binds an execution's checkpointer costs microseconds)."""
    return build_execution_graph().compile()


async def run_execution_graph(plan_id: str, ctx: ExecutionContext, *, approve: bool) -> None:
    """Run (or resume) the execution of ``plan_id`` through this graph, under the store's
    checkpointer with the plan ID as the thread ID (``ExecutionOptions.graph_checkpoints``)."""
    async with ctx.store.checkpointer() as saver:
        graph = _compiled_graph().copy({"checkpointer": saver})
        config: Any = {"configurable": {"thread_id": plan_id}}
        snapshot = await graph.aget_state(config)
        # Only a run interrupted inside run_steps is resumed from its checkpoint; anything
        # earlier simply starts again (load_plan has no side effects).
        resume = tuple(snapshot.next) == ("run_steps",)
        inputs: Any = None if resume else {"plan_id": plan_id, "approve": approve}
        context = ExecutionGraphContext(execution=ctx)
        await graph.ainvoke(inputs, config, context=context, durability="sync")
