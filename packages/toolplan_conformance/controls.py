"""Conformance tests of the orchestration controls every store backend keeps: cancel requests
(and reopening a cancelled execution), the durations the adaptive timeouts and estimates read,
and the shared result cache of read-only tools.

``from toolplan_conformance import *`` collects these with the rest of the suite; the
fixtures are the same (``store_uri`` and ``store``).
"""

from __future__ import annotations

import time

import pytest

from toolplan.store import Store
from toolplan.store.protocol import CANCELLED_BEFORE_START
from toolplan_conformance.connections import in_threads, other_store
from toolplan_conformance.records import queued, started_execution, step_pairs, stored_plan

# -- cancel requests ------------------------------------------------------------------------------


def test_new_step_fields_round_trip(store: Store) -> None:
    execution = started_execution(store, steps=2)
    fresh = execution.step("s0")
    assert not fresh.cached and fresh.cache_age_seconds is None
    assert fresh.timeout is None and fresh.timeout_source is None
    assert execution.cancel_requested_at is None
    store.update_step(
        execution.plan_id,
        "s0",
        {"status": "running", "timeout": 2.5, "timeout_source": "history"},
    )
    store.update_step(
        execution.plan_id,
        "s1",
        {"status": "succeeded", "cached": True, "cache_age_seconds": 12.25, "output": [1]},
    )
    stored = store.get_execution(execution.plan_id)
    assert stored is not None
    assert (stored.step("s0").timeout, stored.step("s0").timeout_source) == (2.5, "history")
    assert stored.step("s1").cached and stored.step("s1").cache_age_seconds == 12.25
    assert fresh.reused_from is None and stored.step("s1").reused_from is None


def test_a_step_reused_from_an_earlier_version_says_so(store: Store) -> None:
    execution = started_execution(store, steps=1)
    store.update_steps(
        execution.plan_id,
        [("s0", {"status": "succeeded", "output": {"id": 7}, "reused_from": "plan_x:made"})],
    )
    stored = store.get_execution(execution.plan_id)
    assert stored is not None
    assert stored.step("s0").reused_from == "plan_x:made"
    assert stored.step("s0").output == {"id": 7}


def test_cancel_of_a_plan_never_executed_records_it_cancelled(store: Store) -> None:
    plan = stored_plan(store)
    execution = store.request_cancel(plan.plan_id, step_pairs(plan))
    assert execution.status == "cancelled" and execution.finished_at is not None
    assert execution.cancel_requested_at is not None
    assert [s.step_id for s in execution.steps] == ["s0", "s1", "s2"]
    assert {s.status for s in execution.steps} == {"cancelled"}
    assert execution.steps[0].error == CANCELLED_BEFORE_START
    # It cannot be run, queued or claimed any more.
    assert not store.acquire(plan.plan_id, "w1", 60, expected_owner=None)
    assert store.enqueue(plan.plan_id, step_pairs(plan)).status == "cancelled"
    assert store.claim("w1", 60) is None
    assert store.get_execution(plan.plan_id) == execution


def test_cancel_of_a_queued_execution_ends_it_at_once(store: Store) -> None:
    [plan_id] = queued(store, 1)
    store.update_step(plan_id, "s0", {"status": "succeeded", "output": 1})
    execution = store.request_cancel(plan_id, [("s0", "echo"), ("s1", "echo")])
    assert execution.status == "cancelled" and execution.cancel_requested_at is not None
    assert [s.status for s in execution.steps] == ["succeeded", "cancelled"]
    assert store.claim("w1", 60) is None  # no worker picks it up


def test_cancel_of_a_running_execution_is_a_request_its_runner_sees(store: Store) -> None:
    execution = started_execution(store)
    plan_id = execution.plan_id
    assert store.acquire(plan_id, "w1", 60, expected_owner=None)
    assert not store.cancel_requested(plan_id)
    requested = store.request_cancel(plan_id, [])
    assert requested.status == "running" and requested.cancel_requested_at is not None
    assert [s.status for s in requested.steps] == ["pending"] * 3  # the runner ends them
    assert store.cancel_requested(plan_id)
    again = store.request_cancel(plan_id, [])  # idempotent: the first request's time is kept
    assert again.cancel_requested_at == requested.cancel_requested_at
    assert store.renew_lease(plan_id, "w1", 60)  # the runner keeps its lease until it ends


def test_cancel_of_a_finished_execution_changes_nothing(store: Store) -> None:
    execution = started_execution(store, steps=1)
    store.update_step(execution.plan_id, "s0", {"status": "succeeded", "output": 1})
    store.set_execution_status(execution.plan_id, "succeeded", finished_at="2025-01-01T00:00:00Z")
    before = store.get_execution(execution.plan_id)
    after = store.request_cancel(execution.plan_id, [("s0", "echo")])
    assert after == before and after.cancel_requested_at is None
    assert not store.cancel_requested(execution.plan_id)
    assert not store.cancel_requested(stored_plan(store).plan_id)  # no execution at all


