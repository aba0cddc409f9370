"""The execution graph (LangGraph): ``load_plan`` → ``run_steps`` (→ ``approval`` →
``run_steps`` while steps wait for a person's approval).

``run_steps`` hands the plan to the context's execution backend (in-process: the eager
scheduler). Every step transition is written durably to the store as it happens (see
:mod:`toolplan.engine.recorder`): those step records are the source of truth, and a killed run
resumes from them without calling finished steps again. The graph's checkpointer only records the
node boundaries, for LangGraph tooling.

``run_steps`` writes one event per step transition to LangGraph's custom stream
(``{"event": "step", "kind": "started", "stepId": ..., ...}``, :meth:`StepEvent.to_json`), so
Studio and ``graph.astream(..., stream_mode="custom")`` show each step as it starts, retries,
succeeds, fails or is skipped, not only the two node updates.

When steps wait for approval, ``approval`` raises LangGraph's ``interrupt()`` with them and their
arguments (:mod:`toolplan.runs.interrupts`): Studio shows an approve/deny prompt, and
``Command(resume={"approve": [...], "deny": {"step": "reason"}})`` records the decisions and
runs the steps on. That needs a checkpointer (Studio's own, or one compiled in by the caller);
with ``ExecutionGraphContext(interrupt=False)`` the graph ends ``waiting`` instead, for a
decision from ``toolplan approve`` / ``deny`` or the API.

It is an adapter for LangGraph Studio and for graphs that compose it: ``toolplan execute``, the
API and workers call the backend directly (:func:`toolplan.service.operations.execute_stored_plan`).
It is compiled without a checkpointer for ``langgraph.json``; :func:`run_execution_graph` compiles
it with the store's own checkpointer and uses the plan ID as the thread ID.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Awaitable, Callable
from typing import Any, NotRequired, TypeVar

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel, ConfigDict, InstanceOf
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypedDict

from toolplan._graph_context import bind_context, context_resolver
from toolplan.engine.observers import BestEffort
from toolplan.engine.recorder import EventListener, StepEvent
from toolplan.engine.result import ExecutionResult
from toolplan.errors import InvalidInput
from toolplan.plan_format.limits import InputLimits
from toolplan.runs.backend import backend_of
from toolplan.runs.context import ExecutionContext
from toolplan.runs.interrupts import ask_for_approval
from toolplan.store.lookup import find_plan, require_approval
from toolplan.store.protocol import (
    TERMINAL_EXECUTION_STATUSES,
    ExecutionRecord,
    PlanRecord,
    Store,
)

__all__ = [
    "DECIDED",
    "ExecutionGraphContext",
    "ExecutionInput",
    "ExecutionState",
    "approval_node",
    "build_execution_graph",
    "interrupts",
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


class ExecutionGraphContext(BaseModel):
    """The execution graph's runtime context (LangGraph ``context_schema``): invoke the graph
    with ``context=ExecutionGraphContext(execution=ctx)``.

    LangGraph Studio passes its own (JSON) context, which leaves ``execution`` unset: the nodes
    then use the graph's default context (:mod:`toolplan.adapters.studio` builds it from the
    environment).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="ignore", frozen=True)

    execution: SkipJsonSchema[InstanceOf[ExecutionContext] | None] = None
    """Store, catalog, options, listener and backend of this execution."""
    interrupt: bool = True
    """Ask about steps waiting for approval with ``interrupt()`` (needs a checkpointer); else
    the graph ends ``waiting``."""


C = TypeVar("C")


def _result_state(plan: PlanRecord, execution: ExecutionRecord) -> ExecutionState:
    result = ExecutionResult.from_records(plan, execution).to_json()
    return {
        "request_id": plan.request_id,
        "status": result["status"],
        "steps": result["steps"],
        "outputs": result["outputs"],
        "error": execution.error,
    }


async def load_plan(state: ExecutionState, ctx: ExecutionContext) -> ExecutionState:
    """Find the plan; a finished execution is returned as stored, without calling any tool."""
    plan_id = state.get("plan_id")
    if not isinstance(plan_id, str) or not plan_id:
        raise InvalidInput(
            'the executor needs the plan to run as input: {"plan_id": "plan_..."}; store one '
            "with the planner graph or `toolplan submit --file plan.json`"
        )
    record = await asyncio.to_thread(find_plan, ctx.store, plan_id)
    execution = await asyncio.to_thread(ctx.store.get_execution, record.plan_id)
    if execution is not None and execution.status in TERMINAL_EXECUTION_STATUSES:
        return _result_state(record, execution)
    require_approval(record.plan_id, record.status, record.plan, approve=bool(state.get("approve")))
    return {"request_id": record.request_id, "status": "running"}


async def run_steps(state: ExecutionState, ctx: ExecutionContext) -> ExecutionState:
    """Run or resume every unfinished step, eagerly, recording each transition durably."""
    record = await asyncio.to_thread(find_plan, ctx.store, state["plan_id"])
    streamed = dataclasses.replace(ctx, listener=_streaming(ctx.listener, record.plan_id))
    execution = await backend_of(ctx).run(record, streamed)
    return _result_state(record, execution)


