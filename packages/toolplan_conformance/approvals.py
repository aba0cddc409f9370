"""Conformance tests of approval gates: a step ``waiting_approval`` with the arguments it will
be called with, one decision per wait (:meth:`~toolplan.store.protocol.ExecutionLog.decide_step`),
and the ``waiting`` execution nobody holds: acquired by the process that records a decision,
queued for workers on request, never claimed before, cancelled at once.

``from toolplan_conformance import *`` collects these with the rest of the suite.
"""

from __future__ import annotations

import pytest

from toolplan.store import Store
from toolplan.store.protocol import CANCELLED_BEFORE_START, Decision, utc_now
from toolplan_conformance.connections import in_threads
from toolplan_conformance.records import started_execution, step_pairs

__all__ = [
    "test_a_decision_applies_only_to_a_waiting_step",
    "test_a_waiting_execution_is_acquired_or_queued_but_never_claimed",
    "test_a_waiting_step_keeps_its_arguments_and_decision",
    "test_cancel_of_a_waiting_execution_ends_it_at_once",
    "test_concurrent_decisions_on_one_step_one_wins",
    "test_release_leaves_a_waiting_execution_waiting",
]


def _approval(by: str = "ada", kind: str = "approved", reason: str | None = None) -> Decision:
    return Decision(kind, by, utc_now(), "sha256:abc", reason)  # type: ignore[arg-type]


def _waiting(store: Store, arguments: object = None) -> str:
    """An execution whose first step waits for approval (the rest pending), ended ``waiting``."""
    execution = started_execution(store, steps=2)
    store.update_step(
        execution.plan_id,
        "s0",
        {"status": "waiting_approval", "resolved_parameters": arguments or {"to": "NO12", "n": 5}},
    )
    store.set_execution_status(execution.plan_id, "waiting")
    return execution.plan_id


def test_a_waiting_step_keeps_its_arguments_and_decision(store: Store) -> None:
    plan_id = _waiting(store, {"to": "NO12", "amount": 50})
    stored = store.get_execution(plan_id)
    assert stored is not None and stored.status == "waiting"
    step = stored.step("s0")
    assert step.status == "waiting_approval" and step.decision is None
    assert step.resolved_parameters == {"to": "NO12", "amount": 50}
    decision = _approval(reason="looks right")
    assert store.decide_step(plan_id, "s0", {"status": "pending", "decision": decision})
    decided = store.get_execution(plan_id)
    assert decided is not None
    assert decided.step("s0").decision == decision
    assert decided.step("s0").status == "pending"
    assert decided.step("s0").resolved_parameters == {"to": "NO12", "amount": 50}
    # cleared when asked again (the arguments changed)
    store.update_step(plan_id, "s0", {"status": "waiting_approval", "decision": None})
    again = store.get_execution(plan_id)
    assert again is not None and again.step("s0").decision is None


def test_a_decision_applies_only_to_a_waiting_step(store: Store) -> None:
    plan_id = _waiting(store)
    denial = _approval(kind="denied", reason="wrong account")
    changes = {"status": "denied", "error": "denied", "decision": denial, "finished_at": utc_now()}
    assert store.decide_step(plan_id, "s0", changes)
    assert not store.decide_step(plan_id, "s0", {"status": "pending", "decision": _approval()})
    assert not store.decide_step(plan_id, "s1", {"status": "pending", "decision": _approval()})
    stored = store.get_execution(plan_id)
    assert stored is not None
    assert (stored.step("s0").status, stored.step("s0").decision) == ("denied", denial)
    assert stored.step("s1").status == "pending" and stored.step("s1").decision is None
    with pytest.raises(KeyError):
        store.decide_step(plan_id, "nope", {"status": "pending"})


def test_concurrent_decisions_on_one_step_one_wins(store: Store, store_uri: str) -> None:
    plan_id = _waiting(store)

    def decide(other: Store, n: int) -> bool:
        return other.decide_step(
            plan_id, "s0", {"status": "pending", "decision": _approval(by=f"p{n}")}
        )

    results = in_threads(store_uri, 4, decide)
    assert sorted(results) == [False, False, False, True]
    stored = store.get_execution(plan_id)
    assert stored is not None
    winner = stored.step("s0").decision
    assert winner is not None and winner.by == f"p{results.index(True)}"


def test_a_waiting_execution_is_acquired_or_queued_but_never_claimed(store: Store) -> None:
    plan_id = _waiting(store)
    assert store.claim("w1", 60) is None
    assert store.acquire(plan_id, "decider", 60, expected_owner=None)
    held = store.get_execution(plan_id)
    assert held is not None and (held.status, held.worker_id) == ("running", "decider")
    store.set_execution_status(plan_id, "waiting")
    store.release(plan_id, "decider")
    plan = store.get_plan(plan_id)
    assert plan is not None
    assert store.enqueue(plan_id, step_pairs(plan)).status == "queued"
    assert store.claim("w1", 60) == plan_id


def test_release_leaves_a_waiting_execution_waiting(store: Store) -> None:
    plan_id = _waiting(store)
    assert store.acquire(plan_id, "w1", 60, expected_owner=None)
    store.set_execution_status(plan_id, "waiting")
    store.release(plan_id, "w1")
    stored = store.get_execution(plan_id)
    assert stored is not None and stored.status == "waiting" and stored.worker_id is None


def test_cancel_of_a_waiting_execution_ends_it_at_once(store: Store) -> None:
    plan_id = _waiting(store)
    plan = store.get_plan(plan_id)
    assert plan is not None
    execution = store.request_cancel(plan_id, step_pairs(plan))
    assert execution.status == "cancelled" and execution.finished_at is not None
    assert [s.status for s in execution.steps] == ["cancelled", "cancelled"]
    assert execution.step("s0").error == CANCELLED_BEFORE_START
    assert store.claim("w1", 60) is None