def test_cancel_and_claim_race_has_one_winner(store: Store, store_uri: str) -> None:
    pairs = [("s0", "echo"), ("s1", "echo")]
    for _ in range(3):
        [plan_id] = queued(store, 1)

        def work(other: Store, i: int, plan_id: str = plan_id) -> object:
            if i == 0:
                return other.request_cancel(plan_id, pairs).status
            return other.claim(f"w{i}", 60)

        results = in_threads(store_uri, 3, work)
        final = store.get_execution(plan_id)
        assert final is not None
        claimed = [r for r in results[1:] if r is not None]
        if final.status == "cancelled":
            assert claimed == [] and results[0] == "cancelled"
        else:  # a worker won: it runs the plan and sees the cancel request
            assert final.status == "running" and claimed == [plan_id]
            assert final.cancel_requested_at is not None and store.cancel_requested(plan_id)


def test_reopen_a_cancelled_execution_keeps_its_finished_steps(
    store: Store, store_uri: str
) -> None:
    execution = started_execution(store)
    plan_id = execution.plan_id
    store.update_step(plan_id, "s0", {"status": "succeeded", "output": {"a": 1}, "attempts": 1})
    store.update_step(plan_id, "s1", {"status": "cancelled", "attempts": 1, "error": "x"})
    store.update_step(plan_id, "s2", {"status": "cancelled", "error": CANCELLED_BEFORE_START})
    store.request_cancel(plan_id, [])
    store.set_execution_status(plan_id, "cancelled", finished_at="2025-01-01T00:00:00Z")
    assert not store.reopen(stored_plan(store).plan_id)  # nothing to reopen
    with other_store(store_uri) as other:
        assert other.reopen(plan_id)
        assert not other.reopen(plan_id)  # only a cancelled execution reopens
    reopened = store.get_execution(plan_id)
    assert reopened is not None
    assert reopened.status == "running" and reopened.finished_at is None
    assert reopened.cancel_requested_at is None and not store.cancel_requested(plan_id)
    assert reopened.worker_id is None
    steps = {s.step_id: s for s in reopened.steps}
    assert steps["s0"].status == "succeeded" and steps["s0"].output == {"a": 1}
    assert (steps["s1"].status, steps["s1"].attempts, steps["s1"].error) == ("pending", 1, None)
    assert steps["s2"].status == "pending" and steps["s2"].finished_at is None
    assert store.acquire(plan_id, "w2", 60, expected_owner=None)  # it can run again


# -- durations for timeouts and estimates ---------------------------------------------------------


def test_tool_durations_newest_first_first_attempts_only(store: Store) -> None:
    plan = stored_plan(store, steps=1)
    pairs = [(f"a{i}", "alpha") for i in range(6)] + [("b0", "beta"), ("b1", "beta")]
    store.create_execution(plan.plan_id, pairs, status="running")
    rows = [
        ("a0", {"duration_ms": 10.0, "finished_at": "2025-01-01T00:00:01.000Z"}),
        ("a1", {"duration_ms": 30.0, "finished_at": "2025-01-01T00:00:03.000Z"}),
        ("a2", {"duration_ms": 20.0, "finished_at": "2025-01-01T00:00:02.000Z"}),
        ("a3", {"duration_ms": 999.0, "finished_at": "2025-01-01T00:00:04.000Z", "attempts": 2}),
        ("a4", {"duration_ms": 0.1, "finished_at": "2025-01-01T00:00:05.000Z", "cached": True}),
        (
            "a5",
            {"duration_ms": 50.0, "finished_at": "2025-01-01T00:00:06.000Z", "status": "failed"},
        ),
        (
            "b0",
            {"duration_ms": 7.0, "finished_at": "2025-01-01T00:00:01.000Z", "used_fallback": True},
        ),
    ]
    for step_id, changes in rows:
        store.update_step(plan.plan_id, step_id, {"status": "succeeded", "attempts": 1, **changes})
    assert store.tool_durations(["alpha", "beta", "never"], 10) == {
        "alpha": [30.0, 20.0, 10.0],
        "beta": [],
        "never": [],
    }
    assert store.tool_durations(["alpha"], 2) == {"alpha": [30.0, 20.0]}
    assert store.tool_durations([], 5) == {}
    # A cached step is not a call of the tool: statistics leave it out too.
    stats = store.tool_stats()["alpha"]
    assert stats.calls == 5 and stats.failure_rate == pytest.approx(1 / 5)


# -- result cache ---------------------------------------------------------------------------------


