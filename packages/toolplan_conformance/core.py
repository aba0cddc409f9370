"""Conformance tests of the roles of :class:`~toolplan.store.Store`: requests and plans (round
trips, immutability, a plan and its new request stored whole or not at all), executions and atomic
step transitions, the lease state machine and the work queue under concurrent claims, toolset
records, toolplan's own records under their roles, and the LangGraph checkpointer.

``from toolplan_conformance import *`` collects these with the rest of the suite; the fixtures
are ``store_uri`` and ``store`` (see :mod:`toolplan_conformance`).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, TypedDict

import pytest

from toolplan.errors import InvalidInput
from toolplan.plan_format.ids import new_id
from toolplan.store import (
    PlanRecord,
    Store,
    utc_now,
)
from toolplan.store.protocol import ItemRecord, cap_output, lease_holder
from toolplan.store.records import (
    ANSWERS,
    EARLY_CALLS,
    PLAN_INDEX,
    AgentAnswer,
    EarlyCall,
    PlanIndexEntry,
)
from toolplan_conformance.connections import in_threads, other_store
from toolplan_conformance.records import (
    new_plan,
    new_request,
    queued,
    started_execution,
    step_pairs,
    stored_plan,
)

# -- requests and plans ---------------------------------------------------------------------------


def test_store_protocol_and_printable_uri(store: Store, store_uri: str) -> None:
    assert isinstance(store, Store)
    assert store.uri.split("://")[0] == store_uri.split("://")[0]


def test_request_and_plan_round_trip(store: Store) -> None:
    request = new_request("écrire un blog ✍ — with “quotes”")
    plan = new_plan(request.request_id, query=request.query)
    store.save_plan(plan, request)
    assert store.get_request(request.request_id) == request
    assert store.get_plan(plan.plan_id) == plan
    assert store.get_plan(new_id("plan")) is None
    assert store.get_request(new_id("req")) is None

    no_query = new_request(None)
    bare = new_plan(no_query.request_id, query=None)
    store.save_plan(bare, no_query)
    assert store.get_request(no_query.request_id) == no_query
    assert store.get_plan(bare.plan_id) == bare


def test_list_plans_by_request_oldest_first(store: Store) -> None:
    request = new_request()
    versions = [new_plan(request.request_id) for _ in range(3)]
    store.save_plan(versions[0], request)
    for version in versions[1:]:
        store.save_plan(version)  # a new version under the existing request
    unrelated = stored_plan(store)
    assert [p.plan_id for p in store.list_plans(request.request_id)] == [
        v.plan_id for v in versions
    ]
    assert store.list_plans(request.request_id)[1] == versions[1]
    assert [p.plan_id for p in store.list_plans(unrelated.request_id)] == [unrelated.plan_id]
    assert store.list_plans(new_id("req")) == []


def test_plans_are_immutable(store: Store) -> None:
    plan = stored_plan(store)
    changed = PlanRecord(
        plan_id=plan.plan_id,
        request_id=plan.request_id,
        plan={"steps": []},
        analysis={},
        status="needs_review",
        created_at=utc_now(),
    )
    with pytest.raises(InvalidInput, match="immutable"):
        store.save_plan(changed)
    assert store.get_plan(plan.plan_id) == plan
    assert [p.plan_id for p in store.list_plans(plan.request_id)] == [plan.plan_id]


def test_new_version_needs_an_existing_request(store: Store) -> None:
    orphan = new_plan(new_id("req"))
    with pytest.raises(InvalidInput, match="does not exist"):
        store.save_plan(orphan)
    assert store.get_plan(orphan.plan_id) is None


def test_plan_and_new_request_are_stored_whole_or_not_at_all(store: Store) -> None:
    plan = stored_plan(store)

    # The plan cannot be stored (its ID is taken): its new request must not appear either.
    request = new_request()
    clash = replace(plan, request_id=request.request_id)
    with pytest.raises(InvalidInput):
        store.save_plan(clash, request)
    assert store.get_request(request.request_id) is None
    assert store.list_plans(request.request_id) == []

    # The "new" request exists already: the plan must not be stored.
    existing = store.get_request(plan.request_id)
    assert existing is not None
    second = new_plan(plan.request_id)
    with pytest.raises(InvalidInput):
        store.save_plan(second, existing)
    assert store.get_plan(second.plan_id) is None
    assert [p.plan_id for p in store.list_plans(plan.request_id)] == [plan.plan_id]


# -- executions and step records ------------------------------------------------------------------


def test_execution_round_trip(store: Store) -> None:
    plan = stored_plan(store, steps=4)
    assert store.get_execution(plan.plan_id) is None
    execution = store.create_execution(plan.plan_id, step_pairs(plan), status="running")
    assert execution.plan_id == plan.plan_id and execution.status == "running"
    assert [(s.step_id, s.tool) for s in execution.steps] == step_pairs(plan)
    first = execution.steps[0]
    assert (first.status, first.attempts, first.output, first.error) == ("pending", 0, None, None)
    assert first.resolved_parameters is None and first.duration_ms is None
    assert not first.output_truncated and not first.used_fallback
    assert execution.started_at is None and execution.finished_at is None
    assert execution.worker_id is None and execution.lease_until is None
    assert execution.created_at.endswith("Z")
    assert store.get_execution(plan.plan_id) == execution


def test_create_execution_returns_the_existing_one(store: Store) -> None:
    execution = started_execution(store)
    store.update_step(execution.plan_id, "s0", {"status": "succeeded", "output": 1})
    again = store.create_execution(execution.plan_id, [("other", "echo")], status="queued")
    assert again.status == "running"
    assert [s.step_id for s in again.steps] == ["s0", "s1", "s2"]
    assert again.step("s0").status == "succeeded"


def test_step_transitions_round_trip(store: Store) -> None:
    execution = started_execution(store)
    plan_id = execution.plan_id
    output = {
        "_id": "a1",
        "text": "naïve — 東京",
        "n": 3,
        "big": 2**53 + 1,
        "ratio": 0.25,
        "nested": {"list": [1, "two", None, True], "empty": {}},
        "$weird.key": "kept as is",
    }
    store.update_step(
        plan_id,
        "s0",
        {
            "status": "running",
            "attempts": 1,
            "resolved_parameters": {"value": "{not a template}", "items": [1, 2]},
            "started_at": "2025-01-01T00:00:00.000Z",
            "error": None,
        },
    )
    store.update_step(
        plan_id,
        "s0",
        {
            "status": "succeeded",
            "attempts": 2,
            "output": output,
            "finished_at": "2025-01-01T00:00:01.500Z",
            "duration_ms": 1500.25,
            "used_fallback": True,
        },
    )
    store.update_step(plan_id, "s1", {"status": "succeeded", "output": '{"a": 1}'})
    store.update_step(plan_id, "s2", {"status": "failed", "output": None, "error": "boom"})
    steps = {s.step_id: s for s in store.get_execution(plan_id).steps}  # type: ignore[union-attr]
    first = steps["s0"]
    assert first.status == "succeeded" and first.attempts == 2
    assert first.output == output
    assert first.resolved_parameters == {"value": "{not a template}", "items": [1, 2]}
    assert first.started_at == "2025-01-01T00:00:00.000Z"
    assert first.finished_at == "2025-01-01T00:00:01.500Z"
    assert first.duration_ms == 1500.25 and first.used_fallback and not first.output_truncated
    assert steps["s1"].output == '{"a": 1}'  # a string stays a string
    assert (steps["s2"].status, steps["s2"].output, steps["s2"].error) == ("failed", None, "boom")


def test_outputs_capped_by_the_engine_round_trip_with_their_flag(store: Store) -> None:
    execution = started_execution(store, steps=1)
    capped, truncated = cap_output({"blob": "x" * 5000}, 1000)
    assert truncated
    store.update_step(
        execution.plan_id,
        "s0",
        {"status": "succeeded", "output": capped, "output_truncated": True},
    )
    step = store.get_execution(execution.plan_id).step("s0")  # type: ignore[union-attr]
    assert step.output_truncated and step.output == capped
    assert step.output["truncated"] is True and step.output["originalBytes"] > 5000


def test_update_step_rejects_unknown_fields_and_steps(store: Store) -> None:
    execution = started_execution(store, steps=1)
    with pytest.raises(ValueError, match="plan_id"):
        store.update_step(execution.plan_id, "s0", {"plan_id": "other"})
    with pytest.raises(KeyError):
        store.update_step(execution.plan_id, "nope", {"status": "running"})
    assert store.get_execution(execution.plan_id) == execution


def test_for_each_items_and_skip_reason_round_trip(store: Store) -> None:
    """A forEach step's items: the whole list once, then one item at a time, in place."""
    execution = started_execution(store, steps=2)
    plan_id = execution.plan_id
    store.update_step(
        plan_id, "s0", {"status": "running", "items": [ItemRecord(i) for i in range(3)]}
    )
    store.update_steps(
        plan_id,
        [
            ("s0", {"item": ItemRecord(1, "succeeded", attempts=1, output={"id": "b1"})}),
            ("s0", {"item": ItemRecord(2, "failed", attempts=3, error="boom", used_fallback=True)}),
            ("s1", {"status": "skipped", "reason": "condition", "error": "condition false"}),
        ],
    )
    record = store.get_execution(plan_id)
    assert record is not None
    assert record.step("s0").items == [
        ItemRecord(0),
        ItemRecord(1, "succeeded", attempts=1, output={"id": "b1"}),
        ItemRecord(2, "failed", attempts=3, error="boom", used_fallback=True),
    ]
    assert record.step("s1").reason == "condition" and record.step("s1").items is None
    assert execution.step("s0").items is None and execution.step("s0").reason is None


