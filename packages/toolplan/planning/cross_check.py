"""The cross-check: a second plan over the catalog in reverse order, and the steps it disputes.

Given several tools, a small model calls the one asked for and then a look-alike beside it:
"divorce law specialists in Los Angeles" got ``lawyer.search`` and ``doctor.search``, "how many
veterans in 1954" got ``get_population`` and ``get_bureau_statistics``. Such a step names words
of the request, so the unasked-step check (:mod:`toolplan.analysis.unasked`) keeps it, and it
runs. Which look-alike the model adds depends on the order the tools are listed in: language
models favour items by their place in a list (the order bias that permutation self-consistency
averages out of rankings).

With ``TOOLPLAN_CROSS_CHECK=1`` the planner asks the same model for a second plan beside the
first, with the catalog listed in reverse order (prompt and schema). A step of the first plan
is dropped (:func:`drop_disputed`) when the second plan never calls its tool, no kept step takes
anything from it, and it passes only values that a step both plans agree on passes too: the
same request's values sent to a look-alike. A step with a value of its own stays, since the
second plan may simply have left out a part of the request (measured on the project's query
sets: "list compute metrics, query CPU usage, and check if it's above 80%" lost its check in a
first form of the rule that did not ask this). Nothing else of the second plan is used: its
arguments, steps or order never enter the stored plan. When the two share no tool (or the
second answer could not be had: an error, a runaway, a decline), the first plan stands as it
is. The planning record says what the second plan called and what was dropped (``crossCheck``).

It costs a second planning call on every first answer (repairs are not cross-checked): the two
run at once, so a server with two slots, or any hosted API, answers in about the time of one.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from typing import Any

from langchain_core.messages import BaseMessage

from toolplan._caches import register_cache
from toolplan._tokens import count_tokens
from toolplan.errors import ToolplanError
from toolplan.planning.call import StructuredRequest, call_model
from toolplan.planning.context import PlannerContext
from toolplan.planning.parsing import message_payload, read_plan
from toolplan.planning.streaming import AnswerStream
from toolplan.plans.plan import Plan, Step
from toolplan.plans.templates import contains_template, references
from toolplan.tools.catalog import ToolCatalog

__all__ = ["MIN_PATIENCE_S", "SecondOpinion", "awaited", "drop_disputed", "second_opinion"]

MIN_PATIENCE_S = 5.0
"""The least time a second answer is given after the first is in (:func:`awaited`)."""


@dataclass(frozen=True)
class SecondOpinion:
    """What the second plan called, and what it cost."""

    tools: list[str] | None
    """The tools the second plan calls, each once, in its order; ``None`` when it could not be
    had."""
    calls: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    """Why there is no second plan (the error's message)."""

    def to_json(self) -> dict[str, Any]:
        """The planning record's ``crossCheck`` (without what was dropped)."""
        out: dict[str, Any] = {"tools": self.tools}
        if self.error:
            out["error"] = self.error
        return out


@functools.lru_cache(maxsize=16)
def _in_reverse(catalog: ToolCatalog) -> ToolCatalog:
    # one reversed copy per catalog: its typed schema is then built once too
    return catalog.in_reverse()


register_cache(_in_reverse.cache_clear)


def _reverse(ctx: PlannerContext) -> PlannerContext:
    return replace(ctx, catalog=_in_reverse(ctx.catalog), listener=None)


async def second_opinion(
    ctx: PlannerContext, messages: Callable[[PlannerContext], list[BaseMessage]]
) -> SecondOpinion:
    """Ask for the plan again over ``ctx``'s catalog in reverse order: ``messages`` makes the
    request's messages for a context. The answer is read, never validated or stored, and never
    told to the planner's listener. Any error is this opinion's: it is returned, not raised."""
    reverse = _reverse(ctx)
    schema = reverse.plan_schema()
    request = StructuredRequest(messages(reverse), schema.schema, schema.strict)
    stream = AnswerStream(lambda *_: None, enabled=ctx.stream, max_steps=ctx.max_steps)
    try:
        reply = await call_model(reverse.model_call(), request, stream=stream)
    except ToolplanError as failed:
        details: dict[str, Any] = failed.details  # what it spent: :func:`call.account`
        spent, calls = dict(details.get("usage") or {}), int(details.get("llmCalls") or 0)
        return SecondOpinion(None, calls, spent, error=failed.message)
    reading = read_plan(message_payload(reply.answer.message), reverse.catalog)
    steps = reading.data["steps"] if reading.data is not None else None
    named = [s["tool"] for s in steps or [] if isinstance(s.get("tool"), str)]
    tools = list(dict.fromkeys(named)) or None  # each once, in the order first called
    unread = None if tools else "the second answer had no step that could be read"
    return SecondOpinion(tools, reply.calls, reply.usage, error=unread)


async def awaited(
    second: asyncio.Task[SecondOpinion],
    ctx: PlannerContext,
    messages: Callable[[PlannerContext], list[BaseMessage]],
    *,
    first_seconds: float,
) -> SecondOpinion:
    """The second opinion, once the first answer is in: it may take as long again as the first
    took (at least :data:`MIN_PATIENCE_S`), and is stopped after that. A second answer that ran
    away without repeating a step (which the stream stops) would otherwise hold the plan, and a
    server slot, until its output limit; it is asked once, never again with a larger limit.
    A stopped one is no opinion; its prompt is counted as read (estimated, as for a runaway)."""
    patience = max(first_seconds, MIN_PATIENCE_S)
    try:
        return await asyncio.wait_for(second, timeout=patience)
    except TimeoutError:
        request = messages(_reverse(ctx))
        read = sum(count_tokens(str(message.text)) for message in request)
        return SecondOpinion(
            None,
            1,
            {"inputTokens": read, "outputTokens": 0},
            error=f"the second answer was stopped {patience:.0f} s after the first was in",
        )


def drop_disputed(plan: Plan, tools: Collection[str]) -> tuple[Plan, dict[str, str]] | None:
    """``plan`` without its look-alike steps the second plan disputes, and those as
    ``{step id: tool}``; a step that only waited for one (``dependsOn``) waits no more.

    A step is dropped when the second plan never calls its tool (``tools``), no kept step takes
    anything from it (a template, ``forEach`` or ``when``), and it passes only values that a
    step the two plans agree on passes too (at least one; strings and numbers, read as in
    :func:`_values`): ``doctor_search("Los Angeles", "Divorce")`` beside ``lawyer_search("Los
    Angeles", "Divorce")``. A step with a value of its own is a part of the request, which the
    second plan may have left out ("... and check if it is above 80%": ``check_threshold``'s 80).
    ``None`` when nothing is dropped, or when no step's tool is in ``tools`` (the two plans
    share nothing: the first stands)."""
    agreed = _needed(plan, {step.id for step in plan.steps if step.tool in tools})
    if not agreed:
        return None
    known = set().union(*(_values(step) for step in plan.steps if step.id in agreed))
    echoes = {
        step.id
        for step in plan.steps
        if step.id not in agreed and (values := _values(step)) and values <= known
    }
    kept = _needed(plan, {step.id for step in plan.steps if step.id not in echoes})
    dropped = {step.id: step.tool for step in plan.steps if step.id not in kept}
    if not dropped:
        return None
    return plan.without(dropped), dropped


def _takes_from(step: Step) -> set[str]:
    return references(step.model_dump(by_alias=True, exclude={"id", "depends_on"}))


def _needed(plan: Plan, ids: set[str]) -> set[str]:
    """``ids`` with every step they take from, and what those take from."""
    kept = set(ids)
    grown = True
    while grown:
        grown = False
        for step in plan.steps:
            if step.id in kept and not _takes_from(step) <= kept:
                kept |= _takes_from(step)
                grown = True
    return kept


def _values(step: Step) -> set[str | float]:
    """The literal values ``step`` passes: strings (folded, without templates) and numbers
    (``True`` and ``False`` say nothing of what the step is about)."""
    found: set[str | float] = set()

    def walk(value: Any) -> None:
        if isinstance(value, str):
            if not contains_template(value) and value.strip():
                found.add(value.strip().casefold())
        elif isinstance(value, int | float) and not isinstance(value, bool):
            found.add(float(value))
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(step.parameters)
    return found
