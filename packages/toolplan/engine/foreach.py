"""Running a ``forEach`` step: its list resolved (and approved at once when its tool is gated),
then one call per item, each with the step's timeout, retries and fallback and recorded on its
own, at most the plan's concurrency at a time; items an earlier run finished are not run again.

The pure pieces (the list and its limit, what the items add up to, running them under the
concurrency limit) are in :mod:`toolplan.engine.items`. This is the part with effects, kept apart
from :class:`~toolplan.engine.step.StepRunner` so that each reads on its own; it calls tools
through the runner's own machinery (:class:`StepCalls`), so an item is called, timed and recorded
as a plain step is, and a change there reaches both.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any, Literal, Protocol

from toolplan.config.policies import ExecutionOptions
from toolplan.engine.attempts import (
    RUN_STOPPERS,
    FallbackFailed,
    GaveUp,
    internal_error,
    with_retries,
)
from toolplan.engine.inputs import StepInputs
from toolplan.engine.items import (
    MapStart,
    item_list,
    map_result,
    run_items,
    unfinished_items,
)
from toolplan.engine.recorder import Recorder
from toolplan.engine.scheduler import Slots, StepOutcome
from toolplan.engine.timeouts import EffectiveTimeout
from toolplan.engine.toolcall import AttemptFailed
from toolplan.errors import TemplateError
from toolplan.plan_format.plan import Step
from toolplan.plan_format.templates import INDEX, ITEM, resolve
from toolplan.store.protocol import ItemRecord

__all__ = ["ForEachRunner", "StepCalls"]


class StepCalls(Protocol):
    """What running items needs of the step runner: how one step is looked up, called, timed,
    retried, fallen back from, approved and finished. :class:`~toolplan.engine.step.StepRunner`
    is the one implementation; a protocol keeps this module from importing it (it imports this
    one)."""

    def step(self, step_id: str) -> Step:
        """The plan's step ``step_id``."""
        ...

    def arguments_schema(self, tool: str) -> dict[str, Any]:
        """``tool``'s argument schema, for resolving templates as its arguments expect."""
        ...

    def effective_timeout(self, step_id: str) -> EffectiveTimeout:
        """Seconds one attempt of ``step_id`` may take, and where that came from."""
        ...

    def max_attempts(self, step_id: str) -> int:
        """Attempts ``step_id`` gets for transient errors."""
        ...

    def final_error(self, step_id: str, failure: AttemptFailed, attempts_made: int) -> str:
        """The error a step ends with once its last attempt failed with ``failure``."""
        ...

    def gated(self, step: Step) -> bool:
        """Whether ``step``'s tool is called only once a person approved the call."""
        ...

    async def wait_for_approval(self, step: Step, arguments: Any) -> StepOutcome | None:
        """``None`` when an approval covers ``arguments``; else the step waits for one."""
        ...

    def backoff(self, failures: int) -> float:
        """Seconds to wait before the next attempt, after ``failures`` failed ones."""
        ...

    async def call_tool(
        self, step: Step, arguments: Any, attempt: int, timeout: float, *, item: int | None = None
    ) -> Any:
        """One call of ``step``'s tool; raises
        :class:`~toolplan.engine.toolcall.AttemptFailed` when it fails."""
        ...

    async def call_fallback(
        self,
        step: Step,
        scope: Mapping[str, Any],
        attempts: int,
        error_text: str,
        *,
        item: int | None = None,
    ) -> Any:
        """One call of ``step``'s fallback; raises
        :class:`~toolplan.engine.attempts.FallbackFailed` when it fails too."""
        ...

    async def finish(
        self,
        step: Step,
        status: Literal["succeeded", "failed"],
        attempts: int,
        started: float,
        *,
        output: Any = None,
        error: str | None = None,
        used_fallback: bool = False,
    ) -> StepOutcome:
        """Record how ``step`` ended, even while the run is being cancelled."""
        ...


