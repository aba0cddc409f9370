"""A person's decisions on steps waiting for approval: checked, stored, one decision per wait.

The engine records a step ``waiting_approval`` with the arguments its tool would be called with
(:mod:`toolplan.engine.approval`); these functions record what a person says, from any process
at any later time. An approval names the arguments it covers by their fingerprint, read from
the same record the person was shown: the engine calls the tool only with those. Continuing the
execution afterwards is the caller's (:meth:`toolplan.client.Toolplan.approve`, ``toolplan
approve``, a worker with ``--enqueue``).

Deciding on a step that is not waiting, or on a plan that finished, changes nothing and raises
:class:`~toolplan.errors.NotWaiting` (exit 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from toolplan.engine.approval import current_user, fingerprint
from toolplan.errors import InvalidInput, NotWaiting
from toolplan.plan_format.limits import InputLimits, check_text
from toolplan.store.lookup import find_plan
from toolplan.store.protocol import (
    TERMINAL_EXECUTION_STATUSES,
    Decision,
    ExecutionRecord,
    StepRecord,
    Store,
    utc_now,
)

__all__ = ["Decided", "approve_steps", "deny_step", "waiting_steps"]


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


def _waiting_execution(store: Store, plan_id: str) -> ExecutionRecord:
    """The execution of ``plan_id``, which must be unfinished and have a step waiting."""
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
    return execution


def _chosen(execution: ExecutionRecord, step_ids: Sequence[str] | None) -> list[StepRecord]:
    """The steps named (every waiting one when ``step_ids`` is ``None``), each of which must be
    waiting. An empty list is refused: a caller whose selection came out empty must not approve
    everything."""
    waiting = waiting_steps(execution)
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
                f"{execution.status}); nothing changed",
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
                f"{step.status}); nothing changed. Steps waiting: {names}",
                details={"planId": execution.plan_id, "stepId": step_id, "status": step.status},
            )
        chosen.append(step)
    return chosen


def _decide(store: Store, plan_id: str, step: StepRecord, changes: dict[str, object]) -> None:
    if not store.decide_step(plan_id, step.step_id, changes):
        raise NotWaiting(
            f"step {step.step_id!r} of {plan_id} was decided by someone else meanwhile; "
            f"see: toolplan show {plan_id}",
            details={"planId": plan_id, "stepId": step.step_id},
        )


def approve_steps(
    store: Store, plan_id: str, step_ids: Sequence[str] | None = None, *, by: str | None = None
) -> Decided:
    """Approve the steps ``step_ids`` of ``plan_id`` (every waiting step when ``None``; an empty
    list is :class:`~toolplan.errors.InvalidInput`),
    each for the arguments it waits with: recorded with the time and the decider ``by``
    (default the OS user), the step ``pending`` again. Nothing runs here."""
    execution = _waiting_execution(store, plan_id)
    decider = _decider(by)
    decisions: dict[str, Decision] = {}
    for step in _chosen(execution, step_ids):
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
) -> Decided:
    """Deny one waiting step of ``plan_id`` with ``reason``: the step becomes ``denied`` (its
    error says who and why), recorded with the time and the decider ``by`` (default the OS
    user). Its dependents are skipped when the execution continues."""
    reason = reason.strip()
    if not reason:
        raise InvalidInput("a denial needs a reason: --reason TEXT (the agent's replan reads it)")
    check_text(reason, "the reason", limits or InputLimits())
    execution = _waiting_execution(store, plan_id)
    [step] = _chosen(execution, [step_id])
    decider = _decider(by)
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