def test_concurrent_item_updates_are_not_lost(store: Store, store_uri: str) -> None:
    """Items written from several processes at once each keep their own record."""
    workers = 6
    execution = started_execution(store, steps=1)
    plan_id = execution.plan_id
    store.update_step(plan_id, "s0", {"items": [ItemRecord(i) for i in range(workers)]})

    def work(other: Store, i: int) -> None:
        for attempt in range(1, 6):
            other.update_step(plan_id, "s0", {"item": ItemRecord(i, "running", attempts=attempt)})
        other.update_step(plan_id, "s0", {"item": ItemRecord(i, "succeeded", 5, output=i)})

    in_threads(store_uri, workers, work)
    items = store.get_execution(plan_id).step("s0").items  # type: ignore[union-attr]
    assert items == [ItemRecord(i, "succeeded", 5, output=i) for i in range(workers)]


class _Sample(TypedDict):
    attempts: int
    error: str | None
    status: str


def test_step_transition_is_atomic(store: Store, store_uri: str) -> None:
    """A reader never sees half of one transition: its fields change together."""
    execution = started_execution(store, steps=1)
    plan_id = execution.plan_id
    rounds = 60
    samples: list[_Sample] = []

    def work(other: Store, i: int) -> None:
        if i == 0:
            for n in range(1, rounds + 1):
                status = "running" if n < rounds else "succeeded"
                other.update_step(
                    plan_id, "s0", {"status": status, "attempts": n, "error": f"e{n}"}
                )
        else:
            while True:
                step = other.get_execution(plan_id).step("s0")  # type: ignore[union-attr]
                samples.append(
                    {"attempts": step.attempts, "error": step.error, "status": step.status}
                )
                if step.status == "succeeded":
                    return

    in_threads(store_uri, 2, work)
    for sample in samples:
        expected = None if sample["attempts"] == 0 else f"e{sample['attempts']}"
        assert sample["error"] == expected, sample
    assert store.get_execution(plan_id).step("s0").attempts == rounds  # type: ignore[union-attr]