def test_cache_round_trip_and_replace(store: Store, store_uri: str) -> None:
    assert store.cache_get("k1").result is None
    before = time.time()
    output = {"text": "naïve — 東京", "big": 2**53 + 1, "list": [1, None, True], "$k.x": 1}
    store.cache_put("k1", "search", output, 60)
    hit = store.cache_get("k1").result
    assert hit is not None and hit.output == output
    assert before - 1 <= hit.stored_at <= time.time() + 1
    with other_store(store_uri) as other:  # shared by every process using the store
        shared = other.cache_get("k1").result
        assert shared is not None and shared.output == output
        other.cache_put("k1", "search", "newer", 60)
    replaced = store.cache_get("k1").result
    assert replaced is not None and replaced.output == "newer"
    store.cache_put("k2", "search", None, 60)  # a null output is a result too
    null = store.cache_get("k2").result
    assert null is not None and null.output is None


def test_cache_entries_expire(store: Store) -> None:
    store.cache_put("short", "search", 1, 0.2)
    store.cache_put("long", "search", 2, 60)
    assert store.cache_get("short").result is not None
    time.sleep(0.3)
    assert store.cache_get("short").result is None
    long = store.cache_get("long").result
    assert long is not None and long.output == 2
    store.cache_put("short", "search", 3, 60)  # an expired key can be stored again
    again = store.cache_get("short").result
    assert again is not None and again.output == 3


def test_cache_clear_all_or_one_tool(store: Store) -> None:
    store.cache_put("a1", "alpha", 1, 60)
    store.cache_put("a2", "alpha", 2, 60)
    store.cache_put("b1", "beta", 3, 60)
    store.cache_put("gone", "beta", 4, 0.05)
    time.sleep(0.1)
    assert store.cache_clear("alpha") == 2
    assert store.cache_get("a1").result is None and store.cache_get("b1").result is not None
    assert store.cache_clear("nothing") == 0
    assert store.cache_clear() == 1  # only live entries count; the expired one goes too
    assert store.cache_get("b1").result is None
    assert store.cache_clear() == 0


def test_concurrent_cache_puts_of_one_key_keep_one_entry(store: Store, store_uri: str) -> None:
    in_threads(store_uri, 6, lambda other, i: other.cache_put("same", "search", {"n": i}, 60))
    hit = store.cache_get("same").result
    assert hit is not None and hit.output["n"] in range(6)
    assert store.cache_clear() == 1


def test_a_write_makes_what_was_read_before_it_stale_in_every_process(
    store: Store, store_uri: str
) -> None:
    first = store.cache_get("r1", ["blog"])
    assert first.result is None and first.versions == {"blog": 0}  # never written
    store.cache_put("r1", "listBlogs", {"count": 0}, 60, first.versions)
    hit = store.cache_get("r1", ["blog"])
    assert hit.result is not None and hit.result.output == {"count": 0}
    store.cache_put("w1", "weather", "sunny", 60, store.cache_get("w1", ["weather"]).versions)

    with other_store(store_uri) as other:  # a write in another process
        other.cache_written(["blog"])
    stale = store.cache_get("r1", ["blog"])
    assert stale.result is None and stale.versions == {"blog": 1}
    # Another resource's results are untouched; a write moves every resource it names.
    assert store.cache_get("w1", ["weather"]).result is not None
    store.cache_written(["blog", "weather"])
    assert store.cache_get("w1", ["weather"]).result is None
    assert store.cache_get("r1", ["blog"]).versions == {"blog": 2}

    # Read again after the writes: fresh until the next one.
    now = store.cache_get("r1", ["blog"]).versions
    store.cache_put("r1", "listBlogs", {"count": 1}, 60, now)
    again = store.cache_get("r1", ["blog"]).result
    assert again is not None and again.output == {"count": 1}


def test_a_result_read_while_a_write_ran_is_never_served(store: Store) -> None:
    # The read asks the cache (a miss, with the versions now), a write ends meanwhile, then the
    # read's result is stored with the versions from before: it must not answer a later read.
    before = store.cache_get("k", ["kv"]).versions
    store.cache_written(["kv"])
    store.cache_put("k", "get", "old value", 60, before)
    assert store.cache_get("k", ["kv"]).result is None


def test_an_entry_checked_for_more_resources_than_it_was_stored_with_is_stale(
    store: Store,
) -> None:
    store.cache_put("k", "get", 1, 60, {})
    assert store.cache_get("k").result is not None  # asked about no resource: as stored
    assert store.cache_get("k", ["kv"]).result is None  # the tool names a resource now


def test_concurrent_writes_each_move_the_version(store: Store, store_uri: str) -> None:
    in_threads(store_uri, 6, lambda other, i: other.cache_written(["hot"]))
    assert store.cache_get("none", ["hot"]).versions == {"hot": 6}


__all__ = sorted(name for name in globals() if name.startswith("test_"))
"""Every test of this module (collected by ``from toolplan_conformance import *`` too)."""
