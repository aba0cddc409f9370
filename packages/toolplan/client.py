"""The one core every entry point wraps: a client built once from explicit parts, in two forms
that mirror each other as httpx's ``Client`` and ``AsyncClient`` do: :class:`Toolplan` (sync)
and :class:`AsyncToolplan` (async), with the same methods, arguments and results.

The store, the tools, the model, the execution backend and the settings are given when it is
built (or read from the environment by ``from_env``, the only place an entry point reads it),
opened on first use and closed with it. The CLI, the GraphQL server, workers, batch runs, the
``execute_plan`` meta-tool, the LangGraph graphs and the module-level functions of
:mod:`toolplan` are thin adapters over one client each::

    with Toolplan.from_env(tools=["blog"]) as tp:
        ref = tp.submit("plan.json")
        result = tp.execute(ref.plan_id)

    async with AsyncToolplan.from_env(tools=["blog"]) as tp:
        ref = await tp.submit("plan.json")
        result = await tp.execute(ref.plan_id)

What each call does is written once, in :class:`~toolplan._client_calls.ClientCalls`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from toolplan._blocking import run_blocking
from toolplan._client_calls import DECLINED_AT_PROMPT, Asker, ClientCalls, Document, ToolsListener
from toolplan.config.policies import ExecutionOptions
from toolplan.config.settings import ReuseMode
from toolplan.engine.recorder import EventListener
from toolplan.engine.result import ExecutionResult
from toolplan.runs.cancel import DEFAULT_CANCEL_WAIT
from toolplan.service.operations import PlanRef
from toolplan.store.protocol import ExecutionRecord, PlanPage
from toolplan.tools.catalog import ToolInfo
from toolplan.validation import Analysis

if TYPE_CHECKING:
    from toolplan.agent.loop import AgentOutcome
    from toolplan.pipeline.flow import Planned, PlanSource, ReviewPolicy, RunOutcome
    from toolplan.pipeline.planning import PlanningOutcome
    from toolplan.planning.progress import PlanningListener
    from toolplan.service.diagram import DiagramFormat

__all__ = ["DECLINED_AT_PROMPT", "Asker", "AsyncToolplan", "Document", "Toolplan"]


class Toolplan(ClientCalls):
    """Plans, executions and their store, over one set of tools: the sync client.

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
      (those that change no meaning) or ``"none"``; default ``settings.planner.rewrites``
      (``TOOLPLAN_PLANNER_REWRITES``, ``format``). ``"all"``, which turned on heuristic rules
      since removed, is read as ``"format"`` and warns (:class:`~toolplan.errors.SettingRemoved`).
      See :mod:`toolplan.planning.rewrites`.
    - ``stream_execution``: start the read-only steps of a Python plan while the model still
      writes it; default ``settings.planner.stream_execution`` (``TOOLPLAN_STREAM_EXECUTION``,
      off). See :mod:`toolplan.pipeline.early_start`.

    Its parts (:attr:`store`, :attr:`catalog`, :attr:`backend`, :meth:`catalog_for`,
    :meth:`execution_context`, :meth:`planner_context`), opened on first use, and :meth:`close`
    come from :class:`~toolplan._client_parts.ClientParts`. Each call runs to its end before it
    returns (planning and executions in an event loop of their own, in a worker thread when this
    thread runs one already); :class:`AsyncToolplan` is the same client with ``await``.
    """

    def __repr__(self) -> str:
        return f"Toolplan(store={self.store_uri!r})"

    # -- plans --------------------------------------------------------------------------------

    def validate(self, plan: Document, *, max_steps: int | None = None) -> Analysis:
        """Validate a plan without storing or running it; return its dependency analysis.
        Raises :class:`~toolplan.errors.PlanInvalid` listing every problem."""
        return self._validate(plan, max_steps=max_steps)

    def submit(
        self,
        plan: Document,
        *,
        query: str | None = None,
        request_id: str | None = None,
        max_steps: int | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> PlanRef:
        """Validate and store a plan (a new request, or a new version of ``request_id``); nothing
        runs. ``meta``: labels stored with it."""
        return run_blocking(
            self._submit(plan, query=query, request_id=request_id, max_steps=max_steps, meta=meta)
        )

    def plan(
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
        ``on_planning`` is told what planning is doing (``planning with MODEL…``, repairs).
        ``max_repairs`` and ``confidence_threshold`` default to the settings'."""
        return run_blocking(
            self._plan(
                query,
                request_id=request_id,
                context=context,
                meta=meta,
                max_repairs=max_repairs,
                confidence_threshold=confidence_threshold,
                on_planning=on_planning,
            )
        )

    # -- executions ---------------------------------------------------------------------------

    def execute(
        self,
        plan_id: str,
        *,
        approve: bool = False,
        resume: bool = False,
        on_event: EventListener | None = None,
        options: ExecutionOptions | None = None,
        on_tools: ToolsListener | None = None,
    ) -> ExecutionResult:
        """Run a stored plan, or resume it after a crash; a finished plan returns its stored
        result and calls no tool. A ``cancelled`` one too, unless ``resume``: then its finished
        steps are kept and the rest run. A plan stored as ``needs_review`` is refused unless
        ``approve``. The plan record is read once, here."""
        return run_blocking(
            self._execute(
                plan_id,
                approve=approve,
                resume=resume,
                on_event=on_event,
                options=options,
                on_tools=on_tools,
            )
        )

    def enqueue(
        self,
        plan_id: str,
        *,
        approve: bool = False,
        resume: bool = False,
        on_tools: ToolsListener | None = None,
    ) -> ExecutionRecord:
        """Hand a stored plan to workers (``toolplan worker`` processes, or Temporal's) and
        return its execution record at once."""
        return run_blocking(
            self._enqueue(plan_id, approve=approve, resume=resume, on_tools=on_tools)
        )

    def run(
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
        ``on_planned`` sees the stored plan before it runs. The outcome has the execution's
        ``status``, ``steps``, ``outputs`` and ``plan_id`` (and the whole ``result``)."""
        return run_blocking(
            self._run(
                source,
                query=query,
                request_id=request_id,
                approve=approve,
                review=review,
                on_planned=on_planned,
                on_event=on_event,
                options=options,
                max_repairs=max_repairs,
                confidence_threshold=confidence_threshold,
                on_planning=on_planning,
            )
        )

    def answer(
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
        ``settings.plan_reuse``). The outcome has the ``answer``, and the last execution's
        ``status``, ``steps``, ``outputs`` and ``plan_id``."""
        return run_blocking(
            self._answer(
                query,
                request_id=request_id,
                max_replans=max_replans,
                approve=approve,
                reuse=reuse,
                on_event=on_event,
                on_planned=on_planned,
                max_repairs=max_repairs,
                confidence_threshold=confidence_threshold,
                on_planning=on_planning,
            )
        )

    # -- approvals ----------------------------------------------------------------------------

    def approve(
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
        """Approve steps waiting for approval (every waiting step when ``step_ids`` is empty),
        each for exactly the arguments it waits with, recorded with the time and the decider
        ``by`` (default the OS user); then continue the execution in this process, as
        ``execute`` does, or hand it to workers with ``enqueue``. A step that is not waiting, or
        a finished plan, changes nothing: :class:`~toolplan.errors.NotWaiting`."""
        return run_blocking(
            self._approve(
                plan_id,
                step_ids,
                by=by,
                enqueue=enqueue,
                on_event=on_event,
                options=options,
                on_tools=on_tools,
            )
        )

    def deny(
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
        """Deny one step waiting for approval, with ``reason``: it becomes ``denied`` and its
        dependents are skipped as the execution continues (here, or on workers with
        ``enqueue``); recorded with the time and the decider ``by`` (default the OS user)."""
        return run_blocking(
            self._deny(
                plan_id,
                step_id,
                reason,
                by=by,
                enqueue=enqueue,
                on_event=on_event,
                options=options,
                on_tools=on_tools,
            )
        )

    def ask(
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
        return run_blocking(self._ask(result, ask, by=by, on_event=on_event, options=options))

    def cancel(self, plan_id: str, *, wait: float = DEFAULT_CANCEL_WAIT) -> ExecutionResult:
        """Cancel the execution of a stored plan wherever it runs; return it as it then stands
        (idempotent; a running one is waited for up to ``wait`` seconds)."""
        return run_blocking(self._cancel(plan_id, wait=wait))

    # -- reading ------------------------------------------------------------------------------

    def show(self, identifier: str) -> dict[str, Any]:
        """A plan with its execution, or a request with its plans and answers
        (``toolplan show --json``)."""
        return self._show(identifier)

    def diagram(self, plan_id: str, *, kind: DiagramFormat = "mermaid") -> str:
        """A stored plan's DAG with each step's state, as Mermaid or Graphviz DOT text
        (``toolplan show PLAN_ID --graph mermaid|dot``)."""
        return self._diagram(plan_id, kind=kind)

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
        after the cursor ``after`` (the ``next_cursor`` of the page before) (``toolplan list``)."""
        return self._list_plans(status=status, request_id=request_id, limit=limit, after=after)

    def result(self, plan_id: str) -> ExecutionResult | None:
        """The stored execution result of a plan, or ``None`` if it never started."""
        return self._result(plan_id)

    def tools(self, *, tag: str | None = None, name: str | None = None) -> list[ToolInfo]:
        """Every tool (or those tagged ``tag``, or the one called ``name``) with its observed
        statistics from past executions (none when there is no store yet and this client may
        not make one)."""
        return self._list_tools(tag=tag, name=name)

    def clear_cache(self, *, tool: str | None = None) -> int:
        """Empty the result cache of read-only tools (every tool's, or ``tool``'s); return how
        many cached results were removed."""
        return self._clear_cache(tool=tool)


class AsyncToolplan(ClientCalls):
    """The async client: :class:`Toolplan`'s methods, arguments and results, each a coroutine.

    Built from the same parts, read from the environment by :meth:`from_env` alike; ``async
    with`` closes what it opened. Reading and validation run in a worker thread, off the event
    loop.
    """

    def __repr__(self) -> str:
        return f"AsyncToolplan(store={self.store_uri!r})"

    # -- plans --------------------------------------------------------------------------------

    async def validate(self, plan: Document, *, max_steps: int | None = None) -> Analysis:
        """Validate a plan without storing or running it; return its dependency analysis.
        Raises :class:`~toolplan.errors.PlanInvalid` listing every problem."""
        return await asyncio.to_thread(lambda: self._validate(plan, max_steps=max_steps))

    async def submit(
        self,
        plan: Document,
        *,
        query: str | None = None,
        request_id: str | None = None,
        max_steps: int | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> PlanRef:
        """Validate and store a plan (a new request, or a new version of ``request_id``); nothing
        runs. ``meta``: labels stored with it."""
        return await self._submit(
            plan, query=query, request_id=request_id, max_steps=max_steps, meta=meta
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
        ``on_planning`` is told what planning is doing (``planning with MODEL…``, repairs).
        ``max_repairs`` and ``confidence_threshold`` default to the settings'."""
        return await self._plan(
            query,
            request_id=request_id,
            context=context,
            meta=meta,
            max_repairs=max_repairs,
            confidence_threshold=confidence_threshold,
            on_planning=on_planning,
        )

    # -- executions ---------------------------------------------------------------------------

    async def execute(
        self,
        plan_id: str,
        *,
        approve: bool = False,
        resume: bool = False,
        on_event: EventListener | None = None,
        options: ExecutionOptions | None = None,
        on_tools: ToolsListener | None = None,
    ) -> ExecutionResult:
        """Run a stored plan, or resume it after a crash; a finished plan returns its stored
        result and calls no tool. A ``cancelled`` one too, unless ``resume``: then its finished
        steps are kept and the rest run. A plan stored as ``needs_review`` is refused unless
        ``approve``. The plan record is read once, here."""
        return await self._execute(
            plan_id,
            approve=approve,
            resume=resume,
            on_event=on_event,
            options=options,
            on_tools=on_tools,
        )

    async def enqueue(
        self,
        plan_id: str,
        *,
        approve: bool = False,
        resume: bool = False,
        on_tools: ToolsListener | None = None,
    ) -> ExecutionRecord:
        """Hand a stored plan to workers (``toolplan worker`` processes, or Temporal's) and
        return its execution record at once."""
        return await self._enqueue(plan_id, approve=approve, resume=resume, on_tools=on_tools)

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
        ``on_planned`` sees the stored plan before it runs. The outcome has the execution's
        ``status``, ``steps``, ``outputs`` and ``plan_id`` (and the whole ``result``)."""
        return await self._run(
            source,
            query=query,
            request_id=request_id,
            approve=approve,
            review=review,
            on_planned=on_planned,
            on_event=on_event,
            options=options,
            max_repairs=max_repairs,
            confidence_threshold=confidence_threshold,
            on_planning=on_planning,
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
        ``settings.plan_reuse``). The outcome has the ``answer``, and the last execution's
        ``status``, ``steps``, ``outputs`` and ``plan_id``."""
        return await self._answer(
            query,
            request_id=request_id,
            max_replans=max_replans,
            approve=approve,
            reuse=reuse,
            on_event=on_event,
            on_planned=on_planned,
            max_repairs=max_repairs,
            confidence_threshold=confidence_threshold,
            on_planning=on_planning,
        )

    # -- approvals ----------------------------------------------------------------------------

    async def approve(
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
        """Approve steps waiting for approval (every waiting step when ``step_ids`` is empty),
        each for exactly the arguments it waits with, recorded with the time and the decider
        ``by`` (default the OS user); then continue the execution in this process, as
        ``execute`` does, or hand it to workers with ``enqueue``. A step that is not waiting, or
        a finished plan, changes nothing: :class:`~toolplan.errors.NotWaiting`."""
        return await self._approve(
            plan_id,
            step_ids,
            by=by,
            enqueue=enqueue,
            on_event=on_event,
            options=options,
            on_tools=on_tools,
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
        on_tools: ToolsListener | None = None,
    ) -> ExecutionResult:
        """Deny one step waiting for approval, with ``reason``: it becomes ``denied`` and its
        dependents are skipped as the execution continues (here, or on workers with
        ``enqueue``); recorded with the time and the decider ``by`` (default the OS user)."""
        return await self._deny(
            plan_id,
            step_id,
            reason,
            by=by,
            enqueue=enqueue,
            on_event=on_event,
            options=options,
            on_tools=on_tools,
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
        return await self._ask(result, ask, by=by, on_event=on_event, options=options)

    async def cancel(self, plan_id: str, *, wait: float = DEFAULT_CANCEL_WAIT) -> ExecutionResult:
        """Cancel the execution of a stored plan wherever it runs; return it as it then stands
        (idempotent; a running one is waited for up to ``wait`` seconds)."""
        return await self._cancel(plan_id, wait=wait)

    # -- reading ------------------------------------------------------------------------------

    async def show(self, identifier: str) -> dict[str, Any]:
        """A plan with its execution, or a request with its plans and answers
        (``toolplan show --json``)."""
        return await asyncio.to_thread(lambda: self._show(identifier))

    async def diagram(self, plan_id: str, *, kind: DiagramFormat = "mermaid") -> str:
        """A stored plan's DAG with each step's state, as Mermaid or Graphviz DOT text
        (``toolplan show PLAN_ID --graph mermaid|dot``)."""
        return await asyncio.to_thread(lambda: self._diagram(plan_id, kind=kind))

    async def list_plans(
        self,
        *,
        status: str | None = None,
        request_id: str | None = None,
        limit: int = 20,
        after: str | None = None,
    ) -> PlanPage:
        """Stored plans newest first, with their execution's status (the plan's when never
        executed): only ``status``'s, only ``request_id``'s versions, at most ``limit``, from
        after the cursor ``after`` (the ``next_cursor`` of the page before) (``toolplan list``)."""
        return await asyncio.to_thread(
            lambda: self._list_plans(status=status, request_id=request_id, limit=limit, after=after)
        )

    async def result(self, plan_id: str) -> ExecutionResult | None:
        """The stored execution result of a plan, or ``None`` if it never started."""
        return await asyncio.to_thread(lambda: self._result(plan_id))

    async def tools(self, *, tag: str | None = None, name: str | None = None) -> list[ToolInfo]:
        """Every tool (or those tagged ``tag``, or the one called ``name``) with its observed
        statistics from past executions (none when there is no store yet and this client may
        not make one)."""
        return await asyncio.to_thread(lambda: self._list_tools(tag=tag, name=name))

    async def clear_cache(self, *, tool: str | None = None) -> int:
        """Empty the result cache of read-only tools (every tool's, or ``tool``'s); return how
        many cached results were removed."""
        return await asyncio.to_thread(lambda: self._clear_cache(tool=tool))