def test_concurrent_step_updates_are_not_lost(store: Store, store_uri: str) -> None:
    workers = 6
    execution = started_execution(store, steps=workers)

    def work(other: Store, i: int) -> None:
        for attempt in range(1, 11):
            other.update_step(
                execution.plan_id, f"s{i}", {"status": "running", "attempts": attempt}
            )
        other.update_step(execution.plan_id, f"s{i}", {"status": "succeeded", "output": i})

    in_threads(store_uri, workers, work)
    steps = store.get_execution(execution.plan_id).steps  # type: ignore[union-attr]
    assert [(s.status, s.attempts, s.output) for s in steps] == [
        ("succeeded", 10, i) for i in range(workers)
    ]


def test_execution_status_and_times(store: Store) -> None:
    execution = started_execution(store)
    plan_id = execution.plan_id
    store.set_execution_status(plan_id, "running", started_at="2025-01-01T00:00:00.000Z")
    store.set_execution_status(plan_id, "failed", error="oops", finished_at="2025-01-01T00:01Z")
    record = store.get_execution(plan_id)
    assert record is not None
    assert (record.status, record.error) == ("failed", "oops")
    assert record.started_at == "2025-01-01T00:00:00.000Z"  # kept when not given again
    assert record.finished_at == "2025-01-01T00:01Z"
    store.set_execution_status(plan_id, "partial")
    record = store.get_execution(plan_id)
    assert record is not None and (record.status, record.error) == ("partial", None)


