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

Every start is a signal-with-start of :data:`~toolplan.temporal.messages.DECIDED_SIGNAL`: a
workflow waiting for a person's decision reads the store again (the decision ``toolplan
approve`` / ``deny`` recorded, or a cancel), and with no workflow running one is started. A
starter that waits returns when the workflow has finished, or has taken its signal in and waits
for a person again: the execution is then ``waiting`` (``toolplan execute`` exits 4) while the
workflow keeps waiting, durably, for the next decision.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid

from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    TerminatedError,
)
from temporalio.service import RPCError

from toolplan.config import TemporalSettings
from toolplan.engine.observers import BestEffort
from toolplan.engine.tracing import execution_span, record_execution
from toolplan.errors import ExecutionBusy, InvalidInput, ToolplanError
from toolplan.runs.context import ExecutionContext
from toolplan.runs.events import DEFAULT_POLL_SECONDS, watch_step_events
from toolplan.runs.runner import start_execution
from toolplan.store.protocol import TERMINAL_EXECUTION_STATUSES, ExecutionRecord, PlanRecord
from toolplan.temporal.client import connect, temporal_errors
from toolplan.temporal.messages import (
    DECIDED_SIGNAL,
    SETTLED_MEMO,
    Decisions,
    PlanRun,
    RunOptions,
    workflow_id,
)
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
        as it is when the plan is already running, waiting or finished). A workflow waiting for
        a decision is signalled to read the store again."""
        execution, _ = await self._start(record, ctx, queue_waiting=True)
        return execution

    async def _start(
        self, record: PlanRecord, ctx: ExecutionContext, *, queue_waiting: bool = False
    ) -> tuple[ExecutionRecord, str | None]:
        """:meth:`start`, and the token of the signal sent (``None`` when nothing was).

        With ``queue_waiting`` (the caller only queues it) a ``waiting`` execution is stored
        ``queued``, as the lease queue does: a decision was recorded and the plan now waits
        for a worker, not for a person (``approve --enqueue`` with no worker exits 0)."""
        plan_id = record.plan_id
        # Options the workers cannot receive, and an unreachable server, leave no record behind.
        run = PlanRun(
            plan_id, RunOptions.of(ctx.options, heartbeat_seconds=self.settings.heartbeat_seconds)
        )
        client = await connect(self.settings)
        # The plan is checked against this process's catalog, like an in-process run; the
        # worker checks it again against its own.
        _, _, execution = await start_execution(ctx.store, ctx.catalog, record, status="queued")
        if execution.status in TERMINAL_EXECUTION_STATUSES:
            return execution, None
        if queue_waiting and execution.status == "waiting":
            # Before the signal: a stored ``waiting`` means the workflow, if any, is idle until
            # signalled, so this cannot overwrite what it writes once it reads the decision.
            await asyncio.to_thread(ctx.store.set_execution_status, plan_id, "queued")
        signal = Decisions(
            uuid.uuid4().hex,
            {s.step_id: s.decision.kind for s in execution.steps if s.decision is not None},
        )
        with temporal_errors(self.settings):
            # Signal-with-start: a running workflow (waiting for a decision) gets the signal;
            # else a new one starts with it and resumes from the step records.
            await client.start_workflow(
                WORKFLOW_NAME,
                run,
                id=workflow_id(plan_id),
                task_queue=self.settings.task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE,
                static_summary=f"toolplan plan {plan_id}",
                start_signal=DECIDED_SIGNAL,
                start_signal_args=[signal],
            )
        current = await asyncio.to_thread(ctx.store.get_execution, plan_id)
        assert current is not None
        return current, signal.token

    async def wake(self, plan_id: str) -> None:
        """Tell the plan's workflow, if one runs, that its execution changed in the store (a
        cancel): a workflow waiting for a decision reads it again and ends. Starts nothing."""
        handle = await self._handle(plan_id)
        with contextlib.suppress(RPCError), temporal_errors(self.settings):
            await handle.signal(DECIDED_SIGNAL, Decisions(uuid.uuid4().hex))

    async def run(self, record: PlanRecord, ctx: ExecutionContext) -> ExecutionRecord:
        """Start (or join, or signal) the plan's workflow and wait until it finishes or waits
        for a person's decision; step events reach ``ctx.listener`` from the step records the
        workers write.

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
        execution, token = await self._start(record, ctx)
        if execution.status not in TERMINAL_EXECUTION_STATUSES and token is not None:
            handle = await self._handle(plan_id)
            follower = asyncio.create_task(self._follow(ctx, plan_id)) if ctx.listener else None
            result = asyncio.ensure_future(handle.result())
            settled = asyncio.ensure_future(self._until_waiting(ctx, plan_id, handle, token))
            try:
                await asyncio.wait({result, settled}, return_when=asyncio.FIRST_COMPLETED)
                if not result.done():
                    settled.result()
                else:
                    with temporal_errors(self.settings):
                        result.result()
            except WorkflowFailureError as error:
                failure = _failure(plan_id, error)
                if failure is not None:
                    raise failure from None
            finally:
                for task in (result, settled):
                    if not task.done():
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError, Exception):
                            await task
                if follower is not None:
                    # The follower ends once it has read the final records; a waiting
                    # execution has none, so it is stopped after one more poll.
                    with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                        await asyncio.wait_for(follower, timeout=self.poll_seconds * 5)
        final = await asyncio.to_thread(ctx.store.get_execution, plan_id)
        assert final is not None
        return final

    async def _until_waiting(
        self, ctx: ExecutionContext, plan_id: str, handle: WorkflowHandle[object, str], token: str
    ) -> None:
        """Until the workflow has taken in the signal marked ``token`` and waits for a person's
        decision, as its memo says. Never returns for a workflow that finishes: its result says
        so first. Temporal is asked only while the store shows the execution ``waiting`` (the
        workflow stores that before it waits), not all along a long run."""
        while True:
            # Only the status is wanted: no items, polled all along a long map.
            execution = await asyncio.to_thread(ctx.store.get_execution, plan_id, items=False)
            if execution is None or execution.status != "waiting":
                await asyncio.sleep(self.poll_seconds)
                continue
            with temporal_errors(self.settings):
                described = await handle.describe()
                settled = await described.memo_value(SETTLED_MEMO, None)
            if (
                isinstance(settled, dict)
                and settled.get("phase") == "waiting"
                and token in settled.get("answered", ())
            ):
                return
            await asyncio.sleep(self.poll_seconds)

    async def _follow(self, ctx: ExecutionContext, plan_id: str) -> None:
        # The workers' step records are the truth; the listener only watches them, and its
        # failures must not fail a run whose workflow succeeded (as in the Recorder).
        notify = BestEffort(ctx.listener, what=f"step events of {plan_id}")
        async for event in watch_step_events(ctx.store, plan_id, poll_seconds=self.poll_seconds):
            notify(event)
