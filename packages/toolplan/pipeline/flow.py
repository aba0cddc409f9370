"""Plan, then execute: the one path from a query or a plan document to an execution result.

``toolplan run`` (query or ``--file``), :func:`toolplan.run_plan`, the ``execute_plan``
meta-tool and ``toolplan batch --execute`` all call :func:`plan_then_execute`; an agent loop
(answer, replan) is meant to be one more caller, not another copy. The steps are always the same:

1. obtain a stored plan (:func:`obtain_plan`): validate and store a document, or plan a query
   with the LLM and keep what the planner returns (:func:`toolplan.pipeline.planning.create_plan`);
2. the "needs review" gate (:func:`toolplan.store.lookup.require_approval`): refuse, or skip, a plan
   stored as ``needs_review`` unless approved;
3. execute it with the context's execution backend (:func:`toolplan.service.operations.execute_stored_plan`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from toolplan.config.settings import EstimateSettings, ReuseMode
from toolplan.engine.result import ExecutionResult
from toolplan.errors import InvalidInput, PlanInvalid
from toolplan.plan_format.limits import InputLimits, check_text
from toolplan.plan_format.meta import caller_meta
from toolplan.plan_format.plan import DEFAULT_MAX_ITEMS, Plan
from toolplan.planning.reuse import find_reusable
from toolplan.runs.backend import InProcessBackend, backend_of
from toolplan.runs.runner import ExecutionContext
from toolplan.service.operations import PlanRef, execute_stored_plan, submit_plan
from toolplan.store.lookup import require_approval
from toolplan.store.protocol import StepRecord, Store
from toolplan.tools.catalog import ToolCatalog

if TYPE_CHECKING:
    from toolplan.pipeline.early_start import EarlyStarts
    from toolplan.pipeline.planning import PlanningOutcome
    from toolplan.planning.context import PlannerContext

__all__ = [
    "FromDocument",
    "FromQuery",
    "PlanSource",
    "Planned",
    "ReviewPolicy",
    "RunOutcome",
    "execute_planned",
    "obtain_plan",
    "plan_then_execute",
]


@dataclass(frozen=True)
class FromQuery:
    """Plan ``query`` with the LLM: one structured-output call, plus bounded repairs."""

    query: str
    request_id: str | None = None
    """Store the plan as a new version of this request."""
    reuse: ReuseMode = "off"
    """Look for a stored plan to reuse first (:mod:`toolplan.planning.reuse`): 0 LLM calls when found."""
    context: str | None = None
    """More for the planner after the query (a replan: the previous plan, its results, what
    failed)."""
    meta: Mapping[str, Any] | None = None
    """Labels stored with the plan, beside the planning record (e.g. ``{"replanOf":
    "plan_..."}``); a key toolplan sets itself is refused (:mod:`toolplan.plan_format.meta`)."""
    new_request: bool = False
    """``request_id`` may be new (a client's own, well-formed ID): a request not stored yet is
    created under it."""

    def __post_init__(self) -> None:
        caller_meta(self.meta)


@dataclass(frozen=True)
class FromDocument:
    """Validate and store a plan the caller wrote (a file path, JSON text, a dict or a Plan)."""

    plan: str | Path | bytes | dict[str, Any] | Plan
    query: str | None = None
    request_id: str | None = None
    meta: Mapping[str, Any] | None = None
    """Labels stored with the plan (e.g. ``{"source": "execute_plan"}``); a key toolplan sets
    itself is refused (:mod:`toolplan.plan_format.meta`)."""

    def __post_init__(self) -> None:
        caller_meta(self.meta)


PlanSource = FromQuery | FromDocument
"""Where the plan comes from."""

ReviewPolicy = Literal["refuse", "skip"]
"""A ``needs_review`` plan that is not approved: ``refuse`` raises
:class:`~toolplan.errors.PlanNeedsReview`; ``skip`` returns it stored but not executed."""


@dataclass(frozen=True)
class Planned:
    """A plan that is stored and about to be gated and executed."""

    ref: PlanRef
    planning: PlanningOutcome | None
    """How the LLM produced it; ``None`` for a document."""
    planning_ms: float
    """Wall-clock time to obtain the plan (validation and storage included)."""
    reused_from: str | None = None
    """The stored plan reused instead of planning (``meta.reusedFrom``), if any."""
    reuse: str | None = None
    """``exact`` or ``parametric`` when reused."""
    tools: tuple[str, ...] = ()
    """The reused plan's tools, step by step (a planned plan's are in ``planning``)."""
    early: EarlyStarts | None = field(default=None, repr=False, compare=False)
    """The calls started while the model wrote the plan (streamed execution): its execution
    adopts them (:meth:`~toolplan.pipeline.early_start.EarlyStarts.adopting`)."""

    def to_json(self) -> dict[str, Any]:
        """The planning outcome's JSON (``toolplan plan --json``), else the plan reference;
        with ``earlyStarts`` and ``savedMs`` when steps started while the model wrote it."""
        if self.planning is not None:
            data = self.planning.to_json()
            if self.early is not None and self.early.settled:
                data.update(earlyStarts=self.early.settled, savedMs=self.early.saved_ms)
            return data
        data = self.ref.to_json()
        if self.reused_from is not None:
            data.update(reusedFrom=self.reused_from, reuse=self.reuse, llmCalls=0)
        return data


@dataclass(frozen=True)
class RunOutcome:
    """What :func:`plan_then_execute` did."""

    planned: Planned
    result: ExecutionResult | None
    """``None`` when the plan needs review and the policy was ``skip``."""
    execution_ms: float | None = None

    # What a caller reaches for first, as on an ExecutionResult (and the JSON's names).

    @property
    def plan_id(self) -> str:
        """The stored plan's ID."""
        return self.planned.ref.plan_id

    @property
    def request_id(self) -> str:
        """The request the plan is a version of."""
        return self.planned.ref.request_id

    @property
    def status(self) -> str:
        """The execution's status (``succeeded``, ``partial``, ``failed``, ``waiting``...);
        the plan's (``needs_review``) when it was stored and not executed."""
        return self.result.status if self.result is not None else self.planned.ref.status

    @property
    def steps(self) -> list[StepRecord]:
        """The execution's step records (each with its ``id``); none when not executed."""
        return self.result.steps if self.result is not None else []

    @property
    def outputs(self) -> dict[str, Any]:
        """The output of each ``outputSteps`` step; empty when not executed."""
        return self.result.outputs if self.result is not None else {}

    @property
    def exit_code(self) -> int:
        """The CLI's exit code for it: the execution's (:attr:`ExecutionResult.exit_code`); 0
        for a plan stored for review and not executed."""
        return self.result.exit_code if self.result is not None else 0