# -- leases ---------------------------------------------------------------------------------------


def test_acquire_renew_release(store: Store) -> None:
    plan_id = started_execution(store).plan_id
    assert store.acquire(plan_id, "w1", 60, expected_owner=None)
    record = store.get_execution(plan_id)
    assert record is not None and record.worker_id == "w1" and record.status == "running"
    assert record.lease_until is not None and record.lease_until > time.time() + 30

    assert not store.acquire(plan_id, "w2", 60, expected_owner=None)  # held by a live lease
    assert store.acquire(plan_id, "w1", 60, expected_owner=None)  # the holder may re-acquire
    assert store.renew_lease(plan_id, "w1", 60)
    assert not store.renew_lease(plan_id, "w2", 60)

    # w1's process is known to be dead: w2 takes over without waiting for the lease to expire.
    assert store.acquire(plan_id, "w2", 60, expected_owner="w1")
    assert not store.renew_lease(plan_id, "w1", 60)  # w1 lost it
    store.release(plan_id, "w1")  # not the holder: no effect
    assert store.get_execution(plan_id).worker_id == "w2"  # type: ignore[union-attr]

    store.release(plan_id, "w2")
    record = store.get_execution(plan_id)
    assert record is not None
    assert (record.status, record.worker_id, record.lease_until) == ("queued", None, None)
    assert not store.renew_lease(plan_id, "w2", 60)


def test_a_lease_records_the_process_holding_it(store: Store) -> None:
    """Typed owner data, so that a dead holder is recognised without parsing its worker ID."""
    holder = lease_holder()
    plan_id = started_execution(store).plan_id
    assert store.acquire(plan_id, "any id", 60, expected_owner=None)
    record = store.get_execution(plan_id)
    assert record is not None and (record.owner_host, record.owner_pid) == holder
    store.release(plan_id, "any id")
    record = store.get_execution(plan_id)
    assert record is not None and (record.owner_host, record.owner_pid) == (None, None)

    claimed_id = store.claim("claimer", 60)  # the released execution is queued again
    assert claimed_id == plan_id
    claimed = store.get_execution(claimed_id)
    assert claimed is not None and (claimed.owner_host, claimed.owner_pid) == holder


def test_expired_lease_can_be_acquired(store: Store) -> None:
    plan_id = started_execution(store).plan_id
    assert store.acquire(plan_id, "w1", -1, expected_owner=None)  # already expired
    assert store.acquire(plan_id, "w2", 60, expected_owner=None)
    assert store.get_execution(plan_id).worker_id == "w2"  # type: ignore[union-attr]


