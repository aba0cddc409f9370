"""Where a step's template inputs come from: the outputs of the steps it references.

The in-process engine keeps outputs in memory as steps succeed (:class:`MemoryInputs`, seeded
from the step records when a run resumes). A backend that runs each step somewhere else, such as
an activity in a worker process, reads them from the durable step records instead
(:class:`StoreInputs`): the store is the one source of truth for outputs, as for every state.
Either way a stored output is what a resumed run sees: outputs over the size limit are stored
truncated (``ExecutionOptions.output_limit_bytes``) and resolve as their truncation marker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, MutableMapping
from typing import Any, Protocol

from toolplan.plan_format.plan import Step
from toolplan.plan_format.templates import references
from toolplan.store.protocol import ExecutionLog, ExecutionRecord

__all__ = ["MemoryInputs", "StepInputs", "StoreInputs", "stored_outputs"]


class StepInputs(Protocol):
    """The outputs a step's templates may reference."""

    async def outputs_for(self, step: Step) -> Mapping[str, Any]:
        """Outputs of succeeded steps, by step ID; at least those ``step`` references."""
        ...

    def succeeded(self, step_id: str, output: Any) -> None:
        """``step_id`` succeeded with ``output`` (already recorded in the store)."""
        ...


def stored_outputs(execution: ExecutionRecord) -> dict[str, Any]:
    """The outputs of the succeeded steps of an execution record, by step ID."""
    return {s.step_id: s.output for s in execution.steps if s.status == "succeeded"}


class MemoryInputs:
    """Outputs kept in this process: those of an earlier run, then each success of this one."""

    def __init__(self, outputs: Mapping[str, Any] | None = None) -> None:
        self._outputs: dict[str, Any] = dict(outputs or {})

    async def outputs_for(self, step: Step) -> Mapping[str, Any]:
        return self._outputs

    def succeeded(self, step_id: str, output: Any) -> None:
        self._outputs[step_id] = output


class StoreInputs:
    """Outputs read from the step records of ``plan_id`` when a step needs them.

    ``succeeded`` holds the outputs of the plan's steps already read as succeeded: a succeeded
    step's output never changes, so a backend that builds one of these per call (a Temporal
    activity per item of a map) can share one mapping between them, and a map over another
    step's list of N items reads and decodes that list once, not once per item."""

    def __init__(
        self,
        store: ExecutionLog,
        plan_id: str,
        *,
        succeeded: MutableMapping[str, Any] | None = None,
    ) -> None:
        self.store = store
        self.plan_id = plan_id
        self.succeeded_outputs: MutableMapping[str, Any] = {} if succeeded is None else succeeded

    async def outputs_for(self, step: Step) -> Mapping[str, Any]:
        wanted = references([step.parameters, step.condition])
        if isinstance(step.for_each, str):
            wanted |= references(step.for_each)
        if step.fallback is not None:
            wanted |= references(step.fallback.parameters)
        if not wanted:
            return {}
        known = self.succeeded_outputs
        if not wanted <= known.keys():
            # Without items: a backend that runs each item elsewhere reads this once per item,
            # and the items of a long map would make every read as long as the map.
            execution = await asyncio.to_thread(self.store.get_execution, self.plan_id, items=False)
            if execution is not None:
                known.update(stored_outputs(execution))
        return {k: known[k] for k in wanted if k in known}

    def succeeded(self, step_id: str, output: Any) -> None:
        return None  # the Recorder stored it; the next read sees it
