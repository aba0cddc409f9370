"""The core operations every entry point calls: submit, execute, show.

The CLI, the GraphQL API, the LangGraph graphs, workers and the ``execute_plan`` meta-tool are thin
layers over these functions; no behaviour lives only in one of them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from toolplan.config.settings import EstimateSettings
from toolplan.engine.result import ExecutionResult
from toolplan.errors import ExecutionGone, InvalidInput, PlanInvalid, StoreUnavailable, Unavailable
from toolplan.plan_format.ids import is_valid_id, new_id, require_id
from toolplan.plan_format.limits import InputLimits, check_text
from toolplan.plan_format.meta import ESTIMATE_KEY, TOOL_SOURCES_KEY, VERSION_KEY, caller_meta
from toolplan.plan_format.plan import DEFAULT_MAX_ITEMS, Plan, load_plan, parse_plan
from toolplan.plan_format.python_print import said_in_python
from toolplan.runs.backend import DetachedBackend, backend_of
from toolplan.runs.cancel import DEFAULT_CANCEL_WAIT, request_cancel
from toolplan.runs.context import ExecutionBackend, ExecutionContext, WakeableBackend
from toolplan.runs.queue import enqueue_plan
from toolplan.service.estimates import Estimate, estimate_plan, plan_estimator
from toolplan.service.plan_index import index_plan
from toolplan.store.lookup import find_plan, find_request, require_approval
from toolplan.store.protocol import (
    TERMINAL_EXECUTION_STATUSES,
    ExecutionRecord,
    PlanRecord,
    PlanStatus,
    RequestRecord,
    Store,
    utc_now,
)
from toolplan.store.records import ANSWERS
from toolplan.tools.catalog import ToolCatalog, ToolInfo
from toolplan.validation import Analysis, analyze, check_tools

__all__ = [
    "PlanRef",
    "cancel_execution",
    "describe",
    "enqueue_execution",
    "execute_stored_plan",
    "finished_status",
    "list_tools",
    "store_plan",
    "stored_result",
    "submit_plan",
]


@dataclass(frozen=True)
class PlanRef:
    """Where a stored plan lives: its request, its ID and its status."""

    request_id: str
    plan_id: str
    status: PlanStatus
    plan: Plan | None = field(default=None, compare=False)
    analysis: Analysis | None = field(default=None, compare=False)
    estimate: Estimate | None = field(default=None, compare=False)
    """Expected duration and cost (:mod:`toolplan.service.estimates`), stored with the plan."""

    def to_json(self) -> dict[str, Any]:
        """``{"requestId", "planId", "status", "estimate"}``."""
        data: dict[str, Any] = {
            "requestId": self.request_id,
            "planId": self.plan_id,
            "status": self.status,
        }
        if self.estimate is not None:
            data["estimate"] = self.estimate.to_json()
        return data


def submit_plan(
    source: str | Path | bytes | dict[str, Any] | Plan,
    *,
    store: Store,
    catalog: ToolCatalog,
    query: str | None = None,
    request_id: str | None = None,
    max_steps: int,
    status: PlanStatus = "planned",
    meta: Mapping[str, Any] | None = None,
    limits: InputLimits | None = None,
    estimates: EstimateSettings | None = None,
    reusable: bool = False,
    record_meta: Mapping[str, Any] | None = None,
    max_items: int = DEFAULT_MAX_ITEMS,
) -> PlanRef:
    """Validate a plan and store it with new IDs; nothing runs (``max_items``: the longest
    literal ``forEach`` list of a step without ``maxItems``, ``TOOLPLAN_MAX_ITEMS``).

    With ``request_id``, the plan becomes a new version of that existing request; with
    ``reusable``, it is indexed for plan reuse (:func:`store_plan`). The input
    limits (``limits``, default :class:`InputLimits`()) are checked first, on the plan and the
    query. Raises :class:`~toolplan.errors.PlanInvalid` (every problem at once) or
    :class:`~toolplan.errors.InvalidInput` before anything is stored.
    """
    limits = limits or InputLimits()
    check_text(query, "the query", limits)
    plan = load_plan(source, limits=limits, tools=catalog.python_tools, max_steps=max_steps)
    try:
        analysis = analyze(
            plan, catalog, max_steps=max_steps, max_items=max_items, estimate=plan_estimator(store)
        )
    except PlanInvalid as invalid:
        raise said_in_python(invalid, plan, catalog.python_tools) from None
    return store_plan(
        plan,
        analysis,
        store=store,
        catalog=catalog,
        query=query,
        request_id=request_id,
        status=status,
        meta=meta,
        estimates=estimates,
        reusable=reusable,
        record_meta=record_meta,
    )


def store_plan(
    plan: Plan,
    analysis: Analysis,
    *,
    store: Store,
    catalog: ToolCatalog,
    query: str | None = None,
    request_id: str | None = None,
    status: PlanStatus = "planned",
    meta: Mapping[str, Any] | None = None,
    estimates: EstimateSettings | None = None,
    reusable: bool = False,
    record_meta: Mapping[str, Any] | None = None,
    new_request: bool = False,
    plan_id: str | None = None,
) -> PlanRef:
    """Store a plan already validated and analysed (by :func:`submit_plan`, or the planner's
    analysis node with :func:`plan_estimator`) with new IDs, recording where ``catalog``'s tools
    came from and its estimate (``meta.estimate``, from the tool history in ``store`` and the
    settings ``estimates``, default ``EstimateSettings()``); with ``request_id``, as a new
    version of that existing request. With ``new_request`` as well, ``request_id`` may be a new
    ID of the caller's choosing (a client's own, well-formed ``req_...``): a request not stored
    yet is created under it with ``query``.

    With ``reusable`` (a plan the planner made for ``query``, or one reused for it), the plan
    is also indexed for plan reuse (:func:`toolplan.service.plan_index.index_plan`), whichever entry point
    stored it (``toolplan run``/``plan``, ``createPlanWithRequestId``, :func:`toolplan.create_plan`):
    a later query may reuse it once its last execution succeeded. A document the caller wrote
    is not indexed: its query is a label, not what a planner answered.

    ``meta`` is the caller's (labels; a key toolplan reserves is refused, see
    :mod:`toolplan.plan_format.meta`); ``record_meta`` is toolplan's own record of how the plan was
    made (the planning call, plan reuse), written over it. The tool sources and the estimate are
    always this function's. ``plan_id`` is the plan's ID when it was chosen before the plan was
    complete (streamed execution: :mod:`toolplan.pipeline.early_start`), else a new one."""
    request: RequestRecord | None = None
    version = 1
    if request_id is not None:
        existing = (
            store.get_request(require_id(request_id, "req"))
            if new_request
            else find_request(store, request_id)
        )
        if existing is None:
            request = RequestRecord(request_id, query, utc_now())
        else:
            query = query if query is not None else existing.query
            version = len(store.list_plans(request_id)) + 1
    else:
        request = RequestRecord(new_id("req"), query, utc_now())
        request_id = request.request_id
    meta = {**caller_meta(meta), **(record_meta or {})}
    meta.pop(TOOL_SOURCES_KEY, None)
    if version > 1:
        meta[VERSION_KEY] = version
    if catalog.origin is not None:
        meta[TOOL_SOURCES_KEY] = catalog.origin.to_json()
    estimate = estimate_plan(
        plan, analysis, catalog, store, estimates or EstimateSettings(), meta=meta
    )
    meta[ESTIMATE_KEY] = estimate.to_json()
    record = PlanRecord(
        plan_id=plan_id or new_id("plan"),
        request_id=request_id,
        plan=plan.to_json(),
        analysis=analysis.to_json(),
        status=status,
        created_at=utc_now(),
        query=query,
        meta=meta,
    )
    try:
        store.save_plan(record, request)
    except InvalidInput:
        if request is None or store.get_request(request.request_id) is None:
            raise
        # Another client created the same new request meanwhile: this plan is its next version.
        store.save_plan(record, None)
    if reusable and query:
        index_plan(store, record, catalog)
    return PlanRef(
        request_id, record.plan_id, status, plan=plan, analysis=analysis, estimate=estimate
    )


def stored_result(store: Store, plan_id: str, *, items: bool = True) -> ExecutionResult | None:
    """The stored execution result of a plan, or ``None`` if it never started (``items=False``:
    without the items of its ``forEach`` steps, which a caller then reads a page at a time)."""
    record = find_plan(store, plan_id)
    execution = store.get_execution(plan_id, items=items)
    return ExecutionResult.from_records(record, execution) if execution else None


def finished_status(store: Store, plan_id: str) -> str | None:
    """The final status of the plan's execution, or ``None`` while it has not finished (or never
    started): executing a finished plan only returns its stored result."""
    execution = store.get_execution(require_id(plan_id, "plan"))
    if execution is not None and execution.status in TERMINAL_EXECUTION_STATUSES:
        return execution.status
    return None


async def execute_stored_plan(
    plan_id: str,
    ctx: ExecutionContext,
    *,
    approve: bool = False,
    resume: bool = False,
    record: PlanRecord | None = None,
    tools: Callable[[PlanRecord], ToolCatalog] | None = None,
) -> ExecutionResult:
    """Run a stored plan, or resume it after a crash, with the context's execution backend.

    A finished execution is returned as stored (``result.stored``) and no tool is called. A
    ``cancelled`` one too, unless ``resume``: then it continues where it stopped (its finished
    steps are kept, the cancelled ones run). A plan stored as ``needs_review`` is refused unless
    ``approve``.

    The plan record (``record``, when the caller has it) and the execution record are read once
    each before the first step; the in-process backend reads the execution again only as part of
    taking its lease (:func:`~toolplan.runs.lease.acquire_lease`). ``tools`` chooses the
    catalog once the plan is known to run (the tools recorded with it); default ``ctx.catalog``.
    """
    store = ctx.store

    def read(known: PlanRecord | None) -> tuple[PlanRecord, ExecutionRecord | None]:
        found = known if known is not None else find_plan(store, plan_id)
        return found, store.get_execution(found.plan_id)

    found, execution = await asyncio.to_thread(read, record)
    record = found
    reopen = execution is not None and execution.status == "cancelled" and resume
    if execution is not None and execution.status in TERMINAL_EXECUTION_STATUSES and not reopen:
        return replace(ExecutionResult.from_records(record, execution), stored=True)
    require_approval(record.plan_id, record.status, record.plan, approve=approve)
    if tools is not None:
        ctx = replace(ctx, catalog=await asyncio.to_thread(tools, record))
    if reopen:
        # Refused before it is reopened: a resume that cannot run leaves it cancelled, as it was.
        check_tools(parse_plan(record.plan), ctx.catalog)
        await asyncio.to_thread(store.reopen, record.plan_id)
    try:
        if ctx.options.graph_checkpoints:
            # Opt-in: the run goes through the LangGraph execution graph too, for checkpoints
            # of its node boundaries (a LangGraph thread history); the step records are the same.
            from toolplan.runs.graph import run_execution_graph

            await run_execution_graph(plan_id, ctx, approve=approve)
            final = await asyncio.to_thread(store.get_execution, plan_id)
            assert final is not None
        else:
            final = await backend_of(ctx).run(record, ctx)
    except ExecutionGone:
        raise  # nothing is left to resume
    except StoreUnavailable as error:
        # An infrastructure fault is not the plan's: nothing was recorded as failed, and the
        # execution stays unfinished, so running it again resumes it.
        raise StoreUnavailable(
            f"{error.message}; the execution of {plan_id} stopped and is kept: its finished "
            "steps are stored, and executing the plan again resumes it",
            details={**error.details, "planId": plan_id, "resumable": True},
        ) from None
    return ExecutionResult.from_records(record, final)


async def enqueue_execution(
    plan_id: str,
    ctx: ExecutionContext,
    *,
    approve: bool = False,
    resume: bool = False,
    record: PlanRecord | None = None,
) -> ExecutionRecord:
    """Hand a stored plan to workers and return its execution record at once.

    A backend with workers of its own (Temporal) starts the plan there; otherwise the plan goes
    to the store's lease queue, which ``toolplan worker`` processes drain
    (:func:`toolplan.runs.queue.enqueue_plan`). Queueing a plan that is already running or finished
    returns its record unchanged; a ``cancelled`` one is continued only with ``resume``. A
    ``needs_review`` plan is refused unless ``approve``. ``record`` is the plan, when the caller
    has read it.
    """
    if not isinstance(ctx.backend, DetachedBackend):
        return await asyncio.to_thread(
            enqueue_plan, ctx.store, plan_id, approve=approve, resume=resume
        )
    if record is None:
        record = await asyncio.to_thread(find_plan, ctx.store, plan_id)
    require_approval(record.plan_id, record.status, record.plan, approve=approve, action="queued")
    if resume:
        await asyncio.to_thread(ctx.store.reopen, plan_id)
    return await ctx.backend.start(record, ctx)


async def cancel_execution(
    plan_id: str,
    store: Store,
    *,
    wait: float = DEFAULT_CANCEL_WAIT,
    lease_seconds: float = 30.0,
    backend: ExecutionBackend | None = None,
) -> ExecutionResult:
    """Cancel the execution of a stored plan, wherever it runs; return it as it then stands.

    See :func:`toolplan.runs.cancel.request_cancel`: idempotent, a finished plan is
    returned unchanged, a running one is waited for up to ``wait`` seconds. A ``backend`` whose
    runs wait elsewhere for a decision (a Temporal workflow) is told, so that the run ends too;
    when it cannot be reached, the cancel stands and the run ends when it next wakes.
    """
    result = await request_cancel(store, plan_id, wait=wait, lease_seconds=lease_seconds)
    if isinstance(backend, WakeableBackend) and result.status == "cancelled":
        # Recorded in the store: an unreachable run reads it when it next wakes.
        with contextlib.suppress(Unavailable):
            await backend.wake(plan_id)
    return result


def describe(store: Store, identifier: str, *, items: bool = True) -> dict[str, Any]:
    """``toolplan show``: a plan with its execution, or a request with its plans (``items=False``:
    without the items of ``forEach`` steps, for callers that page through them)."""
    if is_valid_id(identifier, "plan"):
        record = find_plan(store, identifier)
        execution = store.get_execution(identifier, items=items)
        return {"kind": "plan", **_plan_json(record, execution)}
    if is_valid_id(identifier, "req"):
        request = find_request(store, identifier)
        plans = [
            _plan_json(p, store.get_execution(p.plan_id, items=items))
            for p in store.list_plans(identifier)
        ]
        answers = answers_for(store, identifier)
        return {
            "kind": "request",
            "requestId": request.request_id,
            "query": request.query,
            "createdAt": request.created_at,
            "plans": plans,
            "answer": answers[-1]["answer"] if answers else None,
            "answers": answers,
        }
    raise InvalidInput(f"{identifier!r} is neither a plan ID (plan_...) nor a request ID (req_...)")


def answers_for(store: Store, request_id: str) -> list[dict[str, Any]]:
    """The stored answers of a request, oldest first (``toolplan show REQ``)."""
    return [
        {k: v for k, v in record.items() if k != "_id"}
        for record in ANSWERS.find(store, {"requestId": request_id})
    ]


def list_tools(
    store: Store | None, catalog: ToolCatalog, *, tag: str | None = None, name: str | None = None
) -> list[ToolInfo]:
    """``toolplan tools``: every tool (only those tagged ``tag``, or only the one called ``name``,
    when given) with its observed statistics from past executions in ``store`` (none without
    one).

    An unknown ``name`` is :class:`~toolplan.errors.InvalidInput` naming the closest tools; a
    ``tag`` no tool has is one naming the tags there are (an empty list would look like an empty
    catalog)."""
    if name is not None:
        infos = [catalog.info(name)]
    else:
        infos = catalog.infos(tag=tag)
        if tag is not None and not infos:
            tags = sorted({t for info in catalog.infos() for t in info.tags})
            raise InvalidInput(
                f"no tool has the tag {tag!r}; tags: {', '.join(tags) or 'none'}"
                if len(catalog)
                else f"no tool has the tag {tag!r}: the catalog is empty"
            )
    stats = store.tool_stats() if store is not None else {}
    return [replace(info, stats=stats.get(info.name)) for info in infos]


def actual_duration_ms(execution: ExecutionRecord | None) -> float | None:
    """Wall time of a finished execution (``finishedAt - startedAt``: a resumed one includes
    the time it was interrupted), or ``None``."""
    if execution is None or not execution.started_at or not execution.finished_at:
        return None
    started = datetime.fromisoformat(execution.started_at.replace("Z", "+00:00"))
    finished = datetime.fromisoformat(execution.finished_at.replace("Z", "+00:00"))
    return round((finished - started).total_seconds() * 1000, 1)


def _plan_json(record: PlanRecord, execution: ExecutionRecord | None) -> dict[str, Any]:
    return {
        "estimate": record.meta.get(ESTIMATE_KEY),
        "actualDurationMs": actual_duration_ms(execution),
        "planId": record.plan_id,
        "requestId": record.request_id,
        "query": record.query,
        "status": record.status,
        "createdAt": record.created_at,
        "plan": record.plan,
        "analysis": record.analysis,
        "meta": record.meta,
        "execution": ExecutionResult.from_records(record, execution).to_json()
        if execution
        else None,
    }