def test_finished_execution_cannot_be_acquired(store: Store) -> None:
    plan_id = started_execution(store).plan_id
    assert store.acquire(plan_id, "w1", 60, expected_owner=None)
    store.set_execution_status(plan_id, "succeeded", finished_at=utc_now())
    assert not store.acquire(plan_id, "w2", -1, expected_owner="w1")
    store.release(plan_id, "w1")
    record = store.get_execution(plan_id)
    assert record is not None and (record.status, record.worker_id) == ("succeeded", None)
    assert store.acquire(new_id("plan"), "w1", 60, expected_owner=None) is False


def test_concurrent_acquire_has_one_winner(store: Store, store_uri: str) -> None:
    for _ in range(3):
        plan_id = started_execution(store, steps=1).plan_id

        def take(other: Store, i: int, plan_id: str = plan_id) -> bool:
            return other.acquire(plan_id, f"w{i}", 60, expected_owner=None)

        wins = in_threads(store_uri, 6, take)
        assert wins.count(True) == 1, wins
        owner = store.get_execution(plan_id).worker_id  # type: ignore[union-attr]
        assert owner == f"w{wins.index(True)}"


# -- work queue -----------------------------------------------------------------------------------


def test_claim_is_first_in_first_out(store: Store) -> None:
    plan_ids = queued(store, 3)
    record = store.get_execution(plan_ids[0])
    assert record is not None and record.status == "queued" and record.worker_id is None
    assert [s.status for s in record.steps] == ["pending", "pending"]
    assert [store.claim("w1", 60) for _ in range(3)] == plan_ids
    assert store.claim("w1", 60) is None
    claimed = store.get_execution(plan_ids[0])
    assert claimed is not None and (claimed.status, claimed.worker_id) == ("running", "w1")
    assert claimed.lease_until is not None and claimed.lease_until > time.time()


def test_release_puts_a_claimed_execution_back_in_the_queue(store: Store) -> None:
    [plan_id] = queued(store, 1)
    assert store.claim("w1", 60) == plan_id
    assert store.claim("w2", 60) is None
    store.release(plan_id, "w1")
    assert store.claim("w2", 60) == plan_id
    assert store.get_execution(plan_id).worker_id == "w2"  # type: ignore[union-attr]


def test_expired_claim_is_taken_over_with_its_step_records(store: Store) -> None:
    [plan_id] = queued(store, 1)
    assert store.claim("w1", -1) == plan_id  # w1 "dies": its lease is already expired
    store.update_step(plan_id, "s0", {"status": "succeeded", "attempts": 1, "output": "done"})
    store.update_step(plan_id, "s1", {"status": "running", "attempts": 1})
    assert not store.renew_lease(plan_id, "w3", 60)
    assert store.claim("w2", 60) == plan_id
    record = store.get_execution(plan_id)
    assert record is not None and record.worker_id == "w2"
    assert [(s.status, s.attempts, s.output) for s in record.steps] == [
        ("succeeded", 1, "done"),
        ("running", 1, None),
    ]
    assert store.claim("w3", 60) is None  # w2's lease is live
    assert not store.renew_lease(plan_id, "w1", 60)


def test_running_direct_execution_is_not_claimed(store: Store) -> None:
    """Only queued work goes to workers; `toolplan execute` resumes its own runs."""
    plan_id = started_execution(store).plan_id
    assert store.acquire(plan_id, "cli", -1, expected_owner=None)  # its process died
    assert store.claim("w1", 60) is None


def test_enqueue_requeues_an_abandoned_direct_run(store: Store) -> None:
    plan_id = started_execution(store).plan_id
    assert store.acquire(plan_id, "cli", -1, expected_owner=None)
    store.update_step(plan_id, "s0", {"status": "succeeded", "output": 1})
    record = store.enqueue(plan_id, [("s0", "echo"), ("s1", "echo"), ("s2", "echo")])
    assert (record.status, record.worker_id) == ("queued", None)
    assert record.step("s0").status == "succeeded"
    assert store.claim("w1", 60) == plan_id


