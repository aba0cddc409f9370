"""Step events of an execution that runs in another process, read from its step records.

A run in this process tells its listener about every transition as it happens (see
:class:`~toolplan.engine.recorder.Recorder`). A run in a worker process, or a step run by another
backend's worker, leaves the same transitions in the store's step records; :func:`watch_step_events`
turns the changes it sees there into the same :class:`~toolplan.engine.recorder.StepEvent` values,
so the API's ``stepEvents`` follows any execution, wherever it runs.

What polling can and cannot show: every attempt's ``started``, ``waiting`` (with the arguments
waiting for approval), and the final ``succeeded``, ``failed``, ``skipped`` or ``denied`` with
its error and duration. A ``retrying`` event is emitted before
each attempt after the first, without the earlier attempt's error (the records keep only the
last one). Steps are reported in plan order within one poll.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from toolplan.engine.recorder import StepEvent
from toolplan.store.protocol import TERMINAL_EXECUTION_STATUSES, ExecutionLog, StepRecord, utc_now

__all__ = ["DEFAULT_POLL_SECONDS", "watch_step_events"]

DEFAULT_POLL_SECONDS = 0.2
"""How often the step records are read while an execution runs elsewhere."""

_FINAL = ("succeeded", "failed", "skipped", "cancelled", "denied")


def _changes(plan_id: str, step: StepRecord, before: StepRecord | None) -> list[StepEvent]:
    seen_attempts = before.attempts if before is not None else 0
    events: list[StepEvent] = []
    for attempt in range(seen_attempts + 1, step.attempts + 1):
        if attempt > 1:
            events.append(
                StepEvent("retrying", plan_id, step.step_id, step.tool, attempt - 1, utc_now())
            )
        events.append(StepEvent("started", plan_id, step.step_id, step.tool, attempt, utc_now()))
    if step.status == "waiting_approval" and (before is None or before.status != step.status):
        events.append(
            StepEvent(
                "waiting",
                plan_id,
                step.step_id,
                step.tool,
                step.attempts,
                utc_now(),
                arguments=step.resolved_parameters,
            )
        )
    if step.status in _FINAL and (before is None or before.status not in _FINAL):
        events.append(
            StepEvent(
                step.status,  # type: ignore[arg-type]
                plan_id,
                step.step_id,
                step.tool,
                step.attempts,
                step.finished_at or utc_now(),
                error=step.error,
                duration_ms=step.duration_ms,
                cached=step.cached,
                used_fallback=step.used_fallback,
            )
        )
    return events


async def watch_step_events(
    store: ExecutionLog, plan_id: str, *, poll_seconds: float = DEFAULT_POLL_SECONDS
) -> AsyncIterator[StepEvent]:
    """The step events of ``plan_id``'s execution while it is queued or running (those that
    already happened first), until it reaches a final status. Ends at once when the plan was
    never executed or its execution has already finished."""
    seen: dict[str, StepRecord] = {}
    first = True
    while True:
        # Polled all along the run: without items, which events do not compare, so a poll of a
        # long map costs its steps, not its items.
        execution = await asyncio.to_thread(store.get_execution, plan_id, items=False)
        if execution is None or (first and execution.status in TERMINAL_EXECUTION_STATUSES):
            return
        first = False
        for step in execution.steps:
            for event in _changes(plan_id, step, seen.get(step.step_id)):
                yield event
            seen[step.step_id] = step
        if execution.status in TERMINAL_EXECUTION_STATUSES:
            return
        await asyncio.sleep(poll_seconds)
