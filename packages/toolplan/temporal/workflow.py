"""The plan workflow: the in-process engine's eager scheduler, with every step an activity.

The workflow runs :func:`toolplan.engine.scheduler.schedule` unchanged. That is deterministic
under Temporal's workflow event loop, which is what Temporal needs to replay it:

- ``schedule`` uses only ``asyncio`` tasks, one ``asyncio.Queue`` of completions, a deque and
  dicts (insertion-ordered); no clock, no randomness, no I/O, no ``asyncio.wait`` (whose set
  ordering would not be stable), no threads;
- the workflow loop resumes tasks in the order their activity results are delivered, and on
  replay it delivers them in the order the history recorded, so completions enter the queue in
  the same order and the same steps are started in the same order.
  ``tests/temporal/test_temporal_backend.py`` replays a recorded history to prove it.

Each step is an activity (``toolplan.run_step``) running :class:`~toolplan.engine.step.StepRunner`
in a worker, with Temporal's retry policy for its attempts; its fallback is a second activity
(``toolplan.give_up``). Starting, skipping, finishing and cancelling are short store writes done
as local activities. Activities are named by string, so this module (re-imported in Temporal's
sandbox) never imports the tools, LangChain or the store.

Approvals: when the only steps left wait for a person's approval, the workflow stores the
execution ``waiting`` (``toolplan.pause_plan``) and waits, durably and for as long as it takes,
on the signal :data:`~toolplan.temporal.messages.DECIDED_SIGNAL` (``workflow.wait_condition``).
Whoever records a decision (``toolplan approve`` / ``deny``, the API's mutations, the Python
functions) sends it; the workflow reads the store again and schedules on from there: an
approved step's activity calls its tool with exactly the arguments that were shown, a denied
step's dependents are skipped. A decision recorded while no workflow runs starts one (the
signal is sent with signal-with-start), which resumes from the step records. The memo
:data:`~toolplan.temporal.messages.SETTLED_MEMO` tells a sender when its signal was taken in.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import replace
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

with workflow.unsafe.imports_passed_through():
    from toolplan.engine.items import run_items
    from toolplan.engine.scheduler import Slots, StepOutcome, schedule
    from toolplan.temporal.messages import (
        DECIDED_SIGNAL,
        SETTLED_MEMO,
        Decisions,
        MapStarted,
        PauseCall,
        Paused,
        PlanLayout,
        PlanRun,
        SkipCall,
        StepCall,
        StepResult,
        skip_reason,
    )

__all__ = [
    "TIMEOUT_GRACE_SECONDS",
    "PlanWorkflow",
    "step_retry_policy",
]

WORKFLOW_NAME = "toolplan.plans.plan"

TIMEOUT_GRACE_SECONDS = 1.0
"""Temporal's start-to-close timeout of a step is its timeout plus this: toolplan's own timeout
inside the activity fires first, cancels the tool and records the attempt's error; Temporal's is
the backstop for a worker whose event loop is stuck."""

_RECORD_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=5),
    non_retryable_error_types=["InvalidInput"],
)
"""Store writes (start, skip, finish, cancel) are retried until the store answers: a store
outage pauses the plan, it never fails a step."""

_RECORD_TIMEOUT = timedelta(seconds=60)

_LOST_WORKER_RETRY = RetryPolicy(maximum_interval=timedelta(seconds=5))
"""A fallback and a map's item: called once, their retries inside the activity; the activity
itself runs again only when its worker is lost (or the store is down). A plan the worker cannot
run fails non-retryable (``InvalidInput``)."""

_MEMO_TOKENS = 64
"""The latest signal tokens the settled memo lists (a sender asks about its own, just sent)."""


def step_retry_policy(run: PlanRun) -> RetryPolicy:
    """Temporal's retry policy of a step activity: the run's exponential backoff, for attempts
    lost with their worker. Which failures are retried, and when, is not decided here: the
    activity asks the step's :class:`toolplan.config.retry.RetryPolicy`, as the in-process
    engine does, and raises its failure non-retryable or with that delay. Attempts are not
    capped here either: the activity counts those spent (in its heartbeat details), so a lost
    worker or a store outage never spends one."""
    options = run.options
    return RetryPolicy(
        initial_interval=timedelta(seconds=max(options.initial_backoff, 0.001)),
        backoff_coefficient=max(options.backoff_factor, 1.0),
        maximum_interval=timedelta(
            seconds=max(options.max_backoff, options.initial_backoff, 0.001)
        ),
        maximum_attempts=0,
    )


def _final_failure(error: ActivityError) -> tuple[int, str]:
    """Attempts made and the error text of a step activity that gave up."""
    cause = error.cause
    if isinstance(cause, ApplicationError) and cause.details:
        detail: Any = cause.details[0]
        if isinstance(detail, dict):
            return int(detail.get("attempts", 0)), str(detail.get("error") or cause.message)
    return 0, str(cause or error)


@workflow.defn(name=WORKFLOW_NAME)
class PlanWorkflow:
    """Runs (or resumes) the unfinished steps of one stored plan; returns its final status."""

    def __init__(self) -> None:
        self._tokens: list[str] = []
        """The tokens of the decision signals received, in order."""
        self._answered = 0
        """How many of them the workflow had received when it last read the store and settled
        (waiting again, or done): those senders' decisions are taken in."""

    @workflow.signal(name=DECIDED_SIGNAL)
    def decided(self, message: Decisions) -> None:
        """Decisions were recorded in the store (or the plan was executed or cancelled again)."""
        self._tokens.append(message.token)

    def _settle(self, phase: str, seen: int) -> None:
        """The store was read after the first ``seen`` signals and the workflow waits for a
        person again (``waiting``) or ends (``done``): say so in its memo."""
        self._answered = max(self._answered, seen)
        answered = self._tokens[: self._answered][-_MEMO_TOKENS:]
        workflow.upsert_memo({SETTLED_MEMO: {"phase": phase, "answered": answered}})

    @workflow.run
    async def run(self, run: PlanRun) -> str:
        plan_id = run.plan_id
        try:
            seen = len(self._tokens)
            layout: PlanLayout = await workflow.execute_local_activity(
                "toolplan.start_plan",
                run,
                result_type=PlanLayout,
                start_to_close_timeout=_RECORD_TIMEOUT,
                retry_policy=_RECORD_RETRY,
            )
            if layout.finished_status is not None:
                self._settle("done", seen)
                return layout.finished_status
            if layout.cancel_requested:  # requested while nobody ran it: nothing more runs
                return await self._cancelled(plan_id)
            self._slots = Slots(run.options.concurrency)  # shared by steps and map items
            finished = layout.finished
            while True:
                outcomes = await schedule(
                    layout.order,
                    layout.dependencies,
                    lambda step_id: self._run_step(run, layout, step_id),
                    lambda step_id, message, reason: self._skip(plan_id, step_id, message, reason),
                    concurrency=run.options.concurrency,
                    fail_fast=run.options.fail_fast,
                    finished={
                        step_id: StepOutcome(done.status, error=done.error)  # type: ignore[arg-type]
                        for step_id, done in finished.items()
                    },
                    slots=self._slots,
                    after=layout.after,
                )
                waiting = [s for s, outcome in outcomes.items() if outcome.status == "waiting"]
                if not waiting:
                    break
                paused = await self._wait_for_decisions(plan_id, waiting)
                if paused.final_status is not None:
                    return paused.final_status
                finished = paused.finished
        except asyncio.CancelledError:
            # A cancel (requested in the store and passed on by a step's activity, or by an
            # operator): running steps were cancelled, and have stopped, by schedule(); record
            # them and those not started as cancelled, and the execution, then end as cancelled.
            await self._cancelled(plan_id)
            raise
        seen = len(self._tokens)
        status: str = await workflow.execute_local_activity(
            "toolplan.finish_plan",
            plan_id,
            result_type=str,
            start_to_close_timeout=_RECORD_TIMEOUT,
            retry_policy=_RECORD_RETRY,
        )
        self._settle("done", seen)
        return status

    async def _wait_for_decisions(self, plan_id: str, waiting: list[str]) -> Paused:
        """Steps wait for approval and nothing else can run: wait for a decision signal until
        the store shows one of them decided (or the execution ended: a cancel). A signal that
        arrives while the store is read is not lost: it is counted before the read."""
        while True:
            seen = len(self._tokens)
            paused: Paused = await workflow.execute_local_activity(
                "toolplan.pause_plan",
                PauseCall(plan_id, waiting),
                result_type=Paused,
                start_to_close_timeout=_RECORD_TIMEOUT,
                retry_policy=_RECORD_RETRY,
            )
            if paused.final_status is not None:
                self._settle("done", seen)
                return paused
            if paused.decided:
                return paused
            self._settle("waiting", seen)
            await workflow.wait_condition(functools.partial(self._signalled_after, seen))

    def _signalled_after(self, seen: int) -> bool:
        return len(self._tokens) > seen

    async def _run_step(self, run: PlanRun, layout: PlanLayout, step_id: str) -> StepOutcome:
        spec = layout.steps[step_id]
        call = StepCall(
            run.plan_id,
            step_id,
            run.options,
            prior_attempts=layout.prior_attempts.get(step_id, 0),
            timeout=spec.timeout,
            timeout_source=spec.timeout_source,
        )
        timeouts: dict[str, Any] = {
            "start_to_close_timeout": timedelta(seconds=spec.timeout + TIMEOUT_GRACE_SECONDS),
            "heartbeat_timeout": timedelta(seconds=run.options.heartbeat_seconds),
            # A cancelled step (fail-fast, toolplan cancel) has stopped before it is recorded
            # as skipped: its activity cannot record a late success over that.
            "cancellation_type": workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
        }
        if spec.conditional:
            checked: StepResult = await workflow.execute_local_activity(
                "toolplan.check_condition",
                call,
                result_type=StepResult,
                start_to_close_timeout=_RECORD_TIMEOUT,
                retry_policy=_RECORD_RETRY,
            )
            if checked.status != "pending":
                return StepOutcome(
                    checked.status,  # type: ignore[arg-type]
                    error=checked.error,
                    reason=skip_reason(checked.reason),
                )
        if spec.for_each:
            return await self._run_map(run, call, spec, timeouts)
        try:
            result: StepResult = await workflow.execute_activity(
                "toolplan.run_step",
                call,
                result_type=StepResult,
                retry_policy=step_retry_policy(run),
                summary=f"{step_id}: {spec.tool}",
                **timeouts,
            )
        except ActivityError as error:
            if isinstance(error.cause, CancelledError):
                # The step was cancelled (fail-fast, toolplan cancel) and has stopped: that is
                # the scheduler's to record, not a failure of the step.
                raise asyncio.CancelledError() from error
            attempts, message = _final_failure(error)
            last = StepCall(
                run.plan_id,
                step_id,
                run.options,
                prior_attempts=call.prior_attempts,
                attempts=attempts,
                error=message,
            )
            if spec.fallback:
                # The fallback is a tool call too: an activity on any worker, called once
                # (retried only when its worker is lost).
                result = await workflow.execute_activity(
                    "toolplan.give_up",
                    last,
                    result_type=StepResult,
                    retry_policy=_LOST_WORKER_RETRY,
                    summary=f"{step_id}: fallback",
                    **timeouts,
                )
            else:
                result = await workflow.execute_local_activity(
                    "toolplan.give_up",
                    last,
                    result_type=StepResult,
                    start_to_close_timeout=_RECORD_TIMEOUT,
                    retry_policy=_RECORD_RETRY,
                )
        return StepOutcome(result.status, error=result.error)  # type: ignore[arg-type]

    async def _run_map(
        self, run: PlanRun, call: StepCall, spec: Any, timeouts: dict[str, Any]
    ) -> StepOutcome:
        """A ``forEach`` step: its list and item records (a local activity), then each item an
        activity under the plan's concurrency (its retries and fallback inside it), then the
        step's end from the item records."""
        local: dict[str, Any] = {
            "start_to_close_timeout": _RECORD_TIMEOUT,
            "retry_policy": _RECORD_RETRY,
        }
        started: MapStarted = await workflow.execute_local_activity(
            "toolplan.start_map", call, result_type=MapStarted, **local
        )
        if started.final is not None:
            return StepOutcome(started.final.status, error=started.final.error)  # type: ignore[arg-type]
        prior = dict(zip(started.todo, started.prior_attempts, strict=True))
        options = run.options
        # Every attempt, its backoff and the fallback happen inside the item's activity.
        budget = (spec.timeout + options.max_backoff) * spec.max_attempts + spec.timeout
        item_timeouts = {
            **timeouts,
            "start_to_close_timeout": timedelta(seconds=budget + TIMEOUT_GRACE_SECONDS),
        }

        async def one(index: int) -> None:
            await workflow.execute_activity(
                "toolplan.run_item",
                replace(call, item=index, prior_attempts=prior[index]),
                result_type=StepResult,
                retry_policy=_LOST_WORKER_RETRY,
                summary=f"{call.step_id}[{index}]: {spec.tool}",
                **item_timeouts,
            )

        try:
            await run_items(self._slots, started.todo, one)
        except ActivityError as error:
            if isinstance(error.cause, CancelledError):
                raise asyncio.CancelledError() from error
            raise
        result: StepResult = await workflow.execute_local_activity(
            "toolplan.finish_map", call, result_type=StepResult, **local
        )
        return StepOutcome(result.status, error=result.error)  # type: ignore[arg-type]

    async def _cancelled(self, plan_id: str) -> str:
        status: str = await workflow.execute_local_activity(
            "toolplan.cancel_plan",
            plan_id,
            result_type=str,
            start_to_close_timeout=_RECORD_TIMEOUT,
            retry_policy=_RECORD_RETRY,
        )
        return status

    async def _skip(self, plan_id: str, step_id: str, message: str, reason: str | None) -> None:
        await workflow.execute_local_activity(
            "toolplan.skip_step",
            SkipCall(plan_id, step_id, message, reason),
            start_to_close_timeout=_RECORD_TIMEOUT,
            retry_policy=_RECORD_RETRY,
        )
