"""The one core every entry point wraps: a :class:`Toolplan` client, built once from explicit parts.

In the manner of ``httpx.Client``: the store, the tools, the model, the execution backend and the
settings are given when it is built (or read from the environment by :meth:`Toolplan.from_env`,
the only place an entry point reads it), opened on first use and closed with it. The CLI, the
GraphQL server, workers, batch runs, the ``execute_plan`` meta-tool, the LangGraph graphs and the
module-level functions of :mod:`toolplan` are thin adapters over one client each::

    async with Toolplan.from_env(tools=["blog"]) as tp:
        ref = await tp.submit("plan.json")
        result = await tp.execute(ref.plan_id)
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
from toolplan.errors import ExecutionBusy, NotFound
from toolplan.plan_format.plan import Plan, load_plan
from toolplan.runs.cancel import DEFAULT_CANCEL_WAIT
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
    from toolplan.planning.planner import PlanningOutcome
    from toolplan.planning.progress import PlanningListener
    from toolplan.service.diagram import DiagramFormat
    from toolplan.tools.sources import ToolSources

__all__ = ["DECLINED_AT_PROMPT", "Asker", "Document", "Toolplan"]

Document = str | Path | bytes | dict[str, Any] | Plan
"""A plan document: a file path, JSON text, a dict or a :class:`~toolplan.plan_format.plan.Plan`."""

Asker = Callable[[StepRecord], bool | None]
"""Asks a person about one step waiting for approval (its ``resolved_parameters`` are the
arguments): ``True`` approves, ``False`` denies, ``None`` leaves it waiting."""

DECLINED_AT_PROMPT = "declined at the prompt"
"""The reason recorded when a person answers no to an inline prompt (:meth:`Toolplan.ask`)."""


class Toolplan(ClientParts):
    """Plans, executions and their store, over one set of tools.

    - ``store``: a :class:`~toolplan.store.Store` (left open by :meth:`close`: the caller owns it),
      or a URI the client opens on first use and closes; default ``settings.store_uri``.
    - ``tools``: a :class:`~toolplan.tools.ToolCatalog`, or LangChain tools, plain functions and
      module names; default the settings' tools (``TOOLPLAN_TOOLS``, ``--mcp``, the built-ins).
    - ``model``: a ``provider:model`` string or a LangChain chat model, for :meth:`plan`,
      :meth:`run` of a query and :meth:`answer`; default ``settings.planner.model``.
    - ``backend``: what runs the steps (:class:`~toolplan.runs.context.ExecutionBackend`);
      default the settings' choice (Temporal when an address is set, else this process).
    - ``settings``: default :class:`~toolplan.config.Settings` () with its defaults: the
      environment is read only by :meth:`from_env`.
    - ``worker_id``: the lease owner of this client's executions; a long-lived process keeps one
      so that it can take back a lease its own failed run still holds.
    - ``create_store``: ``False`` to refuse a store URI that names no existing store instead of
      creating it (``toolplan show``, ``list``, ``cancel``).
    - ``rewrites``: which rules may change the model's plan after it is written: ``"format"``
      (only those that change no meaning), ``"all"`` (the heuristic ones too) or ``"none"``;
      default ``settings.planner.rewrites`` (``TOOLPLAN_PLANNER_REWRITES``, ``format``). See
      :mod:`toolplan.planning.rewrites`.
    - ``stream_execution``: start the read-only steps of a Python plan while the model still
      writes it; default ``settings.planner.stream_execution`` (``TOOLPLAN_STREAM_EXECUTION``,
      off). See :mod:`toolplan.pipeline.early_start`.

    Its parts (:attr:`store`, :attr:`catalog`, :attr:`backend`, :meth:`catalog_for`,
    :meth:`execution_context`, :meth:`planner_context`), opened on first use, and :meth:`close`
    come from :class:`~toolplan._client_parts.ClientParts`.
    """

    def __repr__(self) -> str:
        return f"Toolplan(store={self.store_uri!r})"

    # -- plans -----------------------------------------------------------------------------

    def validate(self, plan: Document, *, max_steps: int | None = None) -> Analysis:
        """Validate a plan without storing or running it; return its dependency analysis.
        Raises :class:`~toolplan.errors.PlanInvalid` listing every problem."""
        return analyze(
            load_plan(plan, limits=self.settings.limits, signatures=self.catalog.signatures),
            self.catalog,
            max_steps=max_steps if max_steps is not None else self.settings.max_steps,
            max_items=self.settings.execution.max_items,
        )

    async def submit(
        self,
        plan: Document,
        *,
        query: str | None = None,
        request_id: str | None = None,
        max_steps: int | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> PlanRef:
        """Validate and store a plan (a new request, or a new version of ``request_id``)."""
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

    async def plan(
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
        """Plan ``query`` with the model in one round-trip (plus bounded repairs), validate and
        store it; ``context`` is more for the planner after the query (a replan's);
        ``on_planning`` is told what planning is doing (``planning with MODEL…``, repairs)."""
        from toolplan.plan_format.limits import check_text
        from toolplan.planning.planner import create_plan

        check_text(query, "the query", self.settings.limits)  # before any model setup
        planner = await asyncio.to_thread(
            self.planner_context,
            max_repairs=max_repairs,
            confidence_threshold=confidence_threshold,
            listener=on_planning,
        )
        return await create_plan(query, planner, request_id=request_id, context=context, meta=meta)

    # -- executions ------------------------------------------------------------------------

    async def execute(
        self,
        plan_id: str,
        *,
        approve: bool = False,
        resume: bool = False,
        on_event: EventListener | None = None,
        options: ExecutionOptions | None = None,
        on_tools: Callable[[PlanRecord, ToolSources], None] | None = None,
    ) -> ExecutionResult:
        """Run a stored plan, or resume it after a crash; a finished plan returns its stored
        result and calls no tool. A ``cancelled`` one too, unless ``resume``: then its finished
        steps are kept and the rest run. A plan stored as ``needs_review`` is refused unless
        ``approve``. The plan record is read once, here."""
        record = await asyncio.to_thread(find_plan, self.store, plan_id)
        catalog = await asyncio.to_thread(self.catalog_for, record, on_load=on_tools)
        ctx = self.execution_context(catalog=catalog, listener=on_event, options=options)
        return await operations.execute_stored_plan(
            plan_id, ctx, approve=approve, resume=resume, record=record
        )

    # -- approvals -------------------------------------------------------------------------

    async def approve(
        self,
        plan_id: str,
        step_ids: Sequence[str] | None = None,
        *,
        by: str | None = None,
        enqueue: bool = False,
        on_event: EventListener | None = None,
        options: ExecutionOptions | None = None,
        on_tools: Callable[[PlanRecord, ToolSources], None] | None = None,
    ) -> ExecutionResult:
        """Approve steps waiting for approval (every waiting step when ``step_ids`` is empty),
        each for exactly the arguments it waits with, recorded with the time and the decider
        ``by`` (default the OS user); then continue the execution in this process, as
        :meth:`execute` does, or hand it to workers with ``enqueue``. A step that is not
        waiting, or a finished plan, changes nothing: :class:`~toolplan.errors.NotWaiting`;
        nor does a plan this client cannot continue (its tools do not load here:
        :class:`~toolplan.errors.ToolsUnavailable`), which is refused before anything is
        recorded."""
        from toolplan.runs.approvals import approve_steps

        store = await asyncio.to_thread(lambda: self.store)
        tools = self.continuing_tools(enqueue=enqueue, on_load=on_tools)
        await asyncio.to_thread(lambda: approve_steps(store, plan_id, step_ids, by=by, tools=tools))
        return await self._continue(
            plan_id, enqueue=enqueue, on_event=on_event, options=options, on_tools=on_tools
        )

    async def deny(
        self,
        plan_id: str,
        step_id: str,
        reason: str,
        *,
        by: str | None = None,
        enqueue: bool = False,
        on_event: EventListener | None = None,
        options: ExecutionOptions | None = None,
        on_tools: Callable[[PlanRecord, ToolSources], None] | None = None,
    ) -> ExecutionResult:
        """Deny one step waiting for approval, with ``reason``: it becomes ``denied`` and its
        dependents are skipped as the execution continues (here, or on workers with
        ``enqueue``); recorded with the time and the decider ``by`` (default the OS user)."""
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

    async def ask(
        self,
        result: ExecutionResult,
        ask: Asker,
        *,
        by: str | None = None,
        on_event: EventListener | None = None,
        options: ExecutionOptions | None = None,
    ) -> ExecutionResult:
        """While ``result`` waits for approval, ask about each waiting step (``ask(step)``:
        ``True`` approves it, ``False`` denies it, ``None`` leaves it waiting), record the
        answers and continue; return the result once nothing waits or nothing was decided."""
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
        on_tools: Callable[[PlanRecord, ToolSources], None] | None = None,
    ) -> ExecutionResult:
        """Continue an execution a decision was recorded on. The execution existed, so the
        needs-review gate was passed when it started. A process still running it (its other
        steps) takes the decision in itself: its result is returned as it stands."""
        if enqueue:
            execution = await self.enqueue(plan_id, approve=True, on_tools=on_tools)
            record = await asyncio.to_thread(find_plan, self.store, plan_id)
            return ExecutionResult.from_records(record, execution)
        try:
            return await self.execute(
                plan_id, approve=True, on_event=on_event, options=options, on_tools=on_tools
            )
        except ExecutionBusy:
            found = await asyncio.to_thread(self.result, plan_id)
            assert found is not None
            return found

    async def enqueue(
        self,
        plan_id: str,
        *,
        approve: bool = False,
        resume: bool = False,
        on_tools: Callable[[PlanRecord, ToolSources], None] | None = None,
    ) -> ExecutionRecord:
        """Hand a stored plan to workers (``toolplan worker`` processes, or Temporal's) and
        return its execution record at once."""
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

    async def run(
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
        """Obtain a stored plan, pass it through the review gate and execute it.

        ``source`` is a plan document (validated and stored, with ``query``), or a
        :class:`~toolplan.pipeline.flow.FromQuery` / :class:`~toolplan.pipeline.flow.FromDocument`.
        ``on_planned`` sees the stored plan before it runs."""
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

    async def answer(
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
        """Plan ``query``, execute the plan and answer it: the model reads the results and
        answers, or asks for a new plan (at most ``max_replans`` times), stored as a new version
        of the same request. The first plan may reuse a stored one (``reuse``, default
        ``settings.plan_reuse``)."""
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

    async def cancel(self, plan_id: str, *, wait: float = DEFAULT_CANCEL_WAIT) -> ExecutionResult:
        """Cancel the execution of a stored plan wherever it runs; return it as it then stands
        (idempotent; a running one is waited for up to ``wait`` seconds)."""
        store = await asyncio.to_thread(lambda: self.store)
        return await operations.cancel_execution(
            plan_id,
            store,
            wait=wait,
            lease_seconds=self.settings.execution.lease_seconds,
            backend=self.backend,
        )

    # -- reading ---------------------------------------------------------------------------

    def show(self, identifier: str) -> dict[str, Any]:
        """A plan with its execution, or a request with its plans and answers
        (``toolplan show --json``)."""
        return operations.describe(self.store, identifier)

    def diagram(self, plan_id: str, *, kind: DiagramFormat = "mermaid") -> str:
        """A stored plan's DAG with each step's state, as Mermaid or Graphviz DOT text
        (``toolplan show PLAN_ID --graph mermaid|dot``)."""
        from toolplan.plan_format.ids import require_id
        from toolplan.service.diagram import described_diagram

        require_id(plan_id, "plan")
        return described_diagram(operations.describe(self.store, plan_id), kind=kind)

    def list_plans(
        self,
        *,
        status: str | None = None,
        request_id: str | None = None,
        limit: int = 20,
        after: str | None = None,
    ) -> PlanPage:
        """Stored plans newest first, with their execution's status (the plan's when never
        executed): only ``status``'s, only ``request_id``'s versions, at most ``limit``, from
        after the cursor ``after`` (the ``next_cursor`` of the page before) (``toolplan
        list``)."""
        from toolplan.service.listing import recent_plans

        return recent_plans(
            self.store, status=status, request_id=request_id, limit=limit, after=after
        )

    def result(self, plan_id: str) -> ExecutionResult | None:
        """The stored execution result of a plan, or ``None`` if it never started."""
        return operations.stored_result(self.store, plan_id)

    def tools(self, *, tag: str | None = None, name: str | None = None) -> list[ToolInfo]:
        """Every tool (or those tagged ``tag``, or the one called ``name``) with its observed
        statistics from past executions (none when there is no store yet and this client may
        not make one)."""
        try:
            store: Store | None = self.store
        except NotFound:
            store = None
        return operations.list_tools(store, self.catalog, tag=tag, name=name)

    def clear_cache(self, *, tool: str | None = None) -> int:
        """Empty the result cache of read-only tools (every tool's, or ``tool``'s); return how
        many cached results were removed."""
        return self.store.cache_clear(tool)
