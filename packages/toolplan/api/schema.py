"""The GraphQL schema: resolvers that call the same core functions as the CLI.

Store calls are synchronous, so resolvers run them in a worker thread and the event loop keeps
serving other requests and the executions running in the background.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import strawberry
from graphql import GraphQLError
from strawberry.scalars import JSON
from strawberry.types.execution import ExecutionContext as StrawberryExecutionContext

from toolplan.api.context import ApiContext
from toolplan.api.graphql_types import (
    ExecutionType,
    PlanListType,
    PlanningEventType,
    PlanRefType,
    PlanType,
    QueryRunType,
    RequestType,
    StepEventType,
    ToolType,
)
from toolplan.api.request_limits import limit_extensions
from toolplan.api.settings import ApiSettings
from toolplan.errors import ExecutionBusy, InvalidInput, PlanInvalid, ValidationIssue
from toolplan.plan_format.ids import require_id
from toolplan.plan_format.limits import check_text
from toolplan.runs import approvals
from toolplan.runs.events import watch_step_events
from toolplan.service import operations
from toolplan.service.listing import DEFAULT_LIMIT, page_json, recent_plans

__all__ = ["Mutation", "Query", "Subscription", "build_schema"]

Info = strawberry.Info[ApiContext, None]

DEFAULT_EVENTS_WAIT = 30.0
"""Seconds ``stepEvents`` waits for a plan not executed yet to start."""
MAX_EVENTS_WAIT = 3600.0
_STORE_POLL_SECONDS = 0.25


@strawberry.type
class Query:
    """Read stored plans, requests, executions and the tool catalog."""

    @strawberry.field(description="A stored plan with its execution; null if unknown.")
    async def plan(self, info: Info, plan_id: str) -> PlanType | None:
        require_id(plan_id, "plan")
        # Without items: a step's items field reads them a page at a time.
        data = await asyncio.to_thread(
            operations.describe, info.context.store, plan_id, items=False
        )
        return PlanType.from_json(data, items_read=False)

    @strawberry.field(description="A request with its plan versions; null if unknown.")
    async def request(self, info: Info, request_id: str) -> RequestType | None:
        require_id(request_id, "req")
        data = await asyncio.to_thread(
            operations.describe, info.context.store, request_id, items=False
        )
        return RequestType.from_json(data, items_read=False)

    @strawberry.field(
        description="The stored execution of a plan (progress while it runs); null if the plan "
        "is unknown (with a NOT_FOUND error) or was never executed (without error)."
    )
    async def execution(self, info: Info, plan_id: str) -> ExecutionType | None:
        require_id(plan_id, "plan")
        result = await asyncio.to_thread(
            operations.stored_result, info.context.store, plan_id, items=False
        )
        return ExecutionType.from_json(result.to_json(), items_read=False) if result else None

    @strawberry.field(
        description="Stored plans, newest first, with their status (the execution's, or the "
        "plan's when never executed): only status's, only requestId's versions; first (1-500, "
        "default 20) per page, after the cursor of the page before (its nextCursor)."
    )
    async def plans(
        self,
        info: Info,
        status: str | None = None,
        request_id: str | None = None,
        first: int = DEFAULT_LIMIT,
        after: str | None = None,
    ) -> PlanListType:
        page = await asyncio.to_thread(
            recent_plans,
            info.context.store,
            status=status,
            request_id=request_id,
            limit=first,
            after=after,
        )
        return PlanListType.from_json(page_json(page))

    @strawberry.field(description="The tools plans may use, with observed statistics.")
    async def tools(self, info: Info, tag: str | None = None) -> list[ToolType]:
        context = info.context
        infos = await asyncio.to_thread(
            operations.list_tools, context.store, context.catalog, tag=tag
        )
        return [ToolType.from_info(i) for i in infos]


@strawberry.type
class Mutation:
    """Plan, store and execute."""

    @strawberry.mutation(
        description="Plan a query with the LLM, validate and store it. With requestId, the plan "
        "is a new version of that request; a well-formed requestId (req_<seconds>_<id>) that "
        "does not exist yet is the client's own: the request is created under it."
    )
    async def create_plan_with_request_id(
        self, info: Info, query: str, request_id: str | None = None
    ) -> PlanRefType:
        from toolplan.pipeline.planning import create_plan

        check_text(query, "the query", info.context.settings.limits)
        if request_id is not None:
            require_id(request_id, "req")
        planner = await info.context.planner_telling(request_id)
        try:
            outcome = await create_plan(query, planner, request_id=request_id, new_request=True)
        finally:
            await info.context.planned(request_id, planner)
        return PlanRefType.from_ref(outcome.ref)

    @strawberry.mutation(
        description="Plan a query with the LLM, execute it and answer from the results; a failed "
        "plan may be replanned (at most maxReplans times), as a new version of the request. "
        "A well-formed requestId (req_<seconds>_<id>) that does not exist yet is the client's "
        "own: the request is created under it, and planningEvents(requestId) follows the "
        "planning."
    )
    async def run_query(
        self, info: Info, query: str, request_id: str | None = None, max_replans: int = 1
    ) -> QueryRunType:
        from toolplan.agent.graph import AgentContext
        from toolplan.agent.loop import run_agent

        check_text(query, "the query", info.context.settings.limits)
        if request_id is not None:
            require_id(request_id, "req")
        planner = await info.context.planner_telling(request_id)
        ctx = AgentContext(
            planner, info.context.execution_context(), reuse=info.context.settings.plan_reuse
        )
        try:
            outcome = await run_agent(
                query, ctx, request_id=request_id, max_replans=max_replans, new_request=True
            )
        finally:
            await info.context.planned(request_id, planner)
        return QueryRunType.from_json(outcome.to_json())

    @strawberry.mutation(
        description="Validate a plan (canonical or seed-002 JSON object) and store it; nothing "
        "runs. With requestId, it becomes a new version of that request."
    )
    async def submit_plan(
        self, info: Info, plan: JSON, query: str | None = None, request_id: str | None = None
    ) -> PlanRefType:
        if request_id is not None:
            require_id(request_id, "req")
        context = info.context
        if not isinstance(plan, dict):
            # Only a JSON object is a plan here: a string is never read as a file path.
            raise PlanInvalid(
                [
                    ValidationIssue(
                        "shape", f"a plan must be a JSON object, got {type(plan).__name__}"
                    )
                ]
            )
        # Limits, validation and storing in a worker thread: a large plan costs CPU, and the
        # event loop must keep serving other requests meanwhile.
        ref = await asyncio.to_thread(
            operations.submit_plan,
            plan,
            store=context.store,
            catalog=context.catalog,
            query=query,
            request_id=request_id,
            max_steps=context.settings.max_steps,
            # The operator's ceiling on items, as the CLI and the run apply it.
            max_items=context.settings.execution.max_items,
            limits=context.settings.limits,
            estimates=context.settings.estimates,
        )
        return PlanRefType.from_ref(ref)

    @strawberry.mutation(
        description="Run (or resume) a stored plan in the server. wait: false returns once the "
        "first step is running; poll execution(planId) or subscribe to stepEvents. approve: "
        "true runs a plan stored as needs_review. resume: true continues a cancelled execution "
        "(its finished steps are kept). noCache: true calls every tool (the result cache of "
        "read-only tools is neither read nor written), like the CLI's --no-cache. approveAll: "
        "true lets every step that would wait for approval through, and records a decision on "
        "each (by, at, via: approveAll); by names who approves (default: api)."
    )
    async def execute_plan(
        self,
        info: Info,
        plan_id: str,
        wait: bool | None = True,
        approve: bool | None = False,
        resume: bool | None = False,
        no_cache: bool | None = False,
        approve_all: bool | None = False,
        by: str | None = None,
    ) -> ExecutionType:
        require_id(plan_id, "plan")
        result = await info.context.runs.execute(
            plan_id,
            wait=wait is not False,
            approve=bool(approve),
            resume=bool(resume),
            no_cache=bool(no_cache),
            approve_all=bool(approve_all),
            approver=_decider(by) if approve_all else None,
        )
        return ExecutionType.from_json(result.to_json())

    @strawberry.mutation(
        description="Approve steps waiting for approval (every waiting step when stepIds is "
        "null; an empty list is BAD_USER_INPUT), each for exactly the arguments it waits with "
        "(pendingArguments), "
        "recorded with the time and the decider (by); then continue the execution in the "
        "server (wait: false returns once it runs again). A step not waiting, or a finished "
        "plan, changes nothing: NOT_WAITING; nor does a plan the server's tools cannot run "
        "(BAD_USER_INPUT): a decision is recorded only where it can be acted on."
    )
    async def approve_step(
        self,
        info: Info,
        plan_id: str,
        step_ids: list[str] | None = None,
        by: str | None = None,
        wait: bool | None = True,
    ) -> ExecutionType:
        require_id(plan_id, "plan")
        context = info.context
        decider = _decider(by)
        await asyncio.to_thread(
            lambda: approvals.approve_steps(
                context.store, plan_id, step_ids, by=decider, tools=_server_tools(info)
            )
        )
        return await _continue_decided(info, plan_id, wait=wait is not False)

    @strawberry.mutation(
        description="Deny one step waiting for approval, with a reason (recorded with the time "
        "and the decider, by): it becomes denied, its dependents are skipped, and the execution "
        "continues in the server. A step not waiting, or a finished plan: NOT_WAITING; a plan "
        "the server's tools cannot run: BAD_USER_INPUT (nothing recorded)."
    )
    async def deny_step(
        self,
        info: Info,
        plan_id: str,
        step_id: str,
        reason: str,
        by: str | None = None,
        wait: bool | None = True,
    ) -> ExecutionType:
        require_id(plan_id, "plan")
        if not reason.strip():
            raise InvalidInput(
                'denyStep needs a reason (the agent\'s replan reads it): reason: "..."'
            )
        context = info.context
        decider = _decider(by)
        await asyncio.to_thread(
            lambda: approvals.deny_step(
                context.store,
                plan_id,
                step_id,
                reason,
                by=decider,
                limits=context.settings.limits,
                tools=_server_tools(info),
            )
        )
        return await _continue_decided(info, plan_id, wait=wait is not False)

    @strawberry.mutation(
        description="Cancel a plan's execution wherever it runs (this server, a worker, a CLI "
        "process): running tool calls are cancelled, they and the steps not started are "
        "recorded as cancelled, finished steps are kept. Idempotent; a finished execution is "
        "returned unchanged; a plan never executed is recorded cancelled. Waits up to 10 s for "
        "a running execution to end (status still running, with cancelRequestedAt, if not)."
    )
    async def cancel_execution(self, info: Info, plan_id: str) -> ExecutionType:
        require_id(plan_id, "plan")
        result = await info.context.client.cancel(plan_id)
        return ExecutionType.from_json(result.to_json())


@strawberry.type
class Subscription:
    """Live step events (over SSE: POST /graphql with ``Accept: text/event-stream``)."""

    @strawberry.subscription(
        description="The step events of the plan's execution: those so far, then live ones; "
        "completes when the execution ends. Runs in this server are followed as they happen; "
        "runs in other processes (workers) through their stored step records. A plan not "
        "executed yet is waited for, up to waitSeconds (default 30; then it completes with no "
        "event), so a client may subscribe before it calls executePlan. Completes at once for a "
        "plan finished elsewhere: read execution(planId) instead."
    )
    async def step_events(
        self, info: Info, plan_id: str, wait_seconds: float | None = DEFAULT_EVENTS_WAIT
    ) -> AsyncGenerator[StepEventType, None]:
        require_id(plan_id, "plan")
        # Unknown plans are an error, not an empty stream.
        stored = await asyncio.to_thread(operations.stored_result, info.context.store, plan_id)
        events = info.context.events
        if stored is None and not events.knows(plan_id):
            await _until_started(info, plan_id, max(0.0, min(wait_seconds or 0.0, MAX_EVENTS_WAIT)))
        source = (
            events.subscribe(plan_id)
            if events.knows(plan_id)
            else watch_step_events(info.context.store, plan_id)
        )
        async for event in source:
            yield StepEventType.from_event(event)

    @strawberry.subscription(
        description="What the planner does while the model plans the query of runQuery or "
        "createPlanWithRequestId called with this (client's own) requestId: planning, each step "
        "as the model writes it, repairs, answers; completes when that call returns. Subscribe "
        "first: a request not planning yet is waited for, up to waitSeconds (default 30; then "
        "it completes with no event). Events of a planning that ended recently are replayed."
    )
    async def planning_events(
        self, info: Info, request_id: str, wait_seconds: float | None = DEFAULT_EVENTS_WAIT
    ) -> AsyncGenerator[PlanningEventType, None]:
        require_id(request_id, "req")
        hub = info.context.planning
        if not hub.knows(request_id):
            await hub.wait_opened(request_id, max(0.0, min(wait_seconds or 0.0, MAX_EVENTS_WAIT)))
        async for news in hub.subscribe(request_id):
            yield PlanningEventType.from_news(news)


def _server_tools(info: Info) -> approvals.ToolsFor:
    """The tools the server continues a decided execution with: its own, against which a plan
    is checked before a decision on it is recorded (a decision it cannot act on is refused)."""
    catalog = info.context.catalog
    return lambda _record: catalog


async def _continue_decided(info: Info, plan_id: str, *, wait: bool) -> ExecutionType:
    """Continue an execution a decision was just recorded on, in the server (it passed the
    needs-review gate when it started). Another process still running its other steps takes the
    decision in itself: the execution is returned as it stands."""
    try:
        result = await info.context.runs.execute(plan_id, wait=wait, approve=True)
    except ExecutionBusy:
        found = await asyncio.to_thread(operations.stored_result, info.context.store, plan_id)
        assert found is not None
        result = found
    return ExecutionType.from_json(result.to_json())


async def _until_started(info: Info, plan_id: str, timeout: float) -> None:
    """Until a run of ``plan_id`` starts in this server or appears in the store (queued for, or
    run by, a worker), or ``timeout`` seconds pass."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            return
        if await info.context.events.wait_opened(plan_id, min(remaining, _STORE_POLL_SECONDS)):
            return
        if await asyncio.to_thread(info.context.store.get_execution, plan_id) is not None:
            return


class _Schema(strawberry.Schema):
    def process_errors(
        self,
        errors: list[GraphQLError],
        execution_context: StrawberryExecutionContext | None = None,
    ) -> None:
        """Do not log here: :func:`toolplan.api.errors.present_errors` logs each error once, with
        a traceback only for unexpected ones (strawberry would log expected ones too)."""


_MAX_DECIDER = 200
"""The longest ``by`` a decision stores (the limit :mod:`toolplan.runs.approvals` holds
``--by`` to), checked here so the message names the API's argument."""


def _decider(by: str | None) -> str:
    """The decider of an API decision: ``by``, or ``"api"`` when it is not given."""
    decider = (by or "").strip() or "api"
    if len(decider) > _MAX_DECIDER:
        raise InvalidInput(
            f"the by argument is {len(decider)} characters long; give at most {_MAX_DECIDER}"
        )
    return decider


def build_schema(settings: ApiSettings | None = None) -> strawberry.Schema:
    """The schema with the document limits of ``settings``."""
    extensions: list[Any] = limit_extensions(settings or ApiSettings())
    return _Schema(query=Query, mutation=Mutation, subscription=Subscription, extensions=extensions)
