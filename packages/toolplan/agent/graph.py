"""The agent graph (LangGraph StateGraph), LLMCompiler's loop:

    planner ──► executor ──► respond ─┬─ answer ──────────────► END
       ▲          ▲   │               └─ replan, replans left ─┐
       │          │   └─ waiting ──► approval ── nothing decided ─► END
       │          └── decided ──────────┘
       └───────────────────────────────────────────────────────┘

``planner`` and ``executor`` are the core's two halves of plan-then-execute
(:func:`toolplan.pipeline.flow.obtain_plan`, :func:`toolplan.pipeline.flow.execute_planned`); ``respond``
reads the results (:mod:`toolplan.agent.respond`) and answers or asks for a new plan. A new plan
is a new version of the same request, with ``meta.replanOf`` naming the plan it replaces. When the
replans (``max_replans``, default 1) are spent, the answer says what failed.

Steps waiting for a person's approval: ``approval`` raises LangGraph's ``interrupt()`` with them
and their arguments (:mod:`toolplan.runs.interrupts`), so LangGraph Studio shows an
approve/deny prompt; ``Command(resume={"approve": [...], "deny": {"step": "reason"}})`` records
the decisions (as ``toolplan approve`` / ``deny`` do) and the executor continues the execution;
``respond`` then answers, or replans seeing the denial's reason. ``run_agent`` (the CLI) passes
``interrupt=False``: the run ends ``waiting`` (exit 4) for a decision from anywhere.

Compiled without a checkpointer for ``langgraph.json``; :func:`toolplan.agent.loop.run_agent`
invokes it with an :class:`AgentGraphContext`. Step records are the durable truth, as elsewhere.

While ``planner`` plans, the planning progress (:mod:`toolplan.planning.progress`: planning,
each step as the model writes it, repairs, answers) is forwarded to this graph's custom stream
(``stream_mode="custom"``), each event as its JSON form.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, NotRequired

from langgraph.config import get_config, get_stream_writer
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, ConfigDict, InstanceOf
from pydantic.json_schema import SkipJsonSchema
from typing_extensions import TypedDict

from toolplan._graph_context import bind_context, context_resolver
from toolplan.agent.respond import DEFAULT_RESPOND_BUDGET, decide, replan_context
from toolplan.config.settings import ReuseMode
from toolplan.engine.result import ExecutionResult
from toolplan.pipeline.early_start import EarlyStarts
from toolplan.pipeline.flow import FromQuery, Planned, execute_planned, obtain_plan, runs_here
from toolplan.planning.context import PlannerContext
from toolplan.planning.planner import PlanDeclined
from toolplan.planning.prompts import load_prompt
from toolplan.runs.context import ExecutionContext
from toolplan.runs.graph import DECIDED, approval_node
from toolplan.service.operations import PlanRef
from toolplan.store.lookup import find_plan
from toolplan.store.records import ANSWERS, AgentAnswer

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
    """Reuse a stored plan for the first version (:mod:`toolplan.planning.reuse`) instead of planning."""
    respond_budget: int = DEFAULT_RESPOND_BUDGET
    on_planned: Callable[[Planned], None] | None = field(default=None, repr=False)
    """Sees every stored plan version before it runs (the CLI prints it)."""
    early: dict[str, EarlyStarts] = field(default_factory=dict, repr=False)
    """The calls started while the model wrote each plan (streamed execution), by plan ID:
    the planner node leaves them for the executor node, which adopts them."""


class AgentGraphContext(BaseModel):
    """The agent graph's runtime context: ``context=AgentGraphContext(agent=ctx)``. LangGraph
    Studio leaves ``agent`` unset: the nodes then use the graph's default context."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="ignore", frozen=True)

    agent: SkipJsonSchema[InstanceOf[AgentContext] | None] = None
    interrupt: bool = True
    """Ask about steps waiting for approval with ``interrupt()`` (needs a checkpointer); else
    the run ends ``waiting``."""


class AgentInput(TypedDict):
    """Input of the agent graph."""

    query: str
    request_id: NotRequired[str]
    """Store the plans as new versions of this request."""
    new_request: NotRequired[bool]
    """``request_id`` may be new (a client's own ID): the first plan creates the request."""
    max_replans: NotRequired[int]
    """New plans allowed after the first (default 1)."""


class AgentState(TypedDict, total=False):
    """State of the agent graph; the output has the answer and every plan version."""

    query: str
    request_id: str
    new_request: bool
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
    stopped: str
    """Why the loop ended without running the last plan (``identical``: a replan made the same
    calls as the plan that failed, twice; ``declined``: a replan found no tool for what is
    left)."""


def _add(usage: dict[str, int] | None, more: dict[str, int]) -> dict[str, int]:
    total = dict(usage or {"inputTokens": 0, "outputTokens": 0})
    for key, value in more.items():
        total[key] = total.get(key, 0) + value
    return total


