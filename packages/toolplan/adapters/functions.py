"""The public Python API: module-level functions, each a thin wrapper over one client built
from the environment for the call: an :class:`~toolplan.client.AsyncToolplan` for the coroutines,
a :class:`~toolplan.client.Toolplan` for the sync functions.

``tools`` may be a :class:`ToolCatalog`, a list of LangChain tools / plain functions, or a list of
module names (``"blog"``, ``"my_pkg.tools"``); ``None`` means ``TOOLPLAN_TOOLS`` or the built-ins.
``store`` may be a :class:`Store` (left open), a URI, or ``None`` (``TOOLPLAN_STORE`` or the
embedded SQLite default); a store the call opens, it closes. For many calls, build one
:class:`~toolplan.client.Toolplan` (or :class:`~toolplan.client.AsyncToolplan`) and use its
methods instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolplan.client import AsyncToolplan, Toolplan
from toolplan.config.policies import ExecutionOptions
from toolplan.config.settings import ReuseMode
from toolplan.engine.recorder import EventListener
from toolplan.engine.result import ExecutionResult
from toolplan.plan_format.plan import Plan
from toolplan.runs.cancel import DEFAULT_CANCEL_WAIT
from toolplan.service.operations import PlanRef
from toolplan.service.wiring import ToolsArg, resolve_catalog
from toolplan.store import Store
from toolplan.validation import Analysis

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from toolplan.agent.loop import AgentOutcome
    from toolplan.pipeline.planning import PlanningOutcome

__all__ = [
    "answer_query",
    "approve_steps",
    "cancel_execution",
    "clear_cache",
    "create_plan",
    "deny_step",
    "execute_plan",
    "execute_plan_sync",
    "resolve_catalog",
    "run_plan",
    "run_plan_sync",
    "submit_plan",
    "validate_plan",
]

PlanSource = str | Path | dict[str, Any] | Plan


def _client(
    tools: ToolsArg = None,
    store: Store | str | None = None,
    model: str | BaseChatModel | None = None,
) -> AsyncToolplan:
    return AsyncToolplan.from_env(tools=tools, store=store, model=model)


def _options(
    client: AsyncToolplan,
    options: ExecutionOptions | None,
    concurrency: int | None,
    fail_fast: bool | None,
    approve_all: bool = False,
) -> ExecutionOptions:
    options = options or client.settings.execution
    if approve_all:
        options = replace(options, approve_all=True)
    if concurrency is not None:
        options = replace(options, concurrency=concurrency)
    if fail_fast is not None:
        options = replace(options, fail_fast=fail_fast)
    return options


def validate_plan(
    plan: PlanSource, *, tools: ToolsArg = None, max_steps: int | None = None
) -> Analysis:
    """Validate a plan without storing or running it; returns its dependency analysis.

    ``max_steps`` defaults to ``TOOLPLAN_MAX_STEPS`` (50 when unset). Raises
    :class:`~toolplan.errors.PlanInvalid` listing every problem.
    """
    with Toolplan.from_env(tools=tools) as client:
        return client.validate(plan, max_steps=max_steps)


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
    async with _client(tools, store) as client:
        return await client.submit(plan, query=query, request_id=request_id, max_steps=max_steps)


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
    approve_all: bool = False,
    on_event: EventListener | None = None,
) -> ExecutionResult:
    """Run a stored plan, or resume it after a crash; a finished plan returns its stored result.

    A cancelled execution is returned as stored too, unless ``resume``: then it continues (its
    finished steps are kept, the cancelled ones run). A step that needs a person's approval
    waits (the result is ``waiting``; :func:`approve_steps` or :func:`deny_step` continue it)
    unless ``approve_all``. ``approve`` is the other gate: it runs a ``needs_review`` plan.
    """
    async with _client(tools, store) as client:
        return await client.execute(
            plan_id,
            approve=approve,
            resume=resume,
            on_event=on_event,
            options=_options(client, options, concurrency, fail_fast, approve_all),
        )


async def approve_steps(
    plan_id: str,
    step_ids: Sequence[str] | None = None,
    *,
    store: Store | str | None = None,
    tools: ToolsArg = None,
    by: str | None = None,
    enqueue: bool = False,
    on_event: EventListener | None = None,
) -> ExecutionResult:
    """Approve steps of ``plan_id`` waiting for approval (every waiting step when ``step_ids``
    is ``None``), each for exactly the arguments it waits with, recorded with the time and the
    decider ``by`` (default the OS user); then continue the execution here (or on workers with
    ``enqueue``) and return it (``toolplan approve``). A step not waiting, or a finished plan,
    changes nothing: :class:`~toolplan.errors.NotWaiting`."""
    async with _client(tools, store) as client:
        return await client.approve(plan_id, step_ids, by=by, enqueue=enqueue, on_event=on_event)


async def deny_step(
    plan_id: str,
    step_id: str,
    reason: str,
    *,
    store: Store | str | None = None,
    tools: ToolsArg = None,
    by: str | None = None,
    enqueue: bool = False,
    on_event: EventListener | None = None,
) -> ExecutionResult:
    """Deny one step of ``plan_id`` waiting for approval, with ``reason`` (recorded with the
    time and the decider ``by``, default the OS user): it becomes ``denied``, its dependents
    are skipped, and the execution continues here (or on workers with ``enqueue``) and is
    returned (``toolplan deny``)."""
    async with _client(tools, store) as client:
        return await client.deny(
            plan_id, step_id, reason, by=by, enqueue=enqueue, on_event=on_event
        )


def clear_cache(*, tool: str | None = None, store: Store | str | None = None) -> int:
    """Empty the store's result cache of read-only tools (every tool's, or ``tool``'s only), like
    ``toolplan cache clear``; return how many cached results were removed. The next calls of those
    tools run them."""
    with Toolplan.from_env(store=store) as client:
        return client.clear_cache(tool=tool)


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
    async with _client(store=store) as client:
        return await client.cancel(plan_id, wait=wait)


async def run_plan(
    plan: PlanSource,
    *,
    tools: ToolsArg = None,
    store: Store | str | None = None,
    query: str | None = None,
    options: ExecutionOptions | None = None,
    concurrency: int | None = None,
    fail_fast: bool | None = None,
    approve_all: bool = False,
    on_event: EventListener | None = None,
) -> ExecutionResult:
    """Validate, store and execute a plan in one call (``approve_all``: no step waits for a
    person's approval)."""
    async with _client(tools, store) as client:
        outcome = await client.run(
            plan,
            query=query,
            on_event=on_event,
            options=_options(client, options, concurrency, fail_fast, approve_all),
        )
    assert outcome.result is not None  # a submitted plan never needs review
    return outcome.result


async def create_plan(
    query: str,
    *,
    tools: ToolsArg = None,
    model: str | BaseChatModel | None = None,
    store: Store | str | None = None,
    request_id: str | None = None,
    max_repairs: int | None = None,
    confidence_threshold: float | None = None,
) -> PlanningOutcome:
    """Plan ``query`` with an LLM in one round-trip (plus bounded repairs), validate and store it.

    ``model`` is a ``provider:model`` string (default ``TOOLPLAN_MODEL`` or
    ``openai:gpt-4o-mini``) or a LangChain chat model instance. ``max_repairs`` and
    ``confidence_threshold`` default to ``TOOLPLAN_MAX_REPAIRS`` (3) and
    ``TOOLPLAN_CONFIDENCE_THRESHOLD`` (0.5).
    """
    async with _client(tools, store, model) as client:
        return await client.plan(
            query,
            request_id=request_id,
            max_repairs=max_repairs,
            confidence_threshold=confidence_threshold,
        )


async def answer_query(
    query: str,
    *,
    tools: ToolsArg = None,
    model: str | BaseChatModel | None = None,
    store: Store | str | None = None,
    request_id: str | None = None,
    max_replans: int = 1,
    max_repairs: int | None = None,
    confidence_threshold: float | None = None,
    approve: bool = False,
    reuse: ReuseMode | None = None,
    on_event: EventListener | None = None,
) -> AgentOutcome:
    """Plan ``query``, execute the plan and answer it (``toolplan run "QUERY"``): the model reads
    the results and answers, or asks for a new plan (at most ``max_replans`` times), stored as a
    new version of the same request. The first plan may reuse a stored one (``reuse``: ``off``,
    ``exact`` or ``parametric``; default ``TOOLPLAN_PLAN_REUSE``, else ``exact``);
    ``max_repairs`` and ``confidence_threshold`` default to the settings, as in
    :func:`create_plan`. The outcome has
    ``answer``, ``plans``, ``llm_calls``, ``usage``, ``reused_from``, the last plan's ``estimate``
    and its execution ``result``."""
    async with _client(tools, store, model) as client:
        return await client.answer(
            query,
            request_id=request_id,
            max_replans=max_replans,
            approve=approve,
            reuse=reuse,
            on_event=on_event,
            max_repairs=max_repairs,
            confidence_threshold=confidence_threshold,
        )


def run_plan_sync(plan: PlanSource, **kwargs: Any) -> ExecutionResult:
    """:func:`run_plan` for code without an event loop."""
    return asyncio.run(run_plan(plan, **kwargs))


def execute_plan_sync(plan_id: str, **kwargs: Any) -> ExecutionResult:
    """:func:`execute_plan` for code without an event loop."""
    return asyncio.run(execute_plan(plan_id, **kwargs))
