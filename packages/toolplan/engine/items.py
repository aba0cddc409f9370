"""Maps and branches at run time: a ``when`` condition, a ``forEach`` list and its items.

Pure pieces shared by every backend (the in-process :class:`~toolplan.engine.step.StepRunner`
and its :class:`~toolplan.engine.foreach.ForEachRunner`, the Temporal workflow and its
activities): whether a condition holds, the list a ``forEach`` step
runs over (checked against its limit before any call), the outcome its items add up to, and
:func:`run_items`, which runs items concurrently under the plan's concurrency limit.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from toolplan.engine.scheduler import Slots
from toolplan.errors import TemplateError
from toolplan.plan_format.plan import Not, Step
from toolplan.plan_format.templates import Template, to_text
from toolplan.store.protocol import ItemRecord

__all__ = [
    "ConditionNotBoolean",
    "MapResult",
    "MapStart",
    "condition_holds",
    "item_list",
    "map_result",
    "run_items",
    "unfinished_items",
]


class ConditionNotBoolean(Exception):
    """A ``when`` resolved to text, which is not a yes/no value: the message names the condition
    and the value. The step is skipped, reason ``condition-not-boolean`` (it fails closed)."""


def _lookup(text: str, outputs: Mapping[str, Any]) -> Any:
    template = Template.parse(text.strip())
    if template is None:  # validation rejects these; never evaluate one silently
        raise TemplateError(f"template {text!r} is malformed", template=text)
    return template.lookup(outputs)


def _shown(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, str) else to_text(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _not_yes_no(shown: str, template: str, value: str) -> ConditionNotBoolean:
    return ConditionNotBoolean(
        f"skipped: condition {shown} is not a yes/no value: {template} is the text "
        f"{_shown(value)} (text is never read as true or false, so the step did not run); make "
        "the tool return a boolean, or compare in a step whose tool returns one"
    )


def condition_holds(step: Step, outputs: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether ``step``'s ``when`` holds, and the message recorded when it does not.

    JSON ``false``, ``null``, ``0``, ``[]`` and ``{}`` are falsy, other numbers, lists, objects
    and ``true`` truthy. Text is neither: ``"false"``, ``"no"`` or ``"0"`` from a tool that
    answers in text (as MCP tools do) must not let a guarded step through, so a condition that
    resolves to a string raises :class:`ConditionNotBoolean` (the step does not run). Raises
    :class:`~toolplan.errors.TemplateError` when the template cannot be resolved.
    """
    when = step.when
    if when is None:
        return True, ""
    if isinstance(when, bool):
        return when, "skipped: its condition is the literal false"
    if isinstance(when, Not):
        value = _lookup(when.template, outputs)
        shown = f'{{"not": {when.template!r}}}'
        if isinstance(value, str):
            raise _not_yes_no(shown, when.template, value)
        return not value, (
            f"skipped: condition {shown} was false ({when.template} is {_shown(value)}, which is "
            "truthy)"
        )
    value = _lookup(when, outputs)
    if isinstance(value, str):
        raise _not_yes_no(repr(when), when, value)
    return bool(value), f"skipped: condition {when!r} was false ({when} is {_shown(value)})"


def item_list(step: Step, outputs: Mapping[str, Any], default_limit: int) -> list[Any]:
    """The list ``step`` runs over, checked before any call: a list, no longer than the limit.

    ``default_limit`` is the operator's ceiling (``TOOLPLAN_MAX_ITEMS``); the step's
    ``maxItems`` may lower it, never raise it (the same rule as validation,
    :func:`toolplan.validation.control_flow.list_over_limit`). Raises
    :class:`~toolplan.errors.TemplateError`."""
    source = step.for_each
    if isinstance(source, list):
        value: Any = source
        shown = "the literal forEach list"
    else:
        assert source is not None
        value = _lookup(source, outputs)
        shown = f"forEach {source!r}"
        if not isinstance(value, list):
            raise TemplateError(
                f"{shown} resolved to {_shown(value)}, not a list; no item was run",
                template=source,
            )
    ceiling = default_limit
    own = step.max_items
    if own is not None and own < ceiling:
        if len(value) > own:
            raise TemplateError(
                f"{shown} has {len(value)} items, more than the limit of {own} (its maxItems); "
                f"no item was run: raise maxItems on the step (up to TOOLPLAN_MAX_ITEMS, "
                f"{ceiling}) if this is intended",
                template=source if isinstance(source, str) else "forEach",
            )
    elif len(value) > ceiling:
        lifted = f"; its maxItems of {own} cannot raise the operator's limit" if own else ""
        raise TemplateError(
            f"{shown} has {len(value)} items, more than the limit of {ceiling} "
            f"(TOOLPLAN_MAX_ITEMS){lifted}; no item was run: ask the operator to raise "
            "TOOLPLAN_MAX_ITEMS if this is intended",
            template=source if isinstance(source, str) else "forEach",
        )
    return value


