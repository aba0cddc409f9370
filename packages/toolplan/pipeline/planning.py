"""Plan a query and keep the plan: :func:`create_plan`, and LangGraph Studio's ``planner`` graph.

Planning (:func:`toolplan.planning.planner.plan_query`) returns a validated plan, its analysis
and the record of how it was made, and stores nothing. Here the plan is stored with that record
(:func:`toolplan.service.operations.store_plan`, the one place a plan is stored, which also
indexes it for reuse), the calls started while the model wrote it are settled
(:mod:`toolplan.pipeline.early_start`), and what was stored is returned.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NotRequired

from toolplan.errors import ToolplanError
from toolplan.plan_format.ids import require_id
from toolplan.plan_format.meta import caller_meta
from toolplan.planning.call import account
from toolplan.planning.context import PlannerContext
from toolplan.planning.graph import (
    Keeping,
    PlanningInput,
    PlanningProgress,
    PlanningState,
    build_planning_graph,
)
from toolplan.planning.planner import plan_query
from toolplan.planning.result import PlanningRecord, PlanningResult
from toolplan.service.operations import PlanRef, store_plan
from toolplan.store.lookup import find_request
from toolplan.store.protocol import Store

__all__ = [
    "PlannerInput",
    "PlannerState",
    "PlanningOutcome",
    "build_planner_graph",
    "create_plan",
    "keep_plan",
]


@dataclass(frozen=True)
class PlanningOutcome:
    """A stored plan plus how it was produced."""

    ref: PlanRef
    result: PlanningResult

    @functools.cached_property
    def plan(self) -> dict[str, Any]:
        """The stored plan's JSON."""
        return self.result.plan.to_json()

    @functools.cached_property
    def analysis(self) -> dict[str, Any]:
        """Its analysis' JSON (layers, dependencies, critical path)."""
        return self.result.analysis.to_json()

    @property
    def record(self) -> PlanningRecord:
        """How the plan was made (``meta``'s planning record)."""
        return self.result.record

    @property
    def llm_calls(self) -> int:
        """The model calls planning made (repairs included)."""
        return self.record.llm_calls

    @property
    def usage(self) -> dict[str, int]:
        """Their tokens: ``inputTokens``, ``outputTokens`` (``cachedInputTokens`` when known)."""
        return self.record.usage

    @property
    def planning_ms(self) -> float:
        """How long planning took."""
        return self.record.planning_ms

    @property
    def model(self) -> str:
        """The model that planned."""
        return self.record.model

    @property
    def changes(self) -> list[dict[str, Any]]:
        """What the rewrite rules changed in the model's answer: ``{rule, step, before,
        after}`` each (:mod:`toolplan.planning.rewrites`); empty when the plan is stored as
        written."""
        return [change.to_json() for change in self.record.changes]

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
            "changes": self.changes,
        }


def _check_request(
    store: Store, request_id: str | None, new_request: bool, meta: Mapping[str, Any] | None
) -> None:
    """Refuse, before the model is paid for, what the plan could not be stored with: labels
    toolplan sets itself, a malformed request ID, a request that does not exist (unless
    ``new_request``)."""
    caller_meta(meta)
    if request_id is not None:
        require_id(request_id, "req")
        if not new_request:
            find_request(store, request_id)


