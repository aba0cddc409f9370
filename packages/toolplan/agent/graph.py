"""The agent graph (LangGraph StateGraph), LLMCompiler's loop:

    planner ──► executor ──► respond ─┬─ answer ──────────────► END
       ▲                              └─ replan, replans left ─┐
       └───────────────────────────────────────────────────────┘

``planner`` and ``executor`` are the core's two halves of plan-then-execute
(:func:`toolplan.pipeline.flow.obtain_plan`, :func:`toolplan.pipeline.flow.execute_planned`); ``respond``
reads the results (:mod:`toolplan.agent.respond`) and answers or asks for a new plan. A new plan
is a new version of the same request, with ``meta.replanOf`` naming the plan it replaces. When the
replans (``max_replans``, default 1) are spent, the answer says what failed.

Compiled without a checkpointer for ``langgraph.json``; :func:`toolplan.agent.loop.run_agent`
invokes it with an :class:`AgentGraphContext`. Step records are the durable truth, as elsewhere.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NotRequired

from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, ConfigDict, InstanceOf
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypedDict

from toolplan.agent.respond import DEFAULT_RESPOND_BUDGET, decide, replan_context
from toolplan.analysis.reuse import ReuseMode
from toolplan.engine.result import ExecutionResult
from toolplan.execution.context import ExecutionContext
from toolplan.execution.graph import bind_context, context_resolver
from toolplan.pipeline.flow import FromQuery, Planned, execute_planned, obtain_plan
from toolplan.planning.context import PlannerContext
from toolplan.service.operations import ANSWERS, PlanRef
from toolplan.store.lookup import find_plan

__all__ = [
    "DEFAULT_MAX_REPLANS",
    "AgentContext",
    "AgentGraphContext",
    "AgentInput",
    "AgentState",
    "build_agent_graph",
]

DEFAULT_MAX_REPLANS = 1


@dataclass
class AgentContext:
    """What the agent's nodes need: the planner (store, catalog, model) and the execution
    context (store, catalog, options, listener, backend)."""

    planner: PlannerContext
    execution: ExecutionContext
    approve: bool = False
    """Run plans stored as ``needs_review``."""
    reuse: ReuseMode = "off"
    """Reuse a stored plan for the first version (:mod:`toolplan.analysis.reuse`) instead of planning."""
    respond_budget: int = DEFAULT_RESPOND_BUDGET
    on_planned: Callable[[Planned], None] | None = field(default=None, repr=False)
    """Sees every stored plan version before it runs (the CLI prints it)."""


class AgentGraphContext(BaseModel):
    """The agent graph's runtime context: ``context=AgentGraphContext(agent=ctx)``. LangGraph
    Studio leaves ``agent`` unset: the nodes then use the graph's default context."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="ignore", frozen=True)

    agent: SkipJsonSchema[InstanceOf[AgentContext] | None] = None


class AgentInput(TypedDict):
    """Input of the agent graph."""

    query: str
    request_id: NotRequired[str]
    """Store the plans as new versions of this request."""
    max_replans: NotRequired[int]
    """New plans allowed after the first (default 1)."""


class AgentState(TypedDict, total=False):
    """State of the agent graph; the output has the answer and every plan version."""

    query: str
    request_id: str
    max_replans: int
    replans: int
    plan_id: str
    plan: dict[str, Any]
    plan_status: str
    context: str
    """The replan message for the next planner call."""
    replan_of: str
    reason: str
    status: str
    """The last plan's execution status."""
    action: str
    answer: str
    truncated: bool
    plans: list[dict[str, Any]]
    """Every version: ``planId``, ``planStatus``, ``status`` (its execution), ``replanOf``."""
    llm_calls: int
    usage: dict[str, int]
    reused_from: str
    """The stored plan the first version reused, if any."""
    reuse: str
    """``exact`` or ``parametric`` when the first version was reused."""


def _add(usage: dict[str, int] | None, more: dict[str, int]) -> dict[str, int]:
    total = dict(usage or {"inputTokens": 0, "outputTokens": 0})
    for key, value in more.items():
        total[key] = total.get(key, 0) + value
    return total