async def obtain_plan(
    source: PlanSource,
    *,
    store: Store,
    catalog: ToolCatalog,
    max_steps: int,
    planner: PlannerContext | None = None,
    limits: InputLimits | None = None,
    estimates: EstimateSettings | None = None,
    max_items: int = DEFAULT_MAX_ITEMS,
    early_starts: int = 0,
    recall_early: bool = True,
) -> Planned:
    """Store the plan ``source`` describes: validate a document, or plan a query with
    ``planner`` (required then). The input limits (``limits``, default the built-in ones)
    are checked first; ``estimates`` says how the stored plan is estimated. Raises :class:`~toolplan.errors.PlanInvalid` or
    :class:`~toolplan.errors.InvalidInput` before storing anything invalid,
    :class:`~toolplan.errors.LLMUnavailable` when the model cannot be reached.

    With the planner's ``stream_execution`` and ``early_starts`` (how many calls may run at once,
    the execution's concurrency; ``0``, the default: none. The caller executes the plan in this
    process next, with :func:`execute_planned`, which adopts or closes them), read-only steps of a Python answer start while the model writes it
    (:mod:`toolplan.pipeline.early_start`); what they started is settled when the plan is
    stored, and cancelled when planning fails. ``recall_early=False`` (the run's ``--no-cache``)
    calls the tools again instead of adopting what an interrupted planning of the same request
    had read."""
    started = time.perf_counter()
    limits = limits or InputLimits()
    if isinstance(source, FromQuery):
        check_text(source.query, "the query", limits)
        if planner is None:
            raise InvalidInput("planning a query needs a planner (a model configuration)")
        if source.request_id is None:
            reused = await _reuse(source, store, catalog, max_steps, limits, estimates, started)
            if reused is not None:
                return reused
        from toolplan.pipeline.planning import create_plan

        early = (
            await _early_starts(source, planner, store, catalog, early_starts, recall_early)
            if early_starts > 0
            else None
        )
        running = planner if early is None else replace(planner, early=early)
        try:
            outcome = await create_plan(
                source.query,
                running,
                request_id=source.request_id,
                context=source.context,
                meta=source.meta,
                new_request=source.new_request,
            )
        except BaseException:
            if early is not None:
                await early.close()  # nothing was stored: cancel what still runs
            raise
        finally:
            planner.learn_from(running)
        return Planned(outcome.ref, outcome, _ms(started), early=early)
    ref = await asyncio.to_thread(
        submit_plan,
        source.plan,
        store=store,
        catalog=catalog,
        query=source.query,
        request_id=source.request_id,
        max_steps=max_steps,
        meta=dict(source.meta or {}),
        limits=limits,
        estimates=estimates,
        max_items=max_items,
    )
    return Planned(ref, None, _ms(started))


