"""Executions that run inside the server process, as asyncio tasks the server keeps and watches.

Every execution the API starts, waited for or not, runs as one task registered here, so that:

- a second ``executePlan`` of a plan already running here joins it instead of racing for the lease;
- a client that disconnects while waiting does not cancel the run (the task is shielded);
- every failure is logged when the task ends, whether or not a client was still waiting for it;
- server shutdown cancels the runs; their finished steps are durable, and ``executePlan`` on the
  same plan ID later resumes each of them (the lease of a dead process is taken over).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from toolplan.api.events import EventHub
from toolplan.engine.recorder import EventListener, StepEvent
from toolplan.engine.result import ExecutionResult
from toolplan.errors import ToolplanError
from toolplan.runs.backend import DetachedBackend
from toolplan.runs.runner import ExecutionContext
from toolplan.service.operations import enqueue_execution, execute_stored_plan, stored_result
from toolplan.store.protocol import Store

__all__ = ["BackgroundRuns"]

logger = logging.getLogger("toolplan.api")

ContextFactory = Callable[[EventListener | None], ExecutionContext]
"""Builds the execution context of one run around the listener that receives its step events."""


@dataclass
class _Run:
    task: asyncio.Task[ExecutionResult]
    started: asyncio.Event
    """Set by the first step event: the execution record exists and a step is running."""


class BackgroundRuns:
    """The executions running in this server process."""

    def __init__(
        self, make_context: ContextFactory, store: Store, events: EventHub[StepEvent]
    ) -> None:
        self._make_context = make_context
        self._store = store
        self._events = events
        self._runs: dict[str, _Run] = {}

    def __len__(self) -> int:
        return len(self._runs)

    async def execute(
        self,
        plan_id: str,
        *,
        wait: bool,
        approve: bool = False,
        resume: bool = False,
        no_cache: bool = False,
        approve_all: bool = False,
        approver: str | None = None,
    ) -> ExecutionResult:
        """Run (or resume) a stored plan here; join the run already going on for it, if any.

        With ``wait``, return the final result. Without, return as soon as the first step has
        started (status ``running``), or the result when the run ends before that (a finished plan
        is returned as stored). Errors raised before any step runs (unknown plan, plan needing
        review) are raised here in both modes. ``no_cache`` runs every tool call (the result cache
        is neither read nor written), ``approve_all`` lets no step wait for approval (recording
        a decision by ``approver`` on each gated step it lets through); a run
        already going on keeps its own settings (and takes in decisions recorded meanwhile).

        A backend with workers of its own (Temporal) runs the plan elsewhere: without ``wait``
        the plan is handed to it and its execution is returned at once (``queued`` until a worker
        starts it); with ``wait`` this server follows it like a run of its own.
        """
        if not wait and plan_id not in self._runs:
            context = self._make_context(None)
            if isinstance(context.backend, DetachedBackend):
                await enqueue_execution(plan_id, context, approve=approve, resume=resume)
                queued = await asyncio.to_thread(stored_result, self._store, plan_id)
                assert queued is not None
                return queued
        run = self._runs.get(plan_id) or self._start(
            plan_id,
            approve=approve,
            resume=resume,
            no_cache=no_cache,
            approve_all=approve_all,
            approver=approver,
        )
        if wait:
            return await asyncio.shield(run.task)
        started = asyncio.ensure_future(run.started.wait())
        try:
            await asyncio.wait({run.task, started}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            started.cancel()
        if run.task.done():
            return run.task.result()
        result = await asyncio.to_thread(stored_result, self._store, plan_id)
        if result is None:  # pragma: no cover - a step started, so its execution record exists
            raise RuntimeError(f"execution of {plan_id!r} started but has no stored record")
        return result

    def _start(
        self,
        plan_id: str,
        *,
        approve: bool,
        resume: bool,
        no_cache: bool,
        approve_all: bool,
        approver: str | None,
    ) -> _Run:
        started = asyncio.Event()

        def listener(event: StepEvent) -> None:
            # First: the step record is stored, so the run has started whatever publishing does
            # (the recorder ignores a failing listener; this one must not leave a caller waiting).
            started.set()
            self._events.publish(event)

        context = self._make_context(listener)
        if no_cache:
            context = replace(context, options=replace(context.options, cache=False))
        if approve_all:
            options = replace(context.options, approve_all=True, approver=approver)
            context = replace(context, options=options)
        self._events.open(plan_id)
        task = asyncio.create_task(
            execute_stored_plan(plan_id, context, approve=approve, resume=resume),
            name=f"toolplan:{plan_id}",
        )
        run = _Run(task, started)
        self._runs[plan_id] = run
        task.add_done_callback(lambda done: self._finished(plan_id, done))
        return run

    def _finished(self, plan_id: str, task: asyncio.Task[ExecutionResult]) -> None:
        if (run := self._runs.get(plan_id)) is not None and run.task is task:
            del self._runs[plan_id]
        self._events.close(plan_id)
        if task.cancelled():
            logger.warning(
                "execution of %s was interrupted; its finished steps are stored, and executePlan "
                "with the same plan ID resumes it",
                plan_id,
            )
            return
        error = task.exception()
        if error is None:
            logger.info("execution of %s ended: %s", plan_id, task.result().status)
        elif isinstance(error, ToolplanError):
            logger.warning("execution of %s did not complete: %s", plan_id, error.message)
        else:
            logger.error("execution of %s crashed", plan_id, exc_info=error)

    async def close(self) -> None:
        """Cancel every run and wait until each has stopped (server shutdown)."""
        tasks = [run.task for run in self._runs.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
