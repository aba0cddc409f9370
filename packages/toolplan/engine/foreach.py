"""Running a ``forEach`` step: its list resolved (and approved at once when its tool is gated),
then one call per item (:class:`ItemCall`), each with the step's timeout, retries and fallback
and recorded on its own, at most the plan's concurrency at a time; items an earlier run finished
are not run again.

The pure pieces (the list and its limit, what the items add up to, running them under the
concurrency limit) are in :mod:`toolplan.engine.items`. An item is called, timed, retried, fallen
back from and recorded by the same attempt path as a plain step
(:class:`~toolplan.engine.attempts.ToolCall`), so a change there reaches both.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from toolplan.engine.attempts import Caller, Ending, ToolCall, surviving_cancel
from toolplan.engine.items import (
    MapStart,
    item_list,
    map_result,
    run_items,
    unfinished_items,
)
from toolplan.engine.scheduler import StepOutcome
from toolplan.errors import TemplateError
from toolplan.plan_format.plan import Step
from toolplan.plan_format.templates import INDEX, ITEM, resolve
from toolplan.store.protocol import ItemRecord

__all__ = ["ForEachRunner", "ItemCall"]


class ItemCall(ToolCall[ItemRecord]):
    """The tool call of one item of a ``forEach`` step, recorded on its item: ``{{$item}}`` and
    ``{{$index}}`` are in its scope. An unexpected exception fails the item, recorded (the
    other items go on), as it fails a plain step."""

    def __init__(
        self, caller: Caller, step: Step, index: int, item: Any, outputs: Mapping[str, Any]
    ) -> None:
        scope = {**outputs, ITEM: item, INDEX: index}
        super().__init__(caller, step, scope, started=time.monotonic(), item=index)
        self.index = index

    async def attempt_started(self, arguments: Any, number: int, first: bool) -> None:
        await self.caller.recorder.item_started(self.step.id, self.step.tool, self.index, number)

    async def end(self, ending: Ending) -> ItemRecord:
        record = ItemRecord(
            self.index,
            ending.status,
            ending.attempts,
            output=ending.output,
            error=ending.error,
            used_fallback=ending.used_fallback,
        )
        duration_ms = round((time.monotonic() - self.started) * 1000, 3)
        return await surviving_cancel(
            self.caller.recorder.item_finished(
                self.step.id, self.step.tool, record, duration_ms=duration_ms
            )
        )


class ForEachRunner:
    """Runs the ``forEach`` steps of one plan, with the calls of the step runner that owns it.

    Stateless between steps except through ``inputs`` and the store, like the step runner: a
    backend that runs each item elsewhere (the Temporal workflow, one activity per item) composes
    :meth:`start`, :meth:`run_item_of` for each item, and :meth:`finish`; :meth:`run` is all of
    them in this process.
    """

    def __init__(self, caller: Caller) -> None:
        self.caller = caller

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

        await run_items(self.caller.slots, begun.todo, one)
        return await self.finish(step.id, list(done.values()), started)

    async def start(self, step_id: str, started: float) -> MapStart | StepOutcome:
        """Resolve a ``forEach`` step's list and record its items (those an earlier run
        finished kept): what is left to run, or the step's final outcome when its list cannot be
        resolved or is over the limit (failed, before any call)."""
        caller = self.caller
        step = caller.step(step_id)
        outputs = await caller.inputs.outputs_for(step)
        try:
            items = item_list(step, outputs, caller.options.max_items)
            if caller.gated(step):
                # One approval for the whole list: every item's arguments are shown at once.
                schema = caller.arguments_schema(step.tool)
                calls = [
                    resolve(step.parameters, {**outputs, ITEM: item, INDEX: index}, schema)
                    for index, item in enumerate(items)
                ]
                waiting = await caller.wait_for_approval(step, calls)
                if waiting is not None:
                    return waiting
        except TemplateError as error:
            return await caller.finish(step, Ending("failed", 0, error=str(error)), started)
        records, todo = unfinished_items(len(items), caller.prior_items.get(step.id))
        await caller.recorder.items_known(step.id, step.tool, records)
        return MapStart(items, records, todo, outputs)

    async def run_item_of(self, step_id: str, index: int, prior_attempts: int) -> ItemRecord:
        """:meth:`run_item` for an item named by its index (the list resolved again from the
        step's inputs: a backend that runs each item elsewhere)."""
        step = self.caller.step(step_id)
        outputs = await self.caller.inputs.outputs_for(step)
        items = item_list(step, outputs, self.caller.options.max_items)
        return await self.run_item(step, index, items[index], outputs, prior_attempts)

    async def finish(self, step_id: str, records: list[ItemRecord], started: float) -> StepOutcome:
        """Record what the items of a ``forEach`` step add up to (:func:`map_result`)."""
        result = map_result(records)
        ending = Ending(
            result.status,
            result.attempts,
            output=result.output,
            error=result.error,
            used_fallback=result.used_fallback,
        )
        return await self.caller.finish(self.caller.step(step_id), ending, started)

    async def run_item(
        self, step: Step, index: int, item: Any, outputs: Mapping[str, Any], prior_attempts: int
    ) -> ItemRecord:
        """One item of a ``forEach`` step to its final state, recorded (:class:`ItemCall`)."""
        return await ItemCall(self.caller, step, index, item, outputs).run(prior_attempts)
