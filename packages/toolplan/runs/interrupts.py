"""Approvals in LangGraph: a graph node that asks a person about the steps waiting for approval
with ``interrupt()``, so LangGraph Studio (or any client of a checkpointed graph) shows the
prompt, and records the answer given with ``Command(resume=...)``.

The interrupt's value names each waiting step, its tool and the arguments it would be called
with (``pendingArguments``, as the API shows them). The answer is
``{"approve": [stepIds], "deny": {"stepId": "reason"}, "by": "name"}`` (each part optional); it
is recorded through the same functions as ``toolplan approve`` / ``deny``
(:mod:`toolplan.runs.approvals`: an approval covers the arguments' fingerprint), and the
graph then continues the execution.

LangGraph runs an interrupted node again from its start when it is resumed: everything before
``interrupt()`` here only reads the store, and the answer is recorded after it, once. A step
named in the answer that no longer waits (decided meanwhile, from the CLI or the API) is left
as it is.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langgraph.types import interrupt
from pydantic import BaseModel, ConfigDict, Field

from toolplan.engine.result import ExecutionResult
from toolplan.errors import InvalidInput
from toolplan.plan_format.limits import InputLimits, check_text
from toolplan.runs.approvals import approve_steps, deny_step
from toolplan.store.lookup import find_plan
from toolplan.store.protocol import Store

__all__ = ["DEFAULT_DECIDER", "ApprovalAnswer", "approval_request", "ask_for_approval"]

DEFAULT_DECIDER = "langgraph"
"""Who decided, when the answer does not say (``by``)."""


class ApprovalAnswer(BaseModel):
    """A person's answer to an approval interrupt: ``Command(resume={...})``."""

    model_config = ConfigDict(extra="forbid")

    approve: list[str] = Field(default_factory=list)
    """The steps approved, each for exactly the arguments shown."""
    deny: dict[str, str] = Field(default_factory=dict)
    """The steps denied, each with its reason (the agent's replan reads it)."""
    by: str | None = None
    """Who decides (default ``langgraph``)."""


def approval_request(result: ExecutionResult) -> dict[str, Any]:
    """The interrupt's value: the plan, its waiting steps with their arguments, and how to
    answer."""
    waiting = [
        {"stepId": step.step_id, "tool": step.tool, "pendingArguments": step.resolved_parameters}
        for step in result.waiting
    ]
    first = waiting[0]["stepId"] if waiting else "STEP_ID"
    return {
        "kind": "approval",
        "planId": result.plan_id,
        "waiting": waiting,
        "answer": (
            f'Command(resume={{"approve": ["{first}"]}}) calls the tool with these arguments; '
            f'Command(resume={{"deny": {{"{first}": "why not"}}}}) does not'
        ),
    }


def _problem(
    answer: ApprovalAnswer, result: ExecutionResult, limits: InputLimits | None
) -> str | None:
    """What makes ``answer`` impossible to record (checked before anything is), or ``None``."""
    known = {step.step_id for step in result.steps}
    unknown = [s for s in [*answer.approve, *answer.deny] if s not in known]
    waiting = ", ".join(step.step_id for step in result.waiting)
    if unknown:
        return (
            f"plan {result.plan_id} has no step {unknown[0]!r}; steps waiting for approval: "
            f"{waiting}"
        )
    unexplained = [s for s, reason in answer.deny.items() if not reason.strip()]
    if unexplained:
        return (
            f'a denial needs a reason: {{"deny": {{"{unexplained[0]}": "why not"}}}} (the '
            "agent's replan reads it)"
        )
    if answer.by is not None and len(answer.by) > 200:
        return f"by is {len(answer.by)} characters long; at most 200"
    for reason in answer.deny.values():
        try:
            check_text(reason.strip(), "the reason", limits or InputLimits())
        except InvalidInput as error:
            return error.message
    return None


def _stored(store: Store, plan_id: str) -> ExecutionResult | None:
    record = find_plan(store, plan_id)
    execution = store.get_execution(record.plan_id)
    return None if execution is None else ExecutionResult.from_records(record, execution)


async def ask_for_approval(
    store: Store, plan_id: str, *, limits: InputLimits | None = None
) -> bool:
    """Interrupt with the steps of ``plan_id`` waiting for approval and record the answer.

    ``True`` when the execution should continue: something was decided now, or nothing waits
    any more (decided meanwhile elsewhere). ``False`` when the answer decided nothing (the steps
    keep waiting for a decision from anywhere)."""
    result = await asyncio.to_thread(_stored, store, plan_id)
    if result is None or not result.waiting:
        return True
    request = approval_request(result)
    while True:
        # An answer that cannot be applied is asked again, with what is wrong with it: each
        # answer is a resume value LangGraph keeps, so raising would replay it forever.
        answer = interrupt(request, response_schema=ApprovalAnswer)
        if isinstance(answer, dict):  # a resume value given without its schema
            answer = ApprovalAnswer.model_validate(answer)
        problem = _problem(answer, result, limits)
        if problem is None:
            break
        request = {**approval_request(result), "error": problem}

    def record() -> bool:
        # Read again: a replayed answer, or a decision made meanwhile, leaves a step decided.
        latest = _stored(store, plan_id)
        waiting = {step.step_id for step in latest.waiting} if latest is not None else set()
        approved = [s for s in dict.fromkeys(answer.approve) if s in waiting]
        denied = {s: reason for s, reason in answer.deny.items() if s in waiting}
        by = answer.by or DEFAULT_DECIDER
        if approved:
            approve_steps(store, plan_id, approved, by=by)
        for step_id, reason in denied.items():
            deny_step(store, plan_id, step_id, reason, by=by, limits=limits)
        return bool(approved or denied) or len(waiting) < len(result.waiting)

    return await asyncio.to_thread(record)