async def planner(state: AgentState, ctx: AgentContext) -> AgentState:
    """Plan the query (a replan: with the previous plan, its results and the reason). The first
    plan may reuse a stored one (``AgentContext.reuse``): 0 LLM calls; a replan never does.

    A replan that makes the very calls of the plan that failed is not run: the planner is told
    so and asked once more, and when it answers the same again, the loop stops there."""
    replan_of = state.get("replan_of")
    meta = {"replanOf": replan_of, "replanReason": state.get("reason")} if replan_of else None
    source = FromQuery(
        state["query"],
        state.get("request_id"),
        new_request=state.get("new_request", False),
        reuse="off" if replan_of else ctx.reuse,
        context=state.get("context"),
        meta=meta,
    )
    try:
        planned = await _obtain(source, ctx)
    except PlanDeclined as declined:
        if not replan_of:
            raise  # nothing ran: the caller gets the planner's reason (exit 2)
        return await _stopped(ctx, state, _declined(state, declined), declined.usage)
    plan = await _plan_of(planned, ctx)
    failed = state.get("plan") if replan_of else None
    if failed is None or not _same_calls(plan, failed):
        return _planned_update(state, planned, plan)
    assert replan_of is not None  # only a replan is compared with the plan it replaces
    note = load_prompt("replan-identical", settings=ctx.planner.prompts_dir).render(
        plan_id=replan_of, reason=state.get("reason") or "it failed"
    )
    again = replace(source, context=f"{state.get('context') or ''}\n\n{note}".strip())
    skipped = _version(planned, state, status="identical")
    await _not_run(ctx, planned)
    before: AgentState = {
        **state,
        "plans": [*(state.get("plans") or []), skipped],
        "llm_calls": state.get("llm_calls", 0) + _calls(planned),
        "usage": _add(state.get("usage"), _usage(planned)),
    }
    try:
        retried = await _obtain(again, ctx)
    except PlanDeclined as declined:
        ended: AgentState = {"plans": before.get("plans", []), **_declined(before, declined)}
        return await _stopped(ctx, state, ended, _add(_usage(planned), declined.usage))
    plan = await _plan_of(retried, ctx)
    if not _same_calls(plan, failed):
        return _planned_update(before, retried, plan)
    # The same plan twice: the last executed version stays the outcome, and the loop ends.
    await _not_run(ctx, retried)
    stop: AgentState = {
        "plans": [*before.get("plans", []), _version(retried, state, status="identical")],
        "llm_calls": before.get("llm_calls", 0) + _calls(retried),
        "usage": _add(before.get("usage"), _usage(retried)),
        "action": "answer",
        "answer": (
            f"The request could not be completed: the new plan was the same as {replan_of}, "
            f"which failed ({state.get('reason') or 'see its steps'}), twice; it was not run "
            "again."
        ),
        "stopped": "identical",
    }
    return await _stopped(ctx, state, stop, _add(_usage(planned), _usage(retried)))


async def _stopped(
    ctx: AgentContext, state: AgentState, stop: AgentState, usage: dict[str, int]
) -> AgentState:
    """The loop ends at ``stop`` (its ``answer``), stored like a respond call's answer."""
    await _keep_answer(
        ctx,
        state,
        stop["answer"],
        plans=stop.get("plans", state.get("plans") or []),
        llm_calls=stop["llm_calls"],
        usage=usage,
    )
    return stop


def _declined(state: AgentState, declined: PlanDeclined) -> AgentState:
    """A replan found no tool for what is left: the loop ends, answering with why (the last
    executed version stays the outcome)."""
    return {
        "llm_calls": state.get("llm_calls", 0) + declined.llm_calls,
        "usage": _add(state.get("usage"), declined.usage),
        "action": "answer",
        "answer": (
            f"The request could not be completed: {state.get('replan_of')} failed "
            f"({state.get('reason') or 'see its steps'}), and the planner found no tool that "
            f"does what is left: {declined.reason or 'it gave no reason'}."
        ),
        "stopped": "declined",
    }


async def _obtain(source: FromQuery, ctx: AgentContext) -> Planned:
    # the planning graph's progress, on this graph's custom stream too (as the planning graph
    # streams it: a run of this graph sees it without subgraphs=True)
    writer = get_stream_writer()
    planner = ctx.planner.telling(lambda event: writer(event.to_json()))
    try:
        planned = await obtain_plan(
            source,
            store=ctx.execution.store,
            catalog=ctx.execution.catalog,
            max_steps=ctx.planner.max_steps,
            planner=planner,
            limits=ctx.planner.limits,
            estimates=ctx.planner.estimates,
            early_starts=ctx.execution.options.concurrency if runs_here(ctx.execution) else 0,
            recall_early=ctx.execution.options.cache,
        )
    finally:
        ctx.planner.learn_from(planner)
    if planned.early is not None:
        ctx.early[planned.ref.plan_id] = planned.early
    if ctx.on_planned is not None:
        ctx.on_planned(planned)
    return planned