class ForEachRunner:
    """Runs the ``forEach`` steps of one plan, for the step runner that owns it.

    Stateless between steps except through ``inputs`` and the store, like the step runner: a
    backend that runs each item elsewhere (the Temporal workflow, one activity per item) composes
    :meth:`start`, :meth:`run_item_of` for each item, and :meth:`finish`; :meth:`run` is all of
    them in this process.
    """

    def __init__(
        self,
        steps: StepCalls,
        *,
        recorder: Recorder,
        options: ExecutionOptions,
        inputs: StepInputs,
        slots: Slots,
        prior_items: Mapping[str, list[ItemRecord]] | None = None,
    ) -> None:
        self.steps = steps
        self.recorder = recorder
        self.options = options
        self.inputs = inputs
        self.slots = slots
        """The plan's concurrency limit, shared with the scheduler: each item holds a slot."""
        self.prior_items = dict(prior_items or {})
        """Item records an earlier run of a ``forEach`` step left (resume runs the others)."""

    async def run(self, step: Step, started: float) -> StepOutcome:
        """A ``forEach`` step: one call per item, each with its own timeout, retries and
        fallback, at most the plan's concurrency at a time; items finished by an earlier run
        are not run again."""
        begun = await self.start(step.id, started)
        if isinstance(begun, StepOutcome):
            return begun
        done = {record.index: record for record in begun.records}

        async def one(index: int) -> None:
            done[index] = await self.run_item(
                step, index, begun.items[index], begun.outputs, done[index].attempts
            )

        await run_items(self.slots, begun.todo, one)
        return await self.finish(step.id, list(done.values()), started)

    async def start(self, step_id: str, started: float) -> MapStart | StepOutcome:
        """Resolve a ``forEach`` step's list and record its items (those an earlier run
        finished kept): what is left to run, or the step's final outcome when its list cannot be
        resolved or is over the limit (failed, before any call)."""
        step = self.steps.step(step_id)
        outputs = await self.inputs.outputs_for(step)
        try:
            items = item_list(step, outputs, self.options.max_items)
            if self.steps.gated(step):
                # One approval for the whole list: every item's arguments are shown at once.
                schema = self.steps.arguments_schema(step.tool)
                calls = [
                    resolve(step.parameters, {**outputs, ITEM: item, INDEX: index}, schema)
                    for index, item in enumerate(items)
                ]
                waiting = await self.steps.wait_for_approval(step, calls)
                if waiting is not None:
                    return waiting
        except TemplateError as error:
            return await self.steps.finish(step, "failed", 0, started, error=str(error))
        records, todo = unfinished_items(len(items), self.prior_items.get(step.id))
        await self.recorder.items_known(step.id, step.tool, records)
        return MapStart(items, records, todo, outputs)

    async def run_item_of(self, step_id: str, index: int, prior_attempts: int) -> ItemRecord:
        """:meth:`run_item` for an item named by its index (the list resolved again from the
        step's inputs: a backend that runs each item elsewhere)."""
        step = self.steps.step(step_id)
        outputs = await self.inputs.outputs_for(step)
        items = item_list(step, outputs, self.options.max_items)
        return await self.run_item(step, index, items[index], outputs, prior_attempts)

    async def finish(self, step_id: str, records: list[ItemRecord], started: float) -> StepOutcome:
        """Record what the items of a ``forEach`` step add up to (:func:`map_result`)."""
        result = map_result(records)
        return await self.steps.finish(
            self.steps.step(step_id),
            result.status,
            result.attempts,
            started,
            output=result.output,
            error=result.error,
            used_fallback=result.used_fallback,
        )

    async def run_item(
        self, step: Step, index: int, item: Any, outputs: Mapping[str, Any], prior_attempts: int
    ) -> ItemRecord:
        """One item of a ``forEach`` step to its final state, recorded: its parameters
        resolved with ``{{$item}}`` and ``{{$index}}``, the tool called with the step's timeout
        and retries, then its fallback once. An unexpected exception fails the item, recorded
        (the other items go on), as it fails a plain step."""
        started = time.monotonic()
        try:
            return await self._run_item(step, index, item, outputs, prior_attempts, started)
        except RUN_STOPPERS:
            raise
        except Exception as error:
            failed = ItemRecord(
                index, "failed", prior_attempts, error=internal_error(step.id, error, item=index)
            )
            return await self._item_done(step, failed, started)

    async def _run_item(
        self,
        step: Step,
        index: int,
        item: Any,
        outputs: Mapping[str, Any],
        prior_attempts: int,
        started: float,
    ) -> ItemRecord:
        scope = {**outputs, ITEM: item, INDEX: index}
        attempt = prior_attempts
        try:
            arguments = resolve(step.parameters, scope, self.steps.arguments_schema(step.tool))
        except TemplateError as error:
            return await self._item_done(
                step, ItemRecord(index, "failed", attempt, error=str(error)), started
            )
        timeout = self.steps.effective_timeout(step.id)

        async def call(number: int, first: bool) -> tuple[int, Any]:
            await self.recorder.item_started(step.id, step.tool, index, number)
            output = await self.steps.call_tool(
                step, arguments, number, timeout.seconds, item=index
            )
            return number, output

        result = await with_retries(
            call,
            prior=prior_attempts,
            max_attempts=self.steps.max_attempts(step.id),
            retrying=lambda number, failed: self.recorder.retrying(
                step.id, step.tool, number, str(failed), item=index
            ),
            backoff=self.steps.backoff,
        )
        if not isinstance(result, GaveUp):
            attempt, output = result
            record = ItemRecord(index, "succeeded", attempt, output=output)
            return await self._item_done(step, record, started)
        attempt = result.attempt
        error_text = self.steps.final_error(step.id, result.failure, attempt - prior_attempts)
        if step.fallback is None:
            return await self._item_done(
                step, ItemRecord(index, "failed", attempt, error=error_text), started
            )
        self.recorder.falling_back(
            step.id, step.tool, attempt, error_text, step.fallback.tool, item=index
        )
        try:
            output = await self.steps.call_fallback(step, scope, attempt, error_text, item=index)
        except FallbackFailed as failed:
            return await self._item_done(
                step, ItemRecord(index, "failed", attempt, error=str(failed)), started
            )
        record = ItemRecord(index, "succeeded", attempt, output=output, used_fallback=True)
        return await self._item_done(step, record, started)

    async def _item_done(self, step: Step, record: ItemRecord, started: float) -> ItemRecord:
        """Record an item's final state, even when the run is being cancelled meanwhile (its
        tool has returned: a resume must not call it again)."""
        duration_ms = round((time.monotonic() - started) * 1000, 3)
        recording = asyncio.ensure_future(
            self.recorder.item_finished(step.id, step.tool, record, duration_ms=duration_ms)
        )
        try:
            return await asyncio.shield(recording)
        except asyncio.CancelledError:
            stored = await recording
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            return stored
