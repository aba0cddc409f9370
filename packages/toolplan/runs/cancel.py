"""Cancelling an execution, wherever it runs: the request is recorded in the store, and the
process running the execution notices it, cancels its in-flight tool calls and ends it.

- :func:`request_cancel` is the one operation every entry point calls (``toolplan cancel``,
  the API's ``cancelExecution``, :func:`toolplan.cancel_execution`). It records the request
  (:meth:`~toolplan.store.protocol.ExecutionLog.request_cancel`: a queued or never-started
  execution ends ``cancelled`` at once), ends a running execution nobody holds any more (its
  process died) itself, and waits a while for a live runner to end it.
- :func:`run_until_cancelled` is how a runner notices: it polls the store's cheap
  :meth:`~toolplan.store.protocol.ExecutionLog.cancel_requested` every ``cancel_poll`` seconds
  (0.25 by default) while the schedule runs, and cancels the schedule when it is set. Tools get
  :class:`asyncio.CancelledError`; a sync tool's thread cannot be interrupted and finishes
  unobserved.
- :func:`end_cancelled` records every step that was running or had not started as
  ``cancelled`` and the execution as ``cancelled``; finished steps are kept.

Polling the store works for every backend and every store (SQLite has no change streams; the
lease heartbeat, every ``lease/3`` = 10 s, is far too slow for the 1 s goal): one indexed read
per running execution every 0.25 s, and none for executions that finish sooner.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable
from datetime import datetime
from typing import Any

from toolplan.engine.recorder import Recorder
from toolplan.engine.result import ExecutionResult
from toolplan.runs.lease import holder_is_dead
from toolplan.store.lookup import find_plan
from toolplan.store.protocol import (
    CANCELLED_BEFORE_START,
    CANCELLED_WHILE_RUNNING,
    TERMINAL_EXECUTION_STATUSES,
    ExecutionLog,
    ExecutionRecord,
    Store,
    utc_now,
)

__all__ = [
    "DEFAULT_CANCEL_WAIT",
    "end_cancelled",
    "request_cancel",
    "run_until_cancelled",
]

DEFAULT_CANCEL_WAIT = 10.0
"""Seconds :func:`request_cancel` waits for a running execution to end, by default."""


async def _cancel_requested(store: ExecutionLog, plan_id: str, poll: float) -> None:
    while True:
        await asyncio.sleep(poll)
        if await asyncio.to_thread(store.cancel_requested, plan_id):
            return


async def run_until_cancelled(
    store: ExecutionLog, plan_id: str, work: Awaitable[Any], *, poll: float
) -> bool:
    """Await ``work`` unless a cancel of ``plan_id`` is requested first: then cancel ``work``,
    wait until it has stopped, and return ``True``. ``False`` when ``work`` finished."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_cancel_requested(store, plan_id, poll))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            task.result()  # its exception, if any
            return False
        watch.result()  # a store error while polling stops the run like any store error
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return True
    finally:
        for pending in (task, watch):
            if not pending.done():
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await pending
            elif not pending.cancelled():
                # Both may fail at once (the store went away): the first error is raised, the
                # other is retrieved here so asyncio does not print it as a traceback.
                pending.exception()


def _elapsed_ms(started_at: str | None) -> float | None:
    if started_at is None:
        return None
    started = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    return round((time.time() - started.timestamp()) * 1000, 3)


async def end_cancelled(store: ExecutionLog, plan_id: str, recorder: Recorder) -> None:
    """Record the steps still running (their tool calls were cancelled), pending or waiting for
    approval as ``cancelled``, through ``recorder`` (after its earlier writes), then the execution."""
    await recorder.drain()
    execution = await asyncio.to_thread(store.get_execution, plan_id)
    assert execution is not None
    for step in execution.steps:
        if step.status == "running":
            await recorder.cancelled(
                step.step_id,
                step.tool,
                CANCELLED_WHILE_RUNNING,
                attempts=step.attempts,
                duration_ms=_elapsed_ms(step.started_at),
            )
        elif step.status in ("pending", "waiting_approval"):
            await recorder.cancelled(
                step.step_id, step.tool, CANCELLED_BEFORE_START, attempts=step.attempts
            )
    await recorder.drain()
    await asyncio.to_thread(store.set_execution_status, plan_id, "cancelled", finished_at=utc_now())


def _nobody_runs(execution: ExecutionRecord) -> bool:
    """Whether no live process holds the running execution's lease (so nobody would notice a
    cancel request): no owner, an expired lease, or an owner on this host that is gone."""
    if execution.worker_id is None or execution.lease_until is None:
        return True
    return execution.lease_until < time.time() or holder_is_dead(execution)


async def _take_over_and_end(store: Store, execution: ExecutionRecord, lease: float) -> bool:
    canceller = f"cancel:{secrets.token_hex(4)}"
    dead = execution.worker_id if execution.worker_id and holder_is_dead(execution) else None
    taken = await asyncio.to_thread(
        store.acquire, execution.plan_id, canceller, lease, expected_owner=dead
    )
    if not taken:
        return False  # someone else runs it after all: they see the request
    recorder = Recorder(store, execution.plan_id, output_limit_bytes=1_000_000)
    try:
        await end_cancelled(store, execution.plan_id, recorder)
    finally:
        await asyncio.to_thread(recorder.close)
    await asyncio.to_thread(store.release, execution.plan_id, canceller)
    return True


async def request_cancel(
    store: Store,
    plan_id: str,
    *,
    wait: float = DEFAULT_CANCEL_WAIT,
    poll: float = 0.05,
    lease_seconds: float = 30.0,
) -> ExecutionResult:
    """Cancel the execution of ``plan_id``; return the execution as it then stands.

    Idempotent. A plan that finished (``succeeded``, ``partial``, ``failed``) is returned
    unchanged; one already ``cancelled`` too. A queued plan, or one never executed, ends
    ``cancelled`` at once (it will not run). A running plan ends ``cancelled`` when its
    executor notices (within ``cancel_poll``); this waits up to ``wait`` seconds for that and
    returns it still ``running`` (with ``cancelRequestedAt``) if it has not ended by then. A
    running plan whose process died is ended here.
    """
    record = await asyncio.to_thread(find_plan, store, plan_id)
    pairs = [(step["id"], step["tool"]) for step in record.plan.get("steps", [])]
    execution = await asyncio.to_thread(store.request_cancel, plan_id, pairs)
    deadline = time.monotonic() + wait
    while execution.status not in TERMINAL_EXECUTION_STATUSES:
        if (
            execution.status == "running"
            and _nobody_runs(execution)
            and await _take_over_and_end(store, execution, lease_seconds)
        ):
            pass
        elif time.monotonic() >= deadline:
            break
        else:
            await asyncio.sleep(poll)
        latest = await asyncio.to_thread(store.get_execution, plan_id)
        assert latest is not None
        execution = latest
    return ExecutionResult.from_records(record, execution)