def test_enqueue_leaves_finished_and_live_executions_alone(store: Store) -> None:
    [done, live] = [stored_plan(store) for _ in range(2)]
    store.create_execution(done.plan_id, step_pairs(done), status="running")
    store.set_execution_status(done.plan_id, "succeeded", finished_at=utc_now())
    assert store.enqueue(done.plan_id, step_pairs(done)).status == "succeeded"

    store.create_execution(live.plan_id, step_pairs(live), status="running")
    assert store.acquire(live.plan_id, "cli", 60, expected_owner=None)
    record = store.enqueue(live.plan_id, step_pairs(live))
    assert (record.status, record.worker_id) == ("running", "cli")
    assert store.claim("w1", 60) is None

    again = store.enqueue(done.plan_id, step_pairs(done))  # enqueue is idempotent
    assert len(again.steps) == 3


def test_concurrent_claims_take_each_execution_once(store: Store, store_uri: str) -> None:
    plan_ids = queued(store, 20)

    def drain(other: Store, i: int) -> list[str]:
        mine = []
        while (plan_id := other.claim(f"w{i}", 60)) is not None:
            mine.append(plan_id)
        return mine

    claims = in_threads(store_uri, 5, drain)
    everything = [plan_id for mine in claims for plan_id in mine]
    assert sorted(everything) == sorted(plan_ids)  # each exactly once
    for i, mine in enumerate(claims):
        for plan_id in mine:
            assert store.get_execution(plan_id).worker_id == f"w{i}"  # type: ignore[union-attr]


def test_resume_state_survives_reopening_the_store(store: Store, store_uri: str) -> None:
    """What a process that crashed left behind is exactly what the next one reads."""
    [plan_id] = queued(store, 1)
    assert store.claim("w1", 60) == plan_id
    store.set_execution_status(plan_id, "running", started_at=utc_now())
    store.update_step(
        plan_id,
        "s0",
        {"status": "succeeded", "attempts": 1, "output": {"_id": "x"}, "duration_ms": 2.0},
    )
    store.update_step(plan_id, "s1", {"status": "running", "attempts": 2, "resolved_parameters": 1})
    before = store.get_execution(plan_id)
    store.close()
    with other_store(store_uri) as reopened:
        assert reopened.get_execution(plan_id) == before
        plan = reopened.get_plan(plan_id)
        assert plan is not None and reopened.get_request(plan.request_id) is not None


# -- statistics and toolset records ---------------------------------------------------------------


def test_tool_stats(store: Store) -> None:
    assert store.tool_stats() == {}
    plan = stored_plan(store, steps=1)
    pairs = [("a1", "alpha"), ("a2", "alpha"), ("a3", "alpha"), ("b1", "beta"), ("c1", "gamma")]
    pairs += [("c2", "gamma"), ("d1", "delta")]
    store.create_execution(plan.plan_id, pairs, status="running")
    finished: list[tuple[str, str, float | None]] = [
        ("a1", "succeeded", 10.0),
        ("a2", "succeeded", 30.0),
        ("a3", "failed", 5.0),
        ("b1", "failed", None),
        ("c1", "skipped", None),
        ("c2", "running", None),
    ]
    for step_id, status, duration in finished:
        store.update_step(plan.plan_id, step_id, {"status": status, "duration_ms": duration})
    stats = store.tool_stats()
    assert set(stats) == {"alpha", "beta"}  # gamma was never finished, delta never ran
    alpha = stats["alpha"]
    assert alpha.calls == 3 and alpha.avg_duration_ms == pytest.approx(20.0)
    assert alpha.failure_rate == pytest.approx(1 / 3)
    beta = stats["beta"]
    assert (beta.calls, beta.avg_duration_ms, beta.failure_rate) == (1, None, 1.0)


