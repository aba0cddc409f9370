"""A person's decisions on steps waiting for approval: checked, stored, one decision per wait.

The engine records a step ``waiting_approval`` with the arguments its tool would be called with
(:mod:`toolplan.engine.approval`); these functions record what a person says, from any process
at any later time. An approval names the arguments it covers by their fingerprint, read from
the same record the person was shown: the engine calls the tool only with those. Continuing the
execution afterwards is the caller's (:meth:`toolplan.client.Toolplan.approve`, ``toolplan
approve``, a worker with ``--enqueue``).

Deciding on a step that is not waiting, or on a plan that finished, changes nothing and raises
:class:`~toolplan.errors.NotWaiting` (exit 2). A decision is all or nothing: given the tools the
caller would continue the execution with (``tools``), a plan those cannot run (its recorded tool
module does not import here, a tool it calls is missing) is refused before anything is
recorded, so a decision is never stored that its caller cannot act on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from toolplan.engine.approval import current_user, fingerprint
from toolplan.errors import InvalidInput, NotWaiting, PlanInvalid, ToolsUnavailable
from toolplan.plan_format.limits import InputLimits, check_text
from toolplan.plan_format.plan import parse_plan
from toolplan.store.lookup import find_plan
from toolplan.store.protocol import (
    TERMINAL_EXECUTION_STATUSES,
    Decision,
    ExecutionRecord,
    PlanRecord,
    StepRecord,
    Store,
    utc_now,
)
from toolplan.tools.catalog import ToolCatalog
from toolplan.validation import check_tools

__all__ = ["Decided", "ToolsFor", "approve_steps", "deny_step", "waiting_steps"]

ToolsFor = Callable[[PlanRecord], ToolCatalog]
"""The tools a caller would continue a plan's execution with once it decided (the tools recorded
with the plan, loaded in the caller's process); it raises
:class:`~toolplan.errors.ToolsUnavailable` when they cannot be loaded there."""

_UNDECIDED = "nothing was decided: the steps still wait for approval"


@dataclass(frozen=True)
class Decided:
    """What was decided: the plan, the steps and the decision stored on each."""

    plan_id: str
    decisions: dict[str, Decision]
    """The decision stored on each step decided, by step ID."""


def waiting_steps(execution: ExecutionRecord | None) -> list[StepRecord]:
    """The steps of ``execution`` waiting for approval, in plan order."""
    if execution is None:
        return []
    return [step for step in execution.steps if step.status == "waiting_approval"]


def _waiting_execution(store: Store, plan_id: str) -> tuple[PlanRecord, ExecutionRecord]:
    """The plan ``plan_id`` and its execution, which must be unfinished."""
    record = find_plan(store, plan_id)
    execution = store.get_execution(record.plan_id)
    if execution is None:
        raise NotWaiting(
            f"plan {plan_id!r} was never executed, so nothing waits for approval; "
            f"run it with: toolplan execute {plan_id}",
            details={"planId": plan_id},
        )
    if execution.status in TERMINAL_EXECUTION_STATUSES:
        raise NotWaiting(
            f"plan {plan_id!r} already finished ({execution.status}); nothing waits for "
            f"approval and nothing changed (see: toolplan show {plan_id})",
            details={"planId": plan_id, "status": execution.status},
        )
    return record, execution


def _can_continue(record: PlanRecord, tools: ToolsFor | None) -> None:
    """Refuse, before anything is recorded, a decision on a plan that ``tools`` (the caller's
    continuation) cannot run: its tools do not load here (exit 3) or lack one it calls (exit 2).
    Each refusal says that nothing was decided, and how to decide where the plan can run."""
    if tools is None:
        return
    try:
        catalog = tools(record)
    except ToolsUnavailable as error:
        raise ToolsUnavailable(
            f"{error.message}; {_UNDECIDED} (decide in a process where the plan's tools load)",
            details=error.details,
        ) from None
    try:
        check_tools(parse_plan(record.plan), catalog)
    except PlanInvalid as error:
        missing = "; ".join(issue.message for issue in error.issues)
        raise InvalidInput(
            f"the tools here cannot run plan {record.plan_id}, so {_UNDECIDED}: {missing}; "
            "decide with the plan's tools (--tools), or where they are configured",
            details={"planId": record.plan_id},
        ) from None


def _chosen(
    record: PlanRecord, execution: ExecutionRecord, step_ids: Sequence[str] | None
) -> list[StepRecord]:
    """The steps named (every waiting one when ``step_ids`` is ``None``), each of which must be
    waiting. An empty list is refused: a caller whose selection came out empty must not approve
    everything."""
    waiting = waiting_steps(execution)
    hint = "" if waiting else _continue_hint(record, execution)
    names = ", ".join(step.step_id for step in waiting) or "none"
    if step_ids is not None and not step_ids:
        raise InvalidInput(
            f"no step named to approve in {execution.plan_id} (an empty list); name the steps, "
            f"or pass none at all (null) to approve every waiting step: {names}",
            details={"planId": execution.plan_id},
        )
    if step_ids is None:
        if not waiting:
            raise NotWaiting(
                f"no step of {execution.plan_id} waits for approval (the execution is "
                f"{execution.status}); nothing changed{hint}",
                details={"planId": execution.plan_id, "status": execution.status},
            )
        return waiting
    known = {step.step_id: step for step in execution.steps}
    chosen: list[StepRecord] = []
    for step_id in dict.fromkeys(step_ids):
        step = known.get(step_id)
        if step is None:
            raise InvalidInput(
                f"plan {execution.plan_id} has no step {step_id!r}; steps waiting for "
                f"approval: {names}"
            )
        if step.status != "waiting_approval":
            raise NotWaiting(
                f"step {step_id!r} of {execution.plan_id} is not waiting for approval (it is "
                f"{step.status}); nothing changed. Steps waiting: {names}{hint}",
                details={"planId": execution.plan_id, "stepId": step_id, "status": step.status},
            )
        chosen.append(step)
    return chosen


def _continue_hint(record: PlanRecord, execution: ExecutionRecord) -> str:
    """What moves on an unfinished execution in which no step waits for approval: the steps
    already decided run when the execution continues (its last run ended, or stopped, before
    they did)."""
    if execution.status not in ("waiting", "running"):
        return ""
    yes = " --yes" if record.status == "needs_review" else ""
    return f"; the execution continues with: toolplan execute {execution.plan_id}{yes}"


def _decide(store: Store, plan_id: str, step: StepRecord, changes: dict[str, object]) -> None:
    if not store.decide_step(plan_id, step.step_id, changes):
        raise NotWaiting(
            f"step {step.step_id!r} of {plan_id} was decided by someone else meanwhile; "
            f"see: toolplan show {plan_id}",
            details={"planId": plan_id, "stepId": step.step_id},
        )


def approve_steps(
    store: Store,
    plan_id: str,
    step_ids: Sequence[str] | None = None,
    *,
    by: str | None = None,
    tools: ToolsFor | None = None,
) -> Decided:
    """Approve the steps ``step_ids`` of ``plan_id`` (every waiting step when ``None``; an empty
    list is :class:`~toolplan.errors.InvalidInput`),
    each for the arguments it waits with: recorded with the time and the decider ``by``
    (default the OS user), the step ``pending`` again. Nothing runs here. With ``tools``, the
    tools the caller continues the execution with: a plan they cannot run is refused first,
    and nothing is recorded."""
    record, execution = _waiting_execution(store, plan_id)
    decider = _decider(by)
    chosen = _chosen(record, execution, step_ids)
    _can_continue(record, tools)
    decisions: dict[str, Decision] = {}
    for step in chosen:
        decision = Decision(
            "approved", decider, utc_now(), fingerprint(step.tool, step.resolved_parameters)
        )
        _decide(store, execution.plan_id, step, {"status": "pending", "decision": decision})
        decisions[step.step_id] = decision
    return Decided(execution.plan_id, decisions)


def deny_step(
    store: Store,
    plan_id: str,
    step_id: str,
    reason: str,
    *,
    by: str | None = None,
    limits: InputLimits | None = None,
    tools: ToolsFor | None = None,
) -> Decided:
    """Deny one waiting step of ``plan_id`` with ``reason``: the step becomes ``denied`` (its
    error says who and why), recorded with the time and the decider ``by`` (default the OS
    user). Its dependents are skipped when the execution continues. ``tools`` as for
    :func:`approve_steps`."""
    reason = reason.strip()
    if not reason:
        raise InvalidInput("a denial needs a reason: --reason TEXT (the agent's replan reads it)")
    check_text(reason, "the reason", limits or InputLimits())
    record, execution = _waiting_execution(store, plan_id)
    [step] = _chosen(record, execution, [step_id])
    decider = _decider(by)
    _can_continue(record, tools)
    now = utc_now()
    decision = Decision(
        "denied", decider, now, fingerprint(step.tool, step.resolved_parameters), reason
    )
    changes: dict[str, object] = {
        "status": "denied",
        "error": f"denied by {decider}: {reason}",
        "finished_at": now,
        "decision": decision,
    }
    _decide(store, execution.plan_id, step, changes)
    return Decided(execution.plan_id, {step.step_id: decision})


def _decider(by: str | None) -> str:
    decider = (by or "").strip() or current_user()
    if len(decider) > 200:
        raise InvalidInput(f"--by is {len(decider)} characters long; at most 200")
    return decider