async def plan_then_execute(
    source: PlanSource,
    ctx: ExecutionContext,
    *,
    max_steps: int,
    planner: PlannerContext | None = None,
    approve: bool = False,
    review: ReviewPolicy = "refuse",
    on_planned: Callable[[Planned], None] | None = None,
    limits: InputLimits | None = None,
    estimates: EstimateSettings | None = None,
) -> RunOutcome:
    """Obtain a stored plan, pass it through the review gate, and execute it.

    ``ctx`` gives the store, catalog, execution options, event listener and backend;
    ``on_planned`` sees the stored plan before the gate (to show it, or to record its IDs).
    """
    planned = await obtain_plan(
        source,
        store=ctx.store,
        catalog=ctx.catalog,
        max_steps=max_steps,
        planner=planner,
        limits=limits,
        estimates=estimates,
        max_items=ctx.options.max_items,
        early_starts=ctx.options.concurrency if runs_here(ctx) else 0,
        recall_early=ctx.options.cache,
    )
    if on_planned is not None:
        on_planned(planned)
    return await execute_planned(planned, ctx, approve=approve, review=review)


async def execute_planned(
    planned: Planned,
    ctx: ExecutionContext,
    *,
    approve: bool = False,
    review: ReviewPolicy = "refuse",
) -> RunOutcome:
    """Steps 2 and 3 of :func:`plan_then_execute` for a plan already stored: the review gate,
    then the execution (the agent loop's executor node calls this after its planner node).
    Steps started early (``planned.early``) are adopted: their tools are not called again."""
    ran = False
    try:
        if planned.ref.status == "needs_review" and not approve and review == "skip":
            return RunOutcome(planned, None)
        plan = planned.planning.plan if planned.planning is not None else {}
        require_approval(
            planned.ref.plan_id,
            planned.ref.status,
            plan,
            approve=approve,
            details=planned.to_json(),
        )
        if planned.early is not None:
            ctx = replace(ctx, catalog=planned.early.adopting(ctx.catalog))
        started, ran = time.perf_counter(), True
        result = await execute_stored_plan(planned.ref.plan_id, ctx, approve=approve)
        return RunOutcome(planned, result, _ms(started))
    finally:
        if planned.early is not None:
            await planned.early.close(ran=ran)


def runs_here(ctx: ExecutionContext) -> bool:
    """Whether ``ctx``'s plans run in this process, where the calls started while the model
    wrote the plan can be adopted (on Temporal a workflow's activities cannot wait for them:
    execution starts when the plan is complete)."""
    return isinstance(backend_of(ctx), InProcessBackend)


async def _early_starts(
    source: FromQuery,
    planner: PlannerContext,
    store: Store,
    catalog: ToolCatalog,
    limit: int,
    recall: bool,
) -> EarlyStarts | None:
    """The early calls of this planning run, when the planner streams a Python plan with
    ``stream_execution``; the finished calls of an interrupted planning of the same request
    recalled."""
    if not (planner.stream_execution and planner.plan_format == "python" and planner.stream):
        return None
    from toolplan.pipeline.early_start import EarlyStarts

    early = EarlyStarts(
        store,
        catalog,
        source.query,
        request_id=source.request_id,
        listener=planner.listener,
        model_name=planner.model_name,
        limit=limit,
        recall_outputs=recall,
    )
    await early.recall()
    return early


async def _reuse(
    source: FromQuery,
    store: Store,
    catalog: ToolCatalog,
    max_steps: int,
    limits: InputLimits,
    estimates: EstimateSettings | None,
    started: float,
) -> Planned | None:
    """A stored plan for the same query (or, parametric, the same text with other values),
    stored anew under a new request; ``None`` when there is none or it no longer validates."""
    found = await asyncio.to_thread(find_reusable, store, source.query, catalog, source.reuse)
    if found is None:
        return None
    record_meta = {
        "reusedFrom": found.source.plan_id,
        "reuse": found.mode,
        "llmCalls": 0,
        "usage": {"inputTokens": 0, "outputTokens": 0},
    }
    if found.values:
        record_meta["reuseValues"] = found.values
    try:
        ref = await asyncio.to_thread(
            submit_plan,
            found.plan,
            store=store,
            catalog=catalog,
            query=source.query,
            max_steps=max_steps,
            meta=source.meta,
            record_meta=record_meta,
            limits=limits,
            estimates=estimates,
            reusable=True,
        )
    except PlanInvalid:
        return None  # the substituted values break the plan: plan the query instead
    return Planned(
        ref,
        None,
        _ms(started),
        reused_from=found.source.plan_id,
        reuse=found.mode,
        tools=tuple(str(step.get("tool")) for step in found.plan.get("steps") or []),
    )


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