async def planner(state: AgentState, ctx: AgentContext) -> AgentState:
    """Plan the query (a replan: with the previous plan, its results and the reason). The first
    plan may reuse a stored one (``AgentContext.reuse``): 0 LLM calls; a replan never does."""
    replan_of = state.get("replan_of")
    meta = {"replanOf": replan_of, "replanReason": state.get("reason")} if replan_of else None
    source = FromQuery(
        state["query"],
        state.get("request_id"),
        reuse="off" if replan_of else ctx.reuse,
        context=state.get("context"),
        meta=meta,
    )
    planned = await obtain_plan(
        source,
        store=ctx.execution.store,
        catalog=ctx.execution.catalog,
        max_steps=ctx.planner.max_steps,
        planner=ctx.planner,
        limits=ctx.planner.limits,
        estimates=ctx.planner.estimates,
    )
    if ctx.on_planned is not None:
        ctx.on_planned(planned)
    outcome = planned.planning
    if outcome is not None:
        plan, calls, usage = outcome.plan, outcome.llm_calls, outcome.usage
    else:  # reused: the stored copy, planned by nobody
        record = await asyncio.to_thread(find_plan, ctx.execution.store, planned.ref.plan_id)
        plan, calls, usage = record.plan, 0, {}
    version = {
        "planId": planned.ref.plan_id,
        "planStatus": planned.ref.status,
        "status": None,
        "replanOf": state.get("replan_of"),
        "reusedFrom": planned.reused_from,
        "llmCalls": calls,
    }
    update: AgentState = {
        "request_id": planned.ref.request_id,
        "plan_id": planned.ref.plan_id,
        "plan": plan,
        "plan_status": planned.ref.status,
        "plans": [*(state.get("plans") or []), version],
        "llm_calls": state.get("llm_calls", 0) + calls,
        "usage": _add(state.get("usage"), usage),
    }
    if planned.reused_from is not None:
        update["reused_from"] = planned.reused_from
        update["reuse"] = planned.reuse or "exact"
    return update


async def executor(state: AgentState, ctx: AgentContext) -> AgentState:
    """The review gate, then the execution, through the core."""
    ref = PlanRef(state["request_id"], state["plan_id"], state["plan_status"])  # type: ignore[arg-type]
    run = await execute_planned(Planned(ref, None, 0.0), ctx.execution, approve=ctx.approve)
    assert run.result is not None  # review="refuse": a refused plan raised instead
    plans = [dict(p) for p in state.get("plans") or []]
    plans[-1]["status"] = run.result.status
    return {"status": run.result.status, "plans": plans}


async def _result(ctx: AgentContext, plan_id: str) -> ExecutionResult:
    def read() -> ExecutionResult:
        record = find_plan(ctx.execution.store, plan_id)
        execution = ctx.execution.store.get_execution(plan_id)
        assert execution is not None  # the executor ran it
        return ExecutionResult.from_records(record, execution)

    return await asyncio.to_thread(read)


async def respond(state: AgentState, ctx: AgentContext) -> AgentState:
    """Answer from the results, or ask for a new plan while replans are left."""
    result = await _result(ctx, state["plan_id"])
    replans = state.get("replans", 0)
    allowed = replans < state.get("max_replans", DEFAULT_MAX_REPLANS)
    decision = await decide(
        ctx.planner,
        state["query"],
        result,
        replan_allowed=allowed,
        usage=state.get("usage"),
        calls=state.get("llm_calls", 0),
        budget=ctx.respond_budget,
        config=get_config(),
    )
    update: AgentState = {
        "action": decision.action,
        "llm_calls": state.get("llm_calls", 0) + 1,
        "usage": decision.usage,
        "truncated": decision.truncated,
    }
    if decision.action == "replan":
        update["context"] = replan_context(
            state["query"],
            state.get("plan") or {},
            result,
            decision.text,
            prompts_dir=ctx.planner.prompts_dir,
        )
        update["reason"] = decision.text
        update["replan_of"] = state["plan_id"]
        update["replans"] = replans + 1
    else:
        update["answer"] = decision.text
        record = {
            "requestId": state["request_id"],
            "planId": state["plan_id"],
            "answer": decision.text,
            "plans": state.get("plans") or [],
            "llmCalls": update["llm_calls"],
            "usage": decision.usage,
        }
        await asyncio.to_thread(
            ctx.execution.store.put_record,
            ANSWERS,
            record,
            idempotency_key=state["plan_id"],
        )
    return update


def _after_respond(state: AgentState) -> str:
    return "planner" if state.get("action") == "replan" else END


def build_agent_graph(
    default_context: Callable[[], AgentContext] | None = None,
) -> StateGraph[AgentState, AgentGraphContext, AgentInput, AgentState]:
    """The uncompiled agent graph. Its runtime context is an :class:`AgentGraphContext`;
    invoked without one (LangGraph Studio), the nodes use ``default_context()``."""
    resolve = context_resolver("agent", default_context, graph="agent")
    builder: StateGraph[AgentState, AgentGraphContext, AgentInput, AgentState] = StateGraph(
        AgentState,
        context_schema=AgentGraphContext,
        input_schema=AgentInput,
        output_schema=AgentState,
    )
    builder.add_node("planner", bind_context(planner, resolve))
    builder.add_node("executor", bind_context(executor, resolve))
    builder.add_node("respond", bind_context(respond, resolve))
    builder.add_edge(START, "planner")
    builder.add_edge("planner", "executor")
    builder.add_edge("executor", "respond")
    builder.add_conditional_edges("respond", _after_respond, ["planner", END])
    return builder