async def keep_plan(
    result: PlanningResult,
    ctx: PlannerContext,
    *,
    query: str,
    request_id: str | None = None,
    new_request: bool = False,
    meta: Mapping[str, Any] | None = None,
) -> PlanRef:
    """Store ``result`` with its planning record (as a new version of ``request_id``, when
    given), indexed for reuse; the calls started while the model wrote it (``ctx.early``) are
    settled first and listed with it, and it is stored under the plan ID they were made for."""
    record_meta = result.record.to_meta(result.plan)
    if ctx.early is not None:
        record_meta["earlyStarts"] = ctx.early.settle(result.plan)
        record_meta["earlySavedMs"] = ctx.early.saved_ms
    return await asyncio.to_thread(
        store_plan,
        result.plan,
        result.analysis,
        store=ctx.store,
        catalog=ctx.catalog,
        query=query,
        request_id=request_id,
        new_request=new_request,
        status=result.status,
        meta=meta,
        record_meta=record_meta,
        estimates=ctx.estimates,
        reusable=True,
        plan_id=ctx.early.plan_id if ctx.early is not None else None,
    )


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

    Raises what :func:`~toolplan.planning.planner.plan_query` raises: :class:`PlanDeclined`
    and :class:`PlanningFailed` (exit 2, nothing stored), :class:`~toolplan.errors.LLMUnavailable`
    (exit 3). Every error raised after the model answered once carries ``llmCalls`` and
    ``usage`` in its ``details``: the calls are paid for whatever happens next.
    """
    await asyncio.to_thread(_check_request, ctx.store, request_id, new_request, meta)
    result = await plan_query(query, ctx, context=context)
    try:
        ref = await keep_plan(
            result, ctx, query=query, request_id=request_id, new_request=new_request, meta=meta
        )
    except ToolplanError as error:
        account(error, result.record.llm_calls, result.record.usage)
        raise
    return PlanningOutcome(ref, result)


class PlannerInput(PlanningInput):
    """Input of the ``planner`` graph (planning, then storing)."""

    request_id: NotRequired[str]
    """Add the plan as a new version of this existing request (``req_...``)."""
    new_request: NotRequired[bool]
    """``request_id`` may be new (a client's own ID): a request not stored yet is created."""
    meta: NotRequired[dict[str, Any]]
    """Labels stored with the plan (e.g. ``replanOf``); keys toolplan sets itself
    (``toolSources``, the planning record) are refused: :mod:`toolplan.plan_format.meta`."""


class PlannerOutput(PlanningProgress, total=False):
    """What the ``planner`` graph returns: the stored IDs, the plan and any errors."""

    request_id: str
    new_request: bool
    meta: dict[str, Any]
    plan_id: str
    plan: dict[str, Any] | None
    analysis: dict[str, Any] | None
    planning_ms: float
    estimate: dict[str, Any] | None
    """The stored plan's estimate: ``{"durationMs", "costUsd", "basis"}``."""


class PlannerState(PlannerOutput, PlanningState, total=False):
    """State of the ``planner`` graph: planning's, and what storing adds."""


async def _check(state: PlannerState, ctx: PlannerContext) -> PlannerState:
    """Refuse an input the plan could not be stored with, before the model is asked."""
    await asyncio.to_thread(
        _check_request,
        ctx.store,
        state.get("request_id"),
        state.get("new_request", False),
        state.get("meta"),
    )
    return {}


async def _persist(state: PlannerState, ctx: PlannerContext) -> PlannerState:
    """Store the plan planning validated and analysed, with its planning record."""
    result = state.get("result")
    if result is None:  # pragma: no cover - the graph reaches persist only with a result
        raise RuntimeError("persist reached without a plan")
    ref = await keep_plan(
        result,
        ctx,
        query=state["query"],
        request_id=state.get("request_id"),
        new_request=state.get("new_request", False),
        meta=state.get("meta"),
    )
    return {
        "request_id": ref.request_id,
        "plan_id": ref.plan_id,
        "status": ref.status,
        "plan": result.plan.to_json(),
        "analysis": result.analysis.to_json(),
        "planning_ms": result.record.planning_ms,
        "estimate": ref.estimate.to_json() if ref.estimate else None,
    }


def build_planner_graph(
    default_context: Callable[[], PlannerContext] | None = None,
) -> Any:
    """The planning graph with the plan stored at its end (``persist``), as LangGraph Studio's
    ``planner`` graph and graphs that compose it run it: its output has the stored plan's IDs,
    the plan and its analysis as JSON, and any errors. Uncompiled; see
    :func:`~toolplan.planning.graph.build_planning_graph` for ``default_context``."""
    keeping = Keeping(
        check=_check, keep=_persist, state=PlannerState, input=PlannerInput, output=PlannerOutput
    )
    return build_planning_graph(default_context, keeping=keeping)
