"""Execution backends: what actually runs the steps of a stored plan.

:func:`toolplan.service.operations.execute_stored_plan` does everything that is the same for every
backend (find the plan, return a finished execution as stored, the needs-review gate, the
optional LangGraph checkpoint layer), then hands the plan to ``ctx.backend``.

A backend must:

- record every step transition in ``ctx.store`` as it happens, through
  :class:`~toolplan.engine.recorder.Recorder`: the step records are the source of truth for
  ``toolplan show``, the API, step events seen from other processes, and resuming;
- resume from those records: never call a succeeded step again, and give a step that was running
  the same idempotency key (``{planId}:{stepId}``) when it runs again;
- leave the execution with a final status (:func:`~toolplan.runs.runner.finish_execution`),
  and return the final execution record;
- raise :class:`~toolplan.errors.ExecutionBusy` if another live process runs the plan, and let
  :class:`~toolplan.errors.Unavailable` through when the store fails (never record it on a step).

:class:`InProcessBackend` runs the eager scheduler and the step runner in this process, under a
lease (:func:`~toolplan.runs.runner.run_plan_steps`). A backend that runs each step elsewhere
(a durable-workflow engine: the workflow runs :func:`~toolplan.engine.scheduler.schedule`, each
step is an activity running :class:`~toolplan.engine.step.StepRunner` with
:class:`~toolplan.engine.inputs.StoreInputs`) plugs in by implementing :meth:`ExecutionBackend.run`
and being set as ``ExecutionContext.backend`` (:mod:`toolplan.temporal` does exactly that).

A backend whose workers run plans elsewhere also implements :class:`DetachedBackend`: hand a
plan to its workers and return at once (``toolplan execute --enqueue``, the API's
``executePlan(wait: false)``). A backend without it is served by the store's lease queue
(``toolplan worker`` processes run the in-process engine).

Cancelling needs nothing from a backend but what every backend already does: the request is
recorded in the store (:mod:`toolplan.runs.cancel`), and whatever runs the steps polls for it
(the in-process runner through :func:`~toolplan.runs.cancel.run_until_cancelled`, the
Temporal workers in their step activities) and records the execution ``cancelled``.
"""

from __future__ import annotations

from toolplan.runs.context import (
    DetachedBackend,
    ExecutionBackend,
    ExecutionContext,
)
from toolplan.store.protocol import ExecutionRecord, PlanRecord

__all__ = ["DetachedBackend", "ExecutionBackend", "InProcessBackend", "backend_of"]


class InProcessBackend:
    """The steps run as asyncio tasks of this process, under the execution's lease."""

    async def run(self, record: PlanRecord, ctx: ExecutionContext) -> ExecutionRecord:
        # The engine (and LangChain under it) loads when a plan runs, not when the CLI starts.
        from toolplan.runs.runner import run_plan_steps

        return await run_plan_steps(ctx, record)


def backend_of(ctx: ExecutionContext) -> ExecutionBackend:
    """The backend that runs ``ctx``'s plans: its own, else this process."""
    return ctx.backend if ctx.backend is not None else InProcessBackend()
