"""What a client does, written once for both clients: :class:`~toolplan.client.Toolplan` (sync)
and :class:`~toolplan.client.AsyncToolplan` (async) mirror each other over :class:`ClientCalls`,
as httpx's ``Client`` and ``AsyncClient`` do over their base: the same names, arguments and
results, each public method a line over the one implementation here.

Reading and validation (:meth:`ClientCalls._validate`, ``_show``...) are sync work: the async
client runs them in a thread. Planning and executions are coroutines: the sync client runs each
in an event loop of its own (:func:`toolplan._blocking.run_blocking`), which the model's HTTP
client allows (:mod:`toolplan.planning.http_client`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolplan._client_parts import ClientParts
from toolplan.config.policies import ExecutionOptions
from toolplan.config.settings import ReuseMode
from toolplan.engine.recorder import EventListener
from toolplan.engine.result import ExecutionResult
from toolplan.errors import ExecutionBusy, NotFound, PlanInvalid
from toolplan.plan_format.plan import Plan, load_plan
from toolplan.plan_format.python_print import said_in_python
from toolplan.runs.context import ExecutionContext
from toolplan.service import operations
from toolplan.service.operations import PlanRef
from toolplan.store.lookup import find_plan
from toolplan.store.protocol import ExecutionRecord, PlanPage, PlanRecord, StepRecord, Store
from toolplan.tools.catalog import ToolCatalog, ToolInfo
from toolplan.validation import Analysis, analyze

if TYPE_CHECKING:
    from toolplan.agent.loop import AgentOutcome
    from toolplan.pipeline.flow import Planned, PlanSource, ReviewPolicy, RunOutcome
    from toolplan.pipeline.planning import PlanningOutcome
    from toolplan.planning.progress import PlanningListener
    from toolplan.service.diagram import DiagramFormat
    from toolplan.tools.sources import ToolSources

__all__ = ["DECLINED_AT_PROMPT", "Asker", "ClientCalls", "Document", "ToolsListener"]

Document = str | Path | bytes | dict[str, Any] | Plan
"""A plan document: a file path, JSON text, a dict or a :class:`~toolplan.plan_format.plan.Plan`."""

Asker = Callable[[StepRecord], bool | None]
"""Asks a person about one step waiting for approval (its ``resolved_parameters`` are the
arguments): ``True`` approves, ``False`` denies, ``None`` leaves it waiting."""

ToolsListener = Callable[[PlanRecord, "ToolSources"], None]
"""Told which recorded tool sources a stored plan runs with (when no tools were chosen)."""

DECLINED_AT_PROMPT = "declined at the prompt"
"""The reason recorded when a person answers no to an inline prompt (``ask``)."""


class ClientCalls(ClientParts):
    """The one implementation of every client call; the public methods are the clients'."""

    # -- reading and validation: sync work -------------------------------------------------

    def _validate(self, plan: Document, *, max_steps: int | None = None) -> Analysis:
        limit = max_steps if max_steps is not None else self.settings.max_steps
        loaded = load_plan(
            plan, limits=self.settings.limits, tools=self.catalog.python_tools, max_steps=limit
        )
        try:
            return analyze(
                loaded, self.catalog, max_steps=limit, max_items=self.settings.execution.max_items
            )
        except PlanInvalid as invalid:
            raise said_in_python(invalid, loaded, self.catalog.python_tools) from None

    def _show(self, identifier: str) -> dict[str, Any]:
        return operations.describe(self.store, identifier)

    def _diagram(self, plan_id: str, *, kind: DiagramFormat = "mermaid") -> str:
        from toolplan.plan_format.ids import require_id
        from toolplan.service.diagram import described_diagram

        require_id(plan_id, "plan")
        return described_diagram(operations.describe(self.store, plan_id), kind=kind)

    def _list_plans(
        self,
        *,
        status: str | None = None,
        request_id: str | None = None,
        limit: int = 20,
        after: str | None = None,
    ) -> PlanPage:
        from toolplan.service.listing import recent_plans

        return recent_plans(
            self.store, status=status, request_id=request_id, limit=limit, after=after
        )

    def _result(self, plan_id: str) -> ExecutionResult | None:
        return operations.stored_result(self.store, plan_id)

    def _list_tools(self, *, tag: str | None = None, name: str | None = None) -> list[ToolInfo]:
        try:
            store: Store | None = self.store
        except NotFound:  # no store yet, and this client may not make one: no statistics
            store = None
        return operations.list_tools(store, self.catalog, tag=tag, name=name)

    def _clear_cache(self, *, tool: str | None = None) -> int:
        return self.store.cache_clear(tool)

    # -- plans -----------------------------------------------------------------------------

    async def _submit(
        self,
        plan: Document,
        *,
        query: str | None = None,
        request_id: str | None = None,
        max_steps: int | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> PlanRef:
        store, catalog = await asyncio.to_thread(lambda: (self.store, self.catalog))
        return await asyncio.to_thread(
            operations.submit_plan,
            plan,
            store=store,
            catalog=catalog,
            query=query,
            request_id=request_id,
            max_steps=max_steps if max_steps is not None else self.settings.max_steps,
            meta=dict(meta or {}),
            limits=self.settings.limits,
            estimates=self.settings.estimates,
            max_items=self.settings.execution.max_items,
        )

    async def _plan(
        self,
        query: str,
        *,
        request_id: str | None = None,
        context: str | None = None,
        meta: Mapping[str, Any] | None = None,
        max_repairs: int | None = None,
        confidence_threshold: float | None = None,
        on_planning: PlanningListener | None = None,
    ) -> PlanningOutcome:
        from toolplan.pipeline.planning import create_plan
        from toolplan.plan_format.limits import check_text

        check_text(query, "the query", self.settings.limits)  # before any model setup
        planner = await asyncio.to_thread(
            self.planner_context,
            max_repairs=max_repairs,
            confidence_threshold=confidence_threshold,
            listener=on_planning,
        )
        return await create_plan(query, planner, request_id=request_id, context=context, meta=meta)

    # -- executions ------------------------------------------------------------------------

    async def _execute(
        self,
        plan_id: str,
        *,
        approve: bool = False,
        resume: bool = False,
        on_event: EventListener | None = None,
        options: ExecutionOptions | None = None,
        on_tools: ToolsListener | None = None,
    ) -> ExecutionResult:
        record = await asyncio.to_thread(find_plan, self.store, plan_id)  # read once, here
        catalog = await asyncio.to_thread(self.catalog_for, record, on_load=on_tools)
        ctx = self.execution_context(catalog=catalog, listener=on_event, options=options)
        return await operations.execute_stored_plan(
            plan_id, ctx, approve=approve, resume=resume, record=record
        )

    async def _enqueue(
        self,
        plan_id: str,
        *,
        approve: bool = False,
        resume: bool = False,
        on_tools: ToolsListener | None = None,
    ) -> ExecutionRecord:
        record = None
        if self.settings.temporal.enabled:
            record = await asyncio.to_thread(find_plan, self.store, plan_id)
            catalog = await asyncio.to_thread(self.catalog_for, record, on_load=on_tools)
            ctx = self.execution_context(catalog=catalog)
        else:
            ctx = await asyncio.to_thread(
                lambda: ExecutionContext(store=self.store, catalog=ToolCatalog())
            )
        return await operations.enqueue_execution(
            plan_id, ctx, approve=approve, resume=resume, record=record
        )

    async def _run(
        self,
        source: PlanSource | Document,
        *,
        query: str | None = None,
        request_id: str | None = None,
        approve: bool = False,
        review: ReviewPolicy = "refuse",
        on_planned: Callable[[Planned], None] | None = None,
        on_event: EventListener | None = None,
        options: ExecutionOptions | None = None,
        max_repairs: int | None = None,
        confidence_threshold: float | None = None,
        on_planning: PlanningListener | None = None,
    ) -> RunOutcome:
        # The pipeline (and the engine and LangChain under it) loads when a plan runs, not when
        # the CLI starts.
        from toolplan.pipeline.flow import FromDocument, FromQuery, plan_then_execute

        if not isinstance(source, FromQuery | FromDocument):
            source = FromDocument(source, query=query, request_id=request_id)
        planner = None
        if isinstance(source, FromQuery):
            from toolplan.plan_format.limits import check_text

            # The query is checked before a model is even set up: bad input costs nothing.
            check_text(source.query, "the query", self.settings.limits)
            planner = await asyncio.to_thread(
                self.planner_context,
                max_repairs=max_repairs,
                confidence_threshold=confidence_threshold,
                listener=on_planning,
            )
        ctx = await asyncio.to_thread(self.execution_context, listener=on_event, options=options)
        return await plan_then_execute(
            source,
            ctx,
            max_steps=self.settings.max_steps,
            planner=planner,
            approve=approve,
            review=review,
            on_planned=on_planned,
            limits=self.settings.limits,
            estimates=self.settings.estimates,
        )

    async def _answer(
        self,
        query: str,
        *,
        request_id: str | None = None,
        max_replans: int = 1,
        approve: bool = False,
        reuse: ReuseMode | None = None,
        on_event: EventListener | None = None,
        on_planned: Callable[[Planned], None] | None = None,
        max_repairs: int | None = None,
        confidence_threshold: float | None = None,
        on_planning: PlanningListener | None = None,
    ) -> AgentOutcome:
        from toolplan.agent.graph import AgentContext
        from toolplan.agent.loop import run_agent
        from toolplan.plan_format.limits import check_text

        check_text(query, "the query", self.settings.limits)
        planner = await asyncio.to_thread(
            self.planner_context,
            max_repairs=max_repairs,
            confidence_threshold=confidence_threshold,
            listener=on_planning,
        )
        ctx = AgentContext(
            planner,
            self.execution_context(listener=on_event),
            approve=approve,
            reuse=reuse if reuse is not None else self.settings.plan_reuse,
            on_planned=on_planned,
        )
        return await run_agent(query, ctx, request_id=request_id, max_replans=max_replans)

    async def _cancel(self, plan_id: str, *, wait: float) -> ExecutionResult:
        store = await asyncio.to_thread(lambda: self.store)
        return await operations.cancel_execution(
            plan_id,
            store,
            wait=wait,
            lease_seconds=self.settings.execution.lease_seconds,
            backend=self.backend,
        )

    # -- approvals -------------------------------------------------------------------------

    async def _approve(
        self,
        plan_id: str,
        step_ids: Sequence[str] | None = None,
        *,
        by: str | None = None,
        enqueue: bool = False,
        on_event: EventListener | None = None,
        options: ExecutionOptions | None = None,
        on_tools: ToolsListener | None = None,
    ) -> ExecutionResult:
        from toolplan.runs.approvals import approve_steps

        store = await asyncio.to_thread(lambda: self.store)
        # The tools it continues with are loaded first: a decision is recorded only where the
        # execution can go on (ToolsUnavailable otherwise, and nothing recorded).
        tools = self.continuing_tools(enqueue=enqueue, on_load=on_tools)
        await asyncio.to_thread(lambda: approve_steps(store, plan_id, step_ids, by=by, tools=tools))
        return await self._continue(
            plan_id, enqueue=enqueue, on_event=on_event, options=options, on_tools=on_tools
        )

    async def _deny(
        self,
        plan_id: str,
        step_id: str,
        reason: str,
        *,
        by: str | None = None,
        enqueue: bool = False,
        on_event: EventListener | None = None,
        options: ExecutionOptions | None = None,
        on_tools: ToolsListener | None = None,
    ) -> ExecutionResult:
        from toolplan.runs.approvals import deny_step

        store = await asyncio.to_thread(lambda: self.store)
        tools = self.continuing_tools(enqueue=enqueue, on_load=on_tools)
        await asyncio.to_thread(
            lambda: deny_step(
                store, plan_id, step_id, reason, by=by, limits=self.settings.limits, tools=tools
            )
        )
        return await self._continue(
            plan_id, enqueue=enqueue, on_event=on_event, options=options, on_tools=on_tools
        )

    async def _ask(
        self,
        result: ExecutionResult,
        ask: Asker,
        *,
        by: str | None = None,
        on_event: EventListener | None = None,
        options: ExecutionOptions | None = None,
    ) -> ExecutionResult:
        from toolplan.runs.approvals import approve_steps, deny_step

        store = await asyncio.to_thread(lambda: self.store)
        while result.status == "waiting":
            approved: list[str] = []
            denied: list[str] = []
            for step in result.waiting:
                answer = await asyncio.to_thread(ask, step)
                if answer is True:
                    approved.append(step.step_id)
                elif answer is False:
                    denied.append(step.step_id)
            if not approved and not denied:
                return result
            if approved:
                await asyncio.to_thread(approve_steps, store, result.plan_id, approved, by=by)
            for step_id in denied:
                await asyncio.to_thread(
                    deny_step, store, result.plan_id, step_id, DECLINED_AT_PROMPT, by=by
                )
            result = await self._continue(
                result.plan_id, enqueue=False, on_event=on_event, options=options
            )
        return result

    async def _continue(
        self,
        plan_id: str,
        *,
        enqueue: bool,
        on_event: EventListener | None = None,
        options: ExecutionOptions | None = None,
        on_tools: ToolsListener | None = None,
    ) -> ExecutionResult:
        """Continue an execution a decision was recorded on. The execution existed, so the
        needs-review gate was passed when it started. A process still running it (its other
        steps) takes the decision in itself: its result is returned as it stands."""
        if enqueue:
            execution = await self._enqueue(plan_id, approve=True, on_tools=on_tools)
            record = await asyncio.to_thread(find_plan, self.store, plan_id)
            return ExecutionResult.from_records(record, execution)
        try:
            return await self._execute(
                plan_id, approve=True, on_event=on_event, options=options, on_tools=on_tools
            )
        except ExecutionBusy:
            found = await asyncio.to_thread(self._result, plan_id)
            assert found is not None
            return found