def test_put_record_idempotency(store: Store) -> None:
    first = store.put_record("authors", {"name": "Alice"}, idempotency_key="plan_x:author")
    assert isinstance(first["_id"], str) and first["name"] == "Alice"
    again = store.put_record("authors", {"name": "Alice 2"}, idempotency_key="plan_x:author")
    assert again == first
    assert store.find_records("authors", {}) == [first]

    elsewhere = store.put_record("blogs", {"title": "T"}, idempotency_key="plan_x:author")
    assert elsewhere["_id"] != first["_id"]  # keys are per collection
    unkeyed = [store.put_record("authors", {"name": "Bob"}) for _ in range(2)]
    assert unkeyed[0]["_id"] != unkeyed[1]["_id"]  # without a key: always a new record
    assert store.find_records("authors", {"name": "Bob"}) == unkeyed


def test_find_records_plain_equality_oldest_first(store: Store) -> None:
    alice = store.put_record("authors", {"name": "Alice", "tags": ["a", "b"], "age": 30})
    bob = store.put_record("authors", {"name": "Bob", "tags": ["a"], "age": 30})
    store.put_record("blogs", {"name": "Alice"})
    assert store.find_records("authors", {}) == [alice, bob]
    assert store.find_records("authors", {"name": "Alice"}) == [alice]
    assert store.find_records("authors", {"_id": bob["_id"]}) == [bob]
    assert store.find_records("authors", {"age": 30}) == [alice, bob]
    assert store.find_records("authors", {"age": 30, "name": "Bob"}) == [bob]
    assert store.find_records("authors", {"tags": "a"}) == []  # plain equality, not "contains"
    assert store.find_records("authors", {"tags": ["a"]}) == [bob]
    assert store.find_records("authors", {"missing": "x"}) == []
    assert store.find_records("nothing", {}) == []


def test_find_records_by_lookup_keys(store: Store, store_uri: str) -> None:
    """Lookup keys select records through an index: any of the given keys, oldest first, each
    record once, within the collection, and ``where`` still applies; they are not fields."""
    tokyo = store.put_record("index", {"q": "tokyo"}, lookup_keys=["p:compare", "s:tokyo"])
    paris = store.put_record("index", {"q": "paris"}, lookup_keys=["p:compare", "s:paris"])
    plain = store.put_record("index", {"q": "plain"})
    store.put_record("other", {"q": "tokyo"}, lookup_keys=["p:compare"])
    assert "lookup_keys" not in tokyo and set(tokyo) == {"_id", "q"}
    assert store.find_records("index", {}, lookup_keys=["p:compare"]) == [tokyo, paris]
    assert store.find_records("index", {}, lookup_keys=["s:paris", "s:tokyo"]) == [tokyo, paris]
    assert store.find_records("index", {}, lookup_keys=("p:compare", "s:tokyo")) == [tokyo, paris]
    assert store.find_records("index", {"q": "paris"}, lookup_keys={"p:compare"}) == [paris]
    assert store.find_records("index", {}, lookup_keys=["s:rome"]) == []
    assert store.find_records("index", {}, lookup_keys=[]) == []
    assert store.find_records("index", {}) == [tokyo, paris, plain]  # without keys: all
    many = [f"k{i}" for i in range(1200)] + ["s:paris"]  # more than one query's worth
    assert store.find_records("index", {}, lookup_keys=many) == [paris]
    # an idempotent repeat returns the earlier record and does not add its keys
    again = store.put_record("index", {"q": "x"}, idempotency_key="once", lookup_keys=["a"])
    store.put_record("index", {"q": "y"}, idempotency_key="once", lookup_keys=["b"])
    assert store.find_records("index", {}, lookup_keys=["a", "b"]) == [again]
    with other_store(store_uri) as other:  # the keys are stored, not kept by one connection
        assert other.find_records("index", {}, lookup_keys=["s:tokyo"]) == [tokyo]


