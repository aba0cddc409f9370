"""The plan workflow's activities: each runs a piece of the in-process engine in a worker.

- ``toolplan.start_plan`` (local): checks the plan against this worker's catalog, creates or
  resumes its execution record (:func:`~toolplan.runs.runner.start_execution`,
  :class:`~toolplan.runs.runner.ResumeState`) and takes the execution's lease for the
  workflow, so an in-process run of the same plan waits instead of running it too;
- ``toolplan.run_step``: one attempt of one step, through
  :meth:`~toolplan.engine.step.StepRunner.run_attempt`, with template inputs read from the store
  (:class:`~toolplan.engine.inputs.StoreInputs`) and every transition recorded there;
- ``toolplan.give_up``: the step's fallback (an activity of its own), or its failure (local);
- ``toolplan.skip_step``, ``toolplan.finish_plan``, ``toolplan.cancel_plan`` (local): records;
- ``toolplan.pause_plan`` (local): when steps wait for approval, whether people decided
  meanwhile (the state to schedule again from), or the execution stored ``waiting`` with its
  lease given back while the workflow waits for :data:`~toolplan.temporal.messages.DECIDED_SIGNAL`.

Retries: a tool's failure raises an :class:`~temporalio.exceptions.ApplicationError` whose
``type`` is the failure kind, non-retryable or with the delay before the next attempt as
``next_retry_delay``: both from the step's retry policy
(:meth:`toolplan.config.retry.RetryPolicy.after`), the one decision the in-process engine makes
too. The count of attempts spent (an earlier run's included) travels in the activity's heartbeat
details, which Temporal hands to the next attempt: an attempt lost with its worker (killed,
partitioned: no heartbeat) or stopped by a store outage is retried without spending one. The
idempotency key stays ``{planId}:{stepId}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any, cast

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError

from toolplan.config import Settings
from toolplan.config.policies import ExecutionOptions
from toolplan.engine.approval import needs_approval
from toolplan.engine.effects import earlier_effects
from toolplan.engine.inputs import StoreInputs
from toolplan.engine.recorder import Recorder
from toolplan.engine.scheduler import StepOutcome
from toolplan.engine.step import AttemptFailed, StepRunner
from toolplan.engine.timeouts import EffectiveTimeout, load_step_timeouts
from toolplan.engine.tracing import StepSpans
from toolplan.errors import ExecutionBusy, InvalidInput, ToolsUnavailable, Unavailable
from toolplan.plan_format.plan import Plan, parse_plan
from toolplan.runs.cancel import end_cancelled
from toolplan.runs.lease import acquire_lease
from toolplan.runs.runner import ResumeState, finish_execution, start_execution
from toolplan.store.lookup import find_plan
from toolplan.store.protocol import (
    TERMINAL_EXECUTION_STATUSES,
    Decision,
    ItemRecord,
    PlanRecord,
    Store,
    TimeoutSource,
    utc_now,
)
from toolplan.temporal.messages import (
    FinishedStep,
    MapStarted,
    PauseCall,
    Paused,
    PlanLayout,
    PlanRun,
    SkipCall,
    StepCall,
    StepResult,
    StepSpec,
    lease_owner,
    skip_reason,
    workflow_id,
)
from toolplan.tools.catalog import ToolCatalog
from toolplan.tools.recorded import RecordedTools

__all__ = ["LEASE_SECONDS", "PlanActivities"]

LEASE_SECONDS = 24 * 3600.0
"""How long the lease a workflow takes on its execution lasts. The workflow's own ID keeps runs on
Temporal apart; the lease only keeps in-process runs of the same plan out. It is released when the
workflow finishes or is cancelled; a workflow terminated by an operator leaves it behind, and the
next workflow of the plan (same owner) takes it back at once."""

_PLAN_CACHE_SIZE = 512
_OUTPUT_CACHE_PLANS = 16
"""Plans whose succeeded outputs a worker keeps (each output is at most the output limit)."""


@contextlib.contextmanager
def _as_activity_errors() -> Iterator[None]:
    """toolplan errors as Temporal failures: bad input is final; infrastructure is retried."""
    try:
        yield
    except InvalidInput as error:
        raise ApplicationError(error.message, type="InvalidInput", non_retryable=True) from None
    except ExecutionBusy as error:
        # Another process runs the plan in-process: wait for it (it may finish the plan).
        raise ApplicationError(error.message, type="ExecutionBusy") from None
    except Unavailable as error:
        raise ApplicationError(error.message, type=type(error).__name__) from None


def _monotonic_since(started_at: str | None) -> float:
    """The :func:`time.monotonic` time of a wall-clock ISO instant (now when unknown): a step's
    duration spans all its attempts, which ran in different processes."""
    if started_at is None:
        return time.monotonic()
    then = datetime.fromisoformat(started_at.replace("Z", "+00:00")).timestamp()
    return time.monotonic() - max(0.0, time.time() - then)


class PlanActivities:
    """The activities of one worker process, sharing its store and tool catalog.

    Given the worker's ``settings`` and no tools were chosen in them, each plan runs with the
    tools recorded with it, as in a lease-queue worker.
    """

    def __init__(
        self, store: Store, catalog: ToolCatalog, settings: Settings | None = None
    ) -> None:
        self.store = store
        self.catalog = catalog
        self.settings = settings
        self._plans: OrderedDict[str, tuple[PlanRecord, Plan]] = OrderedDict()
        self._outputs: OrderedDict[str, dict[str, Any]] = OrderedDict()
        """Per plan, the outputs of its steps read as succeeded (they never change): the items
        of a map, one activity each, read the list they map over once, not once per item."""
        self._recorded = RecordedTools(
            settings,
            on_load=lambda record, sources: activity.logger.info(
                "plan %s: loading the tools recorded with it: %s",
                record.plan_id,
                sources.describe(),
            ),
        )

    def definitions(self) -> list[Callable[..., Any]]:
        """Everything a worker registers."""
        return [
            self.start_plan,
            self.run_step,
            self.give_up,
            self.check_condition,
            self.start_map,
            self.run_item,
            self.finish_map,
            self.skip_step,
            self.finish_plan,
            self.cancel_plan,
            self.pause_plan,
        ]

    async def _plan(self, plan_id: str) -> tuple[PlanRecord, Plan]:
        """The stored plan, parsed once per worker (plans are immutable)."""
        cached = self._plans.get(plan_id)
        if cached is None:
            record = await asyncio.to_thread(find_plan, self.store, plan_id)
            cached = (record, parse_plan(record.plan))
            self._plans[plan_id] = cached
            if len(self._plans) > _PLAN_CACHE_SIZE:
                self._plans.popitem(last=False)
        else:
            self._plans.move_to_end(plan_id)
        return cached

    def _succeeded_outputs(self, plan_id: str) -> dict[str, Any]:
        """The outputs of ``plan_id``'s succeeded steps this worker has read (a few plans kept)."""
        outputs = self._outputs.get(plan_id)
        if outputs is None:
            outputs = self._outputs[plan_id] = {}
            if len(self._outputs) > _OUTPUT_CACHE_PLANS:
                self._outputs.popitem(last=False)
        else:
            self._outputs.move_to_end(plan_id)
        return outputs

    async def _catalog_for(self, record: PlanRecord) -> ToolCatalog:
        """The worker's catalog, or the tools recorded with the plan when none were chosen."""
        return await self._recorded.catalog_for(record) or self.catalog

    async def _runner(
        self, call: StepCall, *, prior_items: dict[str, list[ItemRecord]] | None = None
    ) -> tuple[StepRunner, Recorder]:
        record, plan = await self._plan(call.plan_id)
        options = call.options.execution_options()
        recorder = Recorder(
            self.store,
            call.plan_id,
            output_limit_bytes=options.output_limit_bytes,
            listener=StepSpans(call.plan_id),  # under the activity's span, when one is current
        )
        catalog = await self._catalog_for(record)
        runner = StepRunner(
            plan,
            catalog,
            recorder,
            options,
            request_id=record.request_id,
            plan_id=call.plan_id,
            store=self.store,
            inputs=StoreInputs(
                self.store, call.plan_id, succeeded=self._succeeded_outputs(call.plan_id)
            ),
            prior_items=prior_items,
            cache=self.store,
            timeouts=None
            if call.timeout is None
            else {
                call.step_id: EffectiveTimeout(
                    call.timeout,
                    cast(TimeoutSource, call.timeout_source or "default"),
                )
            },
            # A later version of a request never repeats a side effect an earlier one had.
            earlier=await asyncio.to_thread(earlier_effects, self.store, record, catalog),
            decisions=await self._decisions(call.plan_id, plan, catalog, options),
        )
        return runner, recorder

    async def _decisions(
        self, plan_id: str, plan: Plan, catalog: ToolCatalog, options: ExecutionOptions
    ) -> dict[str, Decision]:
        """People's decisions on the plan's steps, read only when a step may wait for one (a
        gated step runs its tool only with an approval of its exact arguments; one that
        ``approve_all`` recorded counts too, so a retried attempt does not record another)."""
        gated = any(needs_approval(step, catalog.get(step.tool)) for step in plan.steps)
        if not gated:
            return {}
        # Read for every item of a map: its items are left out (only decisions are wanted).
        execution = await asyncio.to_thread(self.store.get_execution, plan_id, items=False)
        if execution is None:
            return {}
        return {s.step_id: s.decision for s in execution.steps if s.decision is not None}

    async def _step_started(self, plan_id: str, step_id: str) -> float:
        execution = await asyncio.to_thread(self.store.get_execution, plan_id, items=False)
        started_at = None
        if execution is not None:
            with contextlib.suppress(KeyError):
                started_at = execution.step(step_id).started_at
        return _monotonic_since(started_at)

    async def _cancel_requested(self, plan_id: str) -> bool:
        """Whether a cancel of the plan is recorded in the store; if so, cancel its workflow
        (idempotent: Temporal keeps one cancel request per run)."""
        try:
            requested = await asyncio.to_thread(self.store.cancel_requested, plan_id)
        except Unavailable:
            return False  # the store is down: the step's own writes will say so
        if requested:
            handle = activity.client().get_workflow_handle(workflow_id(plan_id))
            with contextlib.suppress(RPCError):  # the workflow is already closing
                await handle.cancel()
        return requested

    async def _heartbeat(self, failures: int, call: StepCall) -> None:
        """Tell Temporal the worker is alive (and carry the failure count) while a tool runs,
        and watch the store for a cancel request of the plan (``toolplan cancel``, the API's
        ``cancelExecution``): the workflow is then cancelled, and that cancellation reaches this
        activity through the heartbeats."""
        options = call.options
        every = min(options.cancel_poll, options.heartbeat_seconds / 3)
        watching = True
        while True:
            activity.heartbeat(failures)
            if watching and await self._cancel_requested(call.plan_id):
                watching = False
            await asyncio.sleep(every)

    @contextlib.asynccontextmanager
    async def _heartbeating(self, failures: int, call: StepCall) -> Any:
        if activity.info().is_local:  # a local activity has no heartbeat: it is the workflow's
            yield
            return
        task = asyncio.create_task(self._heartbeat(failures, call))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _stop_if_cancel_requested(self, call: StepCall) -> None:
        """A cancel requested before this step began: do not call its tool; wait (heartbeating)
        until the workflow's cancellation arrives."""
        if await self._cancel_requested(call.plan_id):
            async with self._heartbeating(0, call):
                await activity.wait_for_cancelled()
            raise asyncio.CancelledError()

    # -- activities ----------------------------------------------------------------------------

    @activity.defn(name="toolplan.start_plan")
    async def start_plan(self, run: PlanRun) -> PlanLayout:
        """Create or resume the execution record and take its lease; the DAG and what earlier
        runs left (or the final status, if the execution already finished)."""
        store, plan_id = self.store, run.plan_id
        with _as_activity_errors():
            record, _ = await self._plan(plan_id)
            existing = await asyncio.to_thread(store.get_execution, plan_id)
            if existing is not None and existing.status in TERMINAL_EXECUTION_STATUSES:
                return PlanLayout(finished_status=existing.status)
            try:
                catalog = await self._catalog_for(record)
                plan, analysis, execution = await start_execution(store, catalog, record)
            except ToolsUnavailable as error:
                # This worker lacks the tools the plan was made with: retried (by this or
                # another worker) until one has them; `toolplan show` says why it waits.
                if existing is not None:
                    await asyncio.to_thread(
                        store.set_execution_status, plan_id, existing.status, error=error.message
                    )
                raise
            except InvalidInput as error:
                if existing is not None:  # queued by the starter: it will never run here
                    await asyncio.to_thread(
                        store.set_execution_status,
                        plan_id,
                        "failed",
                        error=error.message,
                        finished_at=utc_now(),
                    )
                raise
            current = await acquire_lease(store, execution, lease_owner(plan_id), LEASE_SECONDS)
            if current.started_at is None:
                await asyncio.to_thread(
                    store.set_execution_status, plan_id, "running", started_at=utc_now()
                )
        resume = ResumeState.of(current)
        options = run.options
        execution_options = options.execution_options()
        timeouts = await load_step_timeouts(
            store, plan, execution_options.timeouts, options.default_timeout
        )
        return PlanLayout(
            order=list(analysis.order),
            dependencies={step: list(deps) for step, deps in analysis.dependencies.items()},
            after=analysis.runs_after(),
            steps={
                step.id: StepSpec(
                    tool=step.tool,
                    timeout=timeouts[step.id].seconds,
                    max_attempts=execution_options.retry.for_call(
                        catalog.get(step.tool), step.max_attempts
                    ).max_attempts,
                    fallback=step.fallback is not None,
                    timeout_source=timeouts[step.id].source,
                    conditional=step.when is not None,
                    for_each=step.for_each is not None,
                )
                for step in plan.steps
            },
            finished={
                step_id: FinishedStep(outcome.status, outcome.error)
                for step_id, outcome in resume.finished.items()
            },
            prior_attempts=resume.prior_attempts,
            cancel_requested=current.cancel_requested_at is not None,
        )

    @activity.defn(name="toolplan.run_step")
    async def run_step(self, call: StepCall) -> StepResult:
        """One attempt of one step; raises an ApplicationError when the tool call failed."""
        info = activity.info()
        # Attempts spent so far, an earlier run's included: a lost worker's does not count.
        failures = int(info.heartbeat_details[0]) if info.heartbeat_details else call.prior_attempts
        first = info.attempt == 1
        attempt = call.prior_attempts + info.attempt
        with _as_activity_errors():
            await self._stop_if_cancel_requested(call)
            started = (
                time.monotonic() if first else await self._step_started(call.plan_id, call.step_id)
            )
            runner, recorder = await self._runner(call)
            try:
                async with self._heartbeating(failures, call):
                    outcome = await runner.run_attempt(
                        call.step_id, attempt, first=first, started=started
                    )
            except AttemptFailed as failure:
                failures += 1
                activity.heartbeat(failures)  # the next attempt starts from this count
                # The same decision as in process (RetryPolicy.after): whether to retry, and when.
                delay = runner.after(call.step_id, failure, failures)
                raise ApplicationError(
                    str(failure),
                    {
                        "attempts": attempt,
                        "error": runner.final_error(call.step_id, failure, failures),
                    },
                    type=failure.kind,
                    non_retryable=delay is None,
                    next_retry_delay=None if delay is None else timedelta(seconds=delay),
                ) from None
            finally:
                await asyncio.to_thread(recorder.close)
        return StepResult(outcome.status, outcome.error)

    @activity.defn(name="toolplan.give_up")
    async def give_up(self, call: StepCall) -> StepResult:
        """No attempt is left: the step's fallback, or its failure, recorded."""
        with _as_activity_errors():
            if not activity.info().is_local:  # the fallback is a tool call: not after a cancel
                await self._stop_if_cancel_requested(call)
            started = await self._step_started(call.plan_id, call.step_id)
            runner, recorder = await self._runner(call)
            try:
                async with self._heartbeating(0, call):
                    outcome = await runner.give_up(
                        call.step_id, call.attempts, started, call.error or "failed"
                    )
            finally:
                await asyncio.to_thread(recorder.close)
        return StepResult(outcome.status, outcome.error)

    @activity.defn(name="toolplan.check_condition")
    async def check_condition(self, call: StepCall) -> StepResult:
        """A step's ``when``: status ``pending`` when it holds (the step runs next); else the
        step is recorded skipped (reason ``condition``), or failed when it cannot resolve."""
        with _as_activity_errors():
            runner, recorder = await self._runner(call)
            try:
                outcome = await runner.check_condition(call.step_id)
            finally:
                await asyncio.to_thread(recorder.close)
        if outcome is None:
            return StepResult("pending")
        return StepResult(outcome.status, outcome.error, outcome.reason)

    @activity.defn(name="toolplan.start_map")
    async def start_map(self, call: StepCall) -> MapStarted:
        """A ``forEach`` step begins (or resumes): its list resolved and its items recorded;
        the items left to run, or the step's final result (a list it cannot run over)."""
        with _as_activity_errors():
            execution = await asyncio.to_thread(self.store.get_execution, call.plan_id)
            prior = None if execution is None else execution.step(call.step_id).items
            runner, recorder = await self._runner(
                call, prior_items={call.step_id: prior} if prior is not None else None
            )
            try:
                begun = await runner.for_each.start(call.step_id, time.monotonic())
            finally:
                await asyncio.to_thread(recorder.close)
        if isinstance(begun, StepOutcome):
            return MapStarted(final=StepResult(begun.status, begun.error))
        return MapStarted(
            todo=begun.todo, prior_attempts=[begun.records[i].attempts for i in begun.todo]
        )

    @activity.defn(name="toolplan.run_item")
    async def run_item(self, call: StepCall) -> StepResult:
        """One item of a ``forEach`` step to its final state (its retries and fallback inside
        this activity), recorded in the store."""
        assert call.item is not None
        with _as_activity_errors():
            await self._stop_if_cancel_requested(call)
            runner, recorder = await self._runner(call)
            try:
                async with self._heartbeating(0, call):
                    record = await runner.for_each.run_item_of(
                        call.step_id, call.item, call.prior_attempts
                    )
            finally:
                await asyncio.to_thread(recorder.close)
        return StepResult(record.status, record.error)

    @activity.defn(name="toolplan.finish_map")
    async def finish_map(self, call: StepCall) -> StepResult:
        """What the items of a ``forEach`` step add up to, recorded as the step's end."""
        with _as_activity_errors():
            execution = await asyncio.to_thread(self.store.get_execution, call.plan_id)
            assert execution is not None
            records = execution.step(call.step_id).items or []
            started = await self._step_started(call.plan_id, call.step_id)
            runner, recorder = await self._runner(call)
            try:
                outcome = await runner.for_each.finish(call.step_id, records, started)
            finally:
                await asyncio.to_thread(recorder.close)
        return StepResult(outcome.status, outcome.error)

    @activity.defn(name="toolplan.skip_step")
    async def skip_step(self, skip: SkipCall) -> None:
        """Record a step that will not run."""
        with _as_activity_errors():
            _, plan = await self._plan(skip.plan_id)
            recorder = Recorder(self.store, skip.plan_id, output_limit_bytes=0)
            try:
                await recorder.skipped(
                    skip.step_id,
                    plan.step(skip.step_id).tool,
                    skip.reason,
                    reason=skip_reason(skip.kind),
                )
            finally:
                await asyncio.to_thread(recorder.close)

    @activity.defn(name="toolplan.finish_plan")
    async def finish_plan(self, plan_id: str) -> str:
        """Store the final status the step records add up to; release the lease."""
        with _as_activity_errors():
            status = await finish_execution(self.store, plan_id)
            await asyncio.to_thread(self.store.release, plan_id, lease_owner(plan_id))
        return status

    @activity.defn(name="toolplan.pause_plan")
    async def pause_plan(self, call: PauseCall) -> Paused:
        """Steps wait for approval and nothing else can run. Decided on meanwhile: the lease is
        taken back (the execution ``running`` again) and the state to schedule again from is
        returned. Ended meanwhile (a cancel): its status. Else the execution is stored
        ``waiting`` and its lease given back: nobody runs it while a person thinks."""
        store, plan_id, owner = self.store, call.plan_id, lease_owner(call.plan_id)
        with _as_activity_errors():
            execution = await asyncio.to_thread(store.get_execution, plan_id)
            if execution is None or execution.status in TERMINAL_EXECUTION_STATUSES:
                await asyncio.to_thread(store.release, plan_id, owner)
                return Paused(final_status=execution.status if execution else "cancelled")
            still = [
                step_id
                for step_id in call.waiting
                if execution.step(step_id).status == "waiting_approval"
            ]
            if len(still) == len(call.waiting):
                await finish_execution(store, plan_id)  # ``waiting``: its finish time unset
                await asyncio.to_thread(store.release, plan_id, owner)
                return Paused()
            try:
                current = await acquire_lease(store, execution, owner, LEASE_SECONDS)
            except ExecutionBusy:
                # Another process continued it (a client without Temporal settings): once it
                # has finished, so has this workflow; until then, retried.
                latest = await asyncio.to_thread(store.get_execution, plan_id)
                if latest is not None and latest.status in TERMINAL_EXECUTION_STATUSES:
                    return Paused(final_status=latest.status)
                raise
        resume = ResumeState.of(current)
        finished = {
            step_id: FinishedStep(outcome.status, outcome.error)
            for step_id, outcome in resume.finished.items()
        }
        # Steps still waiting keep their outcome: they are not asked about a second time.
        finished.update({step_id: FinishedStep("waiting") for step_id in still})
        return Paused(decided=True, finished=finished)

    @activity.defn(name="toolplan.cancel_plan")
    async def cancel_plan(self, plan_id: str) -> str:
        """The workflow was cancelled (a cancel request in the store, or an operator): steps that
        were running or had not started are recorded ``cancelled``, finished ones are kept, the
        execution ends ``cancelled`` (as in the in-process engine), and the lease is released."""
        store = self.store
        with _as_activity_errors():
            execution = await asyncio.to_thread(store.get_execution, plan_id)
            if execution is None or execution.status in TERMINAL_EXECUTION_STATUSES:
                return execution.status if execution else "cancelled"
            recorder = Recorder(store, plan_id, output_limit_bytes=0)
            try:
                await end_cancelled(store, plan_id, recorder)
            finally:
                await asyncio.to_thread(recorder.close)
            await asyncio.to_thread(store.release, plan_id, lease_owner(plan_id))
        return "cancelled"
