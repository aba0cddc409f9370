"""The in-process engine: run (or resume) the steps of one stored plan under a lease.

It is composed of parts every execution backend shares, so a backend that runs steps elsewhere
(a Temporal workflow whose steps are activities) reuses them instead of copying them:

- :func:`start_execution` checks the plan against the catalog and creates the execution record;
- :class:`ResumeState` is what an interrupted run left: final outcomes, outputs, attempts;
- :func:`toolplan.engine.scheduler.schedule` decides what runs when (pure, eager);
- :class:`toolplan.engine.step.StepRunner` runs one step and records every transition through a
  :class:`toolplan.engine.recorder.Recorder`, reading template inputs from a
  :class:`toolplan.engine.inputs.StepInputs` (memory here, the store for a remote step);
- :func:`finish_execution` stores the final status from the step records;
- :func:`~toolplan.runs.cancel.run_until_cancelled` and
  :func:`~toolplan.runs.cancel.end_cancelled` stop the schedule when a cancel is requested
  and record the execution ``cancelled``.

Resume works from the durable step records: steps that succeeded keep their outputs and are never
called again; a step that was running when the process died runs again (at-least-once), with the
same idempotency key.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from toolplan.engine.effects import EarlierEffect, earlier_effects
from toolplan.engine.inputs import MemoryInputs, stored_outputs
from toolplan.engine.recorder import Recorder, off_loop
from toolplan.engine.result import overall_status
from toolplan.engine.scheduler import Slots, StepOutcome, schedule
from toolplan.engine.step import StepRunner
from toolplan.engine.timeouts import EffectiveTimeout, read_step_timeouts
from toolplan.engine.tracing import execution_span, record_execution, with_step_spans
from toolplan.errors import ExecutionBusy
from toolplan.plan_format.plan import Plan, parse_plan
from toolplan.runs.cancel import end_cancelled, run_until_cancelled
from toolplan.runs.context import ExecutionContext, new_worker_id
from toolplan.runs.lease import take_lease, while_holding
from toolplan.store.protocol import (
    TERMINAL_EXECUTION_STATUSES,
    Decision,
    ExecutionLog,
    ExecutionRecord,
    ItemRecord,
    PlanRecord,
    SkipReason,
    Store,
    utc_now,
)
from toolplan.tools.catalog import ToolCatalog
from toolplan.validation import Analysis, check_tools, ordered_for

__all__ = [
    "ExecutionBusy",
    "ExecutionContext",
    "ResumeState",
    "decided_meanwhile",
    "finish_execution",
    "new_worker_id",
    "run_plan_steps",
    "start_execution",
]


@dataclass(frozen=True)
class ResumeState:
    """What earlier, interrupted runs of an execution left in its step records."""

    finished: dict[str, StepOutcome] = field(default_factory=dict)
    """Steps in a final state: the scheduler does not run them again."""
    outputs: dict[str, Any] = field(default_factory=dict)
    """Outputs of the succeeded steps (template inputs of the others)."""
    prior_attempts: dict[str, int] = field(default_factory=dict)
    """Attempts already made by unfinished steps (running when a process died, or cancelled
    and reopened): attempt numbers go on from there."""
    items: dict[str, list[ItemRecord]] = field(default_factory=dict)
    """Item records of unfinished ``forEach`` steps: only the items that did not finish run."""
    decisions: dict[str, Decision] = field(default_factory=dict)
    """People's decisions on steps that waited for approval (a ``waiting_approval`` step is
    not final: it runs again, and waits again unless an approval covers its arguments)."""

    @classmethod
    def of(cls, execution: ExecutionRecord) -> ResumeState:
        """Read it from an execution record."""
        return cls(
            finished={
                s.step_id: StepOutcome(s.status, output=s.output, error=s.error, reason=s.reason)
                for s in execution.steps
                if s.status in ("succeeded", "failed", "skipped", "denied")
            },
            items={
                s.step_id: list(s.items)
                for s in execution.steps
                if s.items is not None and s.status in ("running", "pending", "cancelled")
            },
            outputs=stored_outputs(execution),
            prior_attempts={
                s.step_id: s.attempts
                for s in execution.steps
                if s.status in ("running", "pending") and s.attempts
            },
            decisions={s.step_id: s.decision for s in execution.steps if s.decision is not None},
        )


def _checked(record: PlanRecord, catalog: ToolCatalog) -> tuple[Plan, Analysis]:
    plan = parse_plan(record.plan)
    # The plan was fully validated when stored; only the catalog can have changed since.
    check_tools(plan, catalog)
    return plan, ordered_for(Analysis.from_json(record.analysis), plan, catalog)


def _create(store: ExecutionLog, plan: Plan, plan_id: str, status: str) -> ExecutionRecord:
    pairs = [(step.id, step.tool) for step in plan.steps]
    return store.create_execution(plan_id, pairs, status=status)  # type: ignore[arg-type]


async def decided_meanwhile(
    store: ExecutionLog,
    plan_id: str,
    outcomes: Mapping[str, StepOutcome],
    recorder: Recorder,
) -> ResumeState | None:
    """When steps of this run wait for approval: the state to schedule again from if a person
    decided on one of them while the rest ran (``None`` when nobody did, or nothing waits), so
    an approval given meanwhile is not left for a later run."""
    if not any(outcome.status == "waiting" for outcome in outcomes.values()):
        return None
    await recorder.drain()
    latest = await asyncio.to_thread(store.get_execution, plan_id)
    if latest is None:
        return None
    waiting = {step for step, outcome in outcomes.items() if outcome.status == "waiting"}
    still = {
        step: outcomes[step] for step in waiting if latest.step(step).status == "waiting_approval"
    }
    if len(still) == len(waiting):
        return None
    state = ResumeState.of(latest)
    # Steps still waiting keep their outcome: they are not asked about a second time.
    return replace(state, finished={**state.finished, **still})


async def start_execution(
    store: ExecutionLog, catalog: ToolCatalog, record: PlanRecord, *, status: str = "running"
) -> tuple[Plan, Analysis, ExecutionRecord]:
    """The stored plan and analysis, checked against ``catalog``, and its execution record
    (created with every step ``pending`` unless it exists)."""
    plan, analysis = _checked(record, catalog)
    execution = await asyncio.to_thread(_create, store, plan, record.plan_id, status)
    return plan, analysis, execution


def _finished(store: ExecutionLog, plan_id: str) -> ExecutionRecord:
    """Store the overall status the step records add up to, with the finish time (blocking)."""
    final = store.get_execution(plan_id)
    assert final is not None
    status = overall_status(final.steps)
    # A waiting execution has not finished: a person's decision continues it.
    finished_at = None if status == "waiting" else utc_now()
    store.set_execution_status(plan_id, status, finished_at=finished_at)
    return replace(final, status=status, finished_at=finished_at)


async def finish_execution(store: ExecutionLog, plan_id: str) -> str:
    """Store the overall status the step records add up to, with the finish time; return it."""
    return (await asyncio.to_thread(_finished, store, plan_id)).status


@dataclass(frozen=True)
class _Opened:
    """What a run starts from: the execution under its lease, and what its steps need."""

    current: ExecutionRecord
    timeouts: dict[str, EffectiveTimeout]
    earlier: dict[str, EarlierEffect]


def _open(ctx: ExecutionContext, record: PlanRecord, plan: Plan) -> _Opened | ExecutionRecord:
    """Everything the store says before the first step, in one trip off the event loop: the
    execution record (created unless it exists), its lease with the state under it, the start
    time, the tools' timeout history and the side effects of earlier versions of the request.
    A finished (or cancelled) execution is returned as it stands."""
    store, plan_id = ctx.store, record.plan_id
    execution = _create(store, plan, plan_id, "running")
    try:
        current = take_lease(store, execution, ctx.worker_id, ctx.options.lease_seconds)
    except ExecutionBusy:
        # Cancelled (or finished) between our first look and the lease: nothing left to run.
        latest = store.get_execution(plan_id)
        if latest is not None and latest.status in TERMINAL_EXECUTION_STATUSES:
            return latest
        raise
    if current.started_at is None:
        started_at = utc_now()
        store.set_execution_status(plan_id, "running", started_at=started_at)
        current = replace(current, started_at=started_at)
    options = ctx.options
    return _Opened(
        current,
        read_step_timeouts(store, plan, options.timeouts, options.default_timeout),
        earlier_effects(store, record, ctx.catalog),
    )


def _close(store: Store, plan_id: str, worker_id: str, *, cancelled: bool) -> ExecutionRecord:
    """After the last step, in one trip: the final status (unless cancelled: already stored),
    the lease given back, the final record."""
    final = None if cancelled else _finished(store, plan_id)
    store.release(plan_id, worker_id)
    if final is None:
        final = store.get_execution(plan_id)
        assert final is not None
    return replace(final, worker_id=None, owner_host=None, owner_pid=None, lease_until=None)


async def run_plan_steps(ctx: ExecutionContext, record: PlanRecord) -> ExecutionRecord:
    """Run every unfinished step of a stored plan in this process, under the execution's lease,
    and store the final status (``cancelled`` when a cancel was requested meanwhile).

    The state the steps resume from is read with the lease (:func:`acquire_lease`). The run is
    one OpenTelemetry span with a child span per step (:mod:`toolplan.engine.tracing`).
    """
    steps = len(record.plan.get("steps") or ())
    with execution_span(record.plan_id, record.request_id, steps) as span:
        traced = replace(ctx, listener=with_step_spans(ctx.listener, record.plan_id, span))
        final = await _run_plan_steps(traced, record)
        failed = [step.step_id for step in final.steps if step.status == "failed"]
        record_execution(span, final.status, failed)
        return final


async def _run_plan_steps(ctx: ExecutionContext, record: PlanRecord) -> ExecutionRecord:
    store, plan_id = ctx.store, record.plan_id
    plan, analysis = _checked(record, ctx.catalog)
    lease = ctx.options.lease_seconds
    opened = await off_loop(store, _open, ctx, record, plan)
    if not isinstance(opened, _Opened):
        return opened
    current = opened.current

    resume = ResumeState.of(current)
    recorder = Recorder(
        store, plan_id, output_limit_bytes=ctx.options.output_limit_bytes, listener=ctx.listener
    )
    slots = Slots(ctx.options.concurrency)
    runner = StepRunner(
        plan,
        ctx.catalog,
        recorder,
        ctx.options,
        request_id=record.request_id,
        plan_id=plan_id,
        store=store,
        inputs=MemoryInputs(resume.outputs),
        prior_attempts=resume.prior_attempts,
        prior_items=resume.items,
        slots=slots,
        cache=store,
        timeouts=opened.timeouts,
        earlier=opened.earlier,
        decisions=resume.decisions,
    )
    tools = {step.id: step.tool for step in plan.steps}

    async def skip(step_id: str, message: str, reason: SkipReason | None) -> None:
        await recorder.skipped(step_id, tools[step_id], message, reason=reason)

    async def run_steps() -> None:
        finished = resume.finished
        while True:
            outcomes = await schedule(
                analysis.order,
                analysis.dependencies,
                runner.run,
                skip,
                concurrency=ctx.options.concurrency,
                fail_fast=ctx.options.fail_fast,
                finished=finished,
                slots=slots,
                after=analysis.runs_after(),
            )
            decided = await decided_meanwhile(store, plan_id, outcomes, recorder)
            if decided is None:
                return
            runner.decisions.update(decided.decisions)
            finished = decided.finished

    try:
        # A cancel requested before we held the lease (or while nobody did) ends it right away.
        cancelled = current.cancel_requested_at is not None or await while_holding(
            store,
            plan_id,
            ctx.worker_id,
            lease,
            run_until_cancelled(
                store,
                plan_id,
                run_steps(),
                poll=ctx.options.cancel_poll,
            ),
        )
        if cancelled:
            await end_cancelled(store, plan_id, recorder)
    finally:
        await recorder.drain()

    return await off_loop(
        store, functools.partial(_close, cancelled=cancelled), store, plan_id, ctx.worker_id
    )