def unfinished_items(
    count: int, prior: Sequence[ItemRecord] | None
) -> tuple[list[ItemRecord], list[int]]:
    """The item records to start from (those an earlier run left, when it had the same list)
    and the indexes still to run: every item that neither succeeded nor failed for good."""
    if prior is None or len(prior) != count:
        records = [ItemRecord(index) for index in range(count)]
    else:
        records = list(prior)
    todo = [r.index for r in records if r.status not in ("succeeded", "failed")]
    return records, todo


@dataclass(frozen=True)
class MapStart:
    """A ``forEach`` step whose list is known and whose items are recorded."""

    items: list[Any]
    records: list[ItemRecord]
    """One per item: as an earlier run left it, or pending."""
    todo: list[int]
    """The indexes still to run."""
    outputs: Mapping[str, Any]
    """The step's template inputs."""


@dataclass(frozen=True)
class MapResult:
    """What the items of a ``forEach`` step add up to."""

    status: Literal["succeeded", "failed"]
    output: list[Any]
    """Per-item outputs in item order (``null`` where an item failed)."""
    error: str | None
    attempts: int
    """Tool calls made over all items."""
    used_fallback: bool


def map_result(records: Iterable[ItemRecord]) -> MapResult:
    """The step's outcome: succeeded when every item did; else failed, listing the failed
    indexes (and the first errors), the outputs of the items that succeeded kept."""
    ordered = sorted(records, key=lambda r: r.index)
    failed = [r for r in ordered if r.status != "succeeded"]
    output = [r.output if r.status == "succeeded" else None for r in ordered]
    attempts = sum(r.attempts for r in ordered)
    fallback = any(r.used_fallback for r in ordered)
    if not failed:
        return MapResult("succeeded", output, None, attempts, fallback)
    indexes = ", ".join(str(r.index) for r in failed)
    details = "; ".join(f"[{r.index}] {r.error}" for r in failed[:3])
    more = f"; and {len(failed) - 3} more" if len(failed) > 3 else ""
    noun = "item" if len(failed) == 1 else "items"
    error = f"{noun} {indexes} of {len(ordered)} failed: {details}{more}"
    return MapResult("failed", output, error, attempts, fallback)


async def run_items(
    slots: Slots, indexes: Sequence[int], run: Callable[[int], Awaitable[None]]
) -> None:
    """Run ``run(index)`` for every index, each holding one of ``slots`` while it runs.

    Called from inside a running step, which holds a slot: it lends that slot to its items
    meanwhile and takes one back before returning (the scheduler frees it when the step ends).
    Places in line are taken in index order before the step's slot is lent, so items start in
    order and the lent slot goes to the first of them. When one item raises (a store outage,
    a cancellation), the others are cancelled and the error propagates.
    """
    if not indexes:
        return
    tickets = [(index, slots.ticket()) for index in indexes]
    slots.give()

    async def one(index: int, ticket: asyncio.Future[None]) -> None:
        await slots.wait(ticket)
        try:
            await run(index)
        finally:
            slots.give()

    tasks = [asyncio.ensure_future(one(index, ticket)) for index, ticket in tickets]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        for _, ticket in tickets:
            if not ticket.done():
                ticket.cancel()  # the run is ending: no slot is handed to an item not started
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    await slots.take()
