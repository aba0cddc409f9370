"""Helpers of the store conformance suite: records to store, and other connections to a store
as other processes would have them (:mod:`toolplan.store.conformance` and
:mod:`toolplan.store.conformance_controls` use them; a backend's own tests may too)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from typing import Any

from toolplan.ids import new_id
from toolplan.store import ExecutionRecord, PlanRecord, RequestRecord, Store, open_store, utc_now

__all__ = [
    "in_threads",
    "new_plan",
    "new_request",
    "other_store",
    "queued",
    "started_execution",
    "step_pairs",
    "stored_plan",
]


def new_request(query: str | None = "make a blog") -> RequestRecord:
    return RequestRecord(new_id("req"), query, utc_now())


def new_plan(request_id: str, *, steps: int = 3, query: str | None = "make a blog") -> PlanRecord:
    return PlanRecord(
        plan_id=new_id("plan"),
        request_id=request_id,
        plan={
            "steps": [
                {"id": f"s{i}", "tool": "echo", "parameters": {"value": f"{{{{s{i - 1}}}}}"}}
                for i in range(steps)
            ]
        },
        analysis={"layers": [[f"s{i}"] for i in range(steps)], "criticalPathMs": 3.5},
        status="planned",
        created_at=utc_now(),
        query=query,
        meta={"model": "test:model", "llmCalls": 1, "usage": {"inputTokens": 12}},
    )


def stored_plan(store: Store, *, steps: int = 3) -> PlanRecord:
    request = new_request()
    plan = new_plan(request.request_id, steps=steps)
    store.save_plan(plan, request)
    return plan


def step_pairs(plan: PlanRecord) -> list[tuple[str, str]]:
    return [(step["id"], step["tool"]) for step in plan.plan["steps"]]


def started_execution(store: Store, *, steps: int = 3) -> ExecutionRecord:
    plan = stored_plan(store, steps=steps)
    return store.create_execution(plan.plan_id, step_pairs(plan), status="running")


def queued(store: Store, count: int) -> list[str]:
    plan_ids = []
    for _ in range(count):
        plan = stored_plan(store, steps=2)
        store.enqueue(plan.plan_id, step_pairs(plan))
        plan_ids.append(plan.plan_id)
    return plan_ids


@contextmanager
def other_store(uri: str) -> Iterator[Store]:
    """Another connection to the same store, as another process would have."""
    with closing(open_store(uri)) as store:
        yield store


def in_threads(uri: str, count: int, work: Callable[[Store, int], Any]) -> list[Any]:
    """Run ``work(store, i)`` in ``count`` threads, each on its own store, released together."""
    stores = [open_store(uri) for _ in range(count)]
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(stores[i], i)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        for store in stores:
            store.close()
    if errors:
        raise errors[0]
    return results
