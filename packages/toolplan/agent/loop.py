"""``run_agent``: one query through the agent graph (plan, execute, respond, replan), and what
``toolplan run "QUERY"``, the Python API and ``toolplan show`` need from it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from toolplan.agent.graph import (
    DEFAULT_MAX_REPLANS,
    AgentContext,
    AgentGraphContext,
    AgentInput,
    build_agent_graph,
)
from toolplan.engine.result import ExecutionResult
from toolplan.errors import InvalidInput
from toolplan.plan_format.limits import check_text
from toolplan.plan_format.meta import ESTIMATE_KEY
from toolplan.store.lookup import find_plan
from toolplan.store.protocol import StepRecord

__all__ = ["AgentOutcome", "run_agent"]


@dataclass(frozen=True)
class AgentOutcome:
    """The answer, every plan version, and the totals over planning, replanning and respond."""

    request_id: str
    answer: str
    plans: list[dict[str, Any]]
    llm_calls: int
    usage: dict[str, int]
    result: ExecutionResult
    """The last plan's execution: its status is the exit code's."""
    plan: dict[str, Any]
    """The last plan."""
    truncated: bool = False
    reused_from: str | None = None
    """The stored plan the first version reused (0 planning calls), if any."""
    reuse: str | None = None
    """``exact`` or ``parametric`` when reused."""
    estimate: dict[str, Any] | None = None
    """The last plan's estimate (``{durationMs, costUsd, basis}``, stored with it), as
    ``run "QUERY" --no-answer --json`` prints it."""

    @property
    def status(self) -> str:
        """The last plan's execution status (``succeeded``, ``partial``, ``failed``...)."""
        return self.result.status

    @property
    def steps(self) -> list[StepRecord]:
        """The last plan's step records (each with its ``id``)."""
        return self.result.steps

    @property
    def outputs(self) -> dict[str, Any]:
        """The output of each ``outputSteps`` step of the last plan."""
        return self.result.outputs

    @property
    def plan_id(self) -> str:
        """The last plan's ID."""
        return self.result.plan_id

    @property
    def exit_code(self) -> int:
        """0 when the last plan succeeded, 1 when it ended partial or failed, 4 while its steps
        wait for a person's approval (no answer yet)."""
        return self.result.exit_code

    def to_json(self) -> dict[str, Any]:
        """``toolplan run "QUERY" --json``: the last execution plus the loop's keys."""
        data = {
            **self.result.to_json(),
            "planStatus": self.plans[-1]["planStatus"],
            "estimate": self.estimate,
            "plan": self.plan,
            "answer": self.answer,
            "plans": self.plans,
            "llmCalls": self.llm_calls,
            "usage": self.usage,
        }
        if self.reused_from is not None:
            data.update(reusedFrom=self.reused_from, reuse=self.reuse)
        return data


async def run_agent(
    query: str,
    ctx: AgentContext,
    *,
    request_id: str | None = None,
    max_replans: int = DEFAULT_MAX_REPLANS,
    new_request: bool = False,
) -> AgentOutcome:
    """Plan ``query``, execute, answer; replan at most ``max_replans`` times when the model
    asks. With ``new_request``, ``request_id`` may be a new, well-formed ID of the caller's
    choosing: the first plan creates the request under it. Raises :class:`~toolplan.errors.LLMUnavailable` (exit 3) when the model cannot be
    reached, even after steps ran (their records are kept)."""
    if not query.strip():
        raise InvalidInput("the query is empty; say what should be done")
    if max_replans < 0:
        raise InvalidInput("--max-replans must be 0 or more")
    check_text(query, "the query", ctx.planner.limits)
    inputs: AgentInput = {"query": query, "max_replans": max_replans}
    if request_id is not None:
        inputs["request_id"] = request_id
        inputs["new_request"] = new_request
    graph = build_agent_graph().compile(name="agent")
    config: Any = {"recursion_limit": 4 * (max_replans + 2)}
    # Steps waiting for approval end the run ``waiting`` (exit 4): the CLI asks inline itself.
    context = AgentGraphContext(agent=ctx, interrupt=False)
    state: Any = await graph.ainvoke(inputs, config, context=context)
    store = ctx.execution.store

    def last() -> tuple[ExecutionResult, dict[str, Any] | None]:
        record = find_plan(store, state["plan_id"])
        execution = store.get_execution(state["plan_id"])
        assert execution is not None
        return ExecutionResult.from_records(record, execution), record.meta.get(ESTIMATE_KEY)

    result, estimate = await asyncio.to_thread(last)
    return AgentOutcome(
        request_id=state["request_id"],
        answer=state.get("answer") or "",
        plans=state.get("plans") or [],
        llm_calls=state.get("llm_calls", 0),
        usage=state.get("usage") or {"inputTokens": 0, "outputTokens": 0},
        result=result,
        plan=state.get("plan") or {},
        truncated=bool(state.get("truncated")),
        reused_from=state.get("reused_from"),
        reuse=state.get("reuse"),
        estimate=estimate,
    )
