"""``create_plan``: run the planning graph for one query and return what was stored."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolplan.errors import (
    InvalidInput,
    LLMUnavailable,
    PlanDeclined,
    PlanningFailed,
    ToolplanError,
)
from toolplan.plan_format.ids import require_id
from toolplan.plan_format.limits import check_text
from toolplan.planning.call import account
from toolplan.planning.graph import (
    PlannerContext,
    PlanningGraphContext,
    PlanningInput,
    build_planning_graph,
)
from toolplan.service.estimates import Estimate
from toolplan.service.operations import PlanRef
from toolplan.store.lookup import find_request

# PlanDeclined and PlanningFailed live in toolplan.errors; imported from here too, as before.
__all__ = ["PlanDeclined", "PlanningFailed", "PlanningOutcome", "create_plan"]


@dataclass(frozen=True)
class PlanningOutcome:
    """A stored plan plus how it was produced."""

    ref: PlanRef
    plan: dict[str, Any]
    analysis: dict[str, Any]
    llm_calls: int
    usage: dict[str, int]
    planning_ms: float
    model: str
    changes: list[dict[str, Any]] = field(default_factory=list)
    """What the rewrite rules changed in the model's answer: ``{rule, step, before, after}``
    each (:mod:`toolplan.planning.rewrites`); empty when the plan is stored as written."""

    @property
    def plan_id(self) -> str:
        """The stored plan's ID (``ref.plan_id``)."""
        return self.ref.plan_id

    @property
    def request_id(self) -> str:
        """The request the plan is a version of (``ref.request_id``)."""
        return self.ref.request_id

    @property
    def status(self) -> str:
        """The stored plan's status: ``planned``, or ``needs_review`` (``ref.status``)."""
        return self.ref.status

    def to_json(self) -> dict[str, Any]:
        """``toolplan plan --json``: requestId, planId, status, estimate, plan, llmCalls,
        usage, changes."""
        return {
            **self.ref.to_json(),
            "plan": self.plan,
            "analysis": self.analysis,
            "llmCalls": self.llm_calls,
            "usage": self.usage,
            "planningMs": self.planning_ms,
            "model": self.model,
            "changes": [dict(change) for change in self.changes],
        }


async def create_plan(
    query: str,
    ctx: PlannerContext,
    *,
    request_id: str | None = None,
    context: str | None = None,
    meta: Mapping[str, Any] | None = None,
    new_request: bool = False,
) -> PlanningOutcome:
    """Plan ``query`` with the LLM (one call, plus repairs if invalid), validate and store it.

    With ``request_id``, the plan is a new version of that request; with ``new_request`` too,
    ``request_id`` may be a new, well-formed ID of the caller's choosing, and a request not
    stored yet is created under it.

    ``context`` follows the query in its own message (a replan's previous plan and failures);
    ``meta`` is stored with the plan's planning record (``replanOf``).

    Raises :class:`PlanDeclined` (exit 2) when the model planned no step (no tool does what was
    asked), :class:`PlanningFailed` (exit 2) when still invalid after ``ctx.max_repairs`` repairs,
    and :class:`~toolplan.errors.LLMUnavailable` (exit 3) when the model cannot be reached. Every
    error raised after the model answered once carries ``llmCalls`` and ``usage`` in its
    ``details``: the calls are paid for whatever happens next.
    """
    if not query.strip():
        raise InvalidInput("the query is empty; say what should be done")
    check_text(query, "the query", ctx.limits)
    if request_id is not None and not new_request:
        find_request(ctx.store, request_id)  # before the model is paid for
    inputs: PlanningInput = {"query": query}
    if request_id is not None:
        inputs["request_id"] = require_id(request_id, "req")
        inputs["new_request"] = new_request
    if context:
        inputs["context"] = context
    if meta:
        inputs["meta"] = dict(meta)
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
    if state.get("status") == "declined":
        raise PlanDeclined(
            state.get("declined") or "", llm_calls=state.get("llm_calls", 0), usage=usage
        )
    if state.get("status") == "invalid":
        raise PlanningFailed(
            state.get("errors") or [], llm_calls=state.get("llm_calls", 0), usage=usage
        )
    return PlanningOutcome(
        ref=PlanRef(
            state["request_id"],
            state["plan_id"],
            state["status"],
            estimate=Estimate.from_json(state.get("estimate")),
        ),
        plan=state["plan"],
        analysis=state["analysis"],
        llm_calls=state.get("llm_calls", 0),
        usage=usage,
        planning_ms=state.get("planning_ms", 0.0),
        model=state.get("model", ctx.model_name),
        changes=list(state.get("changes") or []),
    )
