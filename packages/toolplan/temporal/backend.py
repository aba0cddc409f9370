"""The Temporal execution backend: a stored plan runs as a Temporal workflow.

The process that executes a plan (the CLI, the API server, the Python API) is only the starter:
it creates the execution record (``queued``), starts the plan's workflow and, unless it only
queues it, waits for the workflow while it follows the step records for progress. The steps run
in ``toolplan worker --temporal`` processes (:mod:`toolplan.temporal.worker`), which record every
transition in the same store, so ``toolplan show``, the API's ``execution`` and ``stepEvents``
read the same records whichever backend ran the plan.

A plan has one workflow ID (:func:`~toolplan.temporal.messages.workflow_id`): starting a plan
that is already running attaches to its workflow (``USE_EXISTING``), whoever starts it; a plan
whose workflow ended without finishing it (terminated) gets a new run that resumes from the step
records.
"""

from __future__ import annotations

import asyncio
import contextlib

from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    TerminatedError,
)

from toolplan.config import TemporalSettings
from toolplan.engine.observers import BestEffort
from toolplan.engine.tracing import execution_span, record_execution
from toolplan.errors import ExecutionBusy, InvalidInput, ToolplanError
from toolplan.execution.context import ExecutionContext
from toolplan.execution.events import DEFAULT_POLL_SECONDS, watch_step_events
from toolplan.execution.runner import start_execution
from toolplan.store.protocol import TERMINAL_EXECUTION_STATUSES, ExecutionRecord, PlanRecord
from toolplan.temporal.client import connect, temporal_errors
from toolplan.temporal.messages import PlanRun, RunOptions, workflow_id
from toolplan.temporal.workflow import WORKFLOW_NAME

__all__ = ["TemporalBackend"]


def _failure(plan_id: str, error: WorkflowFailureError) -> ToolplanError | None:
    """The toolplan error a failed workflow stands for; ``None`` when it was cancelled."""
    cause = error.cause
    if isinstance(cause, CancelledError):
        return None
    if isinstance(cause, ActivityError) and isinstance(cause.cause, ApplicationError):
        inner = cause.cause
        if inner.type == "InvalidInput":
            return InvalidInput(inner.message, details={"planId": plan_id})
        if inner.type == "ExecutionBusy":
            return ExecutionBusy(inner.message, details={"planId": plan_id})
    if isinstance(cause, TerminatedError):
        return ToolplanError(
            f"the Temporal workflow of {plan_id} was terminated before the plan finished; its "
            f"finished steps are stored, and `toolplan execute {plan_id}` starts it again",
            details={"planId": plan_id, "resumable": True},
        )
    return ToolplanError(
        f"the Temporal workflow of {plan_id} failed: {cause or error}",
        details={"planId": plan_id},
    )


class TemporalBackend:
    """Runs plans as Temporal workflows on ``settings.task_queue``."""

    def __init__(
        self,
        settings: TemporalSettings,
        *,
        poll_seconds: float = DEFAULT_POLL_SECONDS,
    ) -> None:
        self.settings = settings
        self.poll_seconds = poll_seconds

    def __repr__(self) -> str:
        s = self.settings
        return f"TemporalBackend({s.address}, namespace={s.namespace!r}, queue={s.task_queue!r})"

    async def _handle(self, plan_id: str) -> WorkflowHandle[object, str]:
        client = await connect(self.settings)
        return client.get_workflow_handle(workflow_id(plan_id), result_type=str)

    async def start(self, record: PlanRecord, ctx: ExecutionContext) -> ExecutionRecord:
        """Queue the plan on Temporal and return its execution record at once (``queued``, or
        as it is when the plan is already running or finished)."""
        plan_id = record.plan_id
        client = await connect(self.settings)  # an unreachable server leaves no record behind
        # The plan is checked against this process's catalog, like an in-process run; the
        # worker checks it again against its own.
        _, _, execution = await start_execution(ctx.store, ctx.catalog, record, status="queued")
        if execution.status in TERMINAL_EXECUTION_STATUSES:
            return execution
        run = PlanRun(
            plan_id, RunOptions.of(ctx.options, heartbeat_seconds=self.settings.heartbeat_seconds)
        )
        with temporal_errors(self.settings):
            await client.start_workflow(
                WORKFLOW_NAME,
                run,
                id=workflow_id(plan_id),
                task_queue=self.settings.task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                static_summary=f"toolplan plan {plan_id}",
            )
        current = await asyncio.to_thread(ctx.store.get_execution, plan_id)
        assert current is not None
        return current

    async def run(self, record: PlanRecord, ctx: ExecutionContext) -> ExecutionRecord:
        """Start (or join) the plan's workflow and wait for it; step events reach
        ``ctx.listener`` from the step records the workers write.

        The wait is the execution's OpenTelemetry span; its steps' spans are made by the
        workers (children of it when Temporal's ``TracingInterceptor`` carries the context)."""
        steps = len(record.plan.get("steps") or ())
        with execution_span(record.plan_id, record.request_id, steps) as span:
            final = await self._run(record, ctx)
            failed = [step.step_id for step in final.steps if step.status == "failed"]
            record_execution(span, final.status, failed)
            return final

    async def _run(self, record: PlanRecord, ctx: ExecutionContext) -> ExecutionRecord:
        plan_id = record.plan_id
        execution = await self.start(record, ctx)
        if execution.status not in TERMINAL_EXECUTION_STATUSES:
            handle = await self._handle(plan_id)
            follower = asyncio.create_task(self._follow(ctx, plan_id)) if ctx.listener else None
            try:
                with temporal_errors(self.settings):
                    await handle.result()
            except WorkflowFailureError as error:
                failure = _failure(plan_id, error)
                if failure is not None:
                    raise failure from None
            finally:
                if follower is not None:
                    # The follower ends once it has read the final records.
                    with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                        await asyncio.wait_for(follower, timeout=self.poll_seconds * 5)
        final = await asyncio.to_thread(ctx.store.get_execution, plan_id)
        assert final is not None
        return final

    async def _follow(self, ctx: ExecutionContext, plan_id: str) -> None:
        # The workers' step records are the truth; the listener only watches them, and its
        # failures must not fail a run whose workflow succeeded (as in the Recorder).
        notify = BestEffort(ctx.listener, what=f"step events of {plan_id}")
        async for event in watch_step_events(ctx.store, plan_id, poll_seconds=self.poll_seconds):
            notify(event)
