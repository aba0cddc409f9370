"""``plan_query``: run the planning graph for one query and return the validated plan, with its
analysis and the record of how it was made. Nothing is stored here: the caller keeps the plan
(:func:`toolplan.pipeline.planning.create_plan` stores it through
:func:`toolplan.service.operations.store_plan`, the one place a plan is stored)."""

from __future__ import annotations

import asyncio
from typing import Any

from toolplan.errors import (
    InvalidInput,
    LLMUnavailable,
    PlanDeclined,
    PlanningFailed,
    ToolplanError,
)
from toolplan.plan_format.limits import check_text
from toolplan.planning.call import account
from toolplan.planning.context import PlannerContext
from toolplan.planning.graph import PlanningGraphContext, PlanningInput, build_planning_graph
from toolplan.planning.result import PlanningResult

# PlanDeclined and PlanningFailed live in toolplan.errors; imported from here too, as before.
__all__ = ["PlanDeclined", "PlanningFailed", "plan_query"]


async def plan_query(
    query: str, ctx: PlannerContext, *, context: str | None = None
) -> PlanningResult:
    """Plan ``query`` with the LLM: one call, plus repairs while the plan is invalid.
    ``context`` follows the query in its own message (a replan's previous plan and failures).

    Raises :class:`PlanDeclined` (exit 2) when the model planned no step (no tool does what was
    asked), :class:`PlanningFailed` (exit 2) when still invalid after ``ctx.max_repairs``
    repairs, and :class:`~toolplan.errors.LLMUnavailable` (exit 3) when the model cannot be
    reached or planning outlasts ``ctx.deadline``. Every error raised after the model answered
    once carries ``llmCalls`` and ``usage`` in its ``details``: the calls are paid for whatever
    happens next.
    """
    if not query.strip():
        raise InvalidInput("the query is empty; say what should be done")
    check_text(query, "the query", ctx.limits)
    inputs: PlanningInput = {"query": query}
    if context:
        inputs["context"] = context
    graph = build_planning_graph().compile()
    config: Any = {"recursion_limit": 4 * (ctx.max_repairs + 2)}
    state: Any = {}
    try:
        # the last values are the result; the ones before, what was spent so far
        async with asyncio.timeout(ctx.deadline):
            async for values in graph.astream(
                inputs, config, context=PlanningGraphContext(planner=ctx), stream_mode="values"
            ):
                state = values
    except TimeoutError:
        error = LLMUnavailable(
            f"planning took longer than {ctx.deadline:g} s, the planning deadline "
            "(TOOLPLAN_PLANNING_DEADLINE), and was stopped; nothing was stored. Raise it for a "
            "model that writes slowly"
        )
        if state.get("llm_calls"):
            account(error, state["llm_calls"], state.get("usage"))
        raise error from None
    except ToolplanError as error:
        if state.get("llm_calls"):
            account(error, state["llm_calls"], state.get("usage"))
        raise
    usage = state.get("usage") or {"inputTokens": 0, "outputTokens": 0}
    result: PlanningResult | None = state.get("result")
    if result is not None:
        return result
    if state.get("status") == "declined":
        raise PlanDeclined(
            state.get("declined") or "", llm_calls=state.get("llm_calls", 0), usage=usage
        )
    raise PlanningFailed(
        state.get("errors") or [], llm_calls=state.get("llm_calls", 0), usage=usage
    )