async def _not_run(ctx: AgentContext, planned: Planned) -> None:
    """``planned`` will not run: what it started while the model wrote it is closed."""
    early = ctx.early.pop(planned.ref.plan_id, None)
    if early is not None:
        await early.close(ran=False)


async def _plan_of(planned: Planned, ctx: AgentContext) -> dict[str, Any]:
    if planned.planning is not None:
        return planned.planning.plan
    # reused: the stored copy, planned by nobody
    record = await asyncio.to_thread(find_plan, ctx.execution.store, planned.ref.plan_id)
    return record.plan


def _calls(planned: Planned) -> int:
    return planned.planning.llm_calls if planned.planning is not None else 0


def _usage(planned: Planned) -> dict[str, int]:
    return planned.planning.usage if planned.planning is not None else {}


def _same_calls(plan: dict[str, Any], other: dict[str, Any]) -> bool:
    """Whether two plans make the same calls: the same steps and outputs, whatever the
    reasoning says."""

    def calls(data: dict[str, Any]) -> str:
        return json.dumps([data.get("steps"), data.get("outputSteps")], sort_keys=True, default=str)

    return calls(plan) == calls(other)


def _version(planned: Planned, state: AgentState, *, status: str | None = None) -> dict[str, Any]:
    return {
        "planId": planned.ref.plan_id,
        "planStatus": planned.ref.status,
        "status": status,
        "replanOf": state.get("replan_of"),
        "reusedFrom": planned.reused_from,
        "llmCalls": _calls(planned),
        # what the rewrite rules changed in the model's answer (planning.rewrites)
        "changes": list(planned.planning.changes) if planned.planning is not None else [],
    }


def _planned_update(state: AgentState, planned: Planned, plan: dict[str, Any]) -> AgentState:
    update: AgentState = {
        "request_id": planned.ref.request_id,
        "plan_id": planned.ref.plan_id,
        "plan": plan,
        "plan_status": planned.ref.status,
        "plans": [*(state.get("plans") or []), _version(planned, state)],
        "llm_calls": state.get("llm_calls", 0) + _calls(planned),
        "usage": _add(state.get("usage"), _usage(planned)),
    }
    if planned.reused_from is not None:
        update["reused_from"] = planned.reused_from
        update["reuse"] = planned.reuse or "exact"
    return update


async def executor(state: AgentState, ctx: AgentContext) -> AgentState:
    """The review gate, then the execution, through the core."""
    ref = PlanRef(state["request_id"], state["plan_id"], state["plan_status"])  # type: ignore[arg-type]
    early = ctx.early.pop(state["plan_id"], None)
    run = await execute_planned(
        Planned(ref, None, 0.0, early=early), ctx.execution, approve=ctx.approve
    )
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
        await _keep_answer(
            ctx,
            state,
            decision.text,
            plans=state.get("plans") or [],
            llm_calls=update["llm_calls"],
            usage=decision.usage,
        )
    return update


async def _keep_answer(
    ctx: AgentContext,
    state: AgentState,
    answer: str,
    *,
    plans: list[dict[str, Any]],
    llm_calls: int,
    usage: dict[str, int] | None,
) -> None:
    """Store the answer of the request, for the last executed version (``toolplan show REQ``);
    ``usage`` is what the calls that gave this answer spent."""
    record: AgentAnswer = {
        "requestId": state["request_id"],
        "planId": state["plan_id"],
        "answer": answer,
        "plans": plans,
        "llmCalls": llm_calls,
        "usage": usage,
    }
    await asyncio.to_thread(
        ANSWERS.put, ctx.execution.store, record, idempotency_key=state["plan_id"]
    )


def _after_executor(state: AgentState) -> str:
    # Steps waiting for a person's approval: nothing to answer or replan yet; ask (interrupt),
    # or end waiting (exit 4) for a decision from toolplan approve / deny.
    return "approval" if state.get("status") == "waiting" else "respond"


def _after_approval(state: AgentState) -> str:
    return "executor" if state.get("status") == DECIDED else END


def _after_respond(state: AgentState) -> str:
    return "planner" if state.get("action") == "replan" else END


def _after_planner(state: AgentState) -> str:
    return END if state.get("stopped") else "executor"


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
    builder.add_node(
        "approval",
        approval_node(
            resolve,
            lambda state: state["plan_id"],
            lambda agent: agent.execution.store,
            lambda agent: agent.planner.limits,
        ),
    )
    builder.add_edge(START, "planner")
    builder.add_conditional_edges("planner", _after_planner, ["executor", END])
    builder.add_conditional_edges("executor", _after_executor, ["respond", "approval"])
    builder.add_conditional_edges("approval", _after_approval, ["executor", END])
    builder.add_conditional_edges("respond", _after_respond, ["planner", END])
    return builder
