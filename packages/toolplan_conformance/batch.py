"""Conformance tests of what makes executions cheap: the batched step update (``update_steps``:
the engine's writer commits every step transition queued since its last write in one call, so a
batch must behave exactly like the same ``update_step`` calls in order, and be durable when it
returns), and a checkpointer kept open for long-lived callers (``keep_checkpointer``).

``from toolplan_conformance import *`` collects these with the rest of the suite; the
fixtures are the same (``store_uri`` and ``store``).
"""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest

from toolplan.plan_format.ids import new_id
from toolplan.store import Store
from toolplan_conformance.connections import in_threads, other_store
from toolplan_conformance.records import started_execution


def test_update_steps_applies_a_batch_in_order(store: Store) -> None:
    execution = started_execution(store, steps=3)
    plan_id = execution.plan_id
    store.update_steps(
        plan_id,
        [
            ("s0", {"status": "running", "attempts": 1, "resolved_parameters": {"x": [1, 2]}}),
            ("s1", {"status": "running", "attempts": 1}),
            ("s0", {"status": "succeeded", "output": {"text": "naïve"}, "duration_ms": 2.5}),
            ("s1", {"status": "failed", "error": "boom", "output": None}),
            ("s0", {}),
        ],
    )
    steps = {s.step_id: s for s in store.get_execution(plan_id).steps}  # type: ignore[union-attr]
    first = steps["s0"]
    assert (first.status, first.attempts, first.output) == ("succeeded", 1, {"text": "naïve"})
    assert first.resolved_parameters == {"x": [1, 2]} and first.duration_ms == 2.5
    assert (steps["s1"].status, steps["s1"].error, steps["s1"].attempts) == ("failed", "boom", 1)
    assert steps["s2"] == execution.step("s2")  # untouched
    store.update_steps(plan_id, [])  # nothing to do
    assert store.get_execution(plan_id).step("s0") == first  # type: ignore[union-attr]


def test_update_steps_is_durable_for_other_connections_when_it_returns(
    store: Store, store_uri: str
) -> None:
    execution = started_execution(store, steps=2)
    store.update_steps(
        execution.plan_id,
        [("s0", {"status": "succeeded", "output": 1}), ("s1", {"status": "running"})],
    )
    with other_store(store_uri) as other:
        steps = other.get_execution(execution.plan_id).steps  # type: ignore[union-attr]
    assert [(s.status, s.output) for s in steps] == [("succeeded", 1), ("running", None)]


def test_update_steps_rejects_unknown_fields_and_steps(store: Store) -> None:
    execution = started_execution(store, steps=2)
    plan_id = execution.plan_id
    with pytest.raises(ValueError, match="plan_id"):
        store.update_steps(plan_id, [("s0", {"status": "running"}), ("s1", {"plan_id": "other"})])
    assert store.get_execution(plan_id) == execution  # checked before anything is written
    with pytest.raises(KeyError, match="nope"):
        store.update_steps(plan_id, [("s0", {"status": "running"}), ("nope", {"attempts": 1})])
    with pytest.raises(KeyError, match="nope"):
        store.update_steps(plan_id, [("nope", {})])


def test_concurrent_batches_are_not_lost(store: Store, store_uri: str) -> None:
    workers = 4
    execution = started_execution(store, steps=workers * 2)

    def work(other: Store, i: int) -> None:
        mine = (f"s{2 * i}", f"s{2 * i + 1}")
        for attempt in range(1, 9):
            other.update_steps(
                execution.plan_id,
                [(step, {"status": "running", "attempts": attempt}) for step in mine],
            )
        other.update_steps(
            execution.plan_id, [(step, {"status": "succeeded", "output": step}) for step in mine]
        )

    in_threads(store_uri, workers, work)
    steps = store.get_execution(execution.plan_id).steps  # type: ignore[union-attr]
    assert [(s.status, s.attempts, s.output) for s in steps] == [
        ("succeeded", 8, f"s{i}") for i in range(workers * 2)
    ]


# -- a checkpointer kept open for long-lived callers ----------------------------------------------


@pytest.mark.asyncio
async def test_a_kept_checkpointer_is_shared_and_stays_usable(store: Store, store_uri: str) -> None:
    from langgraph.graph import END, START, StateGraph

    class State(TypedDict):
        n: int

    builder: Any = StateGraph(State)
    builder.add_node("add", lambda s: {"n": s["n"] + 1})
    builder.add_edge(START, "add")
    builder.add_edge("add", END)
    threads = [{"configurable": {"thread_id": new_id("plan")}} for _ in range(3)]

    async with store.keep_checkpointer():
        async with store.checkpointer() as first, store.checkpointer() as second:
            assert first is second  # one open checkpointer for every execution meanwhile
        # Nested: the outer one is kept.
        async with store.keep_checkpointer(), store.checkpointer() as third:
            assert third is first

        async def run(config: Any, start: int) -> Any:
            async with store.checkpointer() as saver:
                return await builder.compile(checkpointer=saver).ainvoke({"n": start}, config)

        results = await asyncio.gather(*(run(c, i * 10) for i, c in enumerate(threads)))
        assert results == [{"n": 1}, {"n": 11}, {"n": 21}]
    # Closed on leaving; a new one opens as before and sees what the kept one stored.
    with other_store(store_uri) as reopened:
        async with reopened.checkpointer() as saver:
            graph = builder.compile(checkpointer=saver)
            assert [(await graph.aget_state(c)).values["n"] for c in threads] == [1, 11, 21]


__all__ = sorted(name for name in globals() if name.startswith("test_"))