def test_concurrent_put_record_with_one_key_stores_one_record(store: Store, store_uri: str) -> None:
    results = in_threads(
        store_uri,
        6,
        lambda other, i: other.put_record("authors", {"n": i}, idempotency_key="plan_y:step"),
    )
    assert len({r["_id"] for r in results}) == 1
    assert len(store.find_records("authors", {})) == 1


def test_toolplans_own_records_keep_their_roles(store: Store, store_uri: str) -> None:
    """What toolplan keeps in the records, each under its typed role (:mod:`toolplan.store.records`):
    the reuse index (entries by lookup key, one per plan), the calls started early (states of a
    call by scope, a recalled output claimed once among racing plannings), the agent's answers
    (by request); each in its own collection, under the names stored before they had types."""
    entry: PlanIndexEntry = {
        "fingerprint": "fp",
        "key": "weather in paris",
        "planId": "plan_1",
        "query": "Weather in Paris?",
        "pattern": "weather in (.+)",
        "prefix": "weather in ",
        "suffix": None,
    }
    indexed = PLAN_INDEX.put(store, entry, idempotency_key="plan_1", lookup_keys=["exact:fp"])
    assert {k: v for k, v in indexed.items() if k != "_id"} == entry
    assert PLAN_INDEX.put(store, {**entry, "query": "x"}, idempotency_key="plan_1") == indexed
    assert PLAN_INDEX.find(store, {"fingerprint": "fp"}, lookup_keys=["exact:fp"]) == [indexed]

    call: EarlyCall = {"scope": "req_x", "planId": "plan_a", "step": "w", "call": "k"}
    running = EARLY_CALLS.put(store, {**call, "status": "running"}, lookup_keys=["req_x"])
    done = EARLY_CALLS.put(
        store, {**call, "status": "succeeded", "output": {"t": 21}}, lookup_keys=["req_x"]
    )
    assert EARLY_CALLS.find(store, {"scope": "req_x"}, lookup_keys=["req_x"]) == [running, done]
    claims = in_threads(
        store_uri,
        4,
        lambda other, i: EARLY_CALLS.put(
            other,
            {**call, "status": "adopted", "adoptedBy": f"plan_{i}"},
            idempotency_key="claim:plan_a:k",
            lookup_keys=["req_x"],
        ),
    )
    assert len({claim["adoptedBy"] for claim in claims}) == 1

    answer: AgentAnswer = {
        "requestId": "req_1",
        "planId": "plan_1",
        "answer": "21 °C",
        "plans": [{"planId": "plan_1"}],
        "llmCalls": 2,
        "usage": None,
    }
    kept = ANSWERS.put(store, answer, idempotency_key="plan_1")
    assert ANSWERS.find(store, {"requestId": "req_1"}) == [kept]
    names = {PLAN_INDEX.name, EARLY_CALLS.name, ANSWERS.name}
    assert names == {"toolplan_plan_index", "toolplan_early_steps", "toolplan_answers"}
    assert store.find_records("toolplan_answers", {}) == [kept]  # the data as stored before


# -- checkpoints ----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_checkpointer_keeps_graph_state_across_reopen(store: Store, store_uri: str) -> None:
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        trail: list[str]

    builder: Any = StateGraph(State)
    builder.add_node("first", lambda s: {"trail": [*s["trail"], "first"]})
    builder.add_node("second", lambda s: {"trail": [*s["trail"], "second"]})
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", END)
    config: Any = {"configurable": {"thread_id": new_id("plan")}}

    async with store.checkpointer() as saver:
        graph = builder.compile(checkpointer=saver, interrupt_before=["second"])
        assert await graph.ainvoke({"trail": []}, config) == {"trail": ["first"]}
    store.close()

    with other_store(store_uri) as reopened:
        async with reopened.checkpointer() as saver:
            graph = builder.compile(checkpointer=saver, interrupt_before=["second"])
            assert (await graph.aget_state(config)).next == ("second",)
            assert await graph.ainvoke(None, config) == {"trail": ["first", "second"]}


__all__ = sorted(name for name in globals() if name.startswith("test_"))
