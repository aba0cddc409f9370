"""Side effects a request already had: a later version of a request (a replan, or a plan
submitted with ``--request-id``) never repeats a call that succeeded in an earlier version.

A step whose tool is not read-only, called with the same resolved arguments as a step that
succeeded in an earlier version of the same request, is answered with that step's output: the
tool is not called again, and the step records where its output came from (``reused_from``).
Read-only tools are exempt (they may use the result cache instead). Keys are those of the result
cache: the tool's name and its resolved arguments as canonical JSON (:func:`cache_key`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from toolplan.engine.cache import cache_key
from toolplan.plan_format.meta import version_of
from toolplan.store.protocol import ExecutionLog, PlanRecord, PlanRepository
from toolplan.tools.catalog import ToolCatalog

__all__ = ["EarlierEffect", "earlier_effects"]


@dataclass(frozen=True)
class EarlierEffect:
    """A call that succeeded in an earlier version of the request."""

    source: str
    """``plan_...:stepId``."""
    output: Any


class _Store(PlanRepository, ExecutionLog, Protocol):
    """Plans by request and their executions."""


def earlier_effects(
    store: _Store, record: PlanRecord, catalog: ToolCatalog
) -> dict[str, EarlierEffect]:
    """The succeeded side effects of the versions of ``record``'s request stored before it, by
    call key; empty for a request's first version (then nothing is read)."""
    if version_of(record.meta) <= 1:
        return {}
    effects: dict[str, EarlierEffect] = {}
    for earlier in store.list_plans(record.request_id):
        if earlier.plan_id == record.plan_id or earlier.created_at > record.created_at:
            continue
        # Items are not effects looked up here; a map's would make this read (once per item on
        # Temporal) as long as the map.
        execution = store.get_execution(earlier.plan_id, items=False)
        if execution is None:
            continue
        for step in execution.steps:
            if (
                step.status != "succeeded"
                or step.used_fallback  # the output is another tool's
                or step.output_truncated  # only part of it was kept
                or catalog.read_only(step.tool)
            ):
                continue
            key = cache_key(step.tool, step.resolved_parameters)
            origin = step.reused_from or f"{earlier.plan_id}:{step.step_id}"
            effects.setdefault(key, EarlierEffect(origin, step.output))
    return effects