def _streaming(listener: EventListener | None, plan_id: str) -> EventListener:
    """``listener`` and LangGraph's custom stream, told of each step transition after it is
    stored; the stream (a no-op unless asked for) is an observer: it never fails a step."""
    write = get_stream_writer()  # called in the node: the writer of this run's stream
    stream: BestEffort[StepEvent] = BestEffort(
        lambda event: write({"event": "step", **event.to_json()}),
        what=f"LangGraph custom stream of {plan_id}",
    )

    told: BestEffort[StepEvent] = BestEffort(listener, what=f"step events of {plan_id}")

    def tell(event: StepEvent) -> None:
        told(event)
        stream(event)

    return tell


def _route(state: ExecutionState) -> str:
    return END if state.get("status") in TERMINAL_EXECUTION_STATUSES else "run_steps"


def _after_run(state: ExecutionState) -> str:
    return "approval" if state.get("status") == "waiting" else END


def _after_approval(state: ExecutionState) -> str:
    return "run_steps" if state.get("status") == DECIDED else END


DECIDED = "decided"
"""The graph state's ``status`` after ``approval`` recorded decisions: the steps run on."""


def interrupts(runtime: Runtime[Any] | None) -> bool:
    """Whether a graph invoked with ``runtime`` asks about waiting steps with ``interrupt()``
    (its context's ``interrupt``; yes for a context without one, as Studio's)."""
    given = runtime.context if runtime is not None else None
    return bool(getattr(given, "interrupt", True))


def approval_node(
    resolve: Callable[[Runtime[Any] | None], Awaitable[C]],
    plan_id_of: Callable[[Any], str],
    store_of: Callable[[C], Store],
    limits_of: Callable[[C], InputLimits | None] = lambda ctx: None,
) -> Any:
    """The ``approval`` node of a graph whose state names a plan (``plan_id_of(state)``) whose
    steps wait for approval: :func:`~toolplan.runs.interrupts.ask_for_approval` on the
    store of the resolved context, then ``status`` :data:`DECIDED` when the execution should go
    on. ``limits_of(ctx)``: the input limits a denial's reason is checked against."""

    async def approval(state: Any, runtime: Runtime[Any]) -> dict[str, Any]:
        """Ask a person about the steps waiting for approval (LangGraph ``interrupt``)."""
        if not interrupts(runtime):
            return {}
        ctx = await resolve(runtime)
        decided = await ask_for_approval(store_of(ctx), plan_id_of(state), limits=limits_of(ctx))
        return {"status": DECIDED} if decided else {}

    return approval


def build_execution_graph(
    default_context: Callable[[], ExecutionContext] | None = None,
) -> StateGraph[ExecutionState, ExecutionGraphContext, ExecutionInput, ExecutionState]:
    """The uncompiled execution graph; compile it with or without a checkpointer.

    Its runtime context is an :class:`ExecutionGraphContext`; invoked without one (LangGraph
    Studio), the nodes use ``default_context()``.
    """
    resolve = context_resolver("execution", default_context, graph="executor")
    builder: StateGraph[ExecutionState, ExecutionGraphContext, ExecutionInput, ExecutionState] = (
        StateGraph(
            ExecutionState,
            context_schema=ExecutionGraphContext,
            input_schema=ExecutionInput,
            output_schema=ExecutionState,
        )
    )
    builder.add_node("load_plan", bind_context(load_plan, resolve))
    builder.add_node("run_steps", bind_context(run_steps, resolve))
    builder.add_node(
        "approval",
        approval_node(resolve, lambda state: state["plan_id"], lambda ctx: ctx.store),
    )
    builder.add_edge(START, "load_plan")
    builder.add_conditional_edges("load_plan", _route, ["run_steps", END])
    builder.add_conditional_edges("run_steps", _after_run, ["approval", END])
    builder.add_conditional_edges("approval", _after_approval, ["run_steps", END])
    return builder


@functools.cache
def _compiled_graph() -> Any:
    """The execution graph compiled once per process (compiling costs milliseconds; the copy
    that binds an execution's checkpointer costs microseconds)."""
    return build_execution_graph().compile()


async def run_execution_graph(
    plan_id: str, ctx: ExecutionContext, *, approve: bool
) -> ExecutionState:
    """Run (or resume) the execution of ``plan_id`` through this graph, under the store's
    checkpointer with the plan ID as the thread ID, and return the graph's output (for a
    LangGraph thread history of the node boundaries: ``ExecutionOptions.graph_checkpoints``)."""
    async with ctx.store.checkpointer() as saver:
        graph = _compiled_graph().copy({"checkpointer": saver})
        config: Any = {"configurable": {"thread_id": plan_id}}
        snapshot = await graph.aget_state(config)
        # Only a run interrupted inside run_steps is resumed from its checkpoint; anything
        # earlier simply starts again (load_plan has no side effects).
        resume = tuple(snapshot.next) == ("run_steps",)
        inputs: Any = None if resume else {"plan_id": plan_id, "approve": approve}
        # The CLI and the API ask about waiting steps themselves (exit 4, approveStep).
        context = ExecutionGraphContext(execution=ctx, interrupt=False)
        output: ExecutionState = await graph.ainvoke(
            inputs, config, context=context, durability="sync"
        )
        return output
