"""The public Python API: the same core functions the CLI uses, with friendly arguments.

``tools`` may be a :class:`ToolCatalog`, a list of LangChain tools / plain functions, or a list of
module names (``"blog"``, ``"my_pkg.tools"``); ``None`` means ``TOOLPLAN_TOOLS`` or the built-ins.
``store`` may be a :class:`Store`, a URI, or ``None`` (``TOOLPLAN_STORE`` or the embedded SQLite
default).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolplan.analysis import Analysis, analyze
from toolplan.config import PlanReuse, Settings
from toolplan.engine.policies import ExecutionOptions
from toolplan.engine.recorder import StepEvent
from toolplan.engine.result import ExecutionResult
from toolplan.execution.cancel import DEFAULT_CANCEL_WAIT
from toolplan.execution.context import ExecutionContext
from toolplan.planning.planner import PlanningOutcome
from toolplan.plans.plan import Plan, load_plan
from toolplan.service.operations import PlanRef, execute_stored_plan
from toolplan.service.operations import cancel_execution as _cancel
from toolplan.service.operations import submit_plan as _submit
from toolplan.service.wiring import ToolsArg, backend_for, resolve_catalog
from toolplan.store import Store, open_store

__all__ = [
    "answer_query",
    "cancel_execution",
    "clear_cache",
    "create_plan",
    "execute_plan",
    "execute_plan_sync",
    "resolve_catalog",
    "resolve_store",
    "run_plan",
    "run_plan_sync",
    "submit_plan",
    "validate_plan",
]

if TYPE_CHECKING:
    from toolplan.agent.loop import AgentOutcome
    from toolplan.planning.context import PlannerContext

PlanSource = str | Path | dict[str, Any] | Plan


def resolve_store(store: Store | str | None = None, *, settings: Settings | None = None) -> Store:
    """A :class:`Store` from a store object, a URI, or the configured default."""
    if store is None or isinstance(store, str):
        return open_store(store or (settings or Settings.from_env()).store_uri)
    return store


def validate_plan(
    plan: PlanSource, *, tools: ToolsArg = None, max_steps: int | None = None
) -> Analysis:
    """Validate a plan without storing or running it; returns its dependency analysis.

    ``max_steps`` defaults to ``TOOLPLAN_MAX_STEPS`` (50 when unset). Raises
    :class:`~toolplan.errors.PlanInvalid` listing every problem.
    """
    settings = Settings.from_env()
    limit = max_steps if max_steps is not None else settings.max_steps
    return analyze(
        load_plan(plan, limits=settings.limits),
        resolve_catalog(tools, settings=settings),
        max_steps=limit,
    )


async def submit_plan(
    plan: PlanSource,
    *,
    tools: ToolsArg = None,
    store: Store | str | None = None,
    query: str | None = None,
    request_id: str | None = None,
    max_steps: int | None = None,
) -> PlanRef:
    """Validate and store a plan (a new request, or a new version of ``request_id``).

    ``max_steps`` defaults to ``TOOLPLAN_MAX_STEPS`` (50 when unset).
    """
    settings = Settings.from_env()
    catalog = resolve_catalog(tools, settings=settings)
    resolved = resolve_store(store, settings=settings)
    return await asyncio.to_thread(
        _submit,
        plan,
        store=resolved,
        catalog=catalog,
        query=query,
        request_id=request_id,
        max_steps=max_steps if max_steps is not None else settings.max_steps,
        limits=settings.limits,
    )


async def execute_plan(
    plan_id: str,
    *,
    tools: ToolsArg = None,
    store: Store | str | None = None,
    options: ExecutionOptions | None = None,
    concurrency: int | None = None,
    fail_fast: bool | None = None,
    approve: bool = False,
    resume: bool = False,
    on_event: Callable[[StepEvent], None] | None = None,
) -> ExecutionResult:
    """Run a stored plan, or resume it after a crash; a finished plan returns its stored result.

    A cancelled execution is returned as stored too, unless ``resume``: then it continues (its
    finished steps are kept, the cancelled ones run).
    """
    ctx = _execution_context(tools, store, options, concurrency, fail_fast, on_event)
    return await execute_stored_plan(plan_id, ctx, approve=approve, resume=resume)


def clear_cache(*, tool: str | None = None, store: Store | str | None = None) -> int:
    """Empty the store's result cache of read-only tools (every tool's, or ``tool``'s only), like
    ``toolplan cache clear``; return how many cached results were removed. The next calls of those
    tools run them."""
    return resolve_store(store, settings=Settings.from_env()).cache_clear(tool)


async def cancel_execution(
    plan_id: str, *, store: Store | str | None = None, wait: float = DEFAULT_CANCEL_WAIT
) -> ExecutionResult:
    """Cancel the execution of a stored plan wherever it runs (this process, another process,
    the API server, a worker); return the execution as it then stands.

    Its running tool calls get :class:`asyncio.CancelledError`; they and the steps not started
    are recorded ``cancelled`` and the execution ends ``cancelled`` (finished steps are kept).
    Idempotent. A finished execution is returned unchanged; a plan never executed is recorded
    cancelled. Waits up to ``wait`` seconds for a running execution to end, and returns it
    still ``running`` (with ``cancel_requested_at``) if it has not by then.
    """
    settings = Settings.from_env()
    return await _cancel(
        plan_id,
        resolve_store(store, settings=settings),
        wait=wait,
        lease_seconds=settings.execution.lease_seconds,
    )


async def run_plan(
    plan: PlanSource,
    *,
    tools: ToolsArg = None,
    store: Store | str | None = None,
    query: str | None = None,
    options: ExecutionOptions | None = None,
    concurrency: int | None = None,
    fail_fast: bool | None = None,
    on_event: Callable[[StepEvent], None] | None = None,
) -> ExecutionResult:
    """Validate, store and execute a plan in one call."""
    from toolplan.pipeline.flow import FromDocument, plan_then_execute

    settings = Settings.from_env()
    ctx = _execution_context(tools, store, options, concurrency, fail_fast, on_event, settings)
    outcome = await plan_then_execute(
        FromDocument(plan, query=query), ctx, max_steps=settings.max_steps, limits=settings.limits
    )
    assert outcome.result is not None  # a submitted plan never needs review
    return outcome.result


def _execution_context(
    tools: ToolsArg,
    store: Store | str | None,
    options: ExecutionOptions | None,
    concurrency: int | None,
    fail_fast: bool | None,
    on_event: Callable[[StepEvent], None] | None,
    settings: Settings | None = None,
) -> ExecutionContext:
    settings = settings or Settings.from_env()
    options = options or settings.execution
    if concurrency is not None:
        options = replace(options, concurrency=concurrency)
    if fail_fast is not None:
        options = replace(options, fail_fast=fail_fast)
    return ExecutionContext(
        store=resolve_store(store, settings=settings),
        catalog=resolve_catalog(tools, settings=settings),
        options=options,
        listener=on_event,
        backend=backend_for(settings),
    )


async def _planner_context(
    tools: ToolsArg,
    model: str | Any | None,
    store: Store | str | None,
    max_repairs: int,
    confidence_threshold: float,
    settings: Settings,
) -> PlannerContext:
    from toolplan.planning.context import PlannerContext
    from toolplan.planning.setup import planner_context_from_env

    catalog, resolved = (
        resolve_catalog(tools, settings=settings),
        resolve_store(store, settings=settings),
    )
    if model is None or isinstance(model, str):
        return await asyncio.to_thread(
            planner_context_from_env,
            settings=settings,
            store=resolved,
            catalog=catalog,
            model=model,
            max_repairs=max_repairs,
            confidence_threshold=confidence_threshold,
        )
    return PlannerContext(
        store=resolved,
        catalog=catalog,
        model=model,
        model_name=type(model).__name__,
        max_repairs=max_repairs,
        confidence_threshold=confidence_threshold,
        max_steps=settings.max_steps,
        endpoint=settings.planner.openai_base_url,
        limits=settings.limits,
    )


async def create_plan(
    query: str,
    *,
    tools: ToolsArg = None,
    model: str | Any | None = None,
    store: Store | str | None = None,
    request_id: str | None = None,
    max_repairs: int = 2,
    confidence_threshold: float = 0.5,
) -> PlanningOutcome:
    """Plan ``query`` with an LLM in one round-trip (plus bounded repairs), validate and store it.

    ``model`` is a ``provider:model`` string (default ``TOOLPLAN_MODEL`` or
    ``openai:gpt-4o-mini``) or a LangChain chat model instance.
    """
    from toolplan.planning.planner import create_plan as _create

    settings = Settings.from_env()
    ctx = await _planner_context(tools, model, store, max_repairs, confidence_threshold, settings)
    return await _create(query, ctx, request_id=request_id)


async def answer_query(
    query: str,
    *,
    tools: ToolsArg = None,
    model: str | Any | None = None,
    store: Store | str | None = None,
    request_id: str | None = None,
    max_replans: int = 1,
    max_repairs: int = 2,
    confidence_threshold: float = 0.5,
    approve: bool = False,
    reuse: PlanReuse | None = None,
    on_event: Callable[[StepEvent], None] | None = None,
) -> AgentOutcome:
    """Plan ``query``, execute the plan and answer it (``toolplan run "QUERY"``): the model reads
    the results and answers, or asks for a new plan (at most ``max_replans`` times), stored as a
    new version of the same request. The first plan may reuse a stored one (``reuse``: ``off``,
    ``exact`` or ``parametric``; default ``TOOLPLAN_PLAN_REUSE``, else ``exact``). The outcome has
    ``answer``, ``plans``, ``llm_calls``, ``usage``, ``reused_from``, the last plan's ``estimate``
    and its execution ``result``."""
    from toolplan.agent.graph import AgentContext
    from toolplan.agent.loop import run_agent

    settings = Settings.from_env()
    planner = await _planner_context(
        tools, model, store, max_repairs, confidence_threshold, settings
    )
    execution = ExecutionContext(
        store=planner.store,
        catalog=planner.catalog,
        options=settings.execution,
        listener=on_event,
        backend=backend_for(settings),
    )
    ctx = AgentContext(planner, execution, approve=approve, reuse=reuse or settings.plan_reuse)
    return await run_agent(query, ctx, request_id=request_id, max_replans=max_replans)


def run_plan_sync(plan: PlanSource, **kwargs: Any) -> ExecutionResult:
    """:func:`run_plan` for code without an event loop."""
    return asyncio.run(run_plan(plan, **kwargs))


def execute_plan_sync(plan_id: str, **kwargs: Any) -> ExecutionResult:
    """:func:`execute_plan` for code without an event loop."""
    return asyncio.run(execute_plan(plan_id, **kwargs))
